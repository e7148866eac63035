/* tests/test_container.c — the `.atome` container (core/container.h) and the
 * exporter (core/train/export.h): round trips between encodings, lossless
 * trits, deterministic export, calibration-stat serialisation, and every
 * malformed-file class with its own error. Each malformed input is a fresh
 * malloc'd buffer of exactly its length, so a sanitizer build catches any
 * read past the end. */
#include "check.h"
#include "core/container.h"
#include "core/engine.h"
#include "core/train/export.h"
#include "core/train/model.h"
#include <string.h>

static uint32_t crc32_ref(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static int open_copy(const uint8_t *b, size_t len) {
    uint8_t *c = malloc(len ? len : 1);
    memcpy(c, b, len);
    atm_model m;
    int st = atm_model_open(&m, c, len);
    free(c);
    return st;
}

/* copy with a modification and a recomputed CRC */
static int open_patched(const uint8_t *b, size_t len, size_t off, uint8_t val) {
    uint8_t *c = malloc(len);
    memcpy(c, b, len);
    c[off] = val;
    uint32_t crc = crc32_ref(c, len - 4);
    for (int i = 0; i < 4; i++) c[len - 4 + i] = (uint8_t)(crc >> (8 * i));
    atm_model m;
    int st = atm_model_open(&m, c, len);
    free(c);
    return st;
}

static void model(const char *name, uint32_t seed, atm_layout *L, float **w) {
    atm_config c;
    CHECK(atm_config_by_name(name, &c) == 0);
    CHECK(atm_layout_build(&c, L) == 0);
    *w = malloc(sizeof(float) * L->n_params);
    atm_rng r;
    atm_rng_seed(&r, seed);
    atm_init_params(L, *w, &r);
}

static uint8_t *export_enc(const atm_layout *L, const float *w, int enc, size_t *len) {
    atm_export_opts o = { enc, 32, 64, NULL };
    uint8_t *out = NULL;
    char err[256] = "";
    CHECKF(atm_export_atome(L, w, &o, &out, len, err, sizeof err) == 0, "%s", err);
    return out;
}

/* All trits of a container's ternary tensors in table order. */
static int8_t *all_trits(const uint8_t *b, size_t len, size_t *n) {
    atm_model m;
    CHECK(atm_model_open(&m, b, len) == ATM_OK);
    size_t total = 0;
    for (int i = 0; i < m.n_tensors; i++) {
        atm_tensor_view t;
        atm_model_entry(&m, i, &t);
        if (t.dtype == ATM_DT_TRITS) total += t.count;
    }
    int8_t *out = malloc(total), *p = out;
    for (int i = 0; i < m.n_tensors; i++) {
        atm_tensor_view t;
        atm_model_entry(&m, i, &t);
        if (t.dtype != ATM_DT_TRITS) continue;
        for (uint32_t j = 0; j < t.count; j++) {
            if (m.encoding == ATM_ENC_ATOME01) {
                unsigned c = (t.data[j / 4] >> (2 * (j % 4))) & 3u;
                *p++ = (int8_t)(c == 1 ? 1 : (c == 3 ? -1 : 0));
            } else {
                unsigned v = t.data[j / 5];
                for (unsigned k = 0; k < j % 5; k++) v /= 3;
                *p++ = (int8_t)((int)(v % 3) - 1);
            }
        }
    }
    *n = total;
    return out;
}

static void test_round_trips(void) {
    atm_layout L;
    float *w;
    model("atome-tiny", 11, &L, &w);
    size_t l1, l2, l1b, l2b;
    uint8_t *b1 = export_enc(&L, w, ATM_ENC_ATOME01, &l1);
    uint8_t *b2 = export_enc(&L, w, ATM_ENC_ATOME02, &l2);
    /* deterministic */
    uint8_t *b1again = export_enc(&L, w, ATM_ENC_ATOME01, &l1b);
    CHECK(l1 == l1b && memcmp(b1, b1again, l1) == 0);
    CHECK(open_copy(b1, l1) == ATM_OK && open_copy(b2, l2) == ATM_OK);
    CHECK(l1 == atm_container_size(&(atm_mconfig){ 256, 16, 2, 8, 5, 4, 7, 32, 64, 20 }, ATM_ENC_ATOME01));
    /* float -> 01 -> 02 -> 01 */
    size_t need = 0;
    CHECK(atm_container_convert(b1, l1, ATM_ENC_ATOME02, NULL, 0, &need) == ATM_E_CAPACITY && need == l2);
    uint8_t *c2 = malloc(need);
    CHECK(atm_container_convert(b1, l1, ATM_ENC_ATOME02, c2, need, &l2b) == ATM_OK);
    CHECK(l2b == l2 && memcmp(c2, b2, l2) == 0);          /* same bytes as a direct ATOME02 export */
    uint8_t *c1 = malloc(l1);
    CHECK(atm_container_convert(c2, l2, ATM_ENC_ATOME01, c1, l1, &l1b) == ATM_OK);
    CHECK(l1b == l1 && memcmp(c1, b1, l1) == 0);
    /* trits equal the quantiser's, in both encodings */
    size_t n1, n2;
    int8_t *t1 = all_trits(b1, l1, &n1), *t2 = all_trits(b2, l2, &n2);
    CHECK(n1 == n2 && n1 == atm_layout_quant_params(&L) && memcmp(t1, t2, n1) == 0);
    size_t k = 0;
    int trits_ok = 1;
    for (int i = 0; i < L.n_tensors; i++) {
        const atm_tensor *t = &L.t[i];
        if (t->kind != ATM_TK_QUANT) continue;
        size_t cnt = (size_t)t->rows * t->cols;
        float a = atm_ternary_alpha(w + t->off, cnt);
        for (size_t j = 0; j < cnt; j++) trits_ok &= t1[k++] == atm_ternary_trit(w[t->off + j], a);
    }
    CHECK(trits_ok && k == n1);
    /* inspect */
    atm_inspect_info in;
    atm_container_inspect(b2, l2, &in);
    CHECK(in.status == ATM_OK && in.crc_ok == 1 && in.version == 1 && in.encoding == 2);
    CHECK(in.cfg.d_model == 16 && in.cfg.n_layers == 2 && in.cfg.window == 32 && in.cfg.train_seq == 64);
    CHECK(in.header_bytes + in.table_bytes + in.trit_bytes + in.vector_bytes + in.crc_bytes == l2);
    CHECK(in.trit_params == atm_layout_quant_params(&L));
    /* the SSM output scale is folded into b: one vector fewer per layer */
    CHECK(in.params == L.n_params - (size_t)L.cfg.n_layers * L.cfg.d_model);
    printf("atome-tiny: ATOME01 %zu B, ATOME02 %zu B, %u params (%u trits)\n", l1, l2, in.params, in.trit_params);
    free(b1); free(b2); free(b1again); free(c1); free(c2); free(t1); free(t2); free(w);
}

static void test_malformed(void) {
    atm_layout L;
    float *w;
    model("atome-tiny", 12, &L, &w);
    size_t len, len2;
    uint8_t *b = export_enc(&L, w, ATM_ENC_ATOME01, &len);
    uint8_t *b5 = export_enc(&L, w, ATM_ENC_ATOME02, &len2);
    /* truncated: every proper prefix */
    int all_trunc = 1;
    for (size_t n = 0; n < len; n++) all_trunc &= open_copy(b, n) == ATM_E_TRUNCATED;
    CHECK(all_trunc);
    /* oversized: trailing bytes, or a declared size beyond the limit */
    uint8_t *big = malloc(len + 3);
    memcpy(big, b, len);
    big[len] = big[len + 1] = big[len + 2] = 0;
    CHECK(open_copy(big, len + 1) == ATM_E_OVERSIZE);
    CHECK(open_copy(big, len + 3) == ATM_E_OVERSIZE);
    CHECK(open_patched(b, len, 15, 0x40) == ATM_E_OVERSIZE);            /* file_bytes 2^30 */
    /* bit flips: every bit of every byte */
    int crc_class = 1, never_ok = 1;
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            b[i] ^= (uint8_t)(1u << bit);
            int st = open_copy(b, len);
            b[i] ^= (uint8_t)(1u << bit);
            never_ok &= st != ATM_OK;
            if (i < 8) crc_class &= st == ATM_E_MAGIC;
            else if (i < 10) crc_class &= st == ATM_E_VERSION;
            else if (i >= 12 && i < 16) crc_class &= (st == ATM_E_TRUNCATED || st == ATM_E_OVERSIZE);
            else crc_class &= st == ATM_E_CRC;
        }
    }
    CHECK(never_ok);
    CHECK(crc_class);
    /* wrong version, with a valid CRC */
    CHECK(open_patched(b, len, 8, 2) == ATM_E_VERSION);
    CHECK(open_patched(b, len, 9, 1) == ATM_E_VERSION);
    /* not a container */
    static const uint8_t legacy[] = { 'A', 'T', 'O', 'M', 'E', '0', '1', 0, 0, 0, 0, 0 };
    CHECK(open_copy(legacy, sizeof legacy) == ATM_E_MAGIC);
    CHECK(open_copy((const uint8_t *)"ATMC\r\n", 6) == ATM_E_TRUNCATED);
    CHECK(open_copy((const uint8_t *)"ATMX", 4) == ATM_E_MAGIC);
    /* semantic corruption behind a valid CRC */
    CHECK(open_patched(b, len, 10, 49) == ATM_E_HEADER);                /* header size */
    CHECK(open_patched(b, len, 33, 1) == ATM_E_HEADER);                 /* reserved */
    CHECK(open_patched(b, len, 16, 3) == ATM_E_HEADER);                 /* encoding */
    CHECK(open_patched(b, len, 17, 1) == ATM_E_CONFIG);                 /* family */
    CHECK(open_patched(b, len, 22, 0) == ATM_E_CONFIG);                 /* d_model 0 */
    CHECK(open_patched(b, len, 18, 0) == ATM_E_CONFIG);                 /* no pathway */
    CHECK(open_patched(b, len, 27, 65) == ATM_E_CONFIG);                /* top_k > 64 */
    CHECK(open_patched(b, len, 32, 25) == ATM_E_CONFIG);                /* fx > 24 */
    CHECK(open_patched(b, len, 28, 0) == ATM_E_CONFIG);                 /* window 32 -> 0 */
    CHECK(open_patched(b, len, 30, 1) == ATM_E_CONFIG);                 /* train seq 64 -> 1 */
    CHECK(open_patched(b, len, 19, 3) == ATM_E_HEADER);                 /* 3 layers: data offset disagrees */
    CHECK(open_patched(b, len, 34, 9) == ATM_E_TABLE);                  /* tensor count */
    CHECK(open_patched(b, len, 36, 49) == ATM_E_HEADER);                /* table offset */
    const size_t e0 = ATM_CONTAINER_HEADER_BYTES;                       /* entry 0: embed */
    CHECK(open_patched(b, len, e0 + 0, ATM_T_UNEMBED) == ATM_E_TABLE);  /* kind */
    CHECK(open_patched(b, len, e0 + 1, 0) == ATM_E_TABLE);              /* layer */
    CHECK(open_patched(b, len, e0 + 2, ATM_DT_I16) == ATM_E_TABLE);     /* dtype */
    CHECK(open_patched(b, len, e0 + 5, 1) == ATM_E_TABLE);              /* reserved */
    CHECK(open_patched(b, len, e0 + 9, 0) == ATM_E_TABLE);              /* count 4096 -> 0 */
    CHECK(open_patched(b, len, e0 + 12, (uint8_t)(b[e0 + 12] + 1)) == ATM_E_TABLE); /* offset */
    CHECK(open_patched(b, len, e0 + 4, 41) == ATM_E_VALUE);             /* exp > 40 */
    CHECK(open_patched(b, len, e0 + 7, 0x10) == ATM_E_VALUE);           /* mant < 2^15 */
    CHECK(open_patched(b, len, e0 + 3, 1) == ATM_E_VALUE);              /* aux on trits */
    const size_t e1 = e0 + ATM_CONTAINER_ENTRY_BYTES;                   /* entry 1: ln.g of block 0 */
    CHECK(open_patched(b, len, e1 + 3, 16) == ATM_E_VALUE);             /* FU > 15 */
    CHECK(open_patched(b, len, e1 + 6, 1) == ATM_E_VALUE);              /* mant on a vector */
    atm_model m;
    CHECK(atm_model_open(&m, b, len) == ATM_OK);
    atm_tensor_view t, a;
    CHECK(atm_model_tensor(&m, ATM_T_EMBED, 0, &t) == ATM_OK);
    CHECK(open_patched(b, len, t.offset, 0x02) == ATM_E_TRITS);         /* code 10 */
    CHECK(atm_model_tensor(&m, ATM_T_SSM_A, 1, &a) == ATM_OK);
    {
        /* -32768 needs both bytes: patch twice then fix the CRC */
        uint8_t *c = malloc(len);
        memcpy(c, b, len);
        c[a.offset] = 0; c[a.offset + 1] = 0x80;
        uint32_t crc = crc32_ref(c, len - 4);
        for (int i = 0; i < 4; i++) c[len - 4 + i] = (uint8_t)(crc >> (8 * i));
        CHECK(atm_model_open(&m, c, len) == ATM_E_VALUE);
        free(c);
    }
    {
        size_t ssm_entry = e0 + (size_t)(1 + 3) * ATM_CONTAINER_ENTRY_BYTES;  /* block 0: ln.g ln.b conv ssm.a */
        CHECK(b[ssm_entry] == ATM_T_SSM_A);
        CHECK(open_patched(b, len, ssm_entry + 4, 14) == ATM_E_VALUE);      /* a must be Q15 */
        CHECK(open_patched(b, len, ssm_entry + 3, 31) == ATM_E_VALUE);      /* FS > 30 */
    }
    /* ATOME02: byte >= 243 and non-zero padding */
    CHECK(atm_model_open(&m, b5, len2) == ATM_OK);
    CHECK(atm_model_tensor(&m, ATM_T_EMBED, 0, &t) == ATM_OK);
    CHECK(open_patched(b5, len2, t.offset + 3, 250) == ATM_E_TRITS);
    CHECK(atm_model_tensor(&m, ATM_T_ROUTER, 0, &t) == ATM_OK);          /* 3 x 16 = 48 trits: 2 padding */
    CHECK(t.count % 5 != 0);
    CHECK(open_patched(b5, len2, t.offset + t.bytes - 1, 242) == ATM_E_TRITS);
    /* distinct messages for the distinct classes */
    for (int i = 0; i < ATM_N_STATUS; i++)
        for (int j = i + 1; j < ATM_N_STATUS; j++) CHECK(strcmp(atm_status_str(i), atm_status_str(j)) != 0);
    CHECK(strcmp(atm_status_str(99), "unknown status") == 0);
    /* inspect of a damaged file still reports the header, with crc_ok = 0 */
    b[len / 2] ^= 1;
    atm_inspect_info in;
    atm_container_inspect(b, len, &in);
    CHECK(in.status == ATM_E_CRC && in.crc_ok == 0 && in.header_ok == 1 && in.cfg.d_model == 16);
    b[len / 2] ^= 1;
    atm_container_inspect(b, len - 1, &in);
    CHECK(in.status == ATM_E_TRUNCATED && in.crc_ok == 0);
    free(big); free(b); free(b5); free(w);
}

