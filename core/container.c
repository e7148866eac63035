/* core/container.c — `.atome` container reader, writer and re-encoder.
 * Contract in container.h, layout in docs/format.md. Freestanding, integer
 * only; the trit packing and CRC-32 come from core/format.h. */
#include "container.h"
#include "format.h"

static const char *const MESSAGES[ATM_N_STATUS] = {
    "ok",
    "invalid argument",
    "bad magic: not an .atome container",
    "truncated: fewer bytes than the container declares",
    "oversized: trailing bytes after the declared size, or a size beyond the limits",
    "unsupported container version",
    "CRC-32 mismatch: the file is corrupted",
    "inconsistent container header",
    "model config outside the engine limits",
    "tensor table inconsistent with the model config",
    "invalid packed trits (bad code/byte or non-zero padding)",
    "fixed-point field or int16 value out of range",
    "output buffer too small",
    "attention window outside 1..65535",
    "engine arena too small or not 4-byte aligned",
};

const char *atm_status_str(int status) {
    if (status < 0 || status >= ATM_N_STATUS) return "unknown status";
    return MESSAGES[status];
}

/* "ATMC\r\n\x1a\n": the CR/LF/EOF bytes catch text-mode transfers (as PNG's
 * signature does) and nothing starts like the legacy "ATOME01"/"ATOME02". */
static const uint8_t MAGIC[ATM_CONTAINER_MAGIC_LEN] = { 'A', 'T', 'M', 'C', 0x0D, 0x0A, 0x1A, 0x0A };


/* ---- config and canonical layout ---- */

atm_status atm_mconfig_check(const atm_mconfig *c) {
    if (!c) return ATM_E_ARG;
    const int pw = c->pathways;
    if (pw < 1 || pw > 7) return ATM_E_CONFIG;
    if (c->vocab < 2 || c->vocab > ATM_MAX_VOCAB) return ATM_E_CONFIG;
    if (c->d_model < 1 || c->d_model > ATM_MAX_D) return ATM_E_CONFIG;
    if (c->n_layers < 1 || c->n_layers > ATM_MAX_LAYERS) return ATM_E_CONFIG;
    if (pw & ATM_PATH_ATTN) {
        if (c->d_head < 1 || c->d_head > ATM_MAX_DHEAD) return ATM_E_CONFIG;
        if (c->top_k < 1 || c->top_k > ATM_MAX_TOPK) return ATM_E_CONFIG;
    } else if (c->d_head != 0 || c->top_k != 0) return ATM_E_CONFIG;
    if (pw & ATM_PATH_CONV) {
        if (c->kernel < 1 || c->kernel > ATM_MAX_KERNEL) return ATM_E_CONFIG;
    } else if (c->kernel != 0) return ATM_E_CONFIG;
    if (c->window < 1 || c->window > ATM_MAX_WINDOW) return ATM_E_CONFIG;
    if (c->train_seq != 0 && (c->train_seq < 2 || c->train_seq > ATM_MAX_WINDOW)) return ATM_E_CONFIG;
    if (c->fx < 0 || c->fx > ATM_MAX_FX) return ATM_E_CONFIG;
    return ATM_OK;
}

static int n_paths(int pw) { return (pw & 1) + ((pw >> 1) & 1) + ((pw >> 2) & 1); }

const atm_block_tensor atm_block_tensors[ATM_BLOCK_TENSORS] = {
    { ATM_T_LN_G, 0 },              { ATM_T_LN_B, 0 },
    { ATM_T_CONV, ATM_PATH_CONV },
    { ATM_T_SSM_A, ATM_PATH_SSM },  { ATM_T_SSM_BC, ATM_PATH_SSM },
    { ATM_T_WQ, ATM_PATH_ATTN },    { ATM_T_WK, ATM_PATH_ATTN },    { ATM_T_WV, ATM_PATH_ATTN },
    { ATM_T_ROUTER, 0 },
};

/* Kinds of one block in canonical order (atm_block_tensors); returns their number. */
static int block_kinds(int pw, int kinds[ATM_BLOCK_TENSORS]) {
    int n = 0;
    for (int i = 0; i < ATM_BLOCK_TENSORS; i++)
        if (!atm_block_tensors[i].path || (pw & atm_block_tensors[i].path)) kinds[n++] = atm_block_tensors[i].kind;
    return n;
}

int atm_container_tensors(const atm_mconfig *c) {
    int kinds[ATM_BLOCK_TENSORS];
    if (atm_mconfig_check(c) != ATM_OK) return 0;
    return 1 + c->n_layers * block_kinds(c->pathways, kinds) + 3;
}

