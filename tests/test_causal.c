/* tests/test_causal.c — every family's training forward is causal: changing
 * the byte at position p leaves the logits of positions < p bit-identical and
 * changes position p's. (The gradient checks cannot see a leak from the
 * future; this can.) Random-init named shapes, fp32 and ternary weights. */
#include "check.h"
#include "core/train/model.h"
#include <string.h>

static void check_family(const char *name, int quant) {
    atm_config c;
    CHECK(atm_config_by_name(name, &c) == 0);
    atm_layout L;
    CHECK(atm_layout_build(&c, &L) == 0);
    const atm_family *f = atm_family_get(c.family);
    float *w = malloc(L.n_params * sizeof(float)), *q = malloc(L.n_params * sizeof(float));
    atm_rng r; atm_rng_seed(&r, 11);
    atm_init_params(&L, w, &r);
    atm_quantize_layout(&L, quant, w, q);
    enum { B = 2, T = 33 };
    int V = c.vocab;
    uint8_t in[B * T];
    for (int i = 0; i < B * T; i++) in[i] = (uint8_t)(atm_rng_u32(&r) % (uint32_t)V);
    void *acts = f->acts_new(&c, B, T);
    CHECK(acts != NULL);
    float *base = malloc((size_t)B * T * V * sizeof(float));
    f->forward(&L, q, acts, in, NULL, B, T);
    memcpy(base, f->logits(acts), (size_t)B * T * V * sizeof(float));
    int leaks = 0, dead = 0;
    for (int p = 1; p < T; p += 3) {
        uint8_t in2[B * T];
        memcpy(in2, in, sizeof in2);
        for (int b = 0; b < B; b++) in2[b * T + p] = (uint8_t)((in[b * T + p] + 1 + p) % V);
        f->forward(&L, q, acts, in2, NULL, B, T);
        const float *lg = f->logits(acts);
        for (int b = 0; b < B; b++) {
            const float *a0 = base + (size_t)b * T * V, *a1 = lg + (size_t)b * T * V;
            if (memcmp(a0, a1, (size_t)p * V * sizeof(float)) != 0) leaks++;
            if (memcmp(a0 + (size_t)p * V, a1 + (size_t)p * V, (size_t)V * sizeof(float)) == 0) dead++;
        }
    }
    CHECKF(leaks == 0, "%s: %d future-to-past leaks", name, leaks);
    CHECKF(dead == 0, "%s: %d positions ignore their own input", name, dead);
    f->acts_free(acts);
    free(w); free(q); free(base);
}

int main(void) {
    const char *names[] = { "atome-tiny", "vanilla-tiny", "gssm-tiny", "atome-60k", "vanilla-60k", "gssm-60k" };
    for (int i = 0; i < 6; i++) {
        check_family(names[i], ATM_QUANT_FP32);
        check_family(names[i], ATM_QUANT_TERNARY);
    }
    return CHECK_DONE();
}
