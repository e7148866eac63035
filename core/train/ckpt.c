/* core/train/ckpt.c — checkpoint serialisation, validation and atomic writes.
 * See ckpt.h for the contract and docs/checkpoint.md for the byte layout.
 * All multi-byte values are encoded/decoded byte by byte, so the format is
 * little-endian whatever the host. */
#define _POSIX_C_SOURCE 200809L
#include "ckpt.h"
#include "../host/fail.h"
#include "export.h"
#include "../le.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint8_t MAGIC[8] = { 'A', 'T', 'O', 'M', 'E', 'C', 'K', 'P' };
#define HEADER_BYTES 24        /* magic 8 + version 4 + n_sections 4 + file_size 8 */
#define SECTION_HEAD 16        /* tag 4 + flags 4 + length 8 */
#define CRC_BYTES 4
#define FLAG_REQUIRED 1u
#define MAX_SECTIONS 4096      /* far above what any writer emits; bounds the walk */

#define CONF_BYTES 48          /* 12 x i32 */
#define TOPT_BYTES 72
#define STAT_BYTES 52

/* ---- little-endian writer ---- */
typedef struct { uint8_t *p; size_t n; } wbuf;

static void put_u32(wbuf *b, uint32_t x) { atm_wr_u32le(b->p + b->n, x); b->n += 4; }
static void put_u64(wbuf *b, uint64_t x) { atm_wr_u64le(b->p + b->n, x); b->n += 8; }
static void put_i32(wbuf *b, int32_t x) { put_u32(b, (uint32_t)x); }
static void put_i64(wbuf *b, int64_t x) { put_u64(b, (uint64_t)x); }
static void put_f32(wbuf *b, float f) { uint32_t u; memcpy(&u, &f, 4); put_u32(b, u); }
static void put_f64(wbuf *b, double f) { uint64_t u; memcpy(&u, &f, 8); put_u64(b, u); }
static void put_bytes(wbuf *b, const void *s, size_t n) { if (n) memcpy(b->p + b->n, s, n); b->n += n; }
static void put_f32s(wbuf *b, const float *f, size_t n) { for (size_t i = 0; i < n; i++) put_f32(b, f[i]); }
static void put_section(wbuf *b, const char tag[4], uint32_t flags, uint64_t len) {
    put_bytes(b, tag, 4);
    put_u32(b, flags);
    put_u64(b, len);
}

/* ---- little-endian reader (callers check bounds before reading) ---- */
static int32_t get_i32(const uint8_t *p) { return (int32_t)atm_rd_u32le(p); }
static int64_t get_i64(const uint8_t *p) { return (int64_t)atm_rd_u64le(p); }
static float get_f32(const uint8_t *p) { uint32_t u = atm_rd_u32le(p); float f; memcpy(&f, &u, 4); return f; }
static double get_f64(const uint8_t *p) { uint64_t u = atm_rd_u64le(p); double f; memcpy(&f, &u, 8); return f; }

void atm_ckpt_init(atm_ckpt *ck) {
    memset(ck, 0, sizeof *ck);
    atm_train_opts_default(&ck->opt);
    ck->split = 0.9;
}

void atm_ckpt_free(atm_ckpt *ck) {
    if (ck->owns) { free(ck->w); free(ck->m); free(ck->v); free(ck->calib); }
    ck->w = ck->m = ck->v = NULL;
    ck->calib = NULL;
    ck->calib_len = 0;
    ck->owns = 0;
}

/* ---- serialisation ---- */
static size_t str_len(const char *s, size_t cap) {
    size_t n = 0;
    while (n < cap - 1 && s[n]) n++;
    return n;
}

