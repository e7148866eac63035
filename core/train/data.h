/* core/train/data.h — byte corpus loader, chunking, splits, batch sampling.
 *
 * Contract. A corpus is the bytes of one file (optionally only its first
 * max_bytes), held in memory. It is viewed as n = floor(len / seq)
 * non-overlapping chunks of seq bytes (the remainder is dropped). A chunk
 * gives seq-1 predictions: inputs are its bytes 0..seq-2, targets 1..seq-1.
 *
 * Split (the reference protocol): the first floor(split * n) chunks train, the
 * rest evaluate, computed as (size_t)floor((double)split * (double)n) like
 * Python's int(split * n); 500,000 bytes / 64 = 7,812 chunks -> 7,030 / 782.
 * Any byte value is valid data (a byte model has no invalid input).
 *
 * Batch sampling draws B chunk indices uniformly WITH replacement, in order
 * b = 0..B-1, each with one atm_rng_below(rng, n) call; nothing else touches
 * the generator, so a batch sequence is fixed by the generator state.
 *
 * Errors are returned as -1 with a one-line message (no "atome: " prefix, no
 * newline) in err. */
#ifndef ATOME_TRAIN_DATA_H
#define ATOME_TRAIN_DATA_H
#include <stddef.h>
#include <stdint.h>
#include "../rng.h"
#include "../host/eval_types.h"

/* The loaded bytes of one file. */
typedef struct {
    uint8_t *bytes;   /* [n_bytes], malloc'd; NULL when n_bytes == 0 */
    size_t   n_bytes;
} atm_corpus;

/* atm_chunks, a view of consecutive seq-byte chunks: core/host/eval_types.h
 * (the engine's host side evaluates the same chunks). */

/* Reads the first max_bytes bytes of path (max_bytes == 0: the whole file).
 * Fails on a missing/unreadable file and on an empty result. */
int  atm_corpus_load(const char *path, uint64_t max_bytes, atm_corpus *c, char *err, size_t errlen);
void atm_corpus_free(atm_corpus *c);

/* Number of whole chunks of seq bytes in the corpus. */
size_t atm_chunk_count(size_t n_bytes, int seq);
/* floor(split * n) as double arithmetic; the number of training chunks. */
size_t atm_split_train_count(size_t n, double split);

/* All chunks of the corpus; fails if there is not one whole chunk. */
int atm_chunks_all(const atm_corpus *c, int seq, atm_chunks *out, char *err, size_t errlen);
/* Contiguous split: train = first floor(split*n), eval = the rest. Fails when
 * either side would be empty or split is not in (0, 1). Either out pointer may
 * be NULL. */
int atm_chunks_split(const atm_corpus *c, int seq, double split, atm_chunks *train,
                     atm_chunks *eval, char *err, size_t errlen);

/* Fills in[B][seq-1] and tgt[B][seq-1] with B chunks drawn uniformly with
 * replacement (ch->n >= 1). */
void atm_batch_sample(const atm_chunks *ch, atm_rng *rng, int B, uint8_t *in, uint8_t *tgt);
/* Copies chunks [first, first+B) of ch into in/tgt (eval batches). */
void atm_batch_range(const atm_chunks *ch, size_t first, int B, uint8_t *in, uint8_t *tgt);

#endif