/* kind and layer of the idx-th entry of a valid config */
static void canon_at(const atm_mconfig *c, int idx, int *kind, int *layer) {
    int kinds[ATM_BLOCK_TENSORS], per = block_kinds(c->pathways, kinds);
    int nb = c->n_layers * per;
    if (idx == 0) { *kind = ATM_T_EMBED; *layer = ATM_LAYER_NONE; return; }
    idx -= 1;
    if (idx < nb) { *kind = kinds[idx % per]; *layer = idx / per; return; }
    idx -= nb;
    *kind = idx == 0 ? ATM_T_LNF_G : (idx == 1 ? ATM_T_LNF_B : ATM_T_UNEMBED);
    *layer = ATM_LAYER_NONE;
}

static int kind_dtype(int kind) {
    switch (kind) {
    case ATM_T_EMBED: case ATM_T_CONV: case ATM_T_WQ: case ATM_T_WK:
    case ATM_T_WV: case ATM_T_ROUTER: case ATM_T_UNEMBED: return ATM_DT_TRITS;
    default: return ATM_DT_I16;
    }
}

void atm_eval_defaults(const atm_mconfig *c, int64_t *seq, int64_t *window) {
    if (*seq == 0) *seq = c->train_seq >= 2 ? c->train_seq : (c->window >= 1 ? (int64_t)c->window + 1 : 64);
    if (*window == 0) *window = c->window >= 1 && c->window < *seq - 1 ? c->window : *seq - 1;
}

void atm_tensor_shape(const atm_mconfig *c, int kind, uint32_t *rows, uint32_t *cols) {
    uint32_t r = 0, k = 0;
    const uint32_t d = (uint32_t)c->d_model;
    const int pw = c->pathways;
    switch (kind) {
    case ATM_T_EMBED: case ATM_T_UNEMBED: r = (uint32_t)c->vocab; k = d; break;
    case ATM_T_LN_G: case ATM_T_LN_B: case ATM_T_LNF_G: case ATM_T_LNF_B: r = 1; k = d; break;
    case ATM_T_CONV: if (pw & ATM_PATH_CONV) { r = d; k = (uint32_t)c->kernel; } break;
    case ATM_T_SSM_A: case ATM_T_SSM_BC: if (pw & ATM_PATH_SSM) { r = 1; k = d; } break;
    case ATM_T_WQ: case ATM_T_WK: if (pw & ATM_PATH_ATTN) { r = (uint32_t)c->d_head; k = d; } break;
    case ATM_T_WV: if (pw & ATM_PATH_ATTN) { r = d; k = d; } break;
    case ATM_T_ROUTER: r = (uint32_t)n_paths(pw); k = d; break;
    default: break;
    }
    *rows = r; *cols = k;
}

static uint32_t kind_count(const atm_mconfig *c, int kind) {
    uint32_t r, k;
    atm_tensor_shape(c, kind, &r, &k);
    return r * k;   /* <= 1024 * 1024 by the limits */
}

static uint32_t data_bytes(int encoding, int dtype, uint32_t count) {
    return dtype == ATM_DT_TRITS ? (uint32_t)atm_trits_bytes(encoding, count) : 2u * count;
}

size_t atm_container_size(const atm_mconfig *c, int encoding) {
    if (atm_mconfig_check(c) != ATM_OK) return 0;
    if (encoding != ATM_ENC_ATOME01 && encoding != ATM_ENC_ATOME02) return 0;
    int n = atm_container_tensors(c);
    size_t total = ATM_CONTAINER_HEADER_BYTES + (size_t)n * ATM_CONTAINER_ENTRY_BYTES + 4;
    for (int i = 0; i < n; i++) {
        int kind, layer;
        canon_at(c, i, &kind, &layer);
        total += data_bytes(encoding, kind_dtype(kind), kind_count(c, kind));
    }
    return total;   /* < 2^28 within the limits: 64 layers * ~1.3 MB of trits worst case */
}

/* ---- entry fields ---- */

static void read_entry(const uint8_t *e, atm_tensor_view *t) {
    t->kind = e[0];
    t->layer = e[1];
    t->dtype = e[2];
    t->aux = e[3];
    t->exp = e[4];
    t->mant = atm_rd_u16le(e + 6);
    t->count = atm_rd_u32le(e + 8);
    t->offset = atm_rd_u32le(e + 12);
    t->trits = 0;
    t->vals = 0;
    t->data = 0;
    t->bytes = 0;
}

