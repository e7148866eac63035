/* mcu/nrf52/nrf52.c — see nrf52.h. Register offsets and values: docs/mcu.md,
 * "micro:bit v2: registers" (nRF52833 Product Specification v1.x). */
#include "nrf52.h"

#ifdef MCU_REG_HOOK
#define WR(addr, v) nrf52_reg_write((addr), (v))
#define RD(addr) nrf52_reg_read(addr)
#else
#define WR(addr, v) (*(volatile uint32_t *)(addr) = (v))
#define RD(addr) (*(volatile uint32_t *)(addr))
#endif

/* CLOCK (PS "CLOCK — Clock control", registers) */
#define TASKS_HFCLKSTART    (NRF52_CLOCK + 0x000u)
#define EVENTS_HFCLKSTARTED (NRF52_CLOCK + 0x100u)
/* GPIO (PS "GPIO — General purpose input/output", registers) */
#define GPIO_OUTSET(port)     ((port) + 0x508u)
#define GPIO_PIN_CNF(port, n) ((port) + 0x700u + 4u * (n))
/* UART (PS "UART — Universal asynchronous receiver/transmitter", registers) */
#define UART_TASKS_STARTRX  (NRF52_UART0 + 0x000u)
#define UART_TASKS_STARTTX  (NRF52_UART0 + 0x008u)
#define UART_EVENTS_RXDRDY  (NRF52_UART0 + 0x108u)
#define UART_EVENTS_TXDRDY  (NRF52_UART0 + 0x11Cu)
#define UART_ENABLE         (NRF52_UART0 + 0x500u)
#define UART_PSEL_RTS       (NRF52_UART0 + 0x508u)
#define UART_PSEL_TXD       (NRF52_UART0 + 0x50Cu)
#define UART_PSEL_CTS       (NRF52_UART0 + 0x510u)
#define UART_PSEL_RXD       (NRF52_UART0 + 0x514u)
#define UART_RXD            (NRF52_UART0 + 0x518u)
#define UART_TXD            (NRF52_UART0 + 0x51Cu)
#define UART_BAUDRATE       (NRF52_UART0 + 0x524u)
#define UART_CONFIG         (NRF52_UART0 + 0x56Cu)

#define ENABLE_UART 4u              /* ENABLE: 4 = UART (8 would be UARTE) */
#define BAUD_115200 0x01D7E000u     /* BAUDRATE: Baud115200 */
#define PSEL_DISCONNECTED 0xFFFFFFFFu
#define PIN_CNF_OUTPUT 1u           /* DIR output, input buffer connected, no pull, S0S1 */
#define PIN_CNF_INPUT 0u            /* DIR input, input buffer connected, no pull */
#define HFXO_WAIT 1000000u          /* polls; the crystal starts in well under a millisecond */

void nrf52_clock_uart_init(void) {
    /* HFCLK from the 32 MHz crystal (the CPU's 64 MHz and the UART's
     * baud rate then have the crystal's accuracy, not the RC oscillator's) */
    WR(EVENTS_HFCLKSTARTED, 0u);
    WR(TASKS_HFCLKSTART, 1u);
    for (uint32_t i = 0; i < HFXO_WAIT && RD(EVENTS_HFCLKSTARTED) == 0u; i++) { }
    /* TX an output idling high, RX an input (the UART takes them once enabled) */
    WR(GPIO_OUTSET(NRF52_P0), 1u << NRF52_TX_PIN);
    WR(GPIO_PIN_CNF(NRF52_P0, NRF52_TX_PIN), PIN_CNF_OUTPUT);
    WR(GPIO_PIN_CNF(NRF52_P1, NRF52_RX_PIN), PIN_CNF_INPUT);
    WR(UART_ENABLE, 0u);
    WR(UART_PSEL_TXD, NRF52_PSEL(NRF52_TX_PORT, NRF52_TX_PIN));
    WR(UART_PSEL_RXD, NRF52_PSEL(NRF52_RX_PORT, NRF52_RX_PIN));
    WR(UART_PSEL_RTS, PSEL_DISCONNECTED);
    WR(UART_PSEL_CTS, PSEL_DISCONNECTED);
    WR(UART_BAUDRATE, BAUD_115200);
    WR(UART_CONFIG, 0u);            /* no parity, one stop bit, no flow control */
    WR(UART_ENABLE, ENABLE_UART);
    WR(UART_EVENTS_TXDRDY, 0u);
    WR(UART_EVENTS_RXDRDY, 0u);
    WR(UART_TASKS_STARTTX, 1u);
    WR(UART_TASKS_STARTRX, 1u);
}

void nrf52_uart_putc(uint8_t b) {
    WR(UART_TXD, b);
    while (RD(UART_EVENTS_TXDRDY) == 0u) { }
    WR(UART_EVENTS_TXDRDY, 0u);
}

int nrf52_uart_getc(void) {
    while (RD(UART_EVENTS_RXDRDY) == 0u) { }
    WR(UART_EVENTS_RXDRDY, 0u);
    return (int)(RD(UART_RXD) & 0xFFu);
}
