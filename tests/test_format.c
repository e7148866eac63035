/* tests/test_format.c — core/format.c: CRC-32, ATOME01/ATOME02 trit packing,
 * the legacy layout plan (sizes of the named configs, offsets) and the
 * validator's error codes, on synthetic files and on the reference's
 * published 944K blob (which must be present: a missing file fails). */
#include "core/format.h"
#include "check.h"
#include "core/rng.h"
#include <string.h>

static uint32_t crc_bitwise(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static void test_crc(atm_rng *r) {
    const char *s = "123456789";
    CHECK(atm_crc32(s, 9) == 0xCBF43926u);
    CHECK(atm_crc32_update(atm_crc32_update(0, s, 4), s + 4, 5) == 0xCBF43926u);
    CHECK(atm_crc32(s, 0) == 0u);
    uint8_t buf[1000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)atm_rng_u32(r);
    for (size_t n = 0; n <= sizeof buf; n += 37) {
        CHECK(atm_crc32(buf, n) == crc_bitwise(buf, n));
        size_t cut = n / 3;
        CHECK(atm_crc32_update(atm_crc32(buf, cut), buf + cut, n - cut) == crc_bitwise(buf, n));
    }
}

static void random_trits(atm_rng *r, int8_t *t, size_t n) {
    for (size_t i = 0; i < n; i++) t[i] = (int8_t)((int)(atm_rng_u32(r) % 3u) - 1);
}

static void test_t2(atm_rng *r) {
    const int8_t ex[4] = { 0, 1, -1, 0 };
    uint8_t b[16];
    atm_t2_pack(ex, 4, b);
    CHECK(b[0] == 0x34);
    CHECK(atm_t2_bytes(0) == 0 && atm_t2_bytes(1) == 1 && atm_t2_bytes(4) == 1 && atm_t2_bytes(5) == 2);

    for (size_t n = 0; n <= 50; n++) {
        int8_t t[50], u[50];
        uint8_t p[13];
        random_trits(r, t, n);
        memset(p, 0xEE, sizeof p);
        atm_t2_pack(t, n, p);
        CHECK(atm_t2_bytes(n) == sizeof p || p[atm_t2_bytes(n)] == 0xEE); /* no write past the payload */
        atm_t2_unpack(p, n, u);
        CHECK(memcmp(t, u, n) == 0);
        for (size_t i = 0; i < n; i++) CHECK(atm_t2_get(p, i) == t[i]);
        CHECK(atm_t2_check(p, n, NULL) == ATM_FMT_OK);
        if (n % 4) {
            CHECK((p[n / 4] >> (2 * (n % 4))) == 0);           /* padding trits are 00 */
            uint8_t q[13];
            memcpy(q, p, sizeof q);
            q[n / 4] |= (uint8_t)(1u << 6);                    /* +1 in the last padding slot */
            size_t bad = 99;
            CHECK(atm_t2_check(q, n, &bad) == ATM_FMT_E_PADDING && bad == n / 4);
        }
        if (n) {                                               /* code 10 anywhere is reported */
            size_t i = atm_rng_u32(r) % n, bad = 99;
            uint8_t q[13];
            memcpy(q, p, sizeof q);
            q[i / 4] = (uint8_t)((q[i / 4] & ~(3u << (2 * (i % 4)))) | (2u << (2 * (i % 4))));
            CHECK(atm_t2_check(q, n, &bad) == ATM_FMT_E_TRIT_CODE && bad == i / 4);
            CHECK(atm_t2_get(q, i) == 0);                      /* and decodes as 0 */
        }
    }
    /* pack maps any positive / negative value by its sign */
    const int8_t odd[3] = { 5, -7, 0 };
    atm_t2_pack(odd, 3, b);
    CHECK(b[0] == (1u | (3u << 2)));
}

static void test_t5(atm_rng *r) {
    for (unsigned x = 0; x < 256; x++) {
        uint8_t d[5];
        atm_t5_digits((uint8_t)x, d);
        unsigned y = x;
        for (int m = 0; m < 4; m++) { CHECK(d[m] == y % 3); y /= 3; }
        CHECK(d[4] == y);
    }
    /* one trit, padded with four digit-1 trits: byte = (t+1) + 1*(3+9+27+81) */
    int8_t one[1] = { 0 };
    uint8_t b[16];
    atm_t5_pack(one, 1, b); CHECK(b[0] == 121);
    one[0] = -1; atm_t5_pack(one, 1, b); CHECK(b[0] == 120);
    one[0] = 1;  atm_t5_pack(one, 1, b); CHECK(b[0] == 122);
    const int8_t all_pos[5] = { 1, 1, 1, 1, 1 }, all_neg[5] = { -1, -1, -1, -1, -1 };
    atm_t5_pack(all_pos, 5, b); CHECK(b[0] == 242);
    atm_t5_pack(all_neg, 5, b); CHECK(b[0] == 0);
    CHECK(atm_t5_bytes(0) == 0 && atm_t5_bytes(5) == 1 && atm_t5_bytes(6) == 2);

    for (size_t n = 0; n <= 50; n++) {
        int8_t t[50], u[50];
        uint8_t p[11];
        random_trits(r, t, n);
        memset(p, 0xEE, sizeof p);
        atm_t5_pack(t, n, p);
        CHECK(atm_t5_bytes(n) == sizeof p || p[atm_t5_bytes(n)] == 0xEE);
        atm_t5_unpack(p, n, u);
        CHECK(memcmp(t, u, n) == 0);
        CHECK(atm_t5_check(p, n, NULL) == ATM_FMT_OK);
        for (size_t a = 0; a <= n; a++) {                     /* every sub-range */
            size_t len = (n - a) ? atm_rng_u32(r) % (n - a + 1) : 0;
            atm_t5_unpack_range(p, a, len, u);
            CHECK(memcmp(t + a, u, len) == 0);
        }
        if (n % 5) {
            uint8_t d[5];
            atm_t5_digits(p[n / 5], d);
            for (size_t m = n % 5; m < 5; m++) CHECK(d[m] == 1);   /* padding digit 1 */
            uint8_t q[11];
            memcpy(q, p, sizeof q);
            q[n / 5] = (uint8_t)(q[n / 5] + 81 <= 242 ? q[n / 5] + 81 : q[n / 5] - 81); /* top digit */
            size_t bad = 99;
            CHECK(atm_t5_check(q, n, &bad) == ATM_FMT_E_PADDING && bad == n / 5);
        }
        if (n) {
            for (unsigned v = 243; v < 256; v++) {
                uint8_t q[11];
                size_t i = atm_rng_u32(r) % atm_t5_bytes(n), bad = 99;
                memcpy(q, p, sizeof q);
                q[i] = (uint8_t)v;
                CHECK(atm_t5_check(q, n, &bad) == ATM_FMT_E_TRIT_BYTE && bad == i);
                atm_t5_unpack(q, n, u);                      /* garbage but in range */
                for (size_t k = 0; k < n; k++) CHECK(u[k] >= -1 && u[k] <= 1);
            }
        }
    }
}

static int plan_size(const atm_legacy_shape *s, int fmt, size_t *size) {
    atm_legacy_plan p;
    int e = atm_legacy_plan_make(s, fmt, &p);
    *size = p.size;
    return e;
}

static void test_sizes(void) {
    /* sizes from the reference description (§5.1, §5.2); 276,655 is also
     * the size of the published blob, checked in test_blob */
    const atm_legacy_shape s60 = { 256, 64, 4, 16, 5 }, s944 = { 256, 256, 8, 64, 5 };
    size_t z = 0;
    CHECK(plan_size(&s60, 1, &z) == 0 && z == 20575);
    CHECK(plan_size(&s60, 2, &z) == 0 && z == 17613);
    CHECK(plan_size(&s944, 1, &z) == 0 && z == 276655);
    CHECK(plan_size(&s944, 2, &z) == 0 && z == 229975);
    size_t zz[4];
    plan_size(&s60, 1, &zz[0]); plan_size(&s60, 2, &zz[1]);
    plan_size(&s944, 1, &zz[2]); plan_size(&s944, 2, &zz[3]);
    printf("legacy sizes: 60K %zu / %zu, 944K %zu / %zu (ATOME01 / ATOME02)\n", zz[0], zz[1], zz[2], zz[3]);

    /* every item starts where the previous one ended; the last ends at size;
     * f32 vectors of the named configs sit at offset = 3 mod 4 (the
     * reference's alignment hazard) */
    atm_legacy_plan p;
    CHECK(atm_legacy_plan_make(&s60, 1, &p) == 0);
    CHECK(p.n_items == 10 * 4 + 4);
    size_t o = ATM_LEGACY_MAGIC_LEN;
    int vec_misaligned = 1;
    for (size_t i = 0; i < p.n_items; i++) {
        atm_legacy_span s;
        CHECK(atm_legacy_item(&p, i, &s) == 0);
        CHECK(s.off == o);
        if (!s.ternary && s.off % 4 != 3) vec_misaligned = 0;
        o += s.bytes;
    }
    CHECK(o == p.size);
    CHECK(vec_misaligned);
    atm_legacy_span s;
    CHECK(atm_legacy_item(&p, p.n_items, &s) == ATM_FMT_E_ARG);
    CHECK(atm_legacy_span_of(&p, ATM_LF_WV, 4, &s) == ATM_FMT_E_ARG);
    CHECK(atm_legacy_span_of(&p, ATM_LF_WV, 3, &s) == 0 && s.n == 64 * 64 && s.bytes == 4 + 1024);
    CHECK(atm_legacy_span_of(&p, ATM_LF_UNEMBED, 7, &s) == 0 && s.off == 20575 - 4100 && s.layer == -1);

    atm_legacy_shape bad = s60;
    bad.d_model = 0;      CHECK(atm_legacy_plan_make(&bad, 1, &p) == ATM_FMT_E_SHAPE);
    bad = s60; bad.n_layers = 65; CHECK(atm_legacy_plan_make(&bad, 1, &p) == ATM_FMT_E_SHAPE);
    bad = s60; bad.vocab = 257;   CHECK(atm_legacy_plan_make(&bad, 1, &p) == ATM_FMT_E_SHAPE);
    CHECK(atm_legacy_plan_make(&s60, 3, &p) == ATM_FMT_E_ARG);
    /* the largest allowed shape stays below 2^30 bytes (format.h's bound) */
    const atm_legacy_shape big = { 256, 4096, 64, 4096, 64 };
    CHECK(plan_size(&big, 1, &z) == 0 && z < ((size_t)1 << 30));
}

/* A valid legacy file for shape s with random content. */
static size_t build(const atm_legacy_shape *s, int fmt, atm_rng *r, uint8_t *buf, size_t cap) {
    atm_legacy_plan p;
    if (atm_legacy_plan_make(s, fmt, &p) || p.size > cap) return 0;
    memcpy(buf, atm_legacy_magic(fmt), ATM_LEGACY_MAGIC_LEN);
    static int8_t t[4096];
    for (size_t i = 0; i < p.n_items; i++) {
        atm_legacy_span sp;
        atm_legacy_item(&p, i, &sp);
        if (sp.ternary) {
            atm_wr_u32le(buf + sp.off, 0x3D000000u + (atm_rng_u32(r) & 0xFFFFFu)); /* ~0.03 */
            random_trits(r, t, sp.n);
            if (fmt == 1) atm_t2_pack(t, sp.n, buf + sp.off + 4);
            else atm_t5_pack(t, sp.n, buf + sp.off + 4);
        } else {
            for (size_t j = 0; j < sp.n; j++)
                atm_wr_u32le(buf + sp.off + 4 * j, atm_rng_u32(r) & 0xBFFFFFFFu); /* |x| < 2 */
        }
    }
    return p.size;
}

/* validates a copy in a buffer of exactly n bytes, so that a sanitizer
 * build catches any read past the end */
static int validate(const uint8_t *b, size_t n, const atm_legacy_shape *s, atm_fmt_where *w) {
    uint8_t *c = n ? malloc(n) : NULL;
    if (n) memcpy(c, b, n);
    int e = atm_legacy_validate(c, n, s, NULL, w);
    free(c);
    return e;
}

static void test_walker(atm_rng *r) {
    /* odd sizes everywhere so every payload has padding */
    const atm_legacy_shape s = { 31, 13, 2, 7, 3 };
    static uint8_t f[2][8192], g[8192];
    size_t n[2];
    for (int fmt = 1; fmt <= 2; fmt++) {
        uint8_t *b = f[fmt - 1];
        n[fmt - 1] = build(&s, fmt, r, b, sizeof f[0]);
        size_t len = n[fmt - 1];
        CHECK(len > 0);
        atm_legacy_plan p;
        atm_fmt_where w;
        CHECK(atm_legacy_validate(b, len, &s, &p, &w) == ATM_FMT_OK && p.format == fmt && p.size == len);

        /* every truncation is "truncated"; one extra byte is "trailing" */
        for (size_t k = 0; k < len; k++) {
            int e = validate(b, k, &s, &w);
            CHECKF(e == ATM_FMT_E_TRUNCATED && w.offset == k, "fmt %d len %zu: %d", fmt, k, e);
        }
        memcpy(g, b, len); g[len] = 0;
        CHECK(validate(g, len + 1, &s, &w) == ATM_FMT_E_TRAILING && w.offset == len);
        /* the wrong shape is caught by the size */
        atm_legacy_shape s2 = s; s2.d_head = 8;
        CHECK(validate(b, len, &s2, &w) == ATM_FMT_E_TRUNCATED);
        s2 = s; s2.kernel = 2;
        CHECK(validate(b, len, &s2, &w) == ATM_FMT_E_TRAILING);
        s2 = s; s2.kernel = 0;
        CHECK(validate(b, len, &s2, &w) == ATM_FMT_E_SHAPE);

        memcpy(g, b, len); g[6] = '3';
        CHECK(validate(g, len, &s, &w) == ATM_FMT_E_MAGIC);
        CHECK(validate((const uint8_t *)"ATOMX", 5, &s, &w) == ATM_FMT_E_MAGIC);
        CHECK(validate((const uint8_t *)"ATOM", 4, &s, &w) == ATM_FMT_E_TRUNCATED);
        CHECK(validate(NULL, 0, &s, &w) == ATM_FMT_E_TRUNCATED);

        /* per-field corruption: the error names the field, layer and offset */
        for (size_t i = 0; i < p.n_items; i++) {
            atm_legacy_span sp;
            atm_legacy_item(&p, i, &sp);
            if (sp.ternary) {
                const uint32_t bad_scales[] = { 0u, 0x80000000u, 0xBF800000u, 0x7F800000u, 0x7FC00000u, 0xFF800000u };
                for (size_t k = 0; k < sizeof bad_scales / sizeof bad_scales[0]; k++) {
                    memcpy(g, b, len);
                    atm_wr_u32le(g + sp.off, bad_scales[k]);
                    CHECK(validate(g, len, &s, &w) == ATM_FMT_E_SCALE && w.field == sp.field &&
                          w.layer == sp.layer && w.offset == sp.off);
                }
                memcpy(g, b, len);
                atm_wr_u32le(g + sp.off, 1u);                   /* smallest subnormal is > 0 */
                CHECK(validate(g, len, &s, &w) == ATM_FMT_OK);
                memcpy(g, b, len);
                size_t pb = atm_trits_bytes(fmt, sp.n), j = atm_rng_u32(r) % pb;
                if (fmt == 1) g[sp.off + 4 + j] |= 0x02;        /* code 10 or 11 in slot 0 */
                else g[sp.off + 4 + j] = 250;
                int e = validate(g, len, &s, &w);
                if (fmt == 2) CHECK(e == ATM_FMT_E_TRIT_BYTE && w.offset == sp.off + 4 + j && w.field == sp.field);
                else if ((b[sp.off + 4 + j] & 3u) == 0) CHECK(e == ATM_FMT_E_TRIT_CODE && w.offset == sp.off + 4 + j);
                else CHECK(e == ATM_FMT_OK);
                memcpy(g, b, len);
                if (fmt == 1) g[sp.off + 4 + pb - 1] |= 0xC0;  /* all payloads here have padding */
                else g[sp.off + 4 + pb - 1] = (uint8_t)(g[sp.off + 4 + pb - 1] < 162 ? g[sp.off + 4 + pb - 1] + 81 : g[sp.off + 4 + pb - 1] - 81);
                CHECK((sp.n % (fmt == 1 ? 4 : 5)) != 0);
                CHECK(validate(g, len, &s, &w) == ATM_FMT_E_PADDING && w.field == sp.field && w.layer == sp.layer);
            } else {
                size_t j = atm_rng_u32(r) % sp.n;
                memcpy(g, b, len);
                atm_wr_u32le(g + sp.off + 4 * j, 0x7FC00001u);
                CHECK(validate(g, len, &s, &w) == ATM_FMT_E_VECTOR && w.field == sp.field &&
                      w.layer == sp.layer && w.offset == sp.off + 4 * j);
                memcpy(g, b, len);
                atm_wr_u32le(g + sp.off + 4 * j, 0x80000000u);  /* -0 is a fine vector value */
                CHECK(validate(g, len, &s, &w) == ATM_FMT_OK);
            }
        }
    }
    /* ATOME01 and ATOME02 files of the same shape differ in size; each is
     * rejected by size when given the other's magic */
    CHECK(n[0] != n[1]);
    memcpy(g, f[0], n[0]); g[6] = '2';
    CHECK(validate(g, n[0], &s, NULL) == (n[0] > n[1] ? ATM_FMT_E_TRAILING : ATM_FMT_E_TRUNCATED));

    /* all messages distinct and non-empty */
    for (int a = 0; a < ATM_FMT_N_ERRORS; a++) {
        CHECK(atm_fmt_strerror(a)[0] != 0);
        for (int b2 = a + 1; b2 < ATM_FMT_N_ERRORS; b2++) CHECK(strcmp(atm_fmt_strerror(a), atm_fmt_strerror(b2)) != 0);
    }
    CHECK(atm_fmt_strerror(-1)[0] != 0 && atm_fmt_strerror(ATM_FMT_N_ERRORS)[0] != 0);
}

/* The published reference blob validates as ATOME01 for the 944K shape. */
static void test_blob(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/interop/atome_944k.bin", check_shared_dir());
    FILE *fp = fopen(path, "rb");
    CHECKF(fp != NULL, "cannot open %s", path);
    if (!fp) return;
    static uint8_t b[300000];
    size_t n = fread(b, 1, sizeof b, fp);
    fclose(fp);
    CHECK(n == 276655);
    const atm_legacy_shape s = { 256, 256, 8, 64, 5 };
    atm_legacy_plan p;
    atm_fmt_where w;
    int e = atm_legacy_validate(b, n, &s, &p, &w);
    CHECKF(e == ATM_FMT_OK, "%s at %zu (%s, layer %d)", atm_fmt_strerror(e), w.offset,
           atm_legacy_field_name(w.field), w.layer);
    CHECK(p.format == 1);
    CHECK(atm_rd_u32le(b + 7) == 0x3D90F178u);   /* alpha_E quoted in the reference notes */
    printf("944K blob: CRC-32 %08X\n", (unsigned)atm_crc32(b, n));
}

int main(void) {
    atm_rng r;
    atm_rng_seed(&r, 12345);
    test_crc(&r);
    test_t2(&r);
    test_t5(&r);
    test_sizes();
    test_walker(&r);
    test_blob();
    return CHECK_DONE();
}
