/* core/boards.c — see boards.h; the rows are core/boards.def. */
#include "boards.h"

static const atm_board BOARDS[] = {
#define ATM_BOARD(name, label, cpu, chip, hz, fbase, fbytes, ram, slot, formats, drive, faster, uf2, semi, ofs, tables, \
                  small, opt, uart, emu, count, windows, machine, alias, uh_id, hex_with, card, order)                   \
    { name, label, cpu, chip, hz, fbase, fbytes, ram, slot, formats, drive, faster, uf2, semi, ofs, tables, small, emu,   \
      count, windows, machine, alias, uh_id, hex_with, card, order },
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
