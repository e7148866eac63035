/* core/format.h — byte-level building blocks of the packed model formats
 * (freestanding C99: no malloc, no stdio, no libm, no float arithmetic).
 *
 * Contract.
 *  - Every multi-byte value is read and written byte by byte, little-endian,
 *    so any input pointer may sit at any address (flash, ROM, odd offsets) and
 *    results do not depend on the host's byte order or alignment rules.
 *  - Every function that reads a caller buffer takes its length and never
 *    reads past it; validators return a distinct error code (atm_fmt_err) and
 *    atm_fmt_strerror() gives a static one-line message for each.
 *  - CRC-32 is the IEEE 802.3 / zlib CRC (reflected polynomial 0xEDB88320,
 *    init and final xor 0xFFFFFFFF); atm_crc32_update() chains like zlib's
 *    crc32(): start from 0, feed pieces, the return value is the CRC so far.
 *  - ATOME01 trits ("t2"): 4 per byte, trit i in byte i/4 at bits 2*(i%4),
 *    codes 00 = 0, 01 = +1, 11 = -1; padding trits are 00. Code 10 is never
 *    written; decoding maps it to 0 (as the reference engine does) and
 *    atm_t2_check() reports it.
 *  - ATOME02 trits ("t5"): 5 per byte, byte = sum_{m=0..4} (t_m + 1) * 3^m,
 *    first trit least significant; padding trits are 0 (digit 1). Bytes
 *    243..255 are invalid: decoding maps them through the same digit split
 *    (garbage but in range -1..+1), atm_t5_check() reports them.
 *  - The legacy (headerless) ATOME01/ATOME02 file of the reference
 *    (docs/legacy-format.md): magic, then the tensors of a 3-pathway model in
 *    a fixed order with f32 scales and f32 vectors at unaligned offsets. The
 *    "plan" computes from the shape the exact size and the offset of every
 *    field; atm_legacy_validate() checks magic, exact size (too short and
 *    trailing bytes are distinct errors; the reference accepts trailing
 *    bytes, we do not), every trit code/byte, canonical padding, every scale
 *    (finite, > 0) and every f32 vector element (finite).
 *
 * Only integer operations; the divisions by 5 for ATOME02 sizes and ranges
 * become the compiler's runtime helper (__aeabi_uidiv) on ARMv6-M.
 *
 * Sizes are size_t. The shape limits below (those of atm_config_validate)
 * bound every legacy file below 2^30 bytes, so no size computation can
 * overflow even where size_t is 32 bits. */
#ifndef ATOME_FORMAT_H
#define ATOME_FORMAT_H
#include <stddef.h>
#include <stdint.h>
#include "le.h"

/* ---- error codes (0 = success) ---- */
typedef enum {
    ATM_FMT_OK = 0,
    ATM_FMT_E_ARG,         /* NULL pointer or unknown format number */
    ATM_FMT_E_SHAPE,       /* model shape outside the supported limits */
    ATM_FMT_E_MAGIC,       /* first 7 bytes are neither "ATOME01" nor "ATOME02" */
    ATM_FMT_E_TRUNCATED,   /* file shorter than the shape requires */
    ATM_FMT_E_TRAILING,    /* file longer than the shape requires */
    ATM_FMT_E_TRIT_CODE,   /* ATOME01 payload holds the unused code 10 */
    ATM_FMT_E_TRIT_BYTE,   /* ATOME02 payload holds a byte value 243..255 */
    ATM_FMT_E_PADDING,     /* padding trits of a payload's last byte are not 0 */
    ATM_FMT_E_SCALE,       /* a tensor scale is NaN, infinite, zero or negative */
    ATM_FMT_E_VECTOR,      /* an f32 vector element is NaN or infinite */
    ATM_FMT_E_CAPACITY,    /* output buffer too small */
    ATM_FMT_N_ERRORS
} atm_fmt_err;

/* Static message for an atm_fmt_err (never NULL; unknown codes get a generic one). */
const char *atm_fmt_strerror(int err);

/* little-endian scalars: core/le.h (included above) */
/* IEEE-754 binary32 bit-pattern classes (no float arithmetic involved). */
static inline int atm_f32_bits_finite(uint32_t b) { return (b & 0x7F800000u) != 0x7F800000u; }
/* finite, sign bit clear, not +0 (subnormals count as > 0) */
static inline int atm_f32_bits_positive(uint32_t b) {
    return atm_f32_bits_finite(b) && !(b & 0x80000000u) && b != 0u;
}

/* ---- CRC-32 ---- */
uint32_t atm_crc32_update(uint32_t crc, const void *p, size_t n);
static inline uint32_t atm_crc32(const void *p, size_t n) { return atm_crc32_update(0u, p, n); }

/* ---- ATOME01 trits: 4 per byte ---- */
static inline size_t atm_t2_bytes(size_t n) { return n / 4 + (n % 4 != 0); }
/* out[atm_t2_bytes(n)]; t[i] > 0 packs as +1, < 0 as -1, 0 as 0. */
void atm_t2_pack(const int8_t *t, size_t n, uint8_t *out);
/* t[n] in {-1, 0, +1}; code 10 decodes as 0. Reads atm_t2_bytes(n) bytes. */
void atm_t2_unpack(const uint8_t *in, size_t n, int8_t *t);
/* Trit i of a payload (random access; code 10 -> 0). */
static inline int atm_t2_get(const uint8_t *in, size_t i) {
    unsigned c = (in[i >> 2] >> (2u * (unsigned)(i & 3u))) & 3u;
    return c == 1u ? 1 : (c == 3u ? -1 : 0);
}
/* ATM_FMT_OK, ATM_FMT_E_TRIT_CODE or ATM_FMT_E_PADDING; *bad (may be NULL)
 * gets the index of the first offending byte. */
