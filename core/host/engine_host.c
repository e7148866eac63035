/* core/host/engine_host.c — the integer engine's host side: evaluation of a
 * container, the words for a refused one, float logits for the sampler.
 * Contract in engine_host.h. */
#include "engine_host.h"
#include "fail.h"
#include "../engine.h"
#include "../container.h"
#include "../format.h"
#include "../explain.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- host evaluation ---- */

void atm_engine_logprobs(const int32_t *logits, int V, double *out) {
    int32_t mx = logits[0];
    for (int i = 1; i < V; i++) if (logits[i] > mx) mx = logits[i];
    double s = 0.0;
    for (int i = 0; i < V; i++) s += exp((double)(logits[i] - mx) / 65536.0);
    double lse = log(s);
    for (int i = 0; i < V; i++) out[i] = (double)(logits[i] - mx) / 65536.0 - lse;
}

int atm_engine_eval(const uint8_t *blob, size_t len, const atm_chunks *ch, int window,
                    atm_eval_result *out, char *err, size_t errlen) {
    return atm_engine_eval_router(blob, len, ch, window, out, NULL, err, errlen);
}

int atm_engine_eval_router(const uint8_t *blob, size_t len, const atm_chunks *ch, int window,
                           atm_eval_result *out, atm_router_stats *rs, char *err, size_t errlen) {
    void *arena = NULL;
    int32_t trace[ATM_ROUTER_MAX_LAYERS * 3];
    memset(out, 0, sizeof *out);
    if (rs) memset(rs, 0, sizeof *rs);
    atm_model m;
    atm_engine e;
    atm_status st = atm_model_open(&m, blob, len);
    if (st != ATM_OK) ATM_FAIL_GOTO(fail, "engine eval: %s", atm_status_str(st));
    if (ch->seq < 2 || ch->n == 0) ATM_FAIL_GOTO(fail, "engine eval: nothing to evaluate");
    size_t ab = atm_engine_arena_bytes(&m, window);
    if (!ab) ATM_FAIL_GOTO(fail, "engine eval: window %d outside 1..%d", window, ATM_MAX_WINDOW);
    arena = malloc(ab);
    if (!arena) ATM_FAIL_GOTO(fail, "engine eval: out of memory");
    st = atm_engine_init(&e, &m, window, arena, ab);
    if (st != ATM_OK) ATM_FAIL_GOTO(fail, "engine eval: %s", atm_status_str(st));
    if (rs) {
        if (m.cfg.n_layers > ATM_ROUTER_MAX_LAYERS) ATM_FAIL_GOTO(fail, "engine eval: router statistics: more than %d layers", ATM_ROUTER_MAX_LAYERS);
        rs->layers = m.cfg.n_layers;
    }
    double sum = 0.0, lp[ATM_MAX_VOCAB];
    for (size_t i = 0; i < ch->n; i++) {
        const uint8_t *b = ch->base + i * (size_t)ch->seq;
        atm_engine_reset(&e);
        for (int t = 0; t + 1 < ch->seq; t++) {
            const int32_t *lg = atm_engine_step_traced(&e, b[t], rs ? trace : NULL);
            int tgt = b[t + 1];
            if (rs) {
                atm_explain_t x;
                atm_explain(trace, rs->layers, lg, m.cfg.vocab, &x);
                for (int l = 0; l < rs->layers; l++) {
                    for (int p = 0; p < 3; p++) rs->weight[l][p] += (double)trace[3 * l + p] / 32768.0;
                    rs->entropy[l] += (double)x.entropy[l] / 65536.0;
                }
                rs->positions++;
            }
            if (tgt >= m.cfg.vocab) ATM_FAIL_GOTO(fail, "engine eval: byte %d outside the vocabulary", tgt);
            atm_engine_logprobs(lg, m.cfg.vocab, lp);
            sum -= lp[tgt];
        }
    }
    out->sum_nats = sum;
    out->bytes = (uint64_t)ch->n * (uint64_t)(ch->seq - 1);
    out->nats_per_byte = sum / (double)out->bytes;
    out->bpb = out->nats_per_byte / log(2.0);
    out->ppl = exp(out->nats_per_byte);
    if (rs && rs->positions) {
        for (int l = 0; l < rs->layers; l++) {
            for (int p = 0; p < 3; p++) rs->weight[l][p] /= (double)rs->positions;
            rs->entropy[l] /= (double)rs->positions;
        }
    }
    free(arena);
    return 0;
fail:
    free(arena);
    return -1;
}

/* ---- float logits -> Q16 sampler input ---- */

void atm_logits_q16(const float *logits, int V, int32_t *out) {
    const double lim = (double)(1 << 30);
    for (int i = 0; i < V; i++) {
        double x = (double)logits[i] * 65536.0;   /* exact: a power-of-two scaling */
        if (!(x == x)) x = -lim;                   /* NaN: never chosen */
        if (x > lim) x = lim;
        if (x < -lim) x = -lim;
        out[i] = (int32_t)nearbyint(x);
    }
}

static const int32_t *float_gen_step(void *ctx, int byte) {
    atm_float_gen *f = (atm_float_gen *)ctx;
    atm_logits_q16(f->step(f->gen, byte), f->V, f->q);
    return f->q;
}
const atm_gen_src atm_float_gen_src = { float_gen_step, 0, 0, 0 };

/* ---- why a container failed to open (CLI and wasm front end) ---- */

void atm_container_why(const uint8_t *b, size_t len, int status, char *out, size_t n) {
    uint32_t declared = len >= 16 ? atm_rd_u32le(b + 12) : 0;
    switch (status) {
    case ATM_E_TRUNCATED:
        if (len >= 16 && declared > len)
            snprintf(out, n, "truncated: %zu of the %u bytes the container declares", len, (unsigned)declared);
        else
            snprintf(out, n, "truncated: %zu bytes, shorter than the %d-byte container header", len, ATM_CONTAINER_HEADER_BYTES);
        break;
    case ATM_E_OVERSIZE:
        if (declared > ATM_CONTAINER_MAX_BYTES)
            snprintf(out, n, "oversized: the container declares %u bytes, above the %u-byte limit", (unsigned)declared,
                     (unsigned)ATM_CONTAINER_MAX_BYTES);
        else
            snprintf(out, n, "oversized: %zu bytes, %zu more than the %u the container declares (trailing data)", len,
                     len - declared, (unsigned)declared);
        break;
    case ATM_E_VERSION:
        snprintf(out, n, "unsupported container version %u (this build reads version %d)", (unsigned)atm_rd_u16le(b + 8),
                 ATM_CONTAINER_VERSION);
        break;
    case ATM_E_CRC: {
        uint32_t stored = atm_rd_u32le(b + declared - 4), actual = atm_crc32(b, declared - 4);
        snprintf(out, n, "corrupt: CRC-32 mismatch (stored 0x%08X, computed 0x%08X): the file was altered", (unsigned)stored,
                 (unsigned)actual);
        break;
    }
    default:
        snprintf(out, n, "%s", atm_status_str(status));
    }
}