/* Field ranges shared by reader and writer (not the data). */
static atm_status check_fields(const atm_tensor_view *t) {
    if (t->exp < 0 || t->exp > ATM_MAX_EXP) return ATM_E_VALUE;
    if (t->dtype == ATM_DT_TRITS) {
        if (t->mant < 0x8000u || t->mant > 0xFFFFu || t->aux != 0) return ATM_E_VALUE;
        return ATM_OK;
    }
    if (t->mant != 0) return ATM_E_VALUE;
    switch (t->kind) {
    case ATM_T_LN_G: case ATM_T_LNF_G:
        return (t->aux >= 0 && t->aux <= ATM_MAX_FU) ? ATM_OK : ATM_E_VALUE;
    case ATM_T_SSM_A:
        return (t->exp == 15 && t->aux >= 0 && t->aux <= ATM_MAX_FS) ? ATM_OK : ATM_E_VALUE;
    default:
        return t->aux == 0 ? ATM_OK : ATM_E_VALUE;
    }
}

/* ---- reader ---- */

/* The magic, version, sizes, CRC-32 and fixed header fields of b[0..len):
 * ATM_OK with the declared size in *file_bytes. */
static atm_status check_header(const uint8_t *b, size_t len, uint32_t *file_bytes) {
    for (size_t i = 0; i < ATM_CONTAINER_MAGIC_LEN; i++) {
        if (i >= len) return ATM_E_TRUNCATED;     /* a prefix of the magic */
        if (b[i] != MAGIC[i]) return ATM_E_MAGIC;
    }
    if (len < 10) return ATM_E_TRUNCATED;
    if (atm_rd_u16le(b + 8) != ATM_CONTAINER_VERSION) return ATM_E_VERSION;
    if (len < ATM_CONTAINER_HEADER_BYTES) return ATM_E_TRUNCATED;
    const uint32_t fb = atm_rd_u32le(b + 12);
    if (fb > ATM_CONTAINER_MAX_BYTES) return ATM_E_OVERSIZE;
    if (len < fb) return ATM_E_TRUNCATED;
    if (len > fb) return ATM_E_OVERSIZE;
    if (fb < ATM_CONTAINER_HEADER_BYTES + 4) return ATM_E_HEADER;
    if (atm_crc32(b, fb - 4) != atm_rd_u32le(b + fb - 4)) return ATM_E_CRC;
    if (atm_rd_u16le(b + 10) != ATM_CONTAINER_HEADER_BYTES) return ATM_E_HEADER;
    if (b[33] != 0 || atm_rd_u32le(b + 44) != 0) return ATM_E_HEADER;
    *file_bytes = fb;
    return ATM_OK;
}

/* The model config of the header (not yet checked). */
static void read_config(const uint8_t *b, atm_mconfig *c) {
    c->pathways = b[18];
    c->n_layers = b[19];
    c->vocab = atm_rd_u16le(b + 20);
    c->d_model = atm_rd_u16le(b + 22);
    c->d_head = atm_rd_u16le(b + 24);
    c->kernel = b[26];
    c->top_k = b[27];
    c->window = atm_rd_u16le(b + 28);
    c->train_seq = atm_rd_u16le(b + 30);
    c->fx = b[32];
}

/* The n table entries against the canonical layout of c, and each tensor's
 * data (packed trits or int16 values) at its place: ATM_OK with the
 * parameter count in *params. */
static atm_status check_tensors(const uint8_t *b, const atm_mconfig *c, int enc, int n, uint32_t table_off,
                                uint32_t data_off, uint32_t *params) {
    uint32_t off = data_off, count = 0;
    for (int i = 0; i < n; i++) {
        atm_tensor_view t;
        int kind, layer;
        read_entry(b + table_off + (size_t)i * ATM_CONTAINER_ENTRY_BYTES, &t);
        canon_at(c, i, &kind, &layer);
        if (t.kind != kind || t.layer != layer || t.dtype != kind_dtype(kind) ||
            b[table_off + (size_t)i * ATM_CONTAINER_ENTRY_BYTES + 5] != 0)
            return ATM_E_TABLE;
        if (t.count != kind_count(c, kind) || t.offset != off) return ATM_E_TABLE;
        atm_status st = check_fields(&t);
        if (st != ATM_OK) return st;
        uint32_t nb = data_bytes(enc, t.dtype, t.count);
        /* off + nb <= file_bytes - 4 is implied by the size check of the caller */
        if (t.dtype == ATM_DT_TRITS) {
            int r = enc == ATM_ENC_ATOME01 ? atm_t2_check(b + off, t.count, NULL)
                                           : atm_t5_check(b + off, t.count, NULL);
            if (r != ATM_FMT_OK) return ATM_E_TRITS;
        } else {
            for (uint32_t j = 0; j < t.count; j++)
                if (atm_rd_u16le(b + off + 2 * j) == 0x8000u) return ATM_E_VALUE;
        }
        off += nb;
        count += t.count;
    }
    *params = count;
    return ATM_OK;
}