int atm_t2_check(const uint8_t *in, size_t n, size_t *bad);

/* ---- ATOME02 trits: 5 per byte, base 3 ---- */
static inline size_t atm_t5_bytes(size_t n) { return n / 5 + (n % 5 != 0); }
void atm_t5_pack(const int8_t *t, size_t n, uint8_t *out);
/* t[n]; reads atm_t5_bytes(n) bytes. */
void atm_t5_unpack(const uint8_t *in, size_t n, int8_t *t);
/* Trits [first, first+n) of a payload holding at least first+n trits. */
void atm_t5_unpack_range(const uint8_t *in, size_t first, size_t n, int8_t *t);
/* The five base-3 digits (0..2, least significant first) of byte b; for
 * b >= 243 the top digit is 3..5 computed the same way (callers validate). */
void atm_t5_digits(uint8_t b, uint8_t d[5]);
/* ATM_FMT_OK, ATM_FMT_E_TRIT_BYTE or ATM_FMT_E_PADDING; *bad as for t2. */
int atm_t5_check(const uint8_t *in, size_t n, size_t *bad);

/* Packed payload size for format 1 (ATOME01) or 2 (ATOME02); 0 for another format. */
size_t atm_trits_bytes(int format, size_t n);

/* ---- legacy headerless ATOME01 / ATOME02 files ---- */
#define ATM_LEGACY_MAGIC_LEN 7
/* Limits = those of atm_config_validate for the atome family. */
#define ATM_LEGACY_MAX_VOCAB 256
#define ATM_LEGACY_MAX_D     4096
#define ATM_LEGACY_MAX_L     64
#define ATM_LEGACY_MAX_K     64

typedef struct {
    int32_t vocab, d_model, n_layers, d_head, kernel;
} atm_legacy_shape;

/* Fields in file order; ATM_LF_LN_G .. ATM_LF_ROUTER repeat once per block. */
typedef enum {
    ATM_LF_EMBED = 0,   /* ternary V x d, row per token */
    ATM_LF_LN_G,        /* f32[d] */
    ATM_LF_LN_B,        /* f32[d] */
    ATM_LF_CONV,        /* ternary d x K, tap 0 = current position */
    ATM_LF_SSM_A,       /* f32[d], pre-tanh */
    ATM_LF_SSM_B,       /* f32[d] */
    ATM_LF_SSM_C,       /* f32[d] */
    ATM_LF_WQ,          /* ternary d_head x d */
    ATM_LF_WK,          /* ternary d_head x d */
    ATM_LF_WV,          /* ternary d x d */
    ATM_LF_ROUTER,      /* ternary 3 x d; rows conv, ssm, attn */
    ATM_LF_LNF_G,       /* f32[d] */
    ATM_LF_LNF_B,       /* f32[d] */
    ATM_LF_UNEMBED,     /* ternary V x d */
    ATM_LF_COUNT
} atm_legacy_field;

typedef struct {
    atm_legacy_shape shape;
    int    format;                  /* 1 = ATOME01, 2 = ATOME02 */
    size_t size;                    /* exact file size in bytes */
    size_t block0;                  /* offset of block 0 */
    size_t block_bytes;             /* bytes per block (all blocks alike) */
    size_t off[ATM_LF_COUNT];       /* absolute offset (embed, final norm, unembed)
                                       or offset within a block (block fields) */
    size_t count[ATM_LF_COUNT];     /* trits or floats in the field */
    size_t n_items;                 /* fields in the file = 10 * L + 4 */
} atm_legacy_plan;

/* One field instance. Ternary: off = the f32 scale, the payload starts at
 * off + 4 and bytes = 4 + packed size. Vector: bytes = 4 * n. */
typedef struct {
    int    field;                   /* atm_legacy_field */
    int    layer;                   /* block index, -1 outside the blocks */
    int    ternary;
    size_t off, n, bytes;
} atm_legacy_span;

int  atm_legacy_shape_check(const atm_legacy_shape *s);
/* Plan for a shape and a format (1 or 2). ATM_FMT_OK / E_ARG / E_SHAPE. */
int  atm_legacy_plan_make(const atm_legacy_shape *s, int format, atm_legacy_plan *p);
/* The idx-th field in file order (0 <= idx < p->n_items). ATM_FMT_OK or E_ARG. */
int  atm_legacy_item(const atm_legacy_plan *p, size_t idx, atm_legacy_span *s);
/* Field `field` of block `layer` (layer ignored outside the blocks). */
int  atm_legacy_span_of(const atm_legacy_plan *p, int field, int layer, atm_legacy_span *s);
const char *atm_legacy_field_name(int field); /* e.g. "ssm.a_raw" */
/* The 7 magic bytes of a format (NULL for another format). */
const uint8_t *atm_legacy_magic(int format);
/* Format from the magic: 1, 2, or 0 (ATM_FMT_E_TRUNCATED if len < 7 and the
 * bytes present are a prefix of a magic, ATM_FMT_E_MAGIC otherwise) in *err. */
int  atm_legacy_detect(const uint8_t *b, size_t len, int *err);

/* Where validation stopped. */
typedef struct {
    int    err;      /* atm_fmt_err */
    int    field;    /* atm_legacy_field, or -1 (magic, size) */
    int    layer;    /* block, or -1 */
    size_t offset;   /* file offset of the first offending byte (size checks: len) */
} atm_fmt_where;

/* Full validation of a legacy file for a shape. On success fills *plan (may
 * be NULL) for the detected format. Returns where->err (where may be NULL). */
int  atm_legacy_validate(const uint8_t *b, size_t len, const atm_legacy_shape *s,
                         atm_legacy_plan *plan, atm_fmt_where *where);

#endif
