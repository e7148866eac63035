/* core/generate.h — the one generator (freestanding C99: no malloc, no
 * stdio, no float): the prompt feed, the sampler (core/sampler.h), the stop
 * rules and the count of bytes produced, for every front end (`atome
 * generate` and `atome bench`, the wasm module's engine and float
 * generators, the firmware's semihosting and standalone runs). "The same
 * bytes on every target" rests on this one loop.
 *
 * Contract.
 *  - A source gives the logits: step(ctx, byte) feeds one byte and returns
 *    the V Q16 logits (core/engine.h) that predict the next. Optional
 *    shortcuts, used only where they give the same bytes: feed (a prompt
 *    byte whose logits nobody reads), step_argmax (step, then the byte
 *    atm_sampler_next picks at temperature 0; used only when greedy) and
 *    reset (forget every position before a prompt). ATM_GEN_ENGINE is
 *    the integer engine with all of them (ctx: an atm_engine);
 *    atm_gen_engine_logits_src has step and reset alone (a caller that
 *    reads the logits of every byte).
 *  - atm_gen_prompt resets the source, then feeds the prompt (n = 0: one
 *    '\n', as every front end does); bytes before the last go in with feed.
 *  - atm_gen_next draws the next byte: the byte drawn before it is fed back
 *    first, so the last byte of a run is never fed (byte i of n is fed
 *    only when byte i + 1 is asked for) and calls may be split anywhere.
 *    g->logits are the logits the byte was drawn from (NULL where the
 *    greedy shortcut drew it). Each non-greedy draw takes exactly one
 *    atm_rng_u32 from g->rng, seeded once by atm_gen_init.
 *  - Stop rules: atm_gen_run stops after n bytes, at the end-of-text byte
 *    g->stop (-1, the default, for none; the stop byte is neither emitted
 *    nor counted, and atm_gen_next returns -1 until more prompt comes) or
 *    when emit returns nonzero (a write failure; that byte counts).
 *    g->count is the bytes produced since the prompt: the firmware's count
 *    line prints it.
 *  - atm_gen_flush feeds the pending byte (a caller that steps on by hand,
 *    or times the feed-back of every byte). */
#ifndef ATOME_GENERATE_H
#define ATOME_GENERATE_H
#include <stddef.h>
#include <stdint.h>
#include "rng.h"
#include "sampler.h"
#include "engine.h"

typedef struct {
    const int32_t *(*step)(void *ctx, int byte);
    int (*feed)(void *ctx, int byte);          /* NULL: step */
    int (*step_argmax)(void *ctx, int byte);   /* NULL: step + atm_sampler_next */
    void (*reset)(void *ctx);                  /* NULL: nothing to forget */
} atm_gen_src;

/* The integer engine with every shortcut (ctx: an atm_engine): no table,
 * the generator calls the engine directly (no frame of its own on the
 * firmware's stack). */
#define ATM_GEN_ENGINE ((const atm_gen_src *)0)
extern const atm_gen_src atm_gen_engine_logits_src;  /* ctx: atm_engine *, step and reset only */

typedef struct {
    const atm_gen_src     *src;      /* ATM_GEN_ENGINE or a source */
    void                  *ctx;
    const atm_sampler_cfg *cfg;      /* the caller's settings (they outlive the generator) */
    uint8_t               *scratch;  /* [V] the sampler's truncation order, NULL: no top-k / top-p */
    const int32_t         *logits;   /* the logits the next byte is drawn from (see next) */
    atm_rng                rng;
    uint64_t               count;    /* bytes produced since the prompt */
    int16_t                V;        /* 1..256 */
    int16_t                stop;     /* end-of-text byte, -1: none; stopped once pending == stop */
    int16_t                next;     /* the next byte, known ahead (greedy shortcut), or -1 */
    int16_t                pending;  /* the last byte drawn, not fed back yet, or -1 */
} atm_gen;

/* emit: writes one byte; nonzero stops the run (the byte counts). */
typedef int (*atm_gen_emit_fn)(void *ectx, int byte);

/* Always inlined (on GCC and clang): the firmware's stack has no room for
 * another frame under the engine's (the micro:bit's reservation is 1,536
 * bytes), so the generator adds none; every front end compiles this one
 * text. */
#if defined(__GNUC__)
#define ATM_GEN_INLINE static inline __attribute__((always_inline))
#else
#define ATM_GEN_INLINE static inline
#endif

/* A generator on src/ctx with V bytes, the settings and the seed; stop off. */
ATM_GEN_INLINE void atm_gen_init(atm_gen *g, const atm_gen_src *src, void *ctx, int V, const atm_sampler_cfg *cfg,
                                 uint32_t seed, uint8_t *scratch) {
    g->src = src;
    g->ctx = ctx;
    g->cfg = cfg;
    g->scratch = scratch;
    g->logits = 0;
    atm_rng_seed(&g->rng, seed);
    g->count = 0;
    g->V = (int16_t)V;
    g->stop = -1;
    g->next = -1;
    g->pending = -1;
}

