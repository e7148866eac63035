/* mcu/uart.h — the board's serial port (mcu/uart.c) for standalone images. */
#ifndef ATOME_MCU_UART_H
#define ATOME_MCU_UART_H
#include <stdint.h>

void uart_init(void);
void uart_putc(uint8_t b);
void uart_write(const void *p, uint32_t n);
/* Blocks until a byte arrives. */
int uart_getc(void);
/* The cycle counter (0 where there is none or it does not count) and the
 * clock it counts. */
uint32_t uart_cycles(void);
uint32_t uart_cpu_hz(void);
/* Waits until queued output has left the board (the Pico's USB queue). */
void uart_drain(void);
/* One turn of a wait loop: WFI, or (Pico) servicing the USB port. */
void uart_idle(void);

#endif
