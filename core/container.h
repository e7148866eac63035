/* core/container.h — the `.atome` packed-model container: reader (validating,
 * in place) and writer (freestanding C99: no malloc, no stdio, no libm, no
 * float arithmetic). Byte-by-byte layout: docs/format.md.
 *
 * Contract.
 *  - A container holds one model of the atome family ready for the integer
 *    engine (core/engine.h): the full config, the fixed-point formats chosen
 *    at export, a tensor table and the tensor data (ternary tensors packed as
 *    ATOME01 or ATOME02 trits, real-valued vectors as int16 with a shared
 *    power-of-two exponent), then a CRC-32 (core/format.h) of every byte
 *    before it.
 *  - Every multi-byte field is little-endian and read byte by byte, so the
 *    container may sit at any address (flash, ROM, odd offsets) and the reader
 *    never performs an unaligned or out-of-bounds access.
 *  - atm_model_open() validates, before anything is used: magic, version,
 *    declared size against the real length (truncated / trailing bytes),
 *    size limits, the CRC, every config value, every table entry (canonical
 *    order, kinds, counts, contiguous offsets, exponents, mantissas, format
 *    fields), every trit code/byte and padding, and every int16 value. Each
 *    failure class has its own atm_status and message. After a successful
 *    open the engine may read the blob without further checks; the blob must
 *    stay unchanged and alive while the model is used.
 *  - The writer emits exactly the bytes the reader accepts (it re-opens its
 *    output before returning). */
#ifndef ATOME_CONTAINER_H
#define ATOME_CONTAINER_H
#include <stddef.h>
#include <stdint.h>
#include "pathways.h"   /* ATM_PATH_* */
#include "le.h"   /* atm_rd_u16le, atm_rd_i16le, ... */

typedef enum {
    ATM_OK = 0,
    ATM_E_ARG,        /* NULL pointer, unknown encoding, bad argument */
    ATM_E_MAGIC,      /* not an .atome container (legacy ATOME01/02 files land here) */
    ATM_E_TRUNCATED,  /* fewer bytes than the header declares (or than a header needs) */
    ATM_E_OVERSIZE,   /* trailing bytes after the declared size, or a size beyond the limits */
    ATM_E_VERSION,    /* a container version this build does not read */
    ATM_E_CRC,        /* CRC-32 mismatch: the bytes were altered */
    ATM_E_HEADER,     /* inconsistent header fields (header/table/data offsets, reserved bytes) */
    ATM_E_CONFIG,     /* a model config value outside the engine's limits */
    ATM_E_TABLE,      /* tensor table inconsistent with the config */
    ATM_E_TRITS,      /* invalid trit code/byte or non-zero padding */
    ATM_E_VALUE,      /* fixed-point field or int16 value out of range */
    ATM_E_CAPACITY,   /* output buffer too small */
    ATM_E_WINDOW,     /* attention window outside 1..65535 */
    ATM_E_ARENA,      /* engine arena too small or not 4-byte aligned */
    ATM_N_STATUS
} atm_status;

/* Static one-line message for a status (never NULL). */
const char *atm_status_str(int status);

#define ATM_CONTAINER_VERSION 1
#define ATM_CONTAINER_MAGIC_LEN 8
#define ATM_CONTAINER_HEADER_BYTES 48
#define ATM_CONTAINER_ENTRY_BYTES 16
/* Largest container accepted: far above any model within the limits below
 * (atome-944k is ~230 KB) and small enough that no offset arithmetic can
 * overflow a 32-bit size_t. */
#define ATM_CONTAINER_MAX_BYTES ((uint32_t)1 << 28)

/* Engine limits, checked at open. They bound every intermediate integer
 * (docs/fixed-point.md derives the int32 headroom from them). */
#define ATM_MAX_VOCAB  256
#define ATM_MAX_D      1024
#define ATM_MAX_LAYERS 64
#define ATM_MAX_DHEAD  512
#define ATM_MAX_KERNEL 64
#define ATM_MAX_TOPK   64
#define ATM_MAX_WINDOW 65535

