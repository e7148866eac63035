/* tests/test_fwimage.c — the host-side firmware tools (fwimage/fwimage.c):
 * finding the model slot in an ELF image, patching a model into it, and the
 * C-header export. Runs on a synthetic ELF32 image built here byte by byte
 * (null section, .text, .atome_model, .shstrtab), so it needs no cross
 * compiler; tests/node/mcu-firmware.test.mjs does the same on the real
 * firmware under QEMU.
 *
 * Every malformed-image case must be rejected with its own status, and
 * every truncation of a valid image must be rejected without reading out
 * of bounds (each truncated copy sits in its own exact-size allocation, so
 * ASan/valgrind would catch a stray read). */
#include "check.h"
#include "fwimage/fwimage.c"
#include <string.h>

#define CAP 200u                 /* slot capacity of the synthetic image */
#define SLOT (32u + CAP)

enum { OFF_TEXT = 52, OFF_SLOT = 52 + 16, OFF_STR = OFF_SLOT + SLOT, STR_LEN = 32,
       OFF_SH = OFF_STR + STR_LEN, N_SH = 4, IMG = OFF_SH + N_SH * 40 };

static void w16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }

static void sh(uint8_t *img, int i, uint32_t name, uint32_t type, uint32_t flags, uint32_t addr,
               uint32_t off, uint32_t size) {
    uint8_t *p = img + OFF_SH + 40 * i;
    atm_wr_u32le(p, name); atm_wr_u32le(p + 4, type); atm_wr_u32le(p + 8, flags);
    atm_wr_u32le(p + 12, addr); atm_wr_u32le(p + 16, off); atm_wr_u32le(p + 20, size);
}

/* A minimal ELF32 LE ARM image whose .atome_model holds an empty slot for board b. */
static void make_image(uint8_t *img, const char *b) {
    memset(img, 0, IMG);
    const uint8_t ident[16] = { 0x7F, 'E', 'L', 'F', 1, 1, 1 };
    memcpy(img, ident, 16);
    w16(img + 16, 2);          /* ET_EXEC */
    w16(img + 18, 40);         /* EM_ARM */
    atm_wr_u32le(img + 20, 1); /* EV_CURRENT */
    atm_wr_u32le(img + 32, OFF_SH);
    w16(img + 40, 52);         /* e_ehsize */
    w16(img + 46, 40);         /* e_shentsize */
    w16(img + 48, N_SH);
    w16(img + 50, 3);          /* e_shstrndx */
    for (int i = 0; i < 16; i++) img[OFF_TEXT + i] = (uint8_t)(0xA0 + i);
    uint8_t *s = img + OFF_SLOT;
    memcpy(s, "ATMSLOT1", 8);
    atm_wr_u32le(s + 8, CAP);
    strncpy((char *)s + 20, b, 12);
    /* names: "\0.text\0.atome_model\0.shstrtab\0" */
    const char names[] = "\0.text\0.atome_model\0.shstrtab";
    memcpy(img + OFF_STR, names, sizeof names);
    sh(img, 1, 1, 1, 6, 0x40, OFF_TEXT, 16);
    sh(img, 2, 7, 1, 2, 0x1000, OFF_SLOT, SLOT);
    sh(img, 3, 20, 3, 0, 0, OFF_STR, STR_LEN);
}

static int find(const uint8_t *img, size_t len, atm_fw_slot *s) {
    char err[256] = "";
    int rc = atm_fw_find_slot(img, len, s, err, sizeof err);
    if (rc != ATM_FW_OK && err[0] == '\0') { fprintf(stderr, "no message for status %d\n", rc); return 99; }
    return rc;
}