static void test_writer_rejects(void) {
    atm_mconfig c = { 256, 4, 1, 0, 2, 0, ATM_PATH_CONV, 8, 0, 16 };
    CHECK(atm_mconfig_check(&c) == ATM_OK);
    CHECK(atm_container_tensors(&c) == 1 + 4 + 3);
    int8_t tr[1024] = { 0 };
    int16_t v[4] = { 1, 2, 3, 4 };
    int8_t rt[4] = { 1, -1, 0, 1 };
    atm_tensor_view t[8];
    memset(t, 0, sizeof t);
    const int kinds[8] = { ATM_T_EMBED, ATM_T_LN_G, ATM_T_LN_B, ATM_T_CONV, ATM_T_ROUTER, ATM_T_LNF_G, ATM_T_LNF_B, ATM_T_UNEMBED };
    const uint32_t counts[8] = { 1024, 4, 4, 8, 4, 4, 4, 1024 };
    for (int i = 0; i < 8; i++) {
        t[i].kind = kinds[i];
        t[i].layer = (i >= 1 && i <= 4) ? 0 : ATM_LAYER_NONE;
        t[i].count = counts[i];
        int trits = kinds[i] == ATM_T_EMBED || kinds[i] == ATM_T_CONV || kinds[i] == ATM_T_ROUTER || kinds[i] == ATM_T_UNEMBED;
        t[i].dtype = trits ? ATM_DT_TRITS : ATM_DT_I16;
        t[i].mant = trits ? 40000 : 0;
        t[i].exp = 20;
        t[i].trits = kinds[i] == ATM_T_ROUTER ? rt : tr;
        t[i].vals = v;
    }
    uint8_t out[2048];
    size_t len = 0;
    CHECK(atm_container_write(&c, ATM_ENC_ATOME02, t, 8, NULL, 0, &len) == ATM_E_CAPACITY);
    CHECK(len == atm_container_size(&c, ATM_ENC_ATOME02));
    CHECK(atm_container_write(&c, ATM_ENC_ATOME02, t, 8, out, sizeof out, &len) == ATM_OK);
    atm_model m;
    CHECK(atm_model_open(&m, out, len) == ATM_OK && m.n_params == 1024 * 2 + 8 + 4 + 16);
    /* engine runs on a model without attention or SSM */
    size_t ab = atm_engine_arena_bytes(&m, 0);
    uint32_t arena[512];
    atm_engine e;
    CHECK(ab <= sizeof arena && atm_engine_init(&e, &m, 0, arena, sizeof arena) == ATM_OK);
    CHECK(atm_engine_step(&e, 'a') != NULL);
    rt[2] = 2;
    CHECK(atm_container_write(&c, ATM_ENC_ATOME01, t, 8, out, sizeof out, &len) == ATM_E_VALUE);
    rt[2] = 0;
    t[1].aux = 16;
    CHECK(atm_container_write(&c, ATM_ENC_ATOME01, t, 8, out, sizeof out, &len) == ATM_E_VALUE);
    t[1].aux = 0;
    v[0] = -32768;
    CHECK(atm_container_write(&c, ATM_ENC_ATOME01, t, 8, out, sizeof out, &len) == ATM_E_VALUE);
    v[0] = 1;
    t[3].kind = ATM_T_ROUTER;
    CHECK(atm_container_write(&c, ATM_ENC_ATOME01, t, 8, out, sizeof out, &len) == ATM_E_TABLE);
    t[3].kind = ATM_T_CONV;
    CHECK(atm_container_write(&c, ATM_ENC_ATOME01, t, 7, out, sizeof out, &len) == ATM_E_TABLE);
    CHECK(atm_container_write(&c, 3, t, 8, out, sizeof out, &len) == ATM_E_ARG);
    c.kernel = 0;
    CHECK(atm_container_write(&c, ATM_ENC_ATOME01, t, 8, out, sizeof out, &len) == ATM_E_CONFIG);
}