/* CONF, AWIN, VPOS, NAME: what model the file holds. */
static void put_model_sections(wbuf *b, const atm_ckpt *ck, size_t name_len) {
    const int has_awin = ck->cfg.attn_window != 0, has_vpos = ck->cfg.pos != 0;
    const atm_config *c = &ck->cfg;
    put_section(b, "CONF", FLAG_REQUIRED, CONF_BYTES);
    put_i32(b, c->family); put_i32(b, c->vocab); put_i32(b, c->d_model); put_i32(b, c->n_layers);
    put_i32(b, c->d_head); put_i32(b, c->n_heads); put_i32(b, c->kernel); put_i32(b, c->top_k);
    put_i32(b, c->pathways); put_i32(b, c->d_ff); put_i32(b, c->d_inner); put_i32(b, c->max_seq);
    /* AWIN: the attention window of training (written only when set; required,
     * so a build that does not know it refuses the file instead of training
     * or scoring a different model) */
    if (has_awin) { put_section(b, "AWIN", FLAG_REQUIRED, 4); put_i32(b, c->attn_window); }
    /* VPOS: a vanilla position scheme other than the learned table (same rule) */
    if (has_vpos) { put_section(b, "VPOS", FLAG_REQUIRED, 4); put_i32(b, c->pos); }

    if (name_len) { put_section(b, "NAME", 0, name_len); put_bytes(b, ck->name, name_len); }

}

/* TOPT, STAT, DATA: the run's options, counters and data description. */
static void put_run_sections(wbuf *b, const atm_ckpt *ck, size_t dp, size_t vp) {
    const atm_train_opts *o = &ck->opt;
    put_section(b, "TOPT", FLAG_REQUIRED, TOPT_BYTES);
    put_i32(b, o->quant);
    put_f32(b, o->lr); put_f32(b, o->lr2); put_f32(b, o->beta1); put_f32(b, o->beta2);
    put_f32(b, o->eps); put_f32(b, o->wd); put_f32(b, o->clip); put_f32(b, o->lr_min);
    put_i64(b, o->warmup);
    put_i32(b, o->cosine);
    put_f32(b, o->fp_fraction);
    put_i64(b, o->steps);
    put_i32(b, o->batch);
    put_i32(b, o->seq);
    put_u32(b, o->seed);

    put_section(b, "STAT", 0, STAT_BYTES);
    put_i64(b, ck->step);
    put_i64(b, ck->adam_t);
    put_i32(b, ck->stage);
    for (int i = 0; i < 4; i++) put_u32(b, ck->rng.s[i]);
    put_f64(b, ck->elapsed_s);
    put_f64(b, ck->last_loss);

    if (ck->has_data) {
        put_section(b, "DATA", 0, 8 + 8 + 4 + dp + 4 + vp);
        put_u64(b, ck->max_bytes);
        put_f64(b, ck->split);
        put_u32(b, (uint32_t)dp); put_bytes(b, ck->data_path, dp);
        put_u32(b, (uint32_t)vp); put_bytes(b, ck->valid_path, vp);
    }

}

/* WGHT, ADAM, ACAL, DIST: the weights, moments, calibration statistics and teacher. */
static void put_tensor_sections(wbuf *b, const atm_ckpt *ck, size_t np, size_t tp) {
    const int has_adam = ck->m && ck->v, has_calib = ck->calib && ck->calib_len;
    put_section(b, "WGHT", FLAG_REQUIRED, 8 + 4 * (uint64_t)np);
    put_u64(b, np);
    put_f32s(b, ck->w, np);

    if (has_adam) {
        put_section(b, "ADAM", 0, 8 + 8 * (uint64_t)np);
        put_u64(b, np);
        put_f32s(b, ck->m, np);
        put_f32s(b, ck->v, np);
    }
    if (has_calib) {
        put_section(b, "ACAL", 0, ck->calib_len);
        put_bytes(b, ck->calib, ck->calib_len);
    }
    if (ck->has_dist) {
        put_section(b, "DIST", 0, 4 + 4 + 4 + tp);
        put_f32(b, ck->distill_weight);
        put_u32(b, ck->teacher_crc);
        put_u32(b, (uint32_t)tp); put_bytes(b, ck->teacher_path, tp);
    }
}