atm_status atm_model_open(atm_model *m, const uint8_t *b, size_t len) {
    if (!m || !b) return ATM_E_ARG;
    uint32_t file_bytes = 0;
    atm_status st = check_header(b, len, &file_bytes);
    if (st != ATM_OK) return st;
    const int enc = b[16];
    if (enc != ATM_ENC_ATOME01 && enc != ATM_ENC_ATOME02) return ATM_E_HEADER;
    if (b[17] != 0) return ATM_E_CONFIG;                 /* family: atome only */
    atm_mconfig c;
    read_config(b, &c);
    if (atm_mconfig_check(&c) != ATM_OK) return ATM_E_CONFIG;
    const int n = atm_container_tensors(&c);
    const uint32_t table_off = atm_rd_u32le(b + 36), data_off = atm_rd_u32le(b + 40);
    if (table_off != ATM_CONTAINER_HEADER_BYTES ||
        data_off != ATM_CONTAINER_HEADER_BYTES + (uint32_t)n * ATM_CONTAINER_ENTRY_BYTES)
        return ATM_E_HEADER;
    if (atm_rd_u16le(b + 34) != (uint32_t)n) return ATM_E_TABLE;
    if (atm_container_size(&c, enc) != file_bytes) return ATM_E_TABLE;
    uint32_t params = 0;
    if ((st = check_tensors(b, &c, enc, n, table_off, data_off, &params)) != ATM_OK) return st;
    m->cfg = c;
    m->encoding = enc;
    m->n_paths = n_paths(c.pathways);
    m->n_tensors = n;
    {
        int kinds[ATM_BLOCK_TENSORS], per = block_kinds(c.pathways, kinds);
        m->per_layer = per;
        for (int k = 0; k < ATM_T_COUNT; k++) m->slot[k] = -1;
        for (int k = 0; k < per; k++) m->slot[kinds[k]] = (int8_t)k;
    }
    m->blob = b;
    m->size = file_bytes;
    m->n_params = params;
    return ATM_OK;
}

atm_status atm_model_entry(const atm_model *m, int idx, atm_tensor_view *t) {
    if (!m || !t || idx < 0 || idx >= m->n_tensors) return ATM_E_ARG;
    read_entry(m->blob + ATM_CONTAINER_HEADER_BYTES + (size_t)idx * ATM_CONTAINER_ENTRY_BYTES, t);
    t->data = m->blob + t->offset;
    t->bytes = data_bytes(m->encoding, t->dtype, t->count);
    return ATM_OK;
}

atm_status atm_model_tensor(const atm_model *m, int kind, int layer, atm_tensor_view *t) {
    if (!m || !t || kind < 1 || kind >= ATM_T_COUNT) return ATM_E_ARG;
    const int fixed = kind == ATM_T_EMBED || kind == ATM_T_LNF_G || kind == ATM_T_LNF_B || kind == ATM_T_UNEMBED;
    if (!fixed && (layer < 0 || layer >= m->cfg.n_layers || m->slot[kind] < 0)) return ATM_E_ARG;
    return atm_model_entry(m, atm_model_tensor_index(m, kind, layer), t);
}

/* ---- writer ---- */

