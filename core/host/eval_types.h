/* core/host/eval_types.h — what an evaluation reads and reports, shared by
 * the float trainer (core/train/eval.c, data.c) and the integer engine's host
 * side (engine_host.c): a view of seq-byte chunks, a cross-entropy score and
 * router statistics. Types only. */
#ifndef ATOME_HOST_EVAL_TYPES_H
#define ATOME_HOST_EVAL_TYPES_H
#include <stddef.h>
#include <stdint.h>

/* A view of consecutive seq-byte chunks: chunk i is base[i*seq .. i*seq+seq-1].
 * Does not own memory. */
typedef struct {
    const uint8_t *base;
    size_t         n;    /* number of chunks */
    int            seq;  /* bytes per chunk (>= 2) */
} atm_chunks;

typedef struct {
    double   sum_nats;       /* total cross-entropy over all predicted bytes */
    uint64_t bytes;          /* predicted bytes = chunks * (seq-1) */
    double   nats_per_byte;  /* sum_nats / bytes */
    double   bpb;            /* nats_per_byte / ln 2 */
    double   ppl;            /* exp(nats_per_byte), per byte */
} atm_eval_result;

/* Router statistics over the evaluated positions (`atome eval --router`):
 * per layer, the mean router weight of each pathway (slots conv, ssm, attn;
 * 0 for a pathway the model does not have) and the mean router entropy
 * -sum_p w_p ln w_p in nats, over every predicted byte, summed in double in
 * position order. */
#define ATM_ROUTER_MAX_LAYERS 64
typedef struct {
    int      layers;
    uint64_t positions;
    double   weight[ATM_ROUTER_MAX_LAYERS][3];
    double   entropy[ATM_ROUTER_MAX_LAYERS];
} atm_router_stats;

#endif