int atm_ckpt_serialize(const atm_ckpt *ck, uint8_t **out, size_t *out_len) {
    size_t np = ck->n_params;
    size_t name_len = str_len(ck->name, sizeof ck->name);
    size_t dp = str_len(ck->data_path, sizeof ck->data_path);
    size_t vp = str_len(ck->valid_path, sizeof ck->valid_path);
    int has_adam = ck->m && ck->v;
    int has_calib = ck->calib && ck->calib_len;
    size_t tp = ck->has_dist ? str_len(ck->teacher_path, sizeof ck->teacher_path) : 0;
    int has_awin = ck->cfg.attn_window != 0;
    int has_vpos = ck->cfg.pos != 0;
    uint32_t nsec = 4 + (name_len > 0) + (ck->has_data ? 1 : 0) + (has_adam ? 1 : 0) + (has_calib ? 1 : 0) +
                    (ck->has_dist ? 1 : 0) + (has_awin ? 1 : 0) + (has_vpos ? 1 : 0);
    uint64_t total = HEADER_BYTES;
    total += SECTION_HEAD + CONF_BYTES;
    if (has_awin) total += SECTION_HEAD + 4;
    if (has_vpos) total += SECTION_HEAD + 4;
    if (name_len) total += SECTION_HEAD + name_len;
    total += SECTION_HEAD + TOPT_BYTES;
    total += SECTION_HEAD + STAT_BYTES;
    if (ck->has_data) total += SECTION_HEAD + 8 + 8 + 4 + dp + 4 + vp;
    total += SECTION_HEAD + 8 + 4 * (uint64_t)np;
    if (has_adam) total += SECTION_HEAD + 8 + 8 * (uint64_t)np;
    if (has_calib) total += SECTION_HEAD + (uint64_t)ck->calib_len;
    if (ck->has_dist) total += SECTION_HEAD + 4 + 4 + 4 + tp;
    total += CRC_BYTES;
    if (total > (uint64_t)(size_t)-1) return ATM_CKPT_ENOMEM;
    wbuf b = { (uint8_t *)malloc((size_t)total), 0 };
    if (!b.p) return ATM_CKPT_ENOMEM;

    put_bytes(&b, MAGIC, 8);
    put_u32(&b, ATM_CKPT_VERSION);
    put_u32(&b, nsec);
    put_u64(&b, total);

    put_model_sections(&b, ck, name_len);
    put_run_sections(&b, ck, dp, vp);
    put_tensor_sections(&b, ck, np, tp);
    put_u32(&b, atm_crc32(b.p, b.n));
    *out = b.p;
    *out_len = b.n;
    return ATM_CKPT_OK;
}

/* ---- parsing ---- */
#define PFAIL(code, ...) do { atm_fail(err, errlen, __VA_ARGS__); rc = (code); goto fail; } while (0)

static int tag_is(const uint8_t *t, const char *s) { return memcmp(t, s, 4) == 0; }

static void tag_text(const uint8_t *t, char out[16]) {
    int printable = 1;
    for (int i = 0; i < 4; i++) if (t[i] < 0x20 || t[i] > 0x7E) printable = 0;
    if (printable) snprintf(out, 16, "'%c%c%c%c'", t[0], t[1], t[2], t[3]);
    else snprintf(out, 16, "0x%02X%02X%02X%02X", t[0], t[1], t[2], t[3]);
}

static int read_string(const uint8_t **pp, const uint8_t *end, char *dst, size_t cap) {
    if (end - *pp < 4) return -1;
    uint32_t n = atm_rd_u32le(*pp);
    *pp += 4;
    if ((uint64_t)n >= cap || (uint64_t)(end - *pp) < n) return -1;
    memcpy(dst, *pp, n);
    dst[n] = 0;
    if (memchr(dst, 0, n)) return -1;
    *pp += n;
    return 0;
}

/* The sections a checkpoint may hold: tag and exact length (0 = variable). */
enum { S_CONF, S_TOPT, S_STAT, S_DATA, S_WGHT, S_ADAM, S_NAME, S_ACAL, S_DIST, S_AWIN, S_VPOS, S_COUNT };
static const struct { const char *tag; uint64_t want; } SECTIONS[S_COUNT] = {
    { "CONF", CONF_BYTES }, { "TOPT", TOPT_BYTES }, { "STAT", STAT_BYTES }, { "DATA", 0 }, { "WGHT", 0 },
    { "ADAM", 0 }, { "NAME", 0 }, { "ACAL", 0 }, { "DIST", 0 }, { "AWIN", 4 }, { "VPOS", 4 },
};
typedef struct { const uint8_t *p; uint64_t len; } sec_ref;