static void write_header(uint8_t *o, const atm_mconfig *c, int enc, uint32_t file_bytes, int n) {
    for (int i = 0; i < ATM_CONTAINER_HEADER_BYTES; i++) o[i] = 0;
    for (int i = 0; i < ATM_CONTAINER_MAGIC_LEN; i++) o[i] = MAGIC[i];
    atm_wr_u16le(o + 8, ATM_CONTAINER_VERSION);
    atm_wr_u16le(o + 10, ATM_CONTAINER_HEADER_BYTES);
    atm_wr_u32le(o + 12, file_bytes);
    o[16] = (uint8_t)enc;
    o[17] = 0;
    o[18] = (uint8_t)c->pathways;
    o[19] = (uint8_t)c->n_layers;
    atm_wr_u16le(o + 20, (uint32_t)c->vocab);
    atm_wr_u16le(o + 22, (uint32_t)c->d_model);
    atm_wr_u16le(o + 24, (uint32_t)c->d_head);
    o[26] = (uint8_t)c->kernel;
    o[27] = (uint8_t)c->top_k;
    atm_wr_u16le(o + 28, (uint32_t)c->window);
    atm_wr_u16le(o + 30, (uint32_t)c->train_seq);
    o[32] = (uint8_t)c->fx;
    atm_wr_u16le(o + 34, (uint32_t)n);
    atm_wr_u32le(o + 36, ATM_CONTAINER_HEADER_BYTES);
    atm_wr_u32le(o + 40, ATM_CONTAINER_HEADER_BYTES + (uint32_t)n * ATM_CONTAINER_ENTRY_BYTES);
}

static void write_entry(uint8_t *e, const atm_tensor_view *t, uint32_t offset) {
    e[0] = (uint8_t)t->kind;
    e[1] = (uint8_t)t->layer;
    e[2] = (uint8_t)t->dtype;
    e[3] = (uint8_t)t->aux;
    e[4] = (uint8_t)t->exp;
    e[5] = 0;
    atm_wr_u16le(e + 6, t->mant);
    atm_wr_u32le(e + 8, t->count);
    atm_wr_u32le(e + 12, offset);
}

static void finish_crc(uint8_t *out, uint32_t size) {
    atm_wr_u32le(out + size - 4, atm_crc32(out, size - 4));
}

atm_status atm_container_write(const atm_mconfig *c, int encoding, const atm_tensor_view *t,
                               int n, uint8_t *out, size_t cap, size_t *len) {
    if (!c || !t || !len) return ATM_E_ARG;
    if (atm_mconfig_check(c) != ATM_OK) return ATM_E_CONFIG;
    size_t size = atm_container_size(c, encoding);
    if (!size) return ATM_E_ARG;
    *len = size;
    if (n != atm_container_tensors(c)) return ATM_E_TABLE;
    for (int i = 0; i < n; i++) {
        int kind, layer;
        canon_at(c, i, &kind, &layer);
        if (t[i].kind != kind || t[i].layer != layer || t[i].dtype != kind_dtype(kind) ||
            t[i].count != kind_count(c, kind))
            return ATM_E_TABLE;
        atm_status st = check_fields(&t[i]);
        if (st != ATM_OK) return st;
        if (t[i].dtype == ATM_DT_TRITS) {
            if (!t[i].trits) return ATM_E_ARG;
            for (uint32_t j = 0; j < t[i].count; j++)
                if (t[i].trits[j] < -1 || t[i].trits[j] > 1) return ATM_E_VALUE;
        } else {
            if (!t[i].vals) return ATM_E_ARG;
            for (uint32_t j = 0; j < t[i].count; j++)
                if (t[i].vals[j] < -32767) return ATM_E_VALUE;
        }
    }
    if (!out || cap < size) return ATM_E_CAPACITY;
    write_header(out, c, encoding, (uint32_t)size, n);
    uint32_t off = ATM_CONTAINER_HEADER_BYTES + (uint32_t)n * ATM_CONTAINER_ENTRY_BYTES;
    for (int i = 0; i < n; i++) {
        write_entry(out + ATM_CONTAINER_HEADER_BYTES + (size_t)i * ATM_CONTAINER_ENTRY_BYTES, &t[i], off);
        uint8_t *d = out + off;
        if (t[i].dtype == ATM_DT_TRITS) {
            if (encoding == ATM_ENC_ATOME01) atm_t2_pack(t[i].trits, t[i].count, d);
            else atm_t5_pack(t[i].trits, t[i].count, d);
        } else {
            for (uint32_t j = 0; j < t[i].count; j++) atm_wr_u16le(d + 2 * j, (uint16_t)t[i].vals[j]);
        }
        off += data_bytes(encoding, t[i].dtype, t[i].count);
    }
    finish_crc(out, (uint32_t)size);
    atm_model chk;
    return atm_model_open(&chk, out, size);
}

/* Trits move in blocks of 20 (= 5 ATOME01 bytes = 4 ATOME02 bytes), so every
 * block starts on a byte boundary in both encodings. */
