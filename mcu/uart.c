/* mcu/uart.c — the board's serial port for standalone images (docs/mcu.md,
 * "standalone mode"): polled, no interrupts, no buffers.
 *   microbit    the nRF51822 UART at 0x40002000: 115200 8N1, TX P0.24, RX
 *               P0.25 (the interface chip's USB serial on the micro:bit v1)
 *   microbit-v2 the nRF52833 UART0 at 0x40002000: 115200 8N1, TX P0.06, RX
 *               P1.08 (the interface chip's USB serial on the micro:bit v2),
 *               after the 64 MHz crystal clock (mcu/nrf52/nrf52.c)
 *   mps2-an385  CMSDK APB UART0 at 0x40004000, 115200 8N1 from the 25 MHz
 *               system clock (QEMU: the first -serial)
 *   pico        RP2040 UART0 (PL011) at 0x40034000 on GP0 (TX) / GP1 (RX),
 *               115200 8N1 from clk_peri = 125 MHz, and the same bytes on
 *               the USB serial port (mcu/pico/usb_cdc.c); input from either
 * Also the cycle counter where the board has one (the M3's and M4's DWT CYCCNT; QEMU
 * does not model it and reads 0, which callers must treat as "unknown"; the
 * Pico's 1 MHz timer, so its "cycles" are microseconds). uart_drain() waits
 * until queued output has left (the Pico's USB queue; a no-op elsewhere) and
 * uart_idle() is the body of a board's wait loop (WFI, or servicing USB). */
#include <stdint.h>
#include "uart.h"
/* MCU_CLOCK_HZ: the board's clock_hz in core/boards.def (mcu/CMakeLists.txt) */

#define REG(base, off) (*(volatile uint32_t *)((base) + (off)))

#if defined(MCU_UART_NRF52) || defined(MCU_UART_CMSDK)
/* The Cortex-M3's and M4's cycle counter (DWT CYCCNT), started by uart_init. */
#define DEMCR (*(volatile uint32_t *)0xE000EDFCu)
#define DWT_CTRL (*(volatile uint32_t *)0xE0001000u)
#define DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)
static void dwt_start(void) {
    DEMCR |= 1u << 24;                     /* TRCENA: the DWT */
    DWT_CYCCNT = 0u;
    DWT_CTRL |= 1u;                        /* CYCCNTENA */
}
uint32_t uart_cycles(void) { return DWT_CYCCNT; }
#endif

#if !defined(MCU_UART_PICO)
/* Every board but the Pico: nothing queued to wait for, and WFI to idle. */
void uart_drain(void) { }
void uart_idle(void) { __asm__ volatile ("wfi"); }
#endif

#if defined(MCU_UART_NRF51)
#define UB 0x40002000u
#define GPIO 0x50000000u
#define CLOCK 0x40000000u
void uart_init(void) {
    /* the 16 MHz crystal for an exact baud rate (the RC oscillator is only
     * within a few %); bounded wait, in case a clock never reports */
    REG(CLOCK, 0x100) = 0u;         /* EVENTS_HFCLKSTARTED */
    REG(CLOCK, 0x000) = 1u;         /* TASKS_HFCLKSTART */
    for (uint32_t i = 0; i < 200000u && REG(CLOCK, 0x100) == 0u; i++) { }
    /* TX P0.24 an output idling high, RX P0.25 an input (the UART drives them once enabled) */
    REG(GPIO, 0x508) = 1u << 24;    /* OUTSET */
    REG(GPIO, 0x700 + 4u * 24u) = 1u;   /* PIN_CNF[24]: output, input buffer connected */
    REG(GPIO, 0x700 + 4u * 25u) = 0u;   /* PIN_CNF[25]: input, no pull */
    REG(UB, 0x500) = 0u;            /* ENABLE: off while configuring */
    REG(UB, 0x50C) = 24u;           /* PSELTXD = P0.24 */
    REG(UB, 0x514) = 25u;           /* PSELRXD = P0.25 */
    REG(UB, 0x508) = 0xFFFFFFFFu;   /* PSELRTS: not connected */
    REG(UB, 0x510) = 0xFFFFFFFFu;   /* PSELCTS: not connected */
    REG(UB, 0x524) = 0x01D7E000u;   /* BAUDRATE 115200 */
    REG(UB, 0x56C) = 0u;            /* CONFIG: no parity, no flow control */
    REG(UB, 0x500) = 4u;            /* ENABLE */
    REG(UB, 0x11C) = 0u;            /* EVENTS_TXDRDY */
    REG(UB, 0x108) = 0u;            /* EVENTS_RXDRDY */
    REG(UB, 0x008) = 1u;            /* TASKS_STARTTX */
    REG(UB, 0x000) = 1u;            /* TASKS_STARTRX */
}
void uart_putc(uint8_t b) {
    REG(UB, 0x51C) = b;             /* TXD */
    while (REG(UB, 0x11C) == 0u) { }
    REG(UB, 0x11C) = 0u;
}
int uart_getc(void) {
    while (REG(UB, 0x108) == 0u) { }
    REG(UB, 0x108) = 0u;
    return (int)(REG(UB, 0x518) & 0xFFu);   /* RXD */
}
uint32_t uart_cycles(void) { return 0u; }   /* the Cortex-M0 has no cycle counter */
uint32_t uart_cpu_hz(void) { return MCU_CLOCK_HZ; }

