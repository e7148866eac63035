/* core/format.c — CRC-32, ATOME01/ATOME02 trit packing and the legacy
 * headerless layout walker. Contract in format.h; layout in
 * docs/legacy-format.md. Freestanding: no library calls at all. */
#include "format.h"

static const char *const MESSAGES[ATM_FMT_N_ERRORS] = {
    "ok",
    "invalid argument (NULL pointer or unknown format)",
    "model shape outside the supported limits",
    "bad magic: not an ATOME01/ATOME02 file",
    "truncated: file shorter than the model shape requires",
    "oversized: trailing bytes after the last tensor",
    "invalid ATOME01 trit code 10",
    "invalid ATOME02 byte (value 243..255)",
    "non-zero padding trits in a packed tensor",
    "tensor scale is not a finite positive number",
    "non-finite value in a float vector",
    "output buffer too small",
};

const char *atm_fmt_strerror(int err) {
    if (err < 0 || err >= ATM_FMT_N_ERRORS) return "unknown format error";
    return MESSAGES[err];
}

/* ---- CRC-32, 4 bits at a time: a 64-byte table instead of 1 KiB keeps
 * flash use small on the MCU targets; T[i] is the CRC register after
 * shifting nibble i through the reflected polynomial 0xEDB88320 (checked
 * against the bitwise definition in tests/test_format.c). */
static const uint32_t CRC_NIBBLE[16] = {
    0x00000000u, 0x1DB71064u, 0x3B6E20C8u, 0x26D930ACu,
    0x76DC4190u, 0x6B6B51F4u, 0x4DB26158u, 0x5005713Cu,
    0xEDB88320u, 0xF00F9344u, 0xD6D6A3E8u, 0xCB61B38Cu,
    0x9B64C2B0u, 0x86D3D2D4u, 0xA00AE278u, 0xBDBDF21Cu,
};

uint32_t atm_crc32_update(uint32_t crc, const void *p, size_t n) {
    const uint8_t *b = (const uint8_t *)p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= b[i];
        crc = (crc >> 4) ^ CRC_NIBBLE[crc & 15u];
        crc = (crc >> 4) ^ CRC_NIBBLE[crc & 15u];
    }
    return ~crc;
}

/* ---- ATOME01 ---- */
static unsigned t2_code(int8_t t) { return t > 0 ? 1u : (t < 0 ? 3u : 0u); }

void atm_t2_pack(const int8_t *t, size_t n, uint8_t *out) {
    size_t nb = atm_t2_bytes(n);
    for (size_t j = 0; j < nb; j++) {
        unsigned byte = 0;
        for (unsigned k = 0; k < 4; k++) {
            size_t i = 4 * j + k;
            if (i < n) byte |= t2_code(t[i]) << (2 * k);
        }
        out[j] = (uint8_t)byte;
    }
}

void atm_t2_unpack(const uint8_t *in, size_t n, int8_t *t) {
    for (size_t i = 0; i < n; i++) t[i] = (int8_t)atm_t2_get(in, i);
}

int atm_t2_check(const uint8_t *in, size_t n, size_t *bad) {
    size_t nb = atm_t2_bytes(n);
    for (size_t j = 0; j < nb; j++) {
        unsigned b = in[j];
        /* a 2-bit code is 10 iff its high bit is set and its low bit clear */
        if ((b & 0xAAu) & ~((b & 0x55u) << 1)) { if (bad) *bad = j; return ATM_FMT_E_TRIT_CODE; }
    }
    if (n % 4 && (in[nb - 1] >> (2 * (n % 4)))) { if (bad) *bad = nb - 1; return ATM_FMT_E_PADDING; }
    return ATM_FMT_OK;
}

