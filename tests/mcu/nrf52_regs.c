/* tests/mcu/nrf52_regs.c — the micro:bit v2's clock and UART set-up
 * (mcu/nrf52/nrf52.c) built on the host with MCU_REG_HOOK: no nRF52 is
 * emulated anywhere here, so every register access goes to this file's
 * stand-in register block, which prints each write as "W 0xADDRESS
 * 0xVALUE" in order (and each distinct polled register once as "R
 * 0xADDRESS"). tests/node/mcu-microbit-v2.test.mjs compares the writes with
 * the table in docs/mcu.md ("micro:bit v2: registers"), whose every value
 * was checked against the nRF52833 Product Specification.
 *
 * The stand-in answers polls the way the chip would once the task ran:
 * EVENTS_HFCLKSTARTED reads 1 after TASKS_HFCLKSTART was written 1; a
 * byte written to TXD sets EVENTS_TXDRDY; RXD returns 'x' with
 * EVENTS_RXDRDY set. Then `putc 'A'` and `getc` run once each, so their
 * writes are checked too. */
#include <stdio.h>
#include <stdint.h>
#include "mcu/nrf52/nrf52.h"

static uint32_t hf_started, txdrdy, last_read;

void nrf52_reg_write(uint32_t addr, uint32_t value) {
    printf("W 0x%08X 0x%08X\n", (unsigned)addr, (unsigned)value);
    if (addr == NRF52_CLOCK + 0x000u && value == 1u) hf_started = 1;
    if (addr == NRF52_CLOCK + 0x100u) hf_started = value;
    if (addr == NRF52_UART0 + 0x51Cu) txdrdy = 1;
    if (addr == NRF52_UART0 + 0x11Cu) txdrdy = value;
}

uint32_t nrf52_reg_read(uint32_t addr) {
    if (addr != last_read) printf("R 0x%08X\n", (unsigned)addr);
    last_read = addr;
    if (addr == NRF52_CLOCK + 0x100u) return hf_started;
    if (addr == NRF52_UART0 + 0x11Cu) return txdrdy;
    if (addr == NRF52_UART0 + 0x108u) return 1u;        /* EVENTS_RXDRDY */
    if (addr == NRF52_UART0 + 0x518u) return 'x';       /* RXD */
    fprintf(stderr, "nrf52_regs: read of an unexpected register 0x%08X\n", (unsigned)addr);
    return 0u;
}

int main(void) {
    printf("# init\n");
    nrf52_clock_uart_init();
    printf("# putc\n");
    nrf52_uart_putc('A');
    printf("# getc\n");
    const int c = nrf52_uart_getc();
    printf("# got %d\n", c);
    return c == 'x' ? 0 : 1;
}
