/* core/boards.h — the boards the firmware runs on, one table (the rows are
 * in core/boards.def, which mcu/CMakeLists.txt reads too). Everything that
 * differs between boards is a field here: fwimage/ (slot, formats, UF2,
 * offset stream, faster encoding), `atome firmware` / `header` / `boards`,
 * core/cost.c (clock, the cost rule's table path) and, as JSON
 * (fwimage's atm_fw_boards_json), the page and tools/mcu/fit-mcu-cost.mjs.
 * Freestanding C99: constant data and a lookup. */
#ifndef ATOME_BOARDS_H
#define ATOME_BOARDS_H
#include <stddef.h>
#include <stdint.h>
#include "container.h"

/* The files a board takes: bit (1 << f) for fwimage's ATM_FW_FORMAT_f
 * (elf 0, hex 1, bin 2, uf2 3). */
enum { ATM_BOARD_ELF = 1, ATM_BOARD_HEX = 2, ATM_BOARD_BIN = 4, ATM_BOARD_UF2 = 8 };

typedef struct {
    const char *name;          /* --board, atome-fw-<name>.elf, the slot's board */
    const char *label;         /* "micro:bit v1" */
    const char *cpu;           /* "cortex-m0" */
    const char *chip;          /* "nRF51822" */
    uint32_t clock_hz;
    uint32_t flash_base, flash_bytes, ram_bytes;
    uint32_t slot_bytes;       /* the model slot: 32-byte header + capacity */
    uint32_t formats;          /* ATM_BOARD_* bits */
    uint32_t drive;            /* the one ATM_BOARD_* bit its USB drive takes */
    int      faster_encoding;  /* ATM_ENC_* */
    uint32_t uf2_family;       /* 0: takes no UF2 */
    uint8_t  semihosting, offsets, tables, small_ram;
    const char *emulator;      /* "qemu" | "rp2040js" */
    const char *cost_count;    /* "insns_per_byte" | "cycles_per_byte" */
    const char *cost_windows;  /* "8 16 32" */
    const char *machine;       /* QEMU's -M ("mps2-an386"), "" for none */
    const char *alias;         /* another --board name for this row, "" for none */
    uint32_t uh_board_id;      /* micro:bit Universal Hex board ID, 0 for none */
    const char *hex_with;      /* "" or the row whose image joins this one's in its Universal Hex */
    const char *card_label;    /* the page's card title, "" for label */
    int card_order;            /* its card's place on the page, smaller first */
} atm_board;

/* The number of boards and the i-th (0-based; NULL out of range), in the
 * table's order. */
size_t atm_board_count(void);
const atm_board *atm_board_at(size_t i);
/* The board called name (its name or its alias), or NULL (name may be NULL). */
const atm_board *atm_board_find(const char *name);

#endif
