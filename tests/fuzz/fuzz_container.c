/* tests/fuzz/fuzz_container.c — libFuzzer target for the `.atome` loader and
 * the generate call (built with clang -fsanitize=fuzzer,address,undefined by
 * tests/fuzz/CMakeLists.txt, run for a bounded time by run-fuzz.sh).
 *
 * Each input is tried twice: as given (so the size, version and CRC checks
 * see every mutation), and with the CRC at the declared end recomputed (so
 * mutations inside the header, table and data reach the structural checks
 * and, when they pass, the engine). For every input that opens:
 *  - atm_container_inspect agrees that it is valid;
 *  - re-encoding to the other trit encoding gives a container that opens,
 *    and re-encoding back gives the original bytes (trits lossless);
 *  - the engine runs at a small window chosen by the input, past the window,
 *    with every matvec kernel of the build in lockstep (their logits must be
 *    identical), and the fixed-point sampler picks each next byte with
 *    settings chosen by the input; the byte must be inside the vocabulary.
 * A violated property calls abort(), which libFuzzer reports as a crash;
 * ASan/UBSan report any out-of-bounds access or undefined behaviour. */
#include "core/container.h"
#include "core/engine.h"
#include "core/format.h"
#include "core/sampler.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep one input fast: models above this many parameters only
 * go through the loader (the seeds are far below it). */
#define FUZZ_MAX_PARAMS 300000u
#define FUZZ_MAX_ARENA ((size_t)8 << 20)
#define FUZZ_EXTRA_STEPS 6

static void check(int cond) { if (!cond) abort(); }

static void run_engine(const atm_model *m, const uint8_t *b, size_t n) {
    /* settings from bytes just before the CRC (data bytes of the model) */
    const uint8_t s0 = b[n - 5], s1 = b[n - 6], s2 = b[n - 7], s3 = b[n - 8];
    const int window = 1 + s0 % 24;
    size_t ab = atm_engine_arena_bytes(m, window);
    check(ab > 0);
    if (ab > FUZZ_MAX_ARENA || m->n_params > FUZZ_MAX_PARAMS) return;
    /* every kernel id this build has (ATM_KERNEL_PORTABLE = 1 upwards) */
    enum { NK = 8 };
    atm_engine e[NK];
    void *arena[NK] = { 0 };
    int live[NK] = { 0 };
    for (int k = 0; k < NK; k++) {
        arena[k] = malloc(ab);
        check(arena[k] != NULL);
        check(atm_engine_init(&e[k], m, window, arena[k], ab) == ATM_OK);
        live[k] = atm_engine_set_kernel(&e[k], ATM_KERNEL_PORTABLE + k) == 0;
    }
    check(live[0]);
    /* an arena one byte short is refused */
    check(atm_engine_init(&e[1], m, window, arena[1], ab - 1) == ATM_E_ARENA);
    check(atm_engine_init(&e[1], m, window, arena[1], ab) == ATM_OK);
    live[1] = atm_engine_set_kernel(&e[1], ATM_KERNEL_PORTABLE + 1) == 0;

    atm_sampler_cfg sc;
    atm_sampler_default(&sc);
    sc.temperature = (int32_t)(s1 % 4) * 32768;      /* 0 (greedy), 0.5, 1, 1.5 */
    sc.top_k = s2 % 6;                                /* 0 = off */
    sc.top_p = 65536 - (int32_t)(s3 % 4) * 16384;     /* 1 (off), 0.75, 0.5, 0.25 */
    atm_rng rng;
    atm_rng_seed(&rng, atm_rd_u32le(b + n - 4));
    uint8_t scratch[ATM_MAX_VOCAB];
    const int V = m->cfg.vocab;
    int byte = b[n - 9] % V;
    const int steps = window + FUZZ_EXTRA_STEPS;
    for (int t = 0; t < steps; t++) {
        const int32_t *lg0 = atm_engine_step(&e[0], byte);
        check(lg0 != NULL);
        for (int k = 1; k < NK; k++) {
            if (!live[k]) continue;
            const int32_t *lg = atm_engine_step(&e[k], byte);
            check(lg != NULL && memcmp(lg, lg0, sizeof(int32_t) * (size_t)V) == 0);
        }
        for (int v = 0; v < V; v++) check(lg0[v] <= (1 << 30) && lg0[v] >= -(1 << 30));
        byte = atm_sampler_next(&sc, lg0, V, &rng, (t & 1) ? scratch : NULL);
        check(byte >= 0 && byte < V);
    }
    for (int k = 0; k < NK; k++) free(arena[k]);
}

static void run(const uint8_t *b, size_t n) {
    atm_model m;
    atm_inspect_info info;
    atm_status st = atm_model_open(&m, b, n);
    atm_container_inspect(b, n, &info);
    check(info.status == st);
    if (st != ATM_OK) return;
    check(info.header_ok && info.crc_ok && info.file_bytes == n);

    /* ATOME01 <-> ATOME02 round trip */
    const int other = m.encoding == ATM_ENC_ATOME01 ? ATM_ENC_ATOME02 : ATM_ENC_ATOME01;
    size_t need = 0, got = 0, back_len = 0;
    atm_container_convert(b, n, other, NULL, 0, &need);
    check(need > 0);
    uint8_t *conv = (uint8_t *)malloc(need);
    check(conv != NULL);
    check(atm_container_convert(b, n, other, conv, need, &got) == ATM_OK && got == need);
    atm_model m2;
    check(atm_model_open(&m2, conv, got) == ATM_OK && m2.encoding == other);
    uint8_t *back = (uint8_t *)malloc(n);
    check(back != NULL);
    check(atm_container_convert(conv, got, m.encoding, back, n, &back_len) == ATM_OK);
    check(back_len == n && memcmp(back, b, n) == 0);
    free(back);
    free(conv);

    run_engine(&m, b, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    run(data, size);
    if (size >= ATM_CONTAINER_HEADER_BYTES + 4) {
        uint32_t declared = atm_rd_u32le(data + 12);
        if (declared >= ATM_CONTAINER_HEADER_BYTES + 4 && declared <= size) {
            uint8_t *b = (uint8_t *)malloc(size);
            if (!b) return 0;
            memcpy(b, data, size);
            atm_wr_u32le(b + declared - 4, atm_crc32(b, declared - 4));
            run(b, size);
            free(b);
        }
    }
    return 0;
}
