/* mcu/mcu.h — what the firmware's files share: exit codes, the stack paint
 * pattern, the entry point called by Reset_Handler and the stack probes.
 * Every exit code is documented in docs/mcu.md ("exit codes"); the values
 * 0, 1 and 2 mean what they mean for the native `atome` tool. */
#ifndef ATOME_MCU_H
#define ATOME_MCU_H
#include <stdint.h>

enum {
    MCU_EXIT_OK = 0,
    MCU_EXIT_RUNTIME = 1,     /* embedded model rejected by atm_model_open, or stdout failed */
    MCU_EXIT_USAGE = 2,       /* bad command line (unknown flag, bad value, ...) */
    MCU_EXIT_NO_MODEL = 3,    /* the model slot is empty (unpatched template) */
    MCU_EXIT_SLOT = 4,        /* slot header corrupt: magic, length or CRC */
    MCU_EXIT_ARENA = 5,       /* the model at this window needs more RAM than the arena */
    MCU_EXIT_CMDLINE = 6,     /* SYS_GET_CMDLINE failed or the line is too long */
    MCU_EXIT_STACK = 7,       /* the stack paint was overwritten to the bottom */
    MCU_EXIT_FAULT_BASE = 100 /* + exception number: 102 NMI, 103 HardFault, ... */
};

/* Written over the whole stack at reset; a word still holding it was never used. */
#define ATM_STACK_PAINT 0xA5A5A5A5u

int mcu_main(void);
/* 1 if the image carries a settings block (its magic at the end of the
 * model slot, read from flash: no RAM spent): it runs on its UART and must
 * never make a semihosting call (no debugger answers on a board). */
int mcu_standalone(void);
/* Standalone: one line on the UART, then a WFI loop. */
void mcu_fault_line(uint32_t exception);
/* Bytes of stack written since reset (lowest non-paint word up to the top). */
uint32_t mcu_stack_used(void);
uint32_t mcu_stack_size(void);

#endif