/* ---- ATOME02 ---- */
void atm_t5_digits(uint8_t b, uint8_t d[5]) {
    unsigned x = b;
    for (int m = 0; m < 4; m++) {
        /* x / 3 as (x * 171) >> 9, exact for x <= 255 (all 256 values are
         * checked against division in tests/test_format.c): no divide
         * instruction or libgcc helper on the Cortex-M0. */
        unsigned q = (x * 171u) >> 9;
        d[m] = (uint8_t)(x - 3u * q);
        x = q;
    }
    d[4] = (uint8_t)x;
}

void atm_t5_pack(const int8_t *t, size_t n, uint8_t *out) {
    size_t nb = atm_t5_bytes(n);
    for (size_t j = 0; j < nb; j++) {
        unsigned byte = 0, pw = 1;
        for (unsigned k = 0; k < 5; k++, pw *= 3u) {
            size_t i = 5 * j + k;
            int v = i < n ? (t[i] > 0 ? 1 : (t[i] < 0 ? -1 : 0)) : 0;
            byte += (unsigned)(v + 1) * pw;
        }
        out[j] = (uint8_t)byte;
    }
}

void atm_t5_unpack_range(const uint8_t *in, size_t first, size_t n, int8_t *t) {
    if (n == 0) return;
    size_t j = first / 5;
    unsigned k = (unsigned)(first - 5 * j);
    uint8_t d[5];
    atm_t5_digits(in[j], d);
    for (size_t i = 0; i < n; i++) {
        if (k == 5) { k = 0; atm_t5_digits(in[++j], d); }
        /* a digit above 2 only arises from an invalid byte; clamp so callers
         * that skipped validation still get a trit */
        t[i] = (int8_t)(d[k] > 2 ? 1 : (int)d[k] - 1);
        k++;
    }
}

void atm_t5_unpack(const uint8_t *in, size_t n, int8_t *t) { atm_t5_unpack_range(in, 0, n, t); }

int atm_t5_check(const uint8_t *in, size_t n, size_t *bad) {
    size_t nb = atm_t5_bytes(n);
    for (size_t j = 0; j < nb; j++)
        if (in[j] >= 243u) { if (bad) *bad = j; return ATM_FMT_E_TRIT_BYTE; }
    if (n % 5) {
        uint8_t d[5];
        atm_t5_digits(in[nb - 1], d);
        for (unsigned m = (unsigned)(n % 5); m < 5; m++)
            if (d[m] != 1u) { if (bad) *bad = nb - 1; return ATM_FMT_E_PADDING; }
    }
    return ATM_FMT_OK;
}

size_t atm_trits_bytes(int format, size_t n) {
    return format == 1 ? atm_t2_bytes(n) : (format == 2 ? atm_t5_bytes(n) : 0);
}

/* ---- legacy layout ---- */
static const uint8_t MAGIC1[ATM_LEGACY_MAGIC_LEN] = { 'A', 'T', 'O', 'M', 'E', '0', '1' };
static const uint8_t MAGIC2[ATM_LEGACY_MAGIC_LEN] = { 'A', 'T', 'O', 'M', 'E', '0', '2' };

const uint8_t *atm_legacy_magic(int format) {
    return format == 1 ? MAGIC1 : (format == 2 ? MAGIC2 : (const uint8_t *)0);
}

static const char *const FIELD_NAMES[ATM_LF_COUNT] = {
    "embed", "ln.gamma", "ln.beta", "conv", "ssm.a_raw", "ssm.b", "ssm.c_out",
    "attn.wq", "attn.wk", "attn.wv", "router", "ln_f.gamma", "ln_f.beta", "unembed",
};

const char *atm_legacy_field_name(int field) {
    return (field >= 0 && field < ATM_LF_COUNT) ? FIELD_NAMES[field] : "?";
}

static int field_ternary(int f) {
    return f == ATM_LF_EMBED || f == ATM_LF_CONV || f == ATM_LF_WQ || f == ATM_LF_WK ||
           f == ATM_LF_WV || f == ATM_LF_ROUTER || f == ATM_LF_UNEMBED;
}
static int field_in_block(int f) { return f >= ATM_LF_LN_G && f <= ATM_LF_ROUTER; }
#define BLOCK_FIELDS (ATM_LF_ROUTER - ATM_LF_LN_G + 1)