enum { ATM_ENC_ATOME01 = 1, ATM_ENC_ATOME02 = 2 };

/* Tensor kinds, in the canonical order of a block. */
enum {
    ATM_T_EMBED = 1,   /* trits V x d, row per byte value */
    ATM_T_LN_G,        /* int16[d]; aux = FU, fractional bits of the LN output */
    ATM_T_LN_B,        /* int16[d] */
    ATM_T_CONV,        /* trits d x K, tap 0 = current position */
    ATM_T_SSM_A,       /* int16[d] Q15: a = tanh(a_raw); aux = FS, state fractional bits */
    ATM_T_SSM_BC,      /* int16[d]: b * c_out (output scale folded into the input) */
    ATM_T_WQ,          /* trits d_head x d */
    ATM_T_WK,          /* trits d_head x d */
    ATM_T_WV,          /* trits d x d */
    ATM_T_ROUTER,      /* trits P x d, rows in pathway order conv, ssm, attn */
    ATM_T_LNF_G,       /* int16[d]; aux = FU of the final LN */
    ATM_T_LNF_B,       /* int16[d] */
    ATM_T_UNEMBED,     /* trits V x d */
    ATM_T_COUNT
};
enum { ATM_DT_TRITS = 1, ATM_DT_I16 = 2 };
#define ATM_LAYER_NONE 255

/* The routed block's tensors, declared once: the kinds of one block in
 * container (canonical) order, each with the pathway bit it belongs to
 * (0: every block has it). A block of pathways pw holds the entries whose
 * path is 0 or in pw, in this order. Read by the container's reader and
 * writer (core/container.c), the engine (core/engine.c, through m->slot)
 * and the exporter (core/train/export.c, which writes a block in this
 * order; the writer refuses any other). */
typedef struct { int8_t kind, path; } atm_block_tensor;
#define ATM_BLOCK_TENSORS 9
extern const atm_block_tensor atm_block_tensors[ATM_BLOCK_TENSORS];

typedef struct {
    int32_t vocab, d_model, n_layers;
    int32_t d_head;     /* 0 when there is no attention pathway */
    int32_t kernel;     /* 0 when there is no conv pathway */
    int32_t top_k;      /* 0 when there is no attention pathway */
    int32_t pathways;   /* ATM_PATH_* bitmask, 1..7 */
    int32_t window;     /* default attention window, 1..65535 */
    int32_t train_seq;  /* training sequence length; 0 = unknown */
    int32_t fx;         /* fractional bits of the residual stream, 0..24 */
} atm_mconfig;

/* One tensor for the writer, or a view from the reader. */
typedef struct {
    int32_t        kind, layer;  /* ATM_T_*, block index or ATM_LAYER_NONE */
    int32_t        dtype;        /* ATM_DT_* */
    uint32_t       count;        /* elements (trits or int16 values) */
    uint32_t       mant;         /* trits: alpha = mant * 2^-exp, 2^15 <= mant < 2^16 */
    int32_t        exp;          /* 0..ATM_MAX_EXP */
    int32_t        aux;          /* LN_G/LNF_G: FU; SSM_A: FS; else 0 */
    const int8_t  *trits;        /* writer, trits: count values in {-1, 0, 1} */
    const int16_t *vals;         /* writer, int16: count values in [-32767, 32767] */
    const uint8_t *data;         /* reader: packed trits / little-endian int16 */
    uint32_t       offset;       /* reader: byte offset of data in the file */
    uint32_t       bytes;        /* reader: data bytes */
} atm_tensor_view;

#define ATM_MAX_EXP 40
#define ATM_MAX_FX 24
#define ATM_MAX_FU 15
#define ATM_MAX_FS 30

/* An opened, validated model: a small view into the caller's blob. */
typedef struct {
    atm_mconfig    cfg;
    int32_t        encoding;           /* ATM_ENC_* */
    int32_t        n_paths;            /* router rows P */
    int32_t        n_tensors, per_layer;
    int8_t         slot[ATM_T_COUNT];  /* index of a kind within a block, -1 if absent */
    const uint8_t *blob;
    uint32_t       size;
    uint32_t       n_params;           /* trits + int16 values */
} atm_model;