/* In the helpers below an error is a code and one line in err. */
#define SFAIL(code, ...) do { atm_fail(err, errlen, __VA_ARGS__); return (code); } while (0)

/* The fixed header: magic, version, declared size, CRC. *nsec: the section count. */
static int check_header(const uint8_t *buf, size_t len, uint32_t *nsec, char *err, size_t errlen) {
    if (len == 0 || !buf) SFAIL(ATM_CKPT_ETRUNC, "truncated: the file is empty");
    if (len < HEADER_BYTES) {
        size_t k = len < 8 ? len : 8;
        if (memcmp(buf, MAGIC, k) != 0) SFAIL(ATM_CKPT_EMAGIC, "not an atome checkpoint (bad magic)");
        SFAIL(ATM_CKPT_ETRUNC, "truncated: %zu bytes, shorter than the %d-byte header", len, HEADER_BYTES);
    }
    if (memcmp(buf, MAGIC, 8) != 0) SFAIL(ATM_CKPT_EMAGIC, "not an atome checkpoint (bad magic)");
    uint32_t version = atm_rd_u32le(buf + 8);
    if (version != ATM_CKPT_VERSION)
        SFAIL(ATM_CKPT_EVERSION, "format version %u; this build reads version %d", version, ATM_CKPT_VERSION);
    *nsec = atm_rd_u32le(buf + 12);
    uint64_t fsize = atm_rd_u64le(buf + 16);
    if ((uint64_t)len < fsize) SFAIL(ATM_CKPT_ETRUNC, "truncated: %zu of %llu bytes", len, (unsigned long long)fsize);
    if (fsize < HEADER_BYTES + CRC_BYTES) SFAIL(ATM_CKPT_EFORMAT, "malformed: declared size %llu is too small", (unsigned long long)fsize);
    if ((uint64_t)len > fsize) SFAIL(ATM_CKPT_EFORMAT, "malformed: %llu bytes after the declared end", (unsigned long long)((uint64_t)len - fsize));
    uint32_t stored = atm_rd_u32le(buf + len - CRC_BYTES), actual = atm_crc32(buf, len - CRC_BYTES);
    if (stored != actual) SFAIL(ATM_CKPT_ECRC, "corrupt: CRC-32 mismatch (stored 0x%08X, computed 0x%08X)", stored, actual);
    if (*nsec > MAX_SECTIONS) SFAIL(ATM_CKPT_EFORMAT, "malformed: %u sections", *nsec);
    return ATM_CKPT_OK;
}

/* Every section found once (SECTIONS), unknown optional ones skipped, the
 * body claimed exactly; CONF and WGHT required. */
static int scan_sections(const uint8_t *buf, size_t len, uint32_t nsec, sec_ref *sec, char *err, size_t errlen) {
    const uint8_t *p = buf + HEADER_BYTES, *end = buf + len - CRC_BYTES;
    memset(sec, 0, sizeof(sec_ref) * S_COUNT);
    for (uint32_t s = 0; s < nsec; s++) {
        if ((size_t)(end - p) < SECTION_HEAD) SFAIL(ATM_CKPT_EFORMAT, "malformed: section %u header runs past the end", s);
        const uint8_t *tag = p;
        uint32_t flags = atm_rd_u32le(p + 4);
        uint64_t slen = atm_rd_u64le(p + 8);
        p += SECTION_HEAD;
        char tt[16];
        tag_text(tag, tt);
        if (slen > (uint64_t)(end - p)) SFAIL(ATM_CKPT_EFORMAT, "malformed: section %s length %llu runs past the end", tt, (unsigned long long)slen);
        int k = 0;
        while (k < S_COUNT && !tag_is(tag, SECTIONS[k].tag)) k++;
        if (k == S_COUNT) {
            if (flags & FLAG_REQUIRED) SFAIL(ATM_CKPT_EFORMAT, "unsupported required section %s (written by a newer build?)", tt);
        } else {
            if (sec[k].p) SFAIL(ATM_CKPT_EFORMAT, "malformed: duplicate section %s", tt);
            if (SECTIONS[k].want && slen != SECTIONS[k].want)
                SFAIL(ATM_CKPT_EFORMAT, "malformed: section %s has %llu bytes, expected %llu", tt, (unsigned long long)slen,
                      (unsigned long long)SECTIONS[k].want);
            sec[k].p = p;
            sec[k].len = slen;
        }
        p += slen;
    }
    if (p != end) SFAIL(ATM_CKPT_EFORMAT, "malformed: %zu unclaimed bytes after the last section", (size_t)(end - p));
    if (!sec[S_CONF].p) SFAIL(ATM_CKPT_EFORMAT, "malformed: no CONF section");
    if (!sec[S_WGHT].p) SFAIL(ATM_CKPT_EFORMAT, "malformed: no WGHT section");
    return ATM_CKPT_OK;
}