/* The source was laid out afresh (a model opened, V bytes): nothing fed yet.
 * The settings, the random sequence and the stop rule stay. */
ATM_GEN_INLINE void atm_gen_restart(atm_gen *g, int V) {
    g->V = (int16_t)V;
    g->logits = 0;
    g->next = -1;
    g->pending = -1;
}

/* The caller stepped the source by hand (scoring a text) and stopped with
 * `last` not fed yet (-1: everything fed; lg then the logits after the last
 * byte fed): the generator goes on from there, as after a prompt. */
ATM_GEN_INLINE void atm_gen_resume(atm_gen *g, const int32_t *lg, int last) {
    g->logits = lg;
    g->next = -1;
    g->pending = (int16_t)last;
}

/* Feeds byte b whose prediction is wanted: the next byte itself where the
 * greedy shortcut applies, else the logits to draw it from. */
ATM_GEN_INLINE void atm_gen_step_to_(atm_gen *g, int b) {
    const int greedy = g->cfg->temperature <= 0;
    if (!g->src && greedy) {
        g->next = (int16_t)atm_engine_step_argmax((atm_engine *)g->ctx, b);
        g->logits = 0;
    } else if (g->src && greedy && g->src->step_argmax) {
        g->next = (int16_t)g->src->step_argmax(g->ctx, b);
        g->logits = 0;
    } else {
        g->next = -1;
        g->logits = g->src ? g->src->step(g->ctx, b) : atm_engine_step((atm_engine *)g->ctx, b);
    }
}

ATM_GEN_INLINE void atm_gen_feed_only_(atm_gen *g, int b) {
    if (!g->src) atm_engine_feed((atm_engine *)g->ctx, b);
    else if (g->src->feed) g->src->feed(g->ctx, b);
    else g->src->step(g->ctx, b);
}

ATM_GEN_INLINE void atm_gen_feed_bytes_(atm_gen *g, const uint8_t *p, size_t n) {
    for (size_t i = 0; i + 1 < n; i++) atm_gen_feed_only_(g, p[i]);
    atm_gen_step_to_(g, p[n - 1]);
}

/* Resets the source, then feeds the prompt (n = 0: one '\n'). */
ATM_GEN_INLINE void atm_gen_prompt(atm_gen *g, const uint8_t *p, size_t n) {
    static const uint8_t newline = '\n';
    if (!g->src) atm_engine_reset((atm_engine *)g->ctx);
    else if (g->src->reset) g->src->reset(g->ctx);
    g->pending = -1;
    g->count = 0;
    if (n == 0) { p = &newline; n = 1; }
    atm_gen_feed_bytes_(g, p, n);
}

/* More prompt bytes after atm_gen_prompt or atm_gen_next, without
 * forgetting (a pending byte goes in first); n = 0 feeds nothing. */
ATM_GEN_INLINE void atm_gen_prompt_more(atm_gen *g, const uint8_t *p, size_t n) {
    if (n == 0) return;
    if (g->pending >= 0) { atm_gen_feed_only_(g, g->pending); g->pending = -1; }
    atm_gen_feed_bytes_(g, p, n);
}

/* Feeds the pending byte, if any. */
ATM_GEN_INLINE void atm_gen_flush(atm_gen *g) {
    if (g->pending >= 0) { atm_gen_step_to_(g, g->pending); g->pending = -1; }
}

/* The next byte (the one before it fed back first), or -1: stopped, or no
 * prompt fed. */
ATM_GEN_INLINE int atm_gen_next(atm_gen *g) {
    if (g->pending >= 0 && g->pending == g->stop) return -1;
    atm_gen_flush(g);
    int b = g->next;
    g->next = -1;
    if (b < 0) {
        if (!g->logits) return -1;   /* no prompt fed */
        b = atm_sampler_next(g->cfg, g->logits, g->V, &g->rng, g->scratch);
    }
    g->pending = (int16_t)b;
    if (b == g->stop) return -1;
    g->count++;
    return b;
}

/* Up to n bytes to emit (the stop rules in the contract); returns how many
 * were produced. */
ATM_GEN_INLINE uint64_t atm_gen_run(atm_gen *g, uint64_t n, atm_gen_emit_fn emit, void *ectx) {
    const uint64_t c0 = g->count;
    while (g->count - c0 < n) {
        const int b = atm_gen_next(g);
        if (b < 0 || emit(ectx, b)) break;
    }
    return g->count - c0;
}

#endif