static void test_find_and_patch(void) {
    static uint8_t img[IMG], orig[IMG];
    make_image(img, "microbit");
    memcpy(orig, img, IMG);
    atm_fw_slot s;
    CHECK(find(img, IMG, &s) == ATM_FW_OK);
    CHECK(s.file_offset == OFF_SLOT && s.size == SLOT && s.capacity == CAP && s.addr == 0x1000);
    CHECK(s.model_len == 0 && strcmp(s.board, "microbit") == 0);

    uint8_t model[CAP];
    for (unsigned i = 0; i < CAP; i++) model[i] = (uint8_t)(i * 37u + 11u);
    char err[256];
    CHECK(atm_fw_patch(img, IMG, "microbit", model, 150, err, sizeof err) == ATM_FW_OK);
    CHECK(find(img, IMG, &s) == ATM_FW_OK && s.model_len == 150 && s.model_crc == atm_crc32(model, 150));
    CHECK(memcmp(img + OFF_SLOT + 32, model, 150) == 0);
    int rest_zero = 1;
    for (unsigned i = 150; i < CAP; i++) rest_zero &= img[OFF_SLOT + 32 + i] == 0;
    CHECK(rest_zero);
    /* nothing outside the length and CRC fields and the data changed */
    int same = 1;
    for (unsigned i = 0; i < IMG; i++)
        if ((i < OFF_SLOT + 12 || i >= OFF_SLOT + 20) && (i < OFF_SLOT + 32 || i >= OFF_SLOT + SLOT)) same &= img[i] == orig[i];
    CHECK(same);

    /* a second, shorter model leaves exactly what patching the empty template gives */
    static uint8_t again[IMG];
    memcpy(again, orig, IMG);
    CHECK(atm_fw_patch(img, IMG, NULL, model + 7, 40, err, sizeof err) == ATM_FW_OK);
    CHECK(atm_fw_patch(again, IMG, "microbit", model + 7, 40, err, sizeof err) == ATM_FW_OK);
    CHECK(memcmp(img, again, IMG) == 0);

    /* exactly the capacity fits, one byte more does not (and changes nothing) */
    CHECK(atm_fw_patch(img, IMG, "microbit", model, CAP, err, sizeof err) == ATM_FW_OK);
    static uint8_t big[CAP + 1], before[IMG];
    memcpy(before, img, IMG);
    CHECK(atm_fw_patch(img, IMG, "microbit", big, CAP + 1, err, sizeof err) == ATM_FW_E_CAPACITY);
    CHECK(memcmp(before, img, IMG) == 0);
    CHECK(atm_fw_patch(img, IMG, "mps2-an385", model, 10, err, sizeof err) == ATM_FW_E_BOARD);
    CHECK(strstr(err, "microbit") != NULL);
    CHECK(memcmp(before, img, IMG) == 0);
    /* empty model: an empty slot again */
    CHECK(atm_fw_patch(img, IMG, "microbit", NULL, 0, err, sizeof err) == ATM_FW_OK);
    CHECK(memcmp(img, orig, IMG) == 0);
}

static void test_malformed(void) {
    static uint8_t img[IMG];
    atm_fw_slot s;
    struct { const char *what; int off; uint32_t val; int width; int want; } cases[] = {
        { "magic",            0,            0x7E,      1, ATM_FW_E_ELF },
        { "ELFCLASS64",       4,            2,         1, ATM_FW_E_ELF },
        { "big endian",       5,            2,         1, ATM_FW_E_ELF },
        { "machine x86",      18,           3,         2, ATM_FW_E_ELF },
        { "shoff past end",   32,           IMG,       4, ATM_FW_E_ELF },
        { "shoff huge",       32,           0xFFFFFFF0u, 4, ATM_FW_E_ELF },
        { "shentsize small",  46,           20,        2, ATM_FW_E_ELF },
        { "shnum 0",          48,           0,         2, ATM_FW_E_ELF },
        { "shnum too many",   48,           N_SH + 1,  2, ATM_FW_E_ELF },
        { "shstrndx",         50,           N_SH,      2, ATM_FW_E_ELF },
        { "strtab offset",    OFF_SH + 3 * 40 + 16, IMG, 4, ATM_FW_E_ELF },
        { "strtab size",      OFF_SH + 3 * 40 + 20, 0xFFFFFFFFu, 4, ATM_FW_E_ELF },
        { "no slot name",     OFF_STR + 8,  'x',       1, ATM_FW_E_NOSLOT },
        { "name past table",  OFF_SH + 2 * 40, 30,     4, ATM_FW_E_NOSLOT },
        { "slot NOBITS",      OFF_SH + 2 * 40 + 4, 8,  4, ATM_FW_E_NOSLOT },
        { "slot not alloc",   OFF_SH + 2 * 40 + 8, 0,  4, ATM_FW_E_NOSLOT },
        { "slot offset",      OFF_SH + 2 * 40 + 16, IMG - 10, 4, ATM_FW_E_NOSLOT },
        { "slot size huge",   OFF_SH + 2 * 40 + 20, 0xFFFFFFF0u, 4, ATM_FW_E_NOSLOT },
        { "slot size 32",     OFF_SH + 2 * 40 + 20, 32, 4, ATM_FW_E_NOSLOT },
        { "slot magic",       OFF_SLOT + 7, '2',       1, ATM_FW_E_NOSLOT },
        { "capacity",         OFF_SLOT + 8, CAP - 1,   4, ATM_FW_E_NOSLOT },
        { "length > cap",     OFF_SLOT + 12, CAP + 1,  4, ATM_FW_E_NOSLOT },
        { "two slots",        OFF_SH + 1 * 40, 7,      4, ATM_FW_E_NOSLOT },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        make_image(img, "microbit");
        uint8_t *p = img + cases[i].off;
        if (cases[i].width == 1) p[0] = (uint8_t)cases[i].val;
        else if (cases[i].width == 2) w16(p, cases[i].val);
        else atm_wr_u32le(p, cases[i].val);
        int rc = find(img, IMG, &s);
        CHECKF(rc == cases[i].want, "%s: status %d, want %d", cases[i].what, rc, cases[i].want);
        uint8_t m[4] = { 1, 2, 3, 4 };
        char err[256];
        CHECKF(atm_fw_patch(img, IMG, NULL, m, 4, err, sizeof err) == cases[i].want, "%s (patch)", cases[i].what);
    }
    /* every truncation fails cleanly; exact-size copies expose stray reads to ASan */
    make_image(img, "microbit");
    int all_fail = 1;
    for (size_t n = 0; n < IMG; n++) {
        uint8_t *t = malloc(n ? n : 1);
        memcpy(t, img, n);
        all_fail &= find(t, n, &s) != ATM_FW_OK;
        free(t);
    }
    CHECK(all_fail);
    CHECK(atm_fw_find_slot(NULL, 10, &s, NULL, 0) == ATM_FW_E_ARG);
}

