/* mcu/pico/pico.h — the Raspberry Pi Pico's (RP2040) board layer for the
 * firmware (docs/mcu.md, "Raspberry Pi Pico"): registers the board files
 * share, the clock set-up and the USB serial port.
 *
 * Contract.
 *  - pico_clocks_init(): the 12 MHz crystal, clk_ref = 12 MHz, the system
 *    PLL at 1500 MHz / 6 / 2 = 125 MHz for clk_sys and clk_peri, the USB PLL
 *    at 1200 MHz / 5 / 5 = 48 MHz for clk_usb, the watchdog tick at 1 us (the
 *    timer's time base); takes the timer, IO bank 0, the pads, UART0 and the
 *    USB controller out of reset. Every wait is bounded.
 *  - pico_us(): the 64-bit microsecond timer's low word.
 *  - usb_cdc_*: a USB CDC-ACM serial device of our own on the RP2040's USB
 *    controller (mcu/pico/usb_cdc.c), polled (no interrupts): enumeration,
 *    the CDC class requests, one bulk IN and one bulk OUT endpoint. Output
 *    is sent only while the host has the port open (DTR set) and dropped
 *    otherwise, so a board on a charger or read over UART0 never blocks. */
#ifndef ATOME_MCU_PICO_H
#define ATOME_MCU_PICO_H
#include <stdint.h>

#define PICO_REG(addr) (*(volatile uint32_t *)(addr))
#define PICO_SET 0x2000u   /* atomic bit set alias of a peripheral register */
#define PICO_CLR 0x3000u   /* atomic bit clear alias */

#define PICO_RESETS 0x4000C000u
#define PICO_RESET_IO_BANK0 (1u << 5)
#define PICO_RESET_PADS_BANK0 (1u << 8)
#define PICO_RESET_PLL_SYS (1u << 12)
#define PICO_RESET_PLL_USB (1u << 13)
#define PICO_RESET_TIMER (1u << 21)
#define PICO_RESET_UART0 (1u << 22)
#define PICO_RESET_USBCTRL (1u << 24)

#define PICO_CLK_SYS_HZ 125000000u

void pico_clocks_init(void);
/* Takes the blocks in mask out of reset and waits (bounded) until they are. */
void pico_unreset(uint32_t mask);
uint32_t pico_us(void);

void usb_cdc_init(void);
/* Services the controller: setup packets, finished buffers, bus resets;
 * sends what is queued. Call it often (every few ms is plenty). */
void usb_cdc_poll(void);
/* Queues b for the host (dropped when the port is not open, or after
 * 100 ms without the host taking anything). */
void usb_cdc_putc(uint8_t b);
/* Polls until the queue is sent (or dropped), at most 100 ms per packet. */
void usb_cdc_drain(void);
/* A received byte, or -1. */
int usb_cdc_getc(void);
/* 1 once the host has configured the device / opened the port (DTR). */
int usb_cdc_configured(void);
int usb_cdc_open(void);

#endif
