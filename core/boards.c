/* core/boards.c — see boards.h; the rows are core/boards.def. */
#include "boards.h"

/* The fields of a row, by name: the parameters of ATM_BOARD below, in the
 * order of core/boards.def's header. mcu/CMakeLists.txt and tools/mcu/run-qemu
 * read these names from here and find a row's field by its name. */
static const atm_board BOARDS[] = {
#define ATM_BOARD(name, label, cpu, chip, clock_hz, flash_base, flash_bytes, ram_bytes, slot_bytes, formats, drive,      \
                  faster, uf2_family, semihosting, offsets, tables, small_ram, core_opt, uart, emulator, cost_count,       \
                  cost_windows, machine, alias, uh_board_id, hex_with, card_label, card_order)                            \
    { name, label, cpu, chip, clock_hz, flash_base, flash_bytes, ram_bytes, slot_bytes, formats, drive, faster,          \
      uf2_family, semihosting, offsets, tables, small_ram, emulator, cost_count, cost_windows, machine, alias,            \
      uh_board_id, hex_with, card_label, card_order },
#include "boards.def"
#undef ATM_BOARD
};

size_t atm_board_count(void) { return sizeof BOARDS / sizeof BOARDS[0]; }

const atm_board *atm_board_at(size_t i) { return i < atm_board_count() ? &BOARDS[i] : NULL; }

static int same(const char *a, const char *b) {
    while (*a && *a == *b) { a++; b++; }
    return *a == *b;
}

const atm_board *atm_board_find(const char *name) {
    if (!name) return NULL;
    for (size_t i = 0; i < atm_board_count(); i++)
        if (same(BOARDS[i].name, name) || (BOARDS[i].alias[0] && same(BOARDS[i].alias, name))) return &BOARDS[i];
    return NULL;
}