/* Parses the array initialiser of a generated header back into bytes. */
static size_t parse_header_bytes(const char *text, uint8_t *out, size_t cap) {
    const char *p = strstr(text, "] = {");
    size_t n = 0;
    if (!p) return (size_t)-1;
    for (p += 5; *p && *p != '}'; p++) {
        if (p[0] == '0' && p[1] == 'x') {
            unsigned v;
            if (sscanf(p + 2, "%2x", &v) != 1 || n == cap) return (size_t)-1;
            out[n++] = (uint8_t)v;
            p += 3;
        }
    }
    return n;
}

static void test_header(void) {
    uint8_t model[1000];
    for (int i = 0; i < 1000; i++) model[i] = (uint8_t)(i * 131 + 7);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return;
    char err[256];
    CHECK(atm_fw_header(f, model, sizeof model, "my_model", "dir/x*/y.atome", err, sizeof err) == ATM_FW_OK);
    long len = ftell(f);
    rewind(f);
    char *text = calloc(1, (size_t)len + 1);
    CHECK(fread(text, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    static uint8_t back[2000];
    CHECK(parse_header_bytes(text, back, sizeof back) == sizeof model);
    CHECK(memcmp(back, model, sizeof model) == 0);
    char want[128];
    snprintf(want, sizeof want, "#define MY_MODEL_CRC32 0x%08Xu", (unsigned)atm_crc32(model, sizeof model));
    CHECK(strstr(text, want) != NULL);
    CHECK(strstr(text, "#define MY_MODEL_BYTES 1000u") != NULL);
    CHECK(strstr(text, "static const uint8_t my_model[1000]") != NULL);
    CHECK(strstr(text, "x_/y.atome") != NULL);   /* '*' could close the comment */
    free(text);

    FILE *g = tmpfile();
    CHECK(atm_fw_header(g, model, 4, "9lives", NULL, err, sizeof err) == ATM_FW_E_ARG);
    CHECK(atm_fw_header(g, model, 4, "a-b", NULL, err, sizeof err) == ATM_FW_E_ARG);
    CHECK(atm_fw_header(g, model, 4, NULL, NULL, err, sizeof err) == ATM_FW_OK);
    fclose(g);
}

/* The board gets the faster encoding (ATOME01) when it fits, else the
 * model as it came, else nothing; the trits survive either way. */
static void test_choose_encoding(void) {
    size_t len = 0;
    uint8_t *a2 = check_read_file(ATOME_SOURCE_DIR "/models/atome-60k.atome", &len);
    CHECKF(a2 != NULL, "cannot read models/atome-60k.atome");
    if (!a2) return;
    atm_model m2, m1;
    CHECK(atm_model_open(&m2, a2, len) == ATM_OK && m2.encoding == ATM_ENC_ATOME02);
    size_t n1 = 0;
    atm_container_convert(a2, len, ATM_ENC_ATOME01, NULL, 0, &n1);
    CHECK(n1 > len);
    uint8_t *out = NULL;
    size_t olen = 0;
    char why[256];
    CHECK(atm_fw_choose_encoding("microbit", a2, len, n1, &out, &olen, why, sizeof why) == ATM_FW_OK);
    CHECK(olen == n1 && atm_model_open(&m1, out, olen) == ATM_OK && m1.encoding == ATM_ENC_ATOME01);
    CHECKF(strstr(why, "ATOME01 (re-encoded from ATOME02") == why, "%s", why);
    /* back to ATOME02: the same bytes as shipped */
    uint8_t *back = malloc(len);
    size_t blen = 0;
    CHECK(back && atm_container_convert(out, olen, ATM_ENC_ATOME02, back, len, &blen) == ATM_OK && blen == len &&
          memcmp(back, a2, len) == 0);
    free(back);
    free(out);
    /* one byte short of ATOME01: kept as ATOME02, and said why */
    CHECK(atm_fw_choose_encoding("microbit", a2, len, n1 - 1, &out, &olen, why, sizeof why) == ATM_FW_OK);
    CHECK(olen == len && memcmp(out, a2, len) == 0);
    CHECKF(strstr(why, "ATOME02 (ATOME01, faster here, is") == why, "%s", why);
    free(out);
    /* neither fits */
    CHECK(atm_fw_choose_encoding("microbit", a2, len, len - 1, &out, &olen, why, sizeof why) == ATM_FW_E_CAPACITY);
    CHECK(out == NULL);
    /* already ATOME01: kept */
    uint8_t *a1 = malloc(n1);
    CHECK(a1 && atm_container_convert(a2, len, ATM_ENC_ATOME01, a1, n1, &olen) == ATM_OK);
    CHECK(atm_fw_choose_encoding("mps2-an385", a1, n1, 1u << 20, &out, &olen, why, sizeof why) == ATM_FW_OK);
    CHECK(olen == n1 && memcmp(out, a1, n1) == 0);
    CHECKF(strcmp(why, "ATOME01 (faster on this board)") == 0, "%s", why);
    free(out);
    /* not a model */
    CHECK(atm_fw_choose_encoding("microbit", a2, 10, 1u << 20, &out, &olen, why, sizeof why) == ATM_FW_E_ARG);
    free(a1);
    free(a2);
}

static uint32_t get32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* UF2: every field of every block, the payloads back in order, the last
 * one padded with 0xFF; the refusals. The boot loader's CRC: the
 * CRC-32/MPEG-2 check value. */
static void test_uf2(void) {
    enum { N = 256 * 3 + 17 };
    static uint8_t bin[N];
    for (int i = 0; i < N; i++) bin[i] = (uint8_t)(i * 7 + 3);
    uint8_t *u = NULL;
    size_t ul = 0;
    CHECK(atm_fw_uf2(bin, N, 0x10000000u, ATM_FW_UF2_FAMILY_RP2040, &u, &ul) == 0);
    CHECK(ul == 4 * 512);
    for (uint32_t b = 0; u && b < 4; b++) {
        const uint8_t *k = u + 512 * b;
        CHECK(get32(k) == 0x0A324655u && get32(k + 4) == 0x9E5D5157u && get32(k + 508) == 0x0AB16F30u);
        CHECK(get32(k + 8) == 0x2000u && get32(k + 16) == 256u && get32(k + 28) == 0xe48bff56u);
        CHECK(get32(k + 12) == 0x10000000u + 256u * b && get32(k + 20) == b && get32(k + 24) == 4u);
        const size_t len = b < 3 ? 256 : 17;
        CHECK(memcmp(k + 32, bin + 256 * b, len) == 0);
        for (size_t i = len; i < 256; i++) CHECK(k[32 + i] == 0xFF);
        for (size_t i = 288; i < 508; i++) CHECK(k[i] == 0);
    }
    free(u);
    CHECK(atm_fw_uf2(bin, N, 0x10000080u, ATM_FW_UF2_FAMILY_RP2040, &u, &ul) == -1 && u == NULL);
    CHECK(atm_fw_uf2(bin, 0, 0x10000000u, ATM_FW_UF2_FAMILY_RP2040, &u, &ul) == -1);
    CHECK(atm_fw_crc32_mpeg2((const uint8_t *)"123456789", 9) == 0x0376E6E7u);
    CHECK(atm_fw_crc32_mpeg2(NULL, 0) == 0xFFFFFFFFu);
}

/* make_image's image of board b with one PT_LOAD program header after it:
 * file bytes OFF_TEXT .. the slot's end, loaded at paddr. img holds IMG + 32. */
static void make_loadable(uint8_t *img, const char *b, uint32_t paddr) {
    make_image(img, b);
    atm_wr_u32le(img + 28, IMG);  /* e_phoff */
    w16(img + 42, 32);            /* e_phentsize */
    w16(img + 44, 1);             /* e_phnum */
    uint8_t *ph = img + IMG;
    memset(ph, 0, 32);
    atm_wr_u32le(ph, 1);          /* PT_LOAD */
    atm_wr_u32le(ph + 4, OFF_TEXT);
    atm_wr_u32le(ph + 8, paddr);  /* p_vaddr */
    atm_wr_u32le(ph + 12, paddr); /* p_paddr */
    atm_wr_u32le(ph + 16, OFF_SLOT + SLOT - OFF_TEXT);
    atm_wr_u32le(ph + 20, OFF_SLOT + SLOT - OFF_TEXT);
}

/* Which boards take UF2 and semihosting. atm_fw_make_file's UF2: the
 * pico's image as atm_fw_uf2 of its raw flash
 * bytes (= the bin file) with the RP2040 family; refused for a board that
 * takes no UF2, for a flash base off a 256-byte boundary and for an
 * unknown format, each with its reason. */
static void test_make_uf2(void) {
    static uint8_t img[IMG + 32];
    CHECK(atm_fw_uf2_family("pico") == ATM_FW_UF2_FAMILY_RP2040);
    CHECK(atm_fw_uf2_family("microbit") == 0 && atm_fw_uf2_family("mps2-an385") == 0 && atm_fw_uf2_family(NULL) == 0);
    CHECK(atm_fw_semihosting("pico") == 0 && atm_fw_semihosting("microbit") == 1 && atm_fw_semihosting("mps2-an385") == 1);
    make_loadable(img, "pico", 0x10000000u);
    uint8_t *bin = NULL, *u = NULL, *want = NULL;
    size_t bl = 0, ul = 0, wl = 0, fl = 0;
    uint32_t base = 1;
    char err[256] = "";
    CHECK(atm_fw_make_file(img, sizeof img, ATM_FW_FORMAT_BIN, &bin, &bl, &base, &fl, err, sizeof err) == ATM_FW_OK);
    CHECK(base == 0x10000000u && bl == OFF_SLOT + SLOT - OFF_TEXT && fl == bl && bin && bin[0] == 0xA0);
    CHECK(atm_fw_make_file(img, sizeof img, ATM_FW_FORMAT_UF2, &u, &ul, &base, &fl, err, sizeof err) == ATM_FW_OK);
    CHECK(base == 0x10000000u && fl == bl && ul == 512 * ((bl + 255) / 256));
    CHECK(bin && atm_fw_uf2(bin, bl, 0x10000000u, ATM_FW_UF2_FAMILY_RP2040, &want, &wl) == 0);
    CHECK(u && want && ul == wl && memcmp(u, want, ul) == 0);
    free(bin); free(u); free(want);
    u = NULL;
    make_loadable(img, "microbit", 0x10000000u);
    CHECK(atm_fw_make_file(img, sizeof img, ATM_FW_FORMAT_UF2, &u, &ul, &base, &fl, err, sizeof err) == ATM_FW_E_BOARD);
    CHECK(u == NULL && strstr(err, "the microbit takes no UF2 file") != NULL);
    make_loadable(img, "pico", 0x10000080u);
    CHECK(atm_fw_make_file(img, sizeof img, ATM_FW_FORMAT_UF2, &u, &ul, &base, &fl, err, sizeof err) == ATM_FW_E_ELF);
    CHECK(u == NULL && strstr(err, "256-byte boundary") != NULL && strstr(err, "0x10000080") != NULL);
    CHECK(atm_fw_make_file(img, sizeof img, ATM_FW_FORMAT_HEX, &u, &ul, &base, &fl, err, sizeof err) == ATM_FW_OK);
    free(u);   /* hex and bin take any base */
    u = NULL;
    CHECK(atm_fw_make_file(img, sizeof img, 4, &u, &ul, &base, &fl, err, sizeof err) == ATM_FW_E_ARG);
    CHECK(u == NULL && strstr(err, "unknown file format 4") != NULL);
}

int main(void) {
    test_find_and_patch();
    test_uf2();
    test_make_uf2();
    test_choose_encoding();
    test_malformed();
    test_header();
    return CHECK_DONE();
}