/* CONF (+ AWIN, VPOS): the model, validated, and its layout. */
static int decode_config(const sec_ref *sec, atm_config *c, atm_layout *L, char *err, size_t errlen) {
    const uint8_t *conf = sec[S_CONF].p, *awin = sec[S_AWIN].p, *vpos = sec[S_VPOS].p;
    c->family = get_i32(conf); c->vocab = get_i32(conf + 4); c->d_model = get_i32(conf + 8);
    c->n_layers = get_i32(conf + 12); c->d_head = get_i32(conf + 16); c->n_heads = get_i32(conf + 20);
    c->kernel = get_i32(conf + 24); c->top_k = get_i32(conf + 28); c->pathways = get_i32(conf + 32);
    c->d_ff = get_i32(conf + 36); c->d_inner = get_i32(conf + 40); c->max_seq = get_i32(conf + 44);
    c->attn_window = awin ? get_i32(awin) : 0;
    if (awin && c->attn_window == 0) SFAIL(ATM_CKPT_EFORMAT, "malformed: AWIN section holds 0");
    c->pos = vpos ? get_i32(vpos) : 0;
    if (vpos && c->pos == 0) SFAIL(ATM_CKPT_EFORMAT, "malformed: VPOS section holds 0");
    char why[200];
    if (atm_config_validate(c, why, sizeof why)) SFAIL(ATM_CKPT_ECONFIG, "bad config: %s", why);
    if (atm_layout_build(c, L)) SFAIL(ATM_CKPT_ECONFIG, "bad config: no layout for family %s", atm_family_name(c->family));
    return ATM_CKPT_OK;
}

static int decode_name(atm_ckpt *ck, const uint8_t *name, uint64_t name_len, char *err, size_t errlen) {
    if (name_len >= sizeof ck->name || memchr(name, 0, (size_t)name_len))
        SFAIL(ATM_CKPT_EFORMAT, "malformed: bad NAME section");
    memcpy(ck->name, name, (size_t)name_len);
    ck->name[name_len] = 0;
    return ATM_CKPT_OK;
}

#undef PFAIL
#define PFAIL SFAIL
static int decode_topt(atm_ckpt *ck, const uint8_t *q, char *err, size_t errlen) {
    atm_train_opts *o = &ck->opt;
    o->quant = get_i32(q);
    o->lr = get_f32(q + 4); o->lr2 = get_f32(q + 8); o->beta1 = get_f32(q + 12);
    o->beta2 = get_f32(q + 16); o->eps = get_f32(q + 20); o->wd = get_f32(q + 24);
    o->clip = get_f32(q + 28); o->lr_min = get_f32(q + 32);
    o->warmup = get_i64(q + 36);
    o->cosine = get_i32(q + 44);
    o->fp_fraction = get_f32(q + 48);
    o->steps = get_i64(q + 52);
    o->batch = get_i32(q + 60);
    o->seq = get_i32(q + 64);
    o->seed = atm_rd_u32le(q + 68);
    char why[200];
    if (atm_train_opts_validate(o, why, sizeof why)) PFAIL(ATM_CKPT_ECONFIG, "bad training options: %s", why);
    ck->has_opt = 1;
    return ATM_CKPT_OK;
}

