/* core/engine_select.h — internal interface between the integer model
 * (core/engine.c) and the kernel selection (core/engine_select.c). Not a
 * public header: front ends use engine.h.
 *
 * The model asks for one thing per step: a kernel set (atm_kset), the one
 * table of function pointers that every product and every elementwise loop
 * of the step goes through. engine_select.c picks it (atm_select_kset: the
 * forced or best kernel this build and CPU have that fits the model's
 * width), prepares each LayerNorm output for its row kernel (atm_vin_prep)
 * and runs the ternary products (atm_matvec, atm_matvecs). Which sets a
 * build has is fixed at compile time by the target (the ATM_* feature
 * macros below); which one a step runs, by that table alone. */
#ifndef ATOME_ENGINE_SELECT_H
#define ATOME_ENGINE_SELECT_H
#include "engine.h"
#include "engine_kernels.h"
#include "le.h"

/* ---- what this build has (the row kernels; engine_kernels.h adds
 * ATM_T2_SIMD, ATM_EK_X86 and ATM_EK_WASM) ---- */

/* the pair-sum table row kernel (and the byte tables): everywhere but the
 * Cortex-M0, whose 16 KiB of RAM have no room for its 4 KiB stack table;
 * d <= ATM_LUT_MAX_D (defined in every build: core/cost.c's estimate for
 * any board reads it) */
#define ATM_LUT_MAX_D 128
#if !defined(ATM_ENGINE_PORTABLE) && !defined(__ARM_ARCH_6M__)
#define ATM_T2_LUT 1
/* ATOME02 rows re-encoded as ATOME01 for the row kernels (not on the M0) */
#define ATM_T5_RECODE 1
#endif
/* the bit-plane row kernel: everywhere but the portable engine */
#ifndef ATM_ENGINE_PORTABLE
#define ATM_PLANES 1
#endif
#ifdef ATM_SMALL_RAM
#define ATM_PLANE_COLS 32
#else
#define ATM_PLANE_COLS 128
#endif
/* the Cortex-M3 / M4 kernel set (engine_m3.c, engine_m3.S) */
#if (defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__)) && !defined(ATM_ENGINE_PORTABLE)
#define ATM_KS_M3 1
#endif
/* the Cortex-M0 / M0+ kernel set (engine_m0.c, engine_m0.S) */
#if defined(__ARM_ARCH_6M__) && !defined(ATM_ENGINE_PORTABLE)
#define ATM_KS_M0 1
#endif

/* trits per conv chunk: the portable chunk (ATM_EK_CH) fits a small stack;
 * 1024 on x86 (a 1 KiB stack buffer); 320 on the M3 (64 channels of 5,
 * engine_m3.S's loop). ATM_CONV_CH_MAX: the largest a set of this build asks. */
#define ATM_CONV_CH_X86 1024
#define ATM_CONV_CH_M3 320
#if defined(ATM_EK_X86)
#define ATM_CONV_CH_MAX ATM_CONV_CH_X86
#elif defined(ATM_KS_M3)
#define ATM_CONV_CH_MAX ATM_CONV_CH_M3
#else
#define ATM_CONV_CH_MAX ATM_EK_CH
#endif

/* ---- tensor views ---- */

/* The fields of a tensor the engine uses, read straight from its table
 * entry (the reader validated the table; docs/format.md §3). */
typedef struct {
    const uint8_t *data;
    const uint8_t *en;         /* the table entry (atm_tview_bytes) */
    uint32_t mant;
    int exp, aux;
} atm_tview;

/* the tensor of a kind (present: the caller checked the pathways) */
static inline atm_tview atm_tensor(const atm_model *m, int kind, int layer) {
    const int idx = atm_model_tensor_index(m, kind, layer);
    const uint8_t *en = m->blob + ATM_CONTAINER_HEADER_BYTES + (size_t)idx * ATM_CONTAINER_ENTRY_BYTES;
    atm_tview t;
    t.data = m->blob + atm_rd_u32le(en + 12);
    t.aux = en[3];
    t.exp = en[4];
    t.mant = atm_rd_u16le(en + 6);
    t.en = en;
    return t;
}

/* ---- kernel sets ---- */

typedef struct atm_vin atm_vin;
typedef struct atm_kset atm_kset;

