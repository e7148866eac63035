/* core/train/data.c — byte corpus loader, chunking, contiguous split, batch
 * sampling. See data.h for the contract. */
#include "data.h"
#include "../host/fail.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


int atm_corpus_load(const char *path, uint64_t max_bytes, atm_corpus *c, char *err, size_t errlen) {
    c->bytes = NULL;
    c->n_bytes = 0;
    if ((uint64_t)(size_t)max_bytes != max_bytes) max_bytes = 0; /* beyond the address space: read all */
    FILE *f = fopen(path, "rb");
    if (!f) ATM_FAIL("cannot open data file '%s': %s", path, strerror(errno));
    /* Read in growing blocks: works for pipes and files alike and never
     * trusts a size reported before reading. */
    size_t cap = 0, n = 0;
    uint8_t *buf = NULL;
    for (;;) {
        if (max_bytes && n >= max_bytes) break;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : (size_t)1 << 16;
            if (max_bytes && ncap > max_bytes) ncap = (size_t)max_bytes;
            if (ncap <= cap) { free(buf); fclose(f); ATM_FAIL("data file '%s' is too large", path); }
            uint8_t *nb = (uint8_t *)realloc(buf, ncap);
            if (!nb) { free(buf); fclose(f); ATM_FAIL("out of memory reading '%s'", path); }
            buf = nb;
            cap = ncap;
        }
        size_t want = cap - n;
        size_t got = fread(buf + n, 1, want, f);
        n += got;
        if (got < want) {
            if (ferror(f)) {
                int e = errno;
                free(buf); fclose(f);
                ATM_FAIL("cannot read data file '%s': %s", path, e ? strerror(e) : "read error");
            }
            break;
        }
    }
    fclose(f);
    if (n == 0) { free(buf); ATM_FAIL("data file '%s' is empty", path); }
    c->bytes = buf;
    c->n_bytes = n;
    return 0;
}

void atm_corpus_free(atm_corpus *c) {
    free(c->bytes);
    c->bytes = NULL;
    c->n_bytes = 0;
}

size_t atm_chunk_count(size_t n_bytes, int seq) {
    return seq >= 1 ? n_bytes / (size_t)seq : 0;
}

size_t atm_split_train_count(size_t n, double split) {
    double t = floor(split * (double)n);
    if (t < 0.0) return 0;
    if (t > (double)n) return n;
    return (size_t)t;
}

int atm_chunks_all(const atm_corpus *c, int seq, atm_chunks *out, char *err, size_t errlen) {
    if (seq < 2) ATM_FAIL("seq must be at least 2 (got %d)", seq);
    size_t n = atm_chunk_count(c->n_bytes, seq);
    if (n == 0) ATM_FAIL("data has %zu bytes, fewer than one %d-byte chunk", c->n_bytes, seq);
    if (n > (size_t)UINT32_MAX) ATM_FAIL("data has more than 2^32-1 chunks"); /* atm_rng_below is 32-bit */
    out->base = c->bytes;
    out->n = n;
    out->seq = seq;
    return 0;
}

int atm_chunks_split(const atm_corpus *c, int seq, double split, atm_chunks *train,
                     atm_chunks *eval, char *err, size_t errlen) {
    if (!(split > 0.0 && split < 1.0)) ATM_FAIL("split must be strictly between 0 and 1 (got %g)", split);
    atm_chunks all;
    if (atm_chunks_all(c, seq, &all, err, errlen)) return -1;
    size_t nt = atm_split_train_count(all.n, split);
    if (nt == 0) ATM_FAIL("split %g of %zu chunks of %d bytes leaves no training chunk", split, all.n, seq);
    if (nt == all.n) ATM_FAIL("split %g of %zu chunks of %d bytes leaves no eval chunk", split, all.n, seq);
    if (train) { train->base = all.base; train->n = nt; train->seq = seq; }
    if (eval) { eval->base = all.base + nt * (size_t)seq; eval->n = all.n - nt; eval->seq = seq; }
    return 0;
}

static void copy_chunk(const uint8_t *chunk, int seq, uint8_t *in, uint8_t *tgt) {
    memcpy(in, chunk, (size_t)(seq - 1));
    memcpy(tgt, chunk + 1, (size_t)(seq - 1));
}

void atm_batch_sample(const atm_chunks *ch, atm_rng *rng, int B, uint8_t *in, uint8_t *tgt) {
    size_t T = (size_t)(ch->seq - 1);
    for (int b = 0; b < B; b++) {
        size_t idx = (size_t)atm_rng_below(rng, (uint32_t)ch->n);
        copy_chunk(ch->base + idx * (size_t)ch->seq, ch->seq, in + (size_t)b * T, tgt + (size_t)b * T);
    }
}

void atm_batch_range(const atm_chunks *ch, size_t first, int B, uint8_t *in, uint8_t *tgt) {
    size_t T = (size_t)(ch->seq - 1);
    for (int b = 0; b < B; b++)
        copy_chunk(ch->base + (first + (size_t)b) * (size_t)ch->seq, ch->seq,
                   in + (size_t)b * T, tgt + (size_t)b * T);
}
