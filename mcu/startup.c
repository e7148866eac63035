/* mcu/startup.c — reset and exception entry for the Cortex-M0/M3 firmware
 * (no assembly file, no vendor code, no C library).
 *
 * Contract.
 *  - The vector table (.isr_vector, placed at address 0 by mcu/link/common.ld)
 *    holds the initial stack pointer (__stack_end) and the 15 system
 *    exception handlers of ARMv7-M; on ARMv6-M (M0) slots 4-6 are reserved
 *    and never taken. No interrupt is ever enabled, so the table stops there.
 *  - Reset_Handler paints the stack below its own frame with ATM_STACK_PAINT
 *    (mcu_stack_used() later finds the lowest overwritten word), copies .data
 *    from its flash image, zeroes .bss, calls mcu_main() and exits through
 *    semihosting with its return value. The arena (.arena) is not zeroed
 *    here: the engine clears what it uses.
 *  - Every fault or unexpected exception ends the run through semihosting
 *    with MCU_EXIT_FAULT_BASE + the exception number (docs/mcu.md), so a
 *    crash is never a hang or a silent success. The stack sits at the bottom
 *    of RAM, so an overflow runs off the start of RAM into unmapped memory
 *    and faults instead of corrupting data (docs/mcu.md, "memory maps"). */
#include <stdint.h>
#include "semihost.h"
#include "mcu.h"

/* Linker-script symbols (mcu/link/common.ld); only their addresses matter. */
extern uint32_t __stack_start[], __stack_end[];
extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[];

void Reset_Handler(void);
void Fault_Handler(void);

typedef union {
    void (*handler)(void);
    const void *sp;
} vector_entry;

__attribute__((section(".isr_vector"), used))
static const vector_entry vectors[16] = {
    { .sp = __stack_end },
    { .handler = Reset_Handler },
    { .handler = Fault_Handler },   /* 2 NMI */
    { .handler = Fault_Handler },   /* 3 HardFault */
    { .handler = Fault_Handler },   /* 4 MemManage (M3) */
    { .handler = Fault_Handler },   /* 5 BusFault (M3) */
    { .handler = Fault_Handler },   /* 6 UsageFault (M3) */
    { .handler = 0 }, { .handler = 0 }, { .handler = 0 }, { .handler = 0 },
    { .handler = Fault_Handler },   /* 11 SVCall */
    { .handler = Fault_Handler },   /* 12 DebugMonitor (M3) */
    { .handler = 0 },
    { .handler = Fault_Handler },   /* 14 PendSV */
    { .handler = Fault_Handler },   /* 15 SysTick */
};

static uint32_t read_sp(void) {
    uint32_t sp;
    __asm__ volatile ("mov %0, sp" : "=r"(sp));
    return sp;
}

/* One handler for every exception: IPSR holds the exception number. A
 * standalone image reports it on its UART instead (no semihosting there). */
void Fault_Handler(void) {
    uint32_t ipsr;
    __asm__ volatile ("mrs %0, ipsr" : "=r"(ipsr));
    if (mcu_standalone() || !MCU_SEMIHOSTING) mcu_fault_line(ipsr & 0x3Fu);
    sh_exit(MCU_EXIT_FAULT_BASE + (int)(ipsr & 0x3Fu));
}

/* GCC may turn the copy and zero loops into memcpy/memset calls; that is
 * safe because mcu/libc_min.c's versions use no static data. */
void Reset_Handler(void) {
    /* 64 bytes of margin keep the paint below this function's own frame. */
    volatile uint32_t *p = __stack_start;
    volatile uint32_t *top = (volatile uint32_t *)(read_sp() - 64u);
    while (p < top) *p++ = ATM_STACK_PAINT;

    const uint32_t *src = __data_load;
    for (uint32_t *d = __data_start; d < __data_end; ) *d++ = *src++;
    for (volatile uint32_t *b = __bss_start; b < __bss_end; ) *b++ = 0u;

    sh_exit(mcu_main());
}

uint32_t mcu_stack_used(void) {
    const uint32_t *p = __stack_start;
    while (p < __stack_end && *p == ATM_STACK_PAINT) p++;
    return (uint32_t)((uintptr_t)__stack_end - (uintptr_t)p);
}

uint32_t mcu_stack_size(void) {
    return (uint32_t)((uintptr_t)__stack_end - (uintptr_t)__stack_start);
}