static int decode_stat(atm_ckpt *ck, const uint8_t *q, char *err, size_t errlen) {
    ck->step = get_i64(q);
    ck->adam_t = get_i64(q + 8);
    ck->stage = get_i32(q + 16);
    for (int i = 0; i < 4; i++) ck->rng.s[i] = atm_rd_u32le(q + 20 + 4 * i);
    ck->elapsed_s = get_f64(q + 36);
    ck->last_loss = get_f64(q + 44);
    if (ck->step < 0 || ck->adam_t < 0 || ck->adam_t > ck->step || (ck->stage != 0 && ck->stage != 1))
        PFAIL(ATM_CKPT_EFORMAT, "malformed: bad training state (step %lld, adam step %lld, stage %d)",
              (long long)ck->step, (long long)ck->adam_t, (int)ck->stage);
    if ((ck->rng.s[0] | ck->rng.s[1] | ck->rng.s[2] | ck->rng.s[3]) == 0)
        PFAIL(ATM_CKPT_EFORMAT, "malformed: all-zero generator state");
    ck->has_state = 1;
    return ATM_CKPT_OK;
}

static int decode_data(atm_ckpt *ck, const uint8_t *q, uint64_t qlen, char *err, size_t errlen) {
    const uint8_t *qe = q + qlen;
    if (qlen < 16) PFAIL(ATM_CKPT_EFORMAT, "malformed: DATA section too short");
    ck->max_bytes = atm_rd_u64le(q);
    ck->split = get_f64(q + 8);
    q += 16;
    if (read_string(&q, qe, ck->data_path, sizeof ck->data_path) ||
        read_string(&q, qe, ck->valid_path, sizeof ck->valid_path) || q != qe)
        PFAIL(ATM_CKPT_EFORMAT, "malformed: bad DATA section");
    if (!ck->valid_path[0] && !(ck->split > 0.0 && ck->split < 1.0))
        PFAIL(ATM_CKPT_EFORMAT, "malformed: DATA split %g is not in (0, 1)", ck->split);
    ck->has_data = 1;
    return ATM_CKPT_OK;
}

static int decode_dist(atm_ckpt *ck, const uint8_t *q, uint64_t qlen, char *err, size_t errlen) {
    const uint8_t *qe = q + qlen;
    if (qlen < 8) PFAIL(ATM_CKPT_EFORMAT, "malformed: DIST section too short");
    ck->distill_weight = get_f32(q);
    ck->teacher_crc = atm_rd_u32le(q + 4);
    q += 8;
    if (read_string(&q, qe, ck->teacher_path, sizeof ck->teacher_path) || q != qe || !ck->teacher_path[0])
        PFAIL(ATM_CKPT_EFORMAT, "malformed: bad DIST section");
    if (!(ck->distill_weight > 0.0f && ck->distill_weight <= 1.0f))
        PFAIL(ATM_CKPT_EFORMAT, "malformed: DIST weight %g is not in (0, 1]", (double)ck->distill_weight);
    ck->has_dist = 1;
    return ATM_CKPT_OK;
}

