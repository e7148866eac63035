/* tests/test_ckpt_calib.c — the checkpoint's optional ACAL section (the
 * activation statistics `atome train` stores for `atome export`): round trip
 * of the exact bytes, checkpoints without it still read (and write no ACAL),
 * a malformed or misshaped section and an ACAL section in a non-atome
 * checkpoint are refused with EFORMAT (each with a valid CRC, so the
 * section's own checks are what refuses them). */
#include "check.h"
#include "core/train/ckpt.h"
#include "core/train/export.h"
#include "core/format.h"
#include <string.h>

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }

static void fix_crc(uint8_t *b, size_t len) { put32(b + len - 4, atm_crc32(b, len - 4)); }

/* Offset of the payload of the first section with this tag (0 if absent). */
static size_t section_payload(const uint8_t *b, size_t len, const char *tag) {
    size_t p = 24;
    while (p + 16 <= len - 4) {
        uint64_t sl = (uint64_t)atm_rd_u32le(b + p + 8) | ((uint64_t)atm_rd_u32le(b + p + 12) << 32);
        if (memcmp(b + p, tag, 4) == 0) return p + 16;
        p += 16 + (size_t)sl;
    }
    return 0;
}

static int parse_code(const uint8_t *b, size_t len, char *err, size_t n) {
    atm_ckpt ck;
    int rc = atm_ckpt_parse(b, len, &ck, err, n);
    atm_ckpt_free(&ck);
    return rc;
}

int main(void) {
    char err[300];
    atm_config c;
    CHECK(atm_config_by_name("atome-tiny", &c) == 0);
    atm_layout L;
    CHECK(atm_layout_build(&c, &L) == 0);
    atm_rng r;
    atm_rng_seed(&r, 5);
    float *w = (float *)malloc(L.n_params * sizeof(float));
    atm_init_params(&L, w, &r);

    /* statistics of a short text */
    uint8_t text[3000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = (uint8_t)("Once upon a time, a cat sat. "[i % 29]);
    atm_calib_stats st;
    CHECK(atm_calib_collect(&L, w, text, 500, 16, &st, err, sizeof err) == 0);
    size_t nb = atm_calib_bytes(c.n_layers);
    uint8_t *cal = (uint8_t *)malloc(nb);
    CHECK(atm_calib_serialize(&st, cal, nb) == nb);

    atm_ckpt a;
    atm_ckpt_init(&a);
    a.cfg = c;
    atm_rng_seed(&a.rng, 1);   /* STAT is always written and must hold a valid generator */
    a.n_params = L.n_params;
    a.w = w;
    a.calib = cal;
    a.calib_len = nb;
    uint8_t *buf = NULL, *plain = NULL;
    size_t len = 0, plen = 0;
    CHECK(atm_ckpt_serialize(&a, &buf, &len) == ATM_CKPT_OK);
    a.calib = NULL;
    a.calib_len = 0;
    CHECK(atm_ckpt_serialize(&a, &plain, &plen) == ATM_CKPT_OK);
    CHECK(len == plen + 16 + nb);
    CHECK(section_payload(plain, plen, "ACAL") == 0);

    /* round trip: the exact bytes come back */
    atm_ckpt b;
    int ok = atm_ckpt_parse(buf, len, &b, err, sizeof err) == ATM_CKPT_OK;
    CHECKF(ok, "%s", err);
    if (!ok) return CHECK_DONE();
    CHECK(b.calib && b.calib_len == nb && memcmp(b.calib, cal, nb) == 0);
    CHECK(memcmp(b.w, w, L.n_params * sizeof(float)) == 0);
    /* re-serialising the parsed checkpoint is byte-identical (strip/resume keep it) */
    uint8_t *again = NULL;
    size_t alen = 0;
    CHECK(atm_ckpt_serialize(&b, &again, &alen) == ATM_CKPT_OK);
    CHECK(alen == len && memcmp(again, buf, len) == 0);
    free(again);
    atm_ckpt_free(&b);
    CHECK(b.calib == NULL && b.calib_len == 0);

    /* a checkpoint without the section reads with calib NULL */
    CHECKF(atm_ckpt_parse(plain, plen, &b, err, sizeof err) == ATM_CKPT_OK, "%s", err);
    CHECK(b.calib == NULL && b.calib_len == 0);
    atm_ckpt_free(&b);

    /* malformed payloads, each with a valid CRC: bad magic, bad layer count,
     * a negative statistic, a NaN statistic */
    size_t off = section_payload(buf, len, "ACAL");
    CHECK(off > 0);
    uint8_t *x = (uint8_t *)malloc(len);
    const struct { size_t at; uint32_t v; } bad[] = {
        { 0, 0x4D4C4158u },        /* magic */
        { 12, 9 },                 /* layers 9 != 2 (size no longer matches) */
        { 32, 0xBF800000u },       /* x_max[0] = -1 */
        { 36, 0x7FC00000u },       /* x_max[1] = NaN */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memcpy(x, buf, len);
        put32(x + off + bad[i].at, bad[i].v);
        fix_crc(x, len);
        CHECKF(parse_code(x, len, err, sizeof err) == ATM_CKPT_EFORMAT && strstr(err, "ACAL"), "case %zu: %s", i, err);
    }
    /* statistics of another width (d_model field 17 instead of 16) */
    memcpy(x, buf, len);
    put32(x + off + 16, 17);
    fix_crc(x, len);
    CHECKF(parse_code(x, len, err, sizeof err) == ATM_CKPT_EFORMAT && strstr(err, "width 17"), "%s", err);
    free(x);

    /* an ACAL section in a vanilla checkpoint */
    {
        atm_config vc;
        CHECK(atm_config_by_name("vanilla-tiny", &vc) == 0);
        atm_layout VL;
        CHECK(atm_layout_build(&vc, &VL) == 0);
        float *vw = (float *)calloc(VL.n_params, sizeof(float));
        atm_ckpt v;
        atm_ckpt_init(&v);
        v.cfg = vc;
        atm_rng_seed(&v.rng, 1);
        v.n_params = VL.n_params;
        v.w = vw;
        v.calib = cal;
        v.calib_len = nb;
        uint8_t *vb = NULL;
        size_t vlen = 0;
        CHECK(atm_ckpt_serialize(&v, &vb, &vlen) == ATM_CKPT_OK);
        CHECKF(parse_code(vb, vlen, err, sizeof err) == ATM_CKPT_EFORMAT && strstr(err, "vanilla"), "%s", err);
        free(vb);
        free(vw);
    }

    free(cal);
    free(buf);
    free(plain);
    free(w);
    return CHECK_DONE();
}
