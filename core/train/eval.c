/* core/train/eval.c — held-out evaluation (mean cross-entropy per predicted
 * byte over non-overlapping chunks) and the float sampler of `atome generate`.
 * See trainer.h for both contracts. */
#include "trainer.h"
#include "../host/fail.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Adds the router weights of the last forward (rows rows of B*T) to *rs. */
static void router_add(const atm_layout *L, void *acts, int rows, atm_router_stats *rs) {
    size_t stride;
    int P;
    const float *r = atm_atome_router_weights(acts, &stride, &P);
    int slot[3], np = 0;
    for (int b = 0; b < 3; b++) if (L->cfg.pathways & (1 << b)) slot[np++] = b;
    for (int l = 0; l < L->cfg.n_layers; l++) {
        const float *rl = r + (size_t)l * stride;
        for (int n = 0; n < rows; n++) {
            const float *row = rl + (size_t)n * P;
            double h = 0.0;
            for (int p = 0; p < P; p++) {
                double x = row[p];
                rs->weight[l][slot[p]] += x;
                if (x > 0.0) h -= x * log(x);
            }
            rs->entropy[l] += h;
        }
    }
    rs->positions += (uint64_t)rows;
}

int atm_eval_chunks(const atm_layout *L, const float *w, int quant, const atm_chunks *ch,
                    int batch, atm_eval_result *out, char *err, size_t errlen) {
    return atm_eval_chunks_router(L, w, quant, ch, batch, out, NULL, err, errlen);
}

/* What an evaluation needs before it starts: rs (when given) zeroed and
 * sized, the model family built, chunks to score. 0, or -1 with the reason. */
static int eval_check(const atm_layout *L, const atm_chunks *ch, atm_router_stats *rs, char *err, size_t errlen) {
    if (rs) {
        memset(rs, 0, sizeof *rs);
        if (L->cfg.family != ATM_FAMILY_ATOME) ATM_FAIL("router statistics need an atome-family model");
        if (L->cfg.n_layers > ATM_ROUTER_MAX_LAYERS) ATM_FAIL("router statistics: more than %d layers", ATM_ROUTER_MAX_LAYERS);
        rs->layers = L->cfg.n_layers;
    }
    const atm_family *fam = atm_family_get(L->cfg.family);
    if (!fam || !fam->acts_new || !fam->forward) ATM_FAIL("model family '%s' is not built", atm_family_name(L->cfg.family));
    if (ch->seq < 2 || ch->n == 0) ATM_FAIL("nothing to evaluate");
    if (L->cfg.family == ATM_FAMILY_VANILLA && ch->seq - 1 > L->cfg.max_seq)
        ATM_FAIL("seq %d needs %d positions but the model has %d", ch->seq, ch->seq - 1, (int)L->cfg.max_seq);
    return 0;
}

/* The summed cross-entropy (nats) of chunks [first, first + b) of ch with
 * the b-row activations acts; the router weights added to rs (when given). */
static double eval_batch(const atm_family *fam, const atm_layout *L, const float *weff, void *acts, const atm_chunks *ch,
                         size_t first, int b, int T, uint8_t *in, uint8_t *tgt, atm_router_stats *rs) {
    atm_batch_range(ch, first, b, in, tgt);
    double mean = fam->forward(L, weff, acts, in, tgt, b, T);
    if (rs) router_add(L, acts, b * T, rs);
    return mean * (double)b * (double)T;
}

/* The result of sum nats over ch's chunks; rs's sums made means. */
static void eval_finish(const atm_chunks *ch, double sum, atm_eval_result *out, atm_router_stats *rs) {
    const int T = ch->seq - 1;
    if (rs && rs->positions) {
        for (int l = 0; l < rs->layers; l++) {
            for (int p = 0; p < 3; p++) rs->weight[l][p] /= (double)rs->positions;
            rs->entropy[l] /= (double)rs->positions;
        }
    }
    out->sum_nats = sum;
    out->bytes = (uint64_t)ch->n * (uint64_t)T;
    out->nats_per_byte = sum / (double)out->bytes;
    out->bpb = out->nats_per_byte / log(2.0);
    out->ppl = exp(out->nats_per_byte);
}