static void test_calib_serialisation(void) {
    atm_layout L;
    float *w;
    model("atome-tiny", 13, &L, &w);
    const char *txt = "Once upon a time there was a cat. The cat sat on the mat and looked at the sun.";
    atm_calib_stats st, back;
    char err[256];
    CHECK(atm_calib_collect(&L, w, (const uint8_t *)txt, strlen(txt), 16, &st, err, sizeof err) == 0);
    CHECK(st.positions == strlen(txt) && st.x_max[0] > 0 && st.u_max[2] > 0 && st.s_max[1] > 0 &&
          st.v_max[0] > 0 && st.logit_max > 0);
    size_t n = atm_calib_bytes(2);
    uint8_t *buf = malloc(n + 1);
    CHECK(atm_calib_serialize(&st, buf, n - 1) == 0);
    CHECK(atm_calib_serialize(&st, buf, n) == n);
    CHECK(atm_calib_parse(buf, n, &back, err, sizeof err) == 0);
    CHECK(back.positions == st.positions && back.n_layers == 2 && back.d_model == 16);
    CHECK(memcmp(back.x_max, st.x_max, sizeof(float) * 3) == 0 && back.logit_max == st.logit_max);
    CHECK(memcmp(back.v_max, st.v_max, sizeof(float) * 2) == 0);
    CHECK(atm_calib_parse(buf, n - 1, &back, err, sizeof err) == -1);
    buf[0] = 'X';
    CHECK(atm_calib_parse(buf, n, &back, err, sizeof err) == -1);
    buf[0] = 'A';
    buf[35] = 0xFF; buf[34] = 0xC0;                            /* x_max[0] = NaN */
    CHECK(atm_calib_parse(buf, n, &back, err, sizeof err) == -1);
    /* calibrated export differs from the bounds-only one only in the formats,
     * is deterministic, and mismatched stats are refused */
    atm_export_opts o = { ATM_ENC_ATOME02, 32, 64, &st };
    uint8_t *a1 = NULL, *a2 = NULL;
    size_t l1, l2;
    CHECK(atm_export_atome(&L, w, &o, &a1, &l1, err, sizeof err) == 0);
    CHECK(atm_export_atome(&L, w, &o, &a2, &l2, err, sizeof err) == 0);
    CHECK(l1 == l2 && memcmp(a1, a2, l1) == 0);
    free(a2);
    st.n_layers = 3;
    CHECK(atm_export_atome(&L, w, &o, &a2, &l2, err, sizeof err) == -1);
    free(a1); free(buf); free(w);
}