int atm_legacy_shape_check(const atm_legacy_shape *s) {
    if (!s) return ATM_FMT_E_ARG;
    if (s->vocab < 2 || s->vocab > ATM_LEGACY_MAX_VOCAB) return ATM_FMT_E_SHAPE;
    if (s->d_model < 1 || s->d_model > ATM_LEGACY_MAX_D) return ATM_FMT_E_SHAPE;
    if (s->n_layers < 1 || s->n_layers > ATM_LEGACY_MAX_L) return ATM_FMT_E_SHAPE;
    if (s->d_head < 1 || s->d_head > ATM_LEGACY_MAX_D) return ATM_FMT_E_SHAPE;
    if (s->kernel < 1 || s->kernel > ATM_LEGACY_MAX_K) return ATM_FMT_E_SHAPE;
    return ATM_FMT_OK;
}

static size_t field_bytes(const atm_legacy_plan *p, int f) {
    return field_ternary(f) ? 4 + atm_trits_bytes(p->format, p->count[f]) : 4 * p->count[f];
}

int atm_legacy_plan_make(const atm_legacy_shape *s, int format, atm_legacy_plan *p) {
    if (!p || (format != 1 && format != 2)) return ATM_FMT_E_ARG;
    int e = atm_legacy_shape_check(s);
    if (e) return e;
    size_t V = (size_t)s->vocab, d = (size_t)s->d_model, L = (size_t)s->n_layers;
    size_t dh = (size_t)s->d_head, K = (size_t)s->kernel;
    p->shape = *s;
    p->format = format;
    p->count[ATM_LF_EMBED] = V * d;
    p->count[ATM_LF_LN_G] = p->count[ATM_LF_LN_B] = d;
    p->count[ATM_LF_CONV] = d * K;
    p->count[ATM_LF_SSM_A] = p->count[ATM_LF_SSM_B] = p->count[ATM_LF_SSM_C] = d;
    p->count[ATM_LF_WQ] = p->count[ATM_LF_WK] = dh * d;
    p->count[ATM_LF_WV] = d * d;
    p->count[ATM_LF_ROUTER] = 3 * d;
    p->count[ATM_LF_LNF_G] = p->count[ATM_LF_LNF_B] = d;
    p->count[ATM_LF_UNEMBED] = V * d;

    p->off[ATM_LF_EMBED] = ATM_LEGACY_MAGIC_LEN;
    p->block0 = ATM_LEGACY_MAGIC_LEN + field_bytes(p, ATM_LF_EMBED);
    size_t o = 0;
    for (int f = ATM_LF_LN_G; f <= ATM_LF_ROUTER; f++) { p->off[f] = o; o += field_bytes(p, f); }
    p->block_bytes = o;
    o = p->block0 + L * p->block_bytes;
    for (int f = ATM_LF_LNF_G; f <= ATM_LF_UNEMBED; f++) { p->off[f] = o; o += field_bytes(p, f); }
    p->size = o;
    p->n_items = BLOCK_FIELDS * L + 4;
    return ATM_FMT_OK;
}

int atm_legacy_span_of(const atm_legacy_plan *p, int field, int layer, atm_legacy_span *s) {
    if (!p || !s || field < 0 || field >= ATM_LF_COUNT) return ATM_FMT_E_ARG;
    int blk = field_in_block(field);
    if (blk && (layer < 0 || layer >= p->shape.n_layers)) return ATM_FMT_E_ARG;
    s->field = field;
    s->layer = blk ? layer : -1;
    s->ternary = field_ternary(field);
    s->n = p->count[field];
    s->bytes = field_bytes(p, field);
    s->off = blk ? p->block0 + (size_t)layer * p->block_bytes + p->off[field] : p->off[field];
    return ATM_FMT_OK;
}