/* A kernel set: the row kernel of the ternary products and the
 * elementwise and attention kernels (engine_kernels.h). prep fills the
 * input's prepared form once per LayerNorm output (used by up to five
 * products); rows is the row kernel (NULL: every product goes the portable
 * way, the trits decoded); matvecs runs several products of one input
 * at once (NULL: one by one; see atm_matvecs); t5 re-encodes ATOME02 rows for it (NULL:
 * ATOME02 products go the portable way); topk is the x86 top-k (NULL none;
 * see engine.c's select_topk); conv_ch as above. */
struct atm_kset {
    int kernel;                  /* the ATM_KERNEL_* it is (the byte tables: ATM_KERNEL_LUT) */
    void (*prep)(atm_vin *in, const int16_t *x, uint32_t d, int32_t *tab);
    void (*rows)(const uint8_t *b, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out);
    void (*matvecs)(const atm_tview *T, const uint32_t *rows, int nm, uint32_t cols, atm_vin *in, int32_t *out);
    void (*t5)(const uint8_t *p, uint32_t nbytes, uint32_t g0, uint32_t ng, uint8_t *out);
    void (*dots)(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);
    void (*mix)(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out);
    void (*addsc)(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
    void (*scale)(int32_t *v, int n, int32_t mul, int s);
    uint8_t (*quant32)(const int32_t *src, int n, int8_t *dst);
    uint8_t (*quant16)(const int16_t *src, int n, int8_t *dst);
    void (*ln_stats)(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);
    int64_t (*ln_center)(const int32_t *x, int d, int32_t mean, int k, int16_t *u);
    void (*ln_out)(int16_t *u, const uint8_t *g, const uint8_t *b, int d, int32_t r15, int sg, int sb);
    void (*ssm)(int32_t *s, const uint8_t *a, const uint8_t *bc, const int16_t *u, int d, int sb);
    void (*conv)(const int8_t *t, int K, int nc, const int16_t *u, const int8_t *ring, int ld,
                 const uint8_t *rexp, int next, int kh, int taps, int32_t *acc);
    void (*scores)(const int32_t *dots, const uint8_t *kexp, int n, int64_t ms, int sbase, int32_t *out);
    int conv_ch;
    void (*softmax)(const int32_t *z, int n, int32_t *p, uint32_t *e);
    int (*topk)(const int32_t *sc, int n, int k, int32_t *sel_s, int32_t *sel_t);
};

/* A product input: the int16 vector, the set whose row kernel runs on it
 * and what that kernel prepared from the vector. */
struct atm_vin {
    const int16_t *x;            /* [cols] */
    const atm_kset *ks;
#ifdef ATM_T2_SIMD
    int16_t xd[ATM_MAX_D];       /* SSE2: xd[64 k + 16 p + i] = x[64 k + 4 i + p] */
#endif
#ifdef ATM_EK_X86
    atm_ek_vec xv;               /* AVX2 / AVX-512 */
#endif
#ifdef ATM_EK_WASM
    atm_ek_wvec wv;              /* wasm SIMD128 */
#endif
#ifdef ATM_T2_LUT
    int32_t lut[ATM_LUT_MAX_D / 2 * 16];
    const int32_t *t8;           /* the byte tables (in the engine's table RAM) */
#endif
#ifdef ATM_PLANES
    int32_t pchunk;              /* the column chunk whose tables ptab holds, -1 none */
    uintptr_t oxd;               /* offset stream: a model byte b's pair at oxd + 2 b; 0 none */
    int32_t ptab[ATM_PLANE_COLS * 4];
#endif
};

/* The set a step of e runs and the table RAM it uses (NULL none). */
const atm_kset *atm_select_kset(const atm_engine *e, int32_t **tab);

/* Prepares in for the products of x[d] (a LayerNorm output) with set ks. */
void atm_vin_prep(atm_vin *in, const atm_engine *e, const atm_kset *ks, const int16_t *x, int d, int32_t *tab);

/* out[r] = sum_c T[r][c] * x[c] for r < rows (T is rows x cols). */
void atm_matvec(const atm_tview *T, int enc, uint32_t rows, uint32_t cols, atm_vin *in, int32_t *out);

/* nm products of the same input, their sums one after another in out (the
 * bit-plane kernel builds a chunk's tables once for all of them). */
void atm_matvecs(const atm_tview *T, const uint32_t *rows, int nm, int enc, uint32_t cols, atm_vin *in,
                 int32_t *out);

/* The conv trits of layer l decoded into the table RAM (atm_engine_set_tables), or NULL. */
const int8_t *atm_conv_cache(const atm_engine *e, int l);

#endif