int atm_eval_chunks_router(const atm_layout *L, const float *w, int quant, const atm_chunks *ch,
                           int batch, atm_eval_result *out, atm_router_stats *rs, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    if (eval_check(L, ch, rs, err, errlen)) return -1;
    const atm_family *fam = atm_family_get(L->cfg.family);
    if (batch < 1) batch = 1;
    if ((size_t)batch > ch->n) batch = (int)ch->n;
    int T = ch->seq - 1;
    size_t full = ch->n / (size_t)batch;
    int rem = (int)(ch->n % (size_t)batch);
    float *weff = (float *)malloc(L->n_params * sizeof(float));
    uint8_t *in = (uint8_t *)malloc((size_t)batch * (size_t)T);
    uint8_t *tgt = (uint8_t *)malloc((size_t)batch * (size_t)T);
    void *acts = fam->acts_new(&L->cfg, batch, T);
    /* The last, smaller batch gets its own activations: a family is only
     * promised to run the B it was allocated for. */
    void *acts_rem = rem ? fam->acts_new(&L->cfg, rem, T) : NULL;
    int rc = 0;
    if (!weff || !in || !tgt || !acts || (rem && !acts_rem)) {
        if (err && errlen) snprintf(err, errlen, "out of memory for evaluation");
        rc = -1;
        goto done;
    }
    atm_quantize_layout(L, quant, w, weff);
    double sum = 0.0;
    for (size_t i = 0; i < full; i++) sum += eval_batch(fam, L, weff, acts, ch, i * (size_t)batch, batch, T, in, tgt, rs);
    if (rem) sum += eval_batch(fam, L, weff, acts_rem, ch, full * (size_t)batch, rem, T, in, tgt, rs);
    eval_finish(ch, sum, out, rs);
done:
    if (acts) fam->acts_free(acts);
    if (acts_rem) fam->acts_free(acts_rem);
    free(weff); free(in); free(tgt);
    return rc;
}

int atm_sample_logits(const float *logits, int V, float temperature, int top_k, float top_p,
                      atm_rng *rng) {
    if (V < 1) return 0;
    if (V > 256) V = 256;
    if (!(temperature > 0.0f)) {
        int best = 0;
        for (int i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
        return best;
    }
    double p[256];
    int idx[256];
    double mx = logits[0];
    for (int i = 1; i < V; i++) if (logits[i] > mx) mx = logits[i];
    double sum = 0.0;
    for (int i = 0; i < V; i++) {
        p[i] = exp(((double)logits[i] - mx) / (double)temperature);
        sum += p[i];
        idx[i] = i;
    }
    for (int i = 0; i < V; i++) p[i] /= sum;
    /* Insertion sort by probability descending, index ascending on ties:
     * V <= 256, once per generated byte. */
    for (int i = 1; i < V; i++) {
        int k = idx[i];
        int j = i - 1;
        while (j >= 0 && (p[idx[j]] < p[k] || (p[idx[j]] == p[k] && idx[j] > k))) { idx[j + 1] = idx[j]; j--; }
        idx[j + 1] = k;
    }
    int keep = V;
    if (top_k > 0 && top_k < keep) keep = top_k;
    if (top_p < 1.0f) {
        /* Nucleus over the top-k distribution renormalised (as HF chains them). */
        double mk = 0.0;
        for (int j = 0; j < keep; j++) mk += p[idx[j]];
        double c = 0.0;
        int j = 0;
        while (j < keep) { c += p[idx[j]]; j++; if (c >= (double)top_p * mk) break; }
        if (j < 1) j = 1;
        keep = j;
    }
    double mass = 0.0;
    for (int j = 0; j < keep; j++) mass += p[idx[j]];
    double u = (double)(atm_rng_u32(rng) >> 8) * (1.0 / 16777216.0) * mass;
    double c = 0.0;
    for (int j = 0; j < keep; j++) {
        c += p[idx[j]];
        if (u < c) return idx[j];
    }
    return idx[keep - 1];
}
