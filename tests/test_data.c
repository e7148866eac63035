/* tests/test_data.c — byte corpus loader, chunking, split arithmetic, batch
 * sampling (core/train/data.c). Uses the shared corpus for the Protocol R
 * numbers (500,000 bytes / 64 = 7,812 chunks -> 7,030 / 782); FAILS if it is
 * missing. */
#include "check.h"
#include "core/train/data.h"
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64];

static const char *tmp_path(const char *name) {
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
    return buf;
}

static void write_file(const char *path, const uint8_t *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); exit(1); }
    if (n) fwrite(p, 1, n, f);
    fclose(f);
}

static void test_counts(void) {
    CHECK(atm_chunk_count(500000, 64) == 7812);
    CHECK(atm_split_train_count(7812, 0.9) == 7030);
    CHECK(7812 - atm_split_train_count(7812, 0.9) == 782);
    CHECK(atm_chunk_count(63, 64) == 0);
    CHECK(atm_chunk_count(64, 64) == 1);
    CHECK(atm_chunk_count(127, 64) == 1);
    CHECK(atm_split_train_count(10, 0.9) == 9);
    CHECK(atm_split_train_count(2, 0.9) == 1);
    CHECK(atm_split_train_count(1, 0.9) == 0);
    /* 0.7*10 is 7.000000000000001 in double; 0.3*10 is 3.0000000000000004:
     * floor gives 7 and 3 as Python's int() does. */
    CHECK(atm_split_train_count(10, 0.7) == 7);
    CHECK(atm_split_train_count(10, 0.3) == 3);
}

static void test_load_and_chunks(void) {
    uint8_t bytes[1000];
    /* Every byte value occurs (zeros too); a chunk's first byte is its index. */
    for (int i = 0; i < 1000; i++) bytes[i] = (uint8_t)(i % 64 == 0 ? i / 64 : i * 7 + 3);
    const char *p = tmp_path("bytes.bin");
    write_file(p, bytes, sizeof bytes);
    char err[512];
    atm_corpus c;

    CHECK(atm_corpus_load(p, 0, &c, err, sizeof err) == 0);
    CHECK(c.n_bytes == 1000 && memcmp(c.bytes, bytes, 1000) == 0);
    atm_corpus_free(&c);
    CHECK(atm_corpus_load(p, 100, &c, err, sizeof err) == 0);
    CHECK(c.n_bytes == 100 && memcmp(c.bytes, bytes, 100) == 0);
    atm_corpus_free(&c);
    CHECK(atm_corpus_load(p, 5000, &c, err, sizeof err) == 0);
    CHECK(c.n_bytes == 1000);

    atm_chunks all, tr, ev;
    CHECK(atm_chunks_all(&c, 64, &all, err, sizeof err) == 0);
    CHECK(all.n == 15 && all.seq == 64 && all.base == c.bytes);
    CHECK(atm_chunks_split(&c, 64, 0.9, &tr, &ev, err, sizeof err) == 0);
    CHECK(tr.n == 13 && ev.n == 2);           /* floor(0.9*15) = 13 */
    CHECK(tr.base == c.bytes && ev.base == c.bytes + 13 * 64);
    CHECK(atm_chunks_split(&c, 64, 0.5, &tr, &ev, err, sizeof err) == 0);
    CHECK(tr.n == 7 && ev.n == 8);

    /* Inputs are bytes 0..seq-2 of a chunk, targets 1..seq-1. */
    uint8_t in[3 * 63], tgt[3 * 63];
    atm_batch_range(&ev, 0, 2, in, tgt);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 63; t++) {
            CHECK(in[b * 63 + t] == bytes[(7 + b) * 64 + t]);
            CHECK(tgt[b * 63 + t] == bytes[(7 + b) * 64 + t + 1]);
        }

    /* Sampling: indices come from atm_rng_below(n) in batch order. */
    atm_rng r1, r2;
    atm_rng_seed(&r1, 42);
    atm_rng_seed(&r2, 42);
    atm_batch_sample(&all, &r1, 3, in, tgt);
    for (int b = 0; b < 3; b++) {
        uint32_t idx = atm_rng_below(&r2, 15);
        CHECK(memcmp(in + b * 63, bytes + idx * 64, 63) == 0);
        CHECK(memcmp(tgt + b * 63, bytes + idx * 64 + 1, 63) == 0);
    }
    CHECK(memcmp(&r1, &r2, sizeof r1) == 0);   /* nothing else consumed the generator */

    /* Uniform with replacement: 150,000 draws over 15 chunks, each count
     * within 6 standard deviations (sd = sqrt(n p (1-p)) ~ 94). */
    size_t counts[15] = { 0 };
    atm_rng_seed(&r1, 7);
    for (int i = 0; i < 50000; i++) {
        atm_batch_sample(&all, &r1, 3, in, tgt);
        for (int b = 0; b < 3; b++) if (in[b * 63] < 15) counts[in[b * 63]]++;
    }
    for (int k = 0; k < 15; k++) CHECKF(counts[k] > 10000 - 6 * 94 && counts[k] < 10000 + 6 * 94, "chunk %d drawn %zu times", k, counts[k]);
    atm_corpus_free(&c);
}