/* WGHT, ADAM, ACAL checked against the config, then copied out. */
static int decode_tensors(atm_ckpt *ck, const sec_ref *sec, size_t np, char *err, size_t errlen) {
    const atm_config *c = &ck->cfg;
    const uint8_t *wght = sec[S_WGHT].p, *adam = sec[S_ADAM].p, *calb = sec[S_ACAL].p;
    uint64_t wght_len = sec[S_WGHT].len, adam_len = sec[S_ADAM].len, calb_len = sec[S_ACAL].len;
    if (wght_len < 8 || atm_rd_u64le(wght) != (uint64_t)np || wght_len != 8 + 4 * (uint64_t)np)
        SFAIL(ATM_CKPT_EFORMAT, "malformed: WGHT holds %llu values, the config has %zu parameters",
              (unsigned long long)(wght_len >= 8 ? atm_rd_u64le(wght) : 0), np);
    if (adam && (adam_len < 8 || atm_rd_u64le(adam) != (uint64_t)np || adam_len != 8 + 8 * (uint64_t)np))
        SFAIL(ATM_CKPT_EFORMAT, "malformed: ADAM section does not match the config's %zu parameters", np);
    if (calb) {
        atm_calib_stats cs;
        char why[160];
        if (c->family != ATM_FAMILY_ATOME) SFAIL(ATM_CKPT_EFORMAT, "malformed: ACAL section in a %s checkpoint", atm_family_name(c->family));
        if (atm_calib_parse(calb, (size_t)calb_len, &cs, why, sizeof why))
            SFAIL(ATM_CKPT_EFORMAT, "malformed: ACAL section: %s", why);
        if (cs.n_layers != c->n_layers || cs.d_model != c->d_model)
            SFAIL(ATM_CKPT_EFORMAT, "malformed: ACAL section is for %d layers of width %d, the config has %d of %d",
                  (int)cs.n_layers, (int)cs.d_model, (int)c->n_layers, (int)c->d_model);
    }
    ck->n_params = np;
    ck->owns = 1;
    ck->w = (float *)malloc((np ? np : 1) * sizeof(float));
    if (adam) {
        ck->m = (float *)malloc((np ? np : 1) * sizeof(float));
        ck->v = (float *)malloc((np ? np : 1) * sizeof(float));
    }
    if (calb) {
        ck->calib = (uint8_t *)malloc((size_t)calb_len);
        if (ck->calib) { memcpy(ck->calib, calb, (size_t)calb_len); ck->calib_len = (size_t)calb_len; }
    }
    if (!ck->w || (adam && (!ck->m || !ck->v)) || (calb && !ck->calib)) SFAIL(ATM_CKPT_ENOMEM, "out of memory (%zu parameters)", np);
    for (size_t i = 0; i < np; i++) ck->w[i] = get_f32(wght + 8 + 4 * i);
    if (adam) {
        for (size_t i = 0; i < np; i++) ck->m[i] = get_f32(adam + 8 + 4 * i);
        for (size_t i = 0; i < np; i++) ck->v[i] = get_f32(adam + 8 + 4 * (np + i));
    }
    return ATM_CKPT_OK;
}
#undef PFAIL
#undef SFAIL

int atm_ckpt_parse(const uint8_t *buf, size_t len, atm_ckpt *ck, char *err, size_t errlen) {
    atm_ckpt_init(ck);
    uint32_t nsec = 0;
    sec_ref sec[S_COUNT];
    atm_layout L;
    int rc = check_header(buf, len, &nsec, err, errlen);
    if (!rc) rc = scan_sections(buf, len, nsec, sec, err, errlen);
    if (!rc) rc = decode_config(sec, &ck->cfg, &L, err, errlen);
    if (!rc && sec[S_NAME].p) rc = decode_name(ck, sec[S_NAME].p, sec[S_NAME].len, err, errlen);
    if (!rc && sec[S_TOPT].p) rc = decode_topt(ck, sec[S_TOPT].p, err, errlen);
    if (!rc && sec[S_STAT].p) rc = decode_stat(ck, sec[S_STAT].p, err, errlen);
    if (!rc && sec[S_DATA].p) rc = decode_data(ck, sec[S_DATA].p, sec[S_DATA].len, err, errlen);
    if (!rc && sec[S_DIST].p) rc = decode_dist(ck, sec[S_DIST].p, sec[S_DIST].len, err, errlen);
    if (!rc) rc = decode_tensors(ck, sec, L.n_params, err, errlen);
    if (rc) atm_ckpt_free(ck);
    return rc;
}

int atm_ckpt_read(const char *path, atm_ckpt *ck, char *err, size_t errlen) {
    atm_ckpt_init(ck);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen) snprintf(err, errlen, "cannot open checkpoint '%s': %s", path, strerror(errno));
        return ATM_CKPT_EIO;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = (uint8_t *)malloc(cap);
    int rc = ATM_CKPT_OK;
    char why[400];
    for (;;) {
        if (!buf) { rc = ATM_CKPT_ENOMEM; snprintf(why, sizeof why, "out of memory"); break; }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) {
            if (ferror(f)) { rc = ATM_CKPT_EIO; snprintf(why, sizeof why, "read error: %s", strerror(errno)); }
            break;
        }
        /* Checkpoints of the largest allowed model stay far below 4 GiB. */
        if ((uint64_t)cap >= ((uint64_t)1 << 32) || cap * 2 < cap) { rc = ATM_CKPT_EFORMAT; snprintf(why, sizeof why, "file too large"); break; }
        uint8_t *nb = (uint8_t *)realloc(buf, cap * 2);
        if (!nb) { free(buf); buf = NULL; continue; }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (rc == ATM_CKPT_OK) rc = atm_ckpt_parse(buf, n, ck, why, sizeof why);
    free(buf);
    if (rc != ATM_CKPT_OK && err && errlen) snprintf(err, errlen, "checkpoint '%s': %s", path, why);
    return rc;
}

