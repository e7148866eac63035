/* core/cost.c — see cost.h. */
#include "cost.h"
#include "mcu_cost.h"

static int same(const char *a, const char *b) {
    while (*a && *a == *b) { a++; b++; }
    return *a == *b;
}

uint32_t atm_cost_clock_hz(const char *board) {
    if (!board) return 0;
    if (same(board, "microbit")) return 16000000u;
    if (same(board, "microbit-v2")) return 64000000u;
    if (same(board, "mps2-an385")) return 25000000u;
    if (same(board, "pico")) return 125000000u;
    return 0;
}

uint64_t atm_cost_insns_per_byte(const atm_mconfig *c, int encoding, const char *board, int window, int offsets) {
    if (!c || !board) return 0;
    const int64_t D = c->d_model, L = c->n_layers, H = c->d_head, V = c->vocab;
    const int64_t W = window > 0 ? window : c->window;
    /* the features of tools/fit-mcu-cost.mjs */
    const int64_t M = L * (2 * H * D + D * D + 3 * D) + V * D;
    /* core/engine.c's table path: the pair-sum table (d <= ATM_LUT_MAX_D), or
     * the byte tables at any width where the firmware gives them (mps2-an385);
     * on the micro:bit, its bit-plane rows from the offset stream when the
     * image holds one and the rows start 4-aligned (d % 16 == 0) */
    const int lut = D % 4 == 0 && (D <= 128 || same(board, "mps2-an385"));
    const int ox = lut && offsets && D % 16 == 0 && encoding == ATM_ENC_ATOME01;
    const int64_t f[7] = { 1, lut && !ox ? M : 0, lut ? 0 : M, L * W * H, L * W, L * D, ox ? M : 0 };
    for (unsigned i = 0; i < sizeof ATM_MCU_COST / sizeof ATM_MCU_COST[0]; i++) {
        if (!same(ATM_MCU_COST[i].board, board) || ATM_MCU_COST[i].encoding != encoding) continue;
        int64_t milli = 0;
        for (int k = 0; k < 7; k++) milli += ATM_MCU_COST[i].c[k] * f[k];
        return milli > 0 ? (uint64_t)((milli + 500) / 1000) : 0;
    }
    return 0;
}