#elif defined(MCU_UART_NRF52)
#include "nrf52/nrf52.h"
void uart_init(void) {
    nrf52_clock_uart_init();
    dwt_start();
}
void uart_putc(uint8_t b) { nrf52_uart_putc(b); }
int uart_getc(void) { return nrf52_uart_getc(); }
uint32_t uart_cpu_hz(void) { return MCU_CLOCK_HZ; }

#elif defined(MCU_UART_CMSDK)
#define UB 0x40004000u
void uart_init(void) {
    REG(UB, 0x10) = MCU_CLOCK_HZ / 115200u;   /* BAUDDIV (>= 16) */
    REG(UB, 0x08) = 3u;                    /* CTRL: TX and RX enable */
    dwt_start();
}
void uart_putc(uint8_t b) {
    while (REG(UB, 0x04) & 1u) { }         /* STATE: TX buffer full */
    REG(UB, 0x00) = b;
}
int uart_getc(void) {
    while ((REG(UB, 0x04) & 2u) == 0u) { } /* STATE: RX buffer full */
    return (int)(REG(UB, 0x00) & 0xFFu);
}
uint32_t uart_cpu_hz(void) { return MCU_CLOCK_HZ; }

#elif defined(MCU_UART_PICO)
#include "pico/pico.h"
#define UB 0x40034000u
#define IO_BANK0 0x40014000u
#define CONNECT_WAIT_US 2000000u   /* a USB host configures us within this, or there is none */
#define PICO_BRD8 (8u * MCU_CLOCK_HZ / 115200u)   /* clk_peri is the system clock (mcu/pico/clocks.c) */
void uart_init(void) {
    static int done;
    if (done) return;   /* the fault path may call it again */
    done = 1;
    pico_clocks_init();
    PICO_REG(IO_BANK0 + 0x04u) = 2u;            /* GPIO0_CTRL: FUNCSEL uart0 TX */
    PICO_REG(IO_BANK0 + 0x0Cu) = 2u;            /* GPIO1_CTRL: FUNCSEL uart0 RX */
    /* 8 x clk_peri / 115200 = 8680 at 125 MHz: integer part 67, fraction 52/64 */
    PICO_REG(UB + 0x24u) = PICO_BRD8 >> 7;      /* UARTIBRD */
    PICO_REG(UB + 0x28u) = ((PICO_BRD8 & 0x7Fu) + 1u) / 2u;   /* UARTFBRD */
    PICO_REG(UB + 0x2Cu) = (3u << 5) | (1u << 4);         /* UARTLCR_H: 8 bits, FIFOs (latches the divisor) */
    PICO_REG(UB + 0x30u) = (1u << 0) | (1u << 8) | (1u << 9);   /* UARTCR: UARTEN, TXE, RXE */
    usb_cdc_init();
    /* With a USB host, wait for a serial monitor to open the port, so the
     * story starts where someone reads it; without one, start at once. */
    const uint32_t t0 = pico_us();
    while (!usb_cdc_configured() && (uint32_t)(pico_us() - t0) < CONNECT_WAIT_US) usb_cdc_poll();
    while (usb_cdc_configured() && !usb_cdc_open()) usb_cdc_poll();
}
void uart_putc(uint8_t b) {
    while (PICO_REG(UB + 0x18u) & (1u << 5)) { }   /* UARTFR: TXFF */
    PICO_REG(UB + 0x00u) = b;
    usb_cdc_putc(b);
}
int uart_getc(void) {
    for (;;) {
        if (!(PICO_REG(UB + 0x18u) & (1u << 4))) return (int)(PICO_REG(UB + 0x00u) & 0xFFu);   /* RXFE clear */
        const int c = usb_cdc_getc();
        if (c >= 0) return c;
    }
}
uint32_t uart_cycles(void) { return pico_us(); }
uint32_t uart_cpu_hz(void) { return 1000000u; }
void uart_drain(void) {
    usb_cdc_drain();
    while (PICO_REG(UB + 0x18u) & (1u << 3)) { }   /* UARTFR: BUSY */
}
void uart_idle(void) { usb_cdc_poll(); }

#else
#error "no UART for this board: define MCU_UART_NRF51, MCU_UART_NRF52, MCU_UART_CMSDK or MCU_UART_PICO"
#endif

void uart_write(const void *p, uint32_t n) {
    const uint8_t *b = (const uint8_t *)p;
    for (uint32_t i = 0; i < n; i++) uart_putc(b[i]);
}