/* ---- atomic write ---- */
int atm_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    size_t pl = strlen(path);
    char *tmp = (char *)malloc(pl + 16);
    if (!tmp) { if (err && errlen) snprintf(err, errlen, "out of memory"); return ATM_CKPT_ENOMEM; }
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp-XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        if (err && errlen) snprintf(err, errlen, "cannot create '%s': %s", path, strerror(errno));
        free(tmp);
        return ATM_CKPT_EIO;
    }
    /* mkstemp creates 0600; give the file the usual 0666 & ~umask. */
    mode_t um = umask(0);
    umask(um);
    (void)fchmod(fd, (mode_t)(0666 & ~um));
    const uint8_t *p = (const uint8_t *)data;
    size_t left = len;
    int e = 0;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) { if (errno == EINTR) continue; e = errno; break; }
        p += w;
        left -= (size_t)w;
    }
    if (!e && fsync(fd) != 0) e = errno;
    if (close(fd) != 0 && !e) e = errno;
    if (!e && rename(tmp, path) != 0) e = errno;
    if (e) {
        unlink(tmp);
        if (err && errlen) snprintf(err, errlen, "cannot write '%s': %s", path, strerror(e));
        free(tmp);
        return ATM_CKPT_EIO;
    }
    /* Make the rename durable: fsync the directory (best effort). */
    char *slash = strrchr(tmp, '/');
    if (slash) { if (slash == tmp) slash[1] = 0; else *slash = 0; }
    else { tmp[0] = '.'; tmp[1] = 0; }
    int dfd = open(tmp, O_RDONLY);
    if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    free(tmp);
    return ATM_CKPT_OK;
}

int atm_ckpt_write(const char *path, const atm_ckpt *ck, char *err, size_t errlen) {
    uint8_t *buf = NULL;
    size_t len = 0;
    int rc = atm_ckpt_serialize(ck, &buf, &len);
    if (rc != ATM_CKPT_OK) {
        if (err && errlen) snprintf(err, errlen, "out of memory serialising checkpoint");
        return rc;
    }
    rc = atm_write_atomic(path, buf, len, err, errlen);
    free(buf);
    return rc;
}

/* ---- trainer glue ---- */
void atm_ckpt_from_trainer(atm_ckpt *ck, const atm_trainer *tr) {
    ck->cfg = tr->L.cfg;
    ck->opt = tr->opt;
    ck->has_opt = 1;
    ck->step = tr->step;
    ck->adam_t = tr->adam_t;
    ck->stage = tr->stage;
    ck->rng = tr->rng;
    ck->last_loss = tr->last_loss;
    ck->has_state = 1;
    ck->n_params = tr->L.n_params;
    ck->w = tr->w;
    ck->m = tr->m;
    ck->v = tr->v;
    ck->owns = 0;
}

int atm_trainer_load_ckpt(atm_trainer *tr, const atm_ckpt *ck) {
    size_t n = tr->L.n_params;
    if (ck->n_params != n || !ck->w) return -1;
    memcpy(tr->w, ck->w, n * sizeof(float));
    if (ck->m && ck->v) {
        memcpy(tr->m, ck->m, n * sizeof(float));
        memcpy(tr->v, ck->v, n * sizeof(float));
    } else {
        memset(tr->m, 0, n * sizeof(float));
        memset(tr->v, 0, n * sizeof(float));
    }
    if (ck->has_state) {
        tr->step = ck->step;
        tr->adam_t = ck->adam_t;
        tr->stage = ck->stage;
        tr->rng = ck->rng;
        tr->last_loss = ck->last_loss;
    }
    return 0;
}
