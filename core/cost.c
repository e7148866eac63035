/* core/cost.c — see cost.h. The per-board facts come from the table of
 * boards (core/boards.def); the coefficients from core/mcu_cost.h. */
#include "cost.h"
#include "boards.h"
#include "mcu_cost.h"
#include "engine_select.h"   /* ATM_LUT_MAX_D: the table path's widest model */

static int same(const char *a, const char *b) {
    while (*a && *a == *b) { a++; b++; }
    return *a == *b;
}

uint32_t atm_cost_clock_hz(const char *board) {
    const atm_board *b = atm_board_find(board);
    return b ? b->clock_hz : 0;
}

int atm_cost_features(const atm_mconfig *c, int encoding, const char *board, int window, int offsets,
                      int64_t f[ATM_COST_FEATURES]) {
    const atm_board *b = atm_board_find(board);
    if (!c || !b) return -1;
    const int64_t D = c->d_model, L = c->n_layers, H = c->d_head, V = c->vocab;
    const int64_t W = window > 0 ? window : c->window;
    const int64_t M = L * (2 * H * D + D * D + 3 * D) + V * D;
    /* core/engine_select.c's table path: the pair-sum table (d <= ATM_LUT_MAX_D),
     * or the byte tables at any width where the firmware gives them (the
     * row's `tables`); the bit-plane rows from the offset stream when the
     * image holds one and the rows start 4-aligned (d % 16 == 0) */
    const int lut = D % 4 == 0 && (D <= ATM_LUT_MAX_D || b->tables);
    const int ox = lut && offsets && D % 16 == 0 && encoding == ATM_ENC_ATOME01;
    const int64_t v[ATM_COST_FEATURES] = { 1, lut && !ox ? M : 0, lut ? 0 : M, L * W * H, L * W, L * D, ox ? M : 0 };
    for (int k = 0; k < ATM_COST_FEATURES; k++) f[k] = v[k];
    return 0;
}

uint64_t atm_cost_insns_per_byte(const atm_mconfig *c, int encoding, const char *board, int window, int offsets) {
    int64_t f[ATM_COST_FEATURES];
    if (atm_cost_features(c, encoding, board, window, offsets, f)) return 0;
    board = atm_board_find(board)->name;   /* an alias: its row's fit */
    for (unsigned i = 0; i < sizeof ATM_MCU_COST / sizeof ATM_MCU_COST[0]; i++) {
        if (!same(ATM_MCU_COST[i].board, board) || ATM_MCU_COST[i].encoding != encoding) continue;
        int64_t milli = 0;
        for (int k = 0; k < ATM_COST_FEATURES; k++) milli += ATM_MCU_COST[i].c[k] * f[k];
        return milli > 0 ? (uint64_t)((milli + 500) / 1000) : 0;
    }
    return 0;
}
