/* tests/test_generate.c — the one generator (core/generate.h) on the
 * shipped atome-60k.atome: its bytes are those of the plain loop it
 * replaced (step every prompt byte, then sample, feed back all but the
 * last) for greedy and sampled settings, with and without the engine's
 * shortcuts (feed, step_argmax); calls split anywhere give the same bytes;
 * the stop byte ends a run uncounted; flush feeds the last byte; an empty
 * prompt is one '\n'; prompt_more continues without forgetting. */
#include "check.h"
#include "core/container.h"
#include "core/engine.h"
#include "core/generate.h"
#include "core/sampler.h"
#include <string.h>

static atm_model model;
static atm_engine eng;
static void *arena;

/* The reference: the loop every front end wrote before the generator. */
static void plain_loop(const atm_sampler_cfg *c, uint32_t seed, const uint8_t *p, size_t n, uint8_t *out, int count) {
    uint8_t scratch[256];
    atm_rng r;
    atm_rng_seed(&r, seed);
    atm_engine_reset(&eng);
    const int32_t *lg = NULL;
    for (size_t i = 0; i < n; i++) lg = atm_engine_step(&eng, p[i]);
    for (int i = 0; i < count; i++) {
        int b = atm_sampler_next(c, lg, model.cfg.vocab, &r, scratch);
        out[i] = (uint8_t)b;
        if (i + 1 < count) lg = atm_engine_step(&eng, b);
    }
}

typedef struct { uint8_t *p; int n; } sink;
static int to_sink(void *ectx, int b) {
    sink *s = (sink *)ectx;
    s->p[s->n++] = (uint8_t)b;
    return 0;
}

static void check_settings(const char *t, const char *k, const char *p, uint32_t seed) {
    atm_sampler_cfg c;
    CHECK(atm_sampler_settings(&c, t, k, p) == ATM_SET_OK);
    static const uint8_t prompt[] = "Once upon a time";
    const size_t pn = sizeof prompt - 1;
    enum { N = 96 };
    uint8_t ref[N], got[N];
    plain_loop(&c, seed, prompt, pn, ref, N);
    const atm_gen_src *srcs[2] = { ATM_GEN_ENGINE, &atm_gen_engine_logits_src };
    uint8_t scratch[256];
    for (int s = 0; s < 2; s++) {
        atm_gen g;
        atm_gen_init(&g, srcs[s], &eng, model.cfg.vocab, &c, seed, scratch);
        atm_gen_prompt(&g, prompt, pn);
        sink o = { got, 0 };
        CHECK(atm_gen_run(&g, 40, to_sink, &o) == 40);      /* split: 40 + 1 + the rest */
        got[o.n++] = (uint8_t)atm_gen_next(&g);
        CHECK(atm_gen_run(&g, N - 41, to_sink, &o) == N - 41);
        CHECKF(o.n == N && memcmp(ref, got, N) == 0, "temperature %s top-k %s top-p %s, source %d: bytes differ",
               t ? t : "0", k ? k : "0", p ? p : "1", s);
        CHECK(g.count == N);
    }
}

static void check_stop_and_flush(void) {
    atm_sampler_cfg c;
    atm_sampler_default(&c);
    static const uint8_t prompt[] = "The cat";
    enum { N = 64 };
    uint8_t ref[N];
    plain_loop(&c, 1, prompt, sizeof prompt - 1, ref, N);
    int at = 10;   /* the stop byte: the 11th byte, first seen there */
    while (at < N && memchr(ref, ref[at], (size_t)at)) at++;
    CHECK(at < N);
    atm_gen g;
    atm_gen_init(&g, ATM_GEN_ENGINE, &eng, model.cfg.vocab, &c, 1, NULL);
    g.stop = ref[at];
    atm_gen_prompt(&g, prompt, sizeof prompt - 1);
    uint8_t got[N];
    sink o = { got, 0 };
    CHECKF(atm_gen_run(&g, N, to_sink, &o) == (uint64_t)at, "stopped after %d bytes, expected %d", o.n, at);
    CHECK(o.n == at && memcmp(ref, got, (size_t)at) == 0 && g.count == (uint64_t)at);
    CHECK(atm_gen_next(&g) == -1);
    /* flush: the last byte fed, the engine at prompt + n positions */
    atm_gen_init(&g, ATM_GEN_ENGINE, &eng, model.cfg.vocab, &c, 1, NULL);
    atm_gen_prompt(&g, prompt, sizeof prompt - 1);
    o.n = 0;
    atm_gen_run(&g, 5, to_sink, &o);
    CHECK(eng.pos_lo == sizeof prompt - 1 + 4);
    atm_gen_flush(&g);
    CHECK(eng.pos_lo == sizeof prompt - 1 + 5);
    /* an empty prompt is one '\n'; prompt_more goes on without forgetting */
    uint8_t a[8], b[8];
    plain_loop(&c, 1, (const uint8_t *)"\n", 1, a, 8);
    atm_gen_prompt(&g, NULL, 0);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)atm_gen_next(&g);
    CHECK(memcmp(a, b, 8) == 0);
    plain_loop(&c, 1, (const uint8_t *)"The cat", 7, a, 8);
    atm_gen_prompt(&g, (const uint8_t *)"The", 3);
    atm_gen_prompt_more(&g, (const uint8_t *)" cat", 4);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)atm_gen_next(&g);
    CHECK(memcmp(a, b, 8) == 0);
}

static void check_settings_why(void) {
    atm_sampler_cfg c;
    char why[200];
    CHECK(atm_sampler_settings_why(&c, "0.5", "abc", NULL, why, sizeof why) == ATM_SET_E_TOP_K);
    CHECK(strcmp(why, "--top-k must be an integer in 0..2147483647 (got 'abc')") == 0);
    CHECK(atm_sampler_settings_why(&c, NULL, NULL, "2", why, 20) == ATM_SET_E_TOP_P && strlen(why) == 19);
    CHECK(atm_sampler_settings_why(&c, "1", "5", "0.5", why, sizeof why) == ATM_SET_OK && c.top_k == 5);
}

int main(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/models/atome-60k.atome", ATOME_SOURCE_DIR);
    size_t len = 0;
    uint8_t *blob = check_read_file(path, &len);
    CHECKF(blob != NULL, "cannot read %s", path);
    if (!blob) return CHECK_DONE();
    CHECK(atm_model_open(&model, blob, len) == ATM_OK);
    size_t ab = atm_engine_arena_bytes(&model, 64);
    arena = malloc(ab);
    CHECK(atm_engine_init(&eng, &model, 64, arena, ab) == ATM_OK);
    check_settings(NULL, NULL, NULL, 1);
    check_settings("0.8", NULL, NULL, 7);
    check_settings("1", "40", "0.95", 42);
    check_settings("0.5", "3", NULL, 3);
    check_stop_and_flush();
    check_settings_why();
    free(arena);
    free(blob);
    return CHECK_DONE();
}