static void test_errors(void) {
    char err[512];
    atm_corpus c;
    err[0] = 0;
    CHECK(atm_corpus_load(tmp_path("does-not-exist.txt"), 0, &c, err, sizeof err) == -1);
    CHECKF(strstr(err, "cannot open") != NULL, "%s", err);
    CHECK(c.bytes == NULL && c.n_bytes == 0);

    write_file(tmp_path("empty.txt"), NULL, 0);
    CHECK(atm_corpus_load(tmp_path("empty.txt"), 0, &c, err, sizeof err) == -1);
    CHECKF(strstr(err, "empty") != NULL, "%s", err);

    CHECK(atm_corpus_load(tmpdir, 0, &c, err, sizeof err) == -1);   /* a directory */
    CHECKF(strstr(err, "cannot") != NULL, "%s", err);

    const uint8_t small[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    write_file(tmp_path("short.txt"), small, sizeof small);
    CHECK(atm_corpus_load(tmp_path("short.txt"), 0, &c, err, sizeof err) == 0);
    atm_chunks a, t, e;
    CHECK(atm_chunks_all(&c, 64, &a, err, sizeof err) == -1);
    CHECKF(strstr(err, "fewer than one 64-byte chunk") != NULL, "%s", err);
    CHECK(atm_chunks_split(&c, 64, 0.9, &t, &e, err, sizeof err) == -1);
    /* 10 bytes at seq 5 = 2 chunks: split 0.9 -> 1/1, split 0.4 -> 0 train. */
    CHECK(atm_chunks_split(&c, 5, 0.9, &t, &e, err, sizeof err) == 0 && t.n == 1 && e.n == 1);
    CHECK(atm_chunks_split(&c, 5, 0.4, &t, &e, err, sizeof err) == -1);
    CHECKF(strstr(err, "no training chunk") != NULL, "%s", err);
    /* 10 bytes at seq 10 = 1 chunk: split 0.9 -> 0 train. seq 3 -> 3 chunks,
     * split 0.99 -> 2 train, 1 eval. */
    CHECK(atm_chunks_split(&c, 10, 0.9, &t, &e, err, sizeof err) == -1);
    CHECK(atm_chunks_split(&c, 3, 0.99, &t, &e, err, sizeof err) == 0 && t.n == 2 && e.n == 1);
    CHECK(atm_chunks_split(&c, 5, 0.0, &t, &e, err, sizeof err) == -1);
    CHECK(atm_chunks_split(&c, 5, 1.0, &t, &e, err, sizeof err) == -1);
    CHECK(atm_chunks_all(&c, 1, &a, err, sizeof err) == -1);  /* seq 1 predicts nothing */
    atm_corpus_free(&c);
}

static void test_shared_corpus(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/data/tinystories-train.txt", check_shared_dir());
    char err[512];
    atm_corpus c;
    int rc = atm_corpus_load(path, 500000, &c, err, sizeof err);
    CHECKF(rc == 0, "shared corpus missing: %s", err);
    if (rc) return;
    CHECK(c.n_bytes == 500000);
    atm_chunks t, e;
    CHECK(atm_chunks_split(&c, 64, 0.9, &t, &e, err, sizeof err) == 0);
    CHECK(t.n == 7030 && e.n == 782);
    CHECK(e.base == c.bytes + 7030 * 64);
    CHECK((uint64_t)e.n * 63 == 49266);      /* predicted eval bytes, as the reference */
    atm_corpus_free(&c);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/atome-test-data-XXXXXX");
    if (!mkdtemp(tmpdir)) { perror("mkdtemp"); return 1; }
    test_counts();
    test_load_and_chunks();
    test_errors();
    test_shared_corpus();
    unlink(tmp_path("bytes.bin"));
    unlink(tmp_path("empty.txt"));
    unlink(tmp_path("short.txt"));
    rmdir(tmpdir);
    return CHECK_DONE();
}