/* The index in m's tensor table of the tensor (kind, layer): the embedding,
 * the blocks (atm_block_tensors' order), then LNF_G, LNF_B, UNEMBED. No
 * check: the caller knows m has it (atm_model_tensor checks). */
static inline int atm_model_tensor_index(const atm_model *m, int kind, int layer) {
    const int nb = m->cfg.n_layers * m->per_layer;
    switch (kind) {
    case ATM_T_EMBED: return 0;
    case ATM_T_LNF_G: return 1 + nb;
    case ATM_T_LNF_B: return 2 + nb;
    case ATM_T_UNEMBED: return 3 + nb;
    default: return 1 + layer * m->per_layer + m->slot[kind];
    }
}

/* Validates blob[len] completely (see the contract) and fills *m. */
atm_status atm_model_open(atm_model *m, const uint8_t *blob, size_t len);

/* The tensor of a kind in block `layer` (ignored for EMBED, LNF_*, UNEMBED)
 * of an opened model. ATM_OK or ATM_E_ARG if absent. */
atm_status atm_model_tensor(const atm_model *m, int kind, int layer, atm_tensor_view *t);
/* The idx-th table entry (0 <= idx < n_tensors). */
atm_status atm_model_entry(const atm_model *m, int idx, atm_tensor_view *t);

/* Rows and columns of a kind for a config (0, 0 if the kind is absent). */
void atm_tensor_shape(const atm_mconfig *c, int kind, uint32_t *rows, uint32_t *cols);
/* Number of table entries of a config (0 if the config is invalid). */
int atm_container_tensors(const atm_mconfig *c);

/* `atome eval`'s defaults for a packed model, filling what is 0: seq = the
 * training seq, else the stored window + 1, else 64; window = the stored
 * window when below seq - 1, else seq - 1 (which may exceed ATM_MAX_WINDOW:
 * the caller says so). Read by the CLI's eval and the wasm module's scorer,
 * so the page's "score your own text" equals `atome eval`. */
void atm_eval_defaults(const atm_mconfig *c, int64_t *seq, int64_t *window);
/* Config check against the engine limits: ATM_OK or ATM_E_CONFIG. */
atm_status atm_mconfig_check(const atm_mconfig *c);
/* Exact container size for a config and encoding (0 if either is invalid). */
size_t atm_container_size(const atm_mconfig *c, int encoding);

/* Writes a container: t[n] must list every tensor of the config in the
 * canonical order (docs/format.md). Needs cap >= atm_container_size(); *len
 * gets the size whenever the config is valid (also on ATM_E_CAPACITY; out
 * may then be NULL to query). Validates every field as the reader does. */
atm_status atm_container_write(const atm_mconfig *c, int encoding, const atm_tensor_view *t,
                               int n, uint8_t *out, size_t cap, size_t *len);

/* Re-encodes a valid container with another trit encoding (ATOME01 <->
 * ATOME02); trits, vectors, formats and config are kept. Same size rules as
 * the writer. */
atm_status atm_container_convert(const uint8_t *in, size_t len, int encoding,
                                 uint8_t *out, size_t cap, size_t *outlen);

/* What `atome inspect` reports. Filled as far as the header allows even when
 * validation fails (status says why; crc_ok is 1 only when the CRC was
 * computed over the declared size and matched). */
typedef struct {
    atm_status  status;          /* result of atm_model_open */
    int32_t     version;         /* -1 if unreadable */
    int32_t     encoding;        /* ATM_ENC_*, 0 if unreadable */
    int32_t     header_ok;       /* config fields readable */
    atm_mconfig cfg;
    int32_t     crc_ok;
    uint32_t    file_bytes;      /* declared size */
    uint32_t    header_bytes, table_bytes, trit_bytes, vector_bytes, crc_bytes;
    uint32_t    n_tensors;
    uint32_t    params;          /* trits + vector values */
    uint32_t    trit_params;
} atm_inspect_info;
void atm_container_inspect(const uint8_t *blob, size_t len, atm_inspect_info *out);


#endif
