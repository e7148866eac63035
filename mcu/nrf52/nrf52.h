/* mcu/nrf52/nrf52.h — the micro:bit v2's (nRF52833) clock and serial port
 * set-up (mcu/nrf52/nrf52.c), for mcu/uart.c's MCU_UART_NRF52 driver.
 *
 * Every register address and value is one docs/mcu.md lists ("micro:bit
 * v2: registers") with its section of the nRF52833 Product Specification;
 * tests/node/mcu-microbit-v2.test.mjs builds this file on the host with
 * MCU_REG_HOOK (register accesses through nrf52_reg_write/nrf52_reg_read
 * instead of memory) and checks the writes, in order, against that table. */
#ifndef ATOME_MCU_NRF52_H
#define ATOME_MCU_NRF52_H
#include <stdint.h>

/* Peripheral bases (PS, "Memory" — instantiation table) */
#define NRF52_CLOCK 0x40000000u
#define NRF52_UART0 0x40002000u   /* UART0 (legacy UART) and UARTE0 share it */
#define NRF52_P0    0x50000000u
#define NRF52_P1    0x50000300u

/* The interface chip's serial lines on the micro:bit v2 (its schematic):
 * TX P0.06 (out of the nRF52833), RX P1.08. PSEL: PIN in bits 0-4, PORT in
 * bit 5, CONNECT (bit 31) 0 = connected. */
#define NRF52_TX_PORT 0u
#define NRF52_TX_PIN  6u
#define NRF52_RX_PORT 1u
#define NRF52_RX_PIN  8u
#define NRF52_PSEL(port, pin) (((port) << 5) | (pin))

/* The 64 MHz crystal clock (HFXO) started, then UART0 at 115200 8N1 on the
 * pins above, transmitter and receiver started. Bounded wait on the clock. */
void nrf52_clock_uart_init(void);
/* One byte out (waits for TXDRDY), one byte in (waits for RXDRDY). */
void nrf52_uart_putc(uint8_t b);
int nrf52_uart_getc(void);

#ifdef MCU_REG_HOOK
/* The host test's register block: every access goes through these. */
void nrf52_reg_write(uint32_t addr, uint32_t value);
uint32_t nrf52_reg_read(uint32_t addr);
#endif

#endif