/* Deterministic mutation fuzzing of the loader and the engine: random byte
 * edits (with the CRC recomputed half of the time so the deeper checks run)
 * and random truncations; whatever atm_model_open accepts must run through
 * the engine. Under -fsanitize=address,undefined this exercises the
 * "never reads out of bounds, no UB" contract. */
static void test_mutations(void) {
    atm_layout L;
    float *w;
    model("atome-tiny", 14, &L, &w);
    size_t len[2];
    uint8_t *b[2] = { export_enc(&L, w, ATM_ENC_ATOME01, &len[0]), export_enc(&L, w, ATM_ENC_ATOME02, &len[1]) };
    atm_rng r;
    atm_rng_seed(&r, 77);
    int accepted = 0, ran = 0;
    uint32_t arena[2048];
    for (int it = 0; it < 6000; it++) {
        int k = it & 1;
        size_t n = len[k];
        if (atm_rng_below(&r, 10) == 0) n = atm_rng_below(&r, (uint32_t)len[k]);
        uint8_t *c = malloc(n ? n : 1);
        memcpy(c, b[k], n);
        int edits = 1 + (int)atm_rng_below(&r, 4);
        for (int e = 0; e < edits && n > 0; e++) {
            /* favour the header and table, where structure lives */
            size_t pos = atm_rng_below(&r, 2) ? atm_rng_below(&r, (uint32_t)(n < 700 ? n : 700)) : atm_rng_below(&r, (uint32_t)n);
            c[pos] = atm_rng_below(&r, 2) ? (uint8_t)atm_rng_u32(&r) : (uint8_t)(c[pos] ^ (1u << atm_rng_below(&r, 8)));
        }
        if (n >= 8 && atm_rng_below(&r, 2)) {
            uint32_t crc = crc32_ref(c, n - 4);
            for (int i = 0; i < 4; i++) c[n - 4 + i] = (uint8_t)(crc >> (8 * i));
        }
        atm_model m;
        atm_inspect_info in;
        atm_container_inspect(c, n, &in);
        int st = atm_model_open(&m, c, n);
        CHECK(st == (int)in.status);
        if (st == ATM_OK) {
            accepted++;
            /* window 16: a mutated default window may ask for more than this arena */
            size_t ab = atm_engine_arena_bytes(&m, 16);
            atm_engine e;
            if (ab <= sizeof arena && atm_engine_init(&e, &m, 16, arena, sizeof arena) == ATM_OK) {
                for (int t = 0; t < 40; t++) {
                    const int32_t *lg = atm_engine_step(&e, (int)atm_rng_below(&r, 256));
                    CHECK(lg != NULL);
                }
                ran++;
            }
        }
        free(c);
    }
    printf("mutations: %d accepted (valid-looking edits of values), %d ran through the engine\n", accepted, ran);
    CHECK(ran > 0 && ran == accepted);
    free(b[0]); free(b[1]); free(w);
}

int main(void) {
    test_mutations();
    test_round_trips();
    test_malformed();
    test_writer_rejects();
    test_calib_serialisation();
    return CHECK_DONE();
}