static void recode(const uint8_t *in, int enc_in, uint8_t *out, int enc_out, uint32_t count) {
    int8_t blk[20];
    for (uint32_t first = 0; first < count; first += 20) {
        uint32_t nb = count - first < 20 ? count - first : 20;
        if (enc_in == ATM_ENC_ATOME01) {
            for (uint32_t i = 0; i < nb; i++) blk[i] = (int8_t)atm_t2_get(in, first + i);
        } else {
            atm_t5_unpack_range(in, first, nb, blk);
        }
        if (enc_out == ATM_ENC_ATOME01) atm_t2_pack(blk, nb, out + first / 4);
        else atm_t5_pack(blk, nb, out + first / 5);
    }
}

atm_status atm_container_convert(const uint8_t *in, size_t len, int encoding,
                                 uint8_t *out, size_t cap, size_t *outlen) {
    atm_model m;
    if (!in || !outlen) return ATM_E_ARG;
    atm_status st = atm_model_open(&m, in, len);
    if (st != ATM_OK) return st;
    size_t size = atm_container_size(&m.cfg, encoding);
    if (!size) return ATM_E_ARG;
    *outlen = size;
    if (!out || cap < size) return ATM_E_CAPACITY;
    write_header(out, &m.cfg, encoding, (uint32_t)size, m.n_tensors);
    uint32_t off = ATM_CONTAINER_HEADER_BYTES + (uint32_t)m.n_tensors * ATM_CONTAINER_ENTRY_BYTES;
    for (int i = 0; i < m.n_tensors; i++) {
        atm_tensor_view t;
        atm_model_entry(&m, i, &t);
        write_entry(out + ATM_CONTAINER_HEADER_BYTES + (size_t)i * ATM_CONTAINER_ENTRY_BYTES, &t, off);
        if (t.dtype == ATM_DT_TRITS) {
            recode(t.data, m.encoding, out + off, encoding, t.count);
        } else {
            for (uint32_t j = 0; j < t.bytes; j++) out[off + j] = t.data[j];
        }
        off += data_bytes(encoding, t.dtype, t.count);
    }
    finish_crc(out, (uint32_t)size);
    atm_model chk;
    return atm_model_open(&chk, out, size);
}

/* ---- inspect ---- */

void atm_container_inspect(const uint8_t *b, size_t len, atm_inspect_info *o) {
    atm_inspect_info z = { 0 };
    *o = z;
    o->version = -1;
    if (!b) { o->status = ATM_E_ARG; return; }
    atm_model m;
    o->status = atm_model_open(&m, b, len);
    if (len < ATM_CONTAINER_HEADER_BYTES) return;
    for (int i = 0; i < ATM_CONTAINER_MAGIC_LEN; i++) if (b[i] != MAGIC[i]) return;
    o->version = atm_rd_u16le(b + 8);
    if (o->version != ATM_CONTAINER_VERSION) return;
    o->file_bytes = atm_rd_u32le(b + 12);
    if (o->file_bytes >= ATM_CONTAINER_HEADER_BYTES + 4 && o->file_bytes <= len)
        o->crc_ok = atm_crc32(b, o->file_bytes - 4) == atm_rd_u32le(b + o->file_bytes - 4);
    atm_mconfig c;
    c.pathways = b[18]; c.n_layers = b[19];
    c.vocab = atm_rd_u16le(b + 20); c.d_model = atm_rd_u16le(b + 22);
    c.d_head = atm_rd_u16le(b + 24); c.kernel = b[26]; c.top_k = b[27];
    c.window = atm_rd_u16le(b + 28); c.train_seq = atm_rd_u16le(b + 30); c.fx = b[32];
    o->cfg = c;
    o->encoding = b[16];
    if (atm_mconfig_check(&c) != ATM_OK || (o->encoding != ATM_ENC_ATOME01 && o->encoding != ATM_ENC_ATOME02))
        return;
    o->header_ok = 1;
    int n = atm_container_tensors(&c);
    o->n_tensors = (uint32_t)n;
    o->header_bytes = ATM_CONTAINER_HEADER_BYTES;
    o->table_bytes = (uint32_t)n * ATM_CONTAINER_ENTRY_BYTES;
    o->crc_bytes = 4;
    for (int i = 0; i < n; i++) {
        int kind, layer;
        canon_at(&c, i, &kind, &layer);
        uint32_t cnt = kind_count(&c, kind);
        o->params += cnt;
        if (kind_dtype(kind) == ATM_DT_TRITS) {
            o->trit_params += cnt;
            o->trit_bytes += data_bytes(o->encoding, ATM_DT_TRITS, cnt);
        } else {
            o->vector_bytes += 2u * cnt;
        }
    }
}