int atm_legacy_item(const atm_legacy_plan *p, size_t idx, atm_legacy_span *s) {
    if (!p || idx >= p->n_items) return ATM_FMT_E_ARG;
    if (idx == 0) return atm_legacy_span_of(p, ATM_LF_EMBED, -1, s);
    size_t nb = p->n_items - 4;
    if (idx <= nb) return atm_legacy_span_of(p, ATM_LF_LN_G + (int)((idx - 1) % BLOCK_FIELDS), (int)((idx - 1) / BLOCK_FIELDS), s);
    return atm_legacy_span_of(p, ATM_LF_LNF_G + (int)(idx - 1 - nb), -1, s);
}

static int bytes_equal(const uint8_t *a, const uint8_t *b, size_t n) {
    for (size_t i = 0; i < n; i++) if (a[i] != b[i]) return 0;
    return 1;
}

int atm_legacy_detect(const uint8_t *b, size_t len, int *err) {
    int e = ATM_FMT_OK, fmt = 0;
    if (!b && len) e = ATM_FMT_E_ARG;
    else if (len < ATM_LEGACY_MAGIC_LEN)
        e = (bytes_equal(b, MAGIC1, len) || bytes_equal(b, MAGIC2, len)) ? ATM_FMT_E_TRUNCATED : ATM_FMT_E_MAGIC;
    else if (bytes_equal(b, MAGIC1, ATM_LEGACY_MAGIC_LEN)) fmt = 1;
    else if (bytes_equal(b, MAGIC2, ATM_LEGACY_MAGIC_LEN)) fmt = 2;
    else e = ATM_FMT_E_MAGIC;
    if (err) *err = e;
    return fmt;
}

static int set_where(atm_fmt_where *w, int err, int field, int layer, size_t offset) {
    if (w) { w->err = err; w->field = field; w->layer = layer; w->offset = offset; }
    return err;
}

int atm_legacy_validate(const uint8_t *b, size_t len, const atm_legacy_shape *s,
                        atm_legacy_plan *plan, atm_fmt_where *where) {
    atm_legacy_plan local;
    atm_legacy_plan *p = plan ? plan : &local;
    int e = atm_legacy_shape_check(s);
    if (e) return set_where(where, e, -1, -1, 0);
    int fmt = atm_legacy_detect(b, len, &e);
    if (e) return set_where(where, e, -1, -1, e == ATM_FMT_E_TRUNCATED ? len : 0);
    e = atm_legacy_plan_make(s, fmt, p);
    if (e) return set_where(where, e, -1, -1, 0);
    if (len < p->size) return set_where(where, ATM_FMT_E_TRUNCATED, -1, -1, len);
    if (len > p->size) return set_where(where, ATM_FMT_E_TRAILING, -1, -1, p->size);
    for (size_t i = 0; i < p->n_items; i++) {
        atm_legacy_span sp;
        atm_legacy_item(p, i, &sp);
        if (sp.ternary) {
            if (!atm_f32_bits_positive(atm_rd_u32le(b + sp.off)))
                return set_where(where, ATM_FMT_E_SCALE, sp.field, sp.layer, sp.off);
            size_t bad = 0;
            e = fmt == 1 ? atm_t2_check(b + sp.off + 4, sp.n, &bad) : atm_t5_check(b + sp.off + 4, sp.n, &bad);
            if (e) return set_where(where, e, sp.field, sp.layer, sp.off + 4 + bad);
        } else {
            for (size_t j = 0; j < sp.n; j++)
                if (!atm_f32_bits_finite(atm_rd_u32le(b + sp.off + 4 * j)))
                    return set_where(where, ATM_FMT_E_VECTOR, sp.field, sp.layer, sp.off + 4 * j);
        }
    }
    return set_where(where, ATM_FMT_OK, -1, -1, 0);
}
