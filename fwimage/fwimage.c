/* fwimage/fwimage.c — model slot patching and C-header export for the
 * firmware. Contract in fwimage.h; ELF field offsets from the System V ABI
 * (ELF32: e_shoff at 32, e_shentsize 46, e_shnum 48, e_shstrndx 50; a
 * section header is 40 bytes: sh_name 0, sh_type 4, sh_flags 8, sh_addr 12,
 * sh_offset 16, sh_size 20). */
#include "fwimage.h"
#include "core/boards.h"
#include "core/engine.h"
#include "core/generate.h"
#include "core/rng.h"
#include "core/sampler.h"
#include <stdlib.h>
#include "core/format.h"
#include "core/container.h"
#include "core/host/fail.h"   /* atm_fail_code: the host side's one error helper */
#include <stdarg.h>
#include <string.h>

#define SHT_PROGBITS 1u
#define SHF_ALLOC 2u
#define EM_ARM 40u



/* off + n <= len without overflow */
static int in_file(uint64_t off, uint64_t n, size_t len) { return off <= len && n <= len - off; }

int atm_fw_find_slot(const uint8_t *elf, size_t len, atm_fw_slot *slot, char *err, size_t errlen) {
    if (!elf || !slot) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "invalid argument");
    static const uint8_t ident[6] = { 0x7F, 'E', 'L', 'F', 1 /* ELFCLASS32 */, 1 /* ELFDATA2LSB */ };
    if (len < 52 || memcmp(elf, ident, sizeof ident) != 0)
        return atm_fail_code(ATM_FW_E_ELF, err, errlen, "not a 32-bit little-endian ELF file");
    if (atm_rd_u16le(elf + 18) != EM_ARM) return atm_fail_code(ATM_FW_E_ELF, err, errlen, "ELF file is not for ARM");
    uint32_t shoff = atm_rd_u32le(elf + 32), shentsize = atm_rd_u16le(elf + 46), shnum = atm_rd_u16le(elf + 48),
             shstrndx = atm_rd_u16le(elf + 50);
    if (shentsize < 40 || shnum == 0 || shstrndx >= shnum || !in_file(shoff, (uint64_t)shnum * shentsize, len))
        return atm_fail_code(ATM_FW_E_ELF, err, errlen, "section header table missing or out of bounds");
    const uint8_t *strh = elf + shoff + (size_t)shstrndx * shentsize;
    uint32_t str_off = atm_rd_u32le(strh + 16), str_size = atm_rd_u32le(strh + 20);
    if (!in_file(str_off, str_size, len))
        return atm_fail_code(ATM_FW_E_ELF, err, errlen, "section name table out of bounds");
    const size_t want = sizeof ATM_FW_SECTION;   /* name + NUL */
    const uint8_t *found = NULL;
    for (uint32_t i = 0; i < shnum; i++) {
        const uint8_t *sh = elf + shoff + (size_t)i * shentsize;
        uint32_t name = atm_rd_u32le(sh);
        if (name < str_size && str_size - name >= want && memcmp(elf + str_off + name, ATM_FW_SECTION, want) == 0) {
            if (found) return atm_fail_code(ATM_FW_E_NOSLOT, err, errlen, "two %s sections", ATM_FW_SECTION);
            found = sh;
        }
    }
    if (!found) return atm_fail_code(ATM_FW_E_NOSLOT, err, errlen, "no %s section: not an atome firmware template", ATM_FW_SECTION);
    uint32_t type = atm_rd_u32le(found + 4), flags = atm_rd_u32le(found + 8);
    uint32_t off = atm_rd_u32le(found + 16), size = atm_rd_u32le(found + 20);
    if (type != SHT_PROGBITS || !(flags & SHF_ALLOC))
        return atm_fail_code(ATM_FW_E_NOSLOT, err, errlen, "%s is not a loaded PROGBITS section", ATM_FW_SECTION);
    if (!in_file(off, size, len) || size <= ATM_FW_SLOT_HEADER)
        return atm_fail_code(ATM_FW_E_NOSLOT, err, errlen, "%s out of bounds or too small", ATM_FW_SECTION);
    const uint8_t *s = elf + off;
    if (memcmp(s, "ATMSLOT1", 8) != 0) return atm_fail_code(ATM_FW_E_NOSLOT, err, errlen, "model slot has no ATMSLOT1 header");
    uint32_t cap = atm_rd_u32le(s + 8), mlen = atm_rd_u32le(s + 12);
    if (cap != size - ATM_FW_SLOT_HEADER)
        return atm_fail_code(ATM_FW_E_NOSLOT, err, errlen, "model slot capacity %u does not match the section (%u bytes)",
                      (unsigned)cap, (unsigned)size);
    if (mlen > cap) return atm_fail_code(ATM_FW_E_NOSLOT, err, errlen, "model slot length exceeds its capacity");
    memset(slot, 0, sizeof *slot);
    slot->file_offset = off;
    slot->size = size;
    slot->addr = atm_rd_u32le(found + 12);
    slot->capacity = cap;
    slot->model_len = mlen;
    slot->model_crc = atm_rd_u32le(s + 16);
    memcpy(slot->board, s + 20, ATM_FW_BOARD_BYTES);
    slot->board[ATM_FW_BOARD_BYTES] = '\0';
    return ATM_FW_OK;
}

int atm_fw_patch(uint8_t *elf, size_t len, const char *board, const uint8_t *model, size_t mlen,
                 char *err, size_t errlen) {
    if (!model && mlen) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "invalid argument");
    atm_fw_slot s;
    int rc = atm_fw_find_slot(elf, len, &s, err, errlen);
    if (rc) return rc;
    if (board && strcmp(board, s.board) != 0)
        return atm_fail_code(ATM_FW_E_BOARD, err, errlen, "the template was built for board '%s', not '%s'", s.board, board);
    if (mlen > s.capacity)
        return atm_fail_code(ATM_FW_E_CAPACITY, err, errlen, "model of %zu bytes does not fit the %s slot of %u bytes",
                      mlen, s.board, (unsigned)s.capacity);
    uint8_t *p = elf + s.file_offset;
    atm_wr_u32le(p + 12, (uint32_t)mlen);
    atm_wr_u32le(p + 16, atm_crc32(model, mlen));
    if (mlen) memcpy(p + ATM_FW_SLOT_HEADER, model, mlen);
    memset(p + ATM_FW_SLOT_HEADER + mlen, 0, s.capacity - mlen);
    atm_model m;
    if (mlen && atm_model_open(&m, model, mlen) == ATM_OK && atm_fw_offsets(s.board, m.encoding, mlen, s.capacity)) {
        uint8_t *o = p + ATM_FW_SLOT_HEADER + ATM_FW_OFFSETS_AT((uint32_t)mlen);
        memcpy(o, ATM_FW_OFFSETS_MAGIC, 8);
        atm_engine_offsets_make(model, mlen, o + 8);
    }
    return ATM_FW_OK;
}

int atm_fw_offsets(const char *board, int encoding, size_t mlen, size_t capacity) {
    /* the bit-plane kernel reads ATOME01 rows only */
    const atm_board *b = atm_board_find(board);
    if (!b || !b->offsets || encoding != ATM_ENC_ATOME01 || mlen == 0) return 0;
    if (mlen > capacity) return 0;
    const size_t need = ATM_FW_OFFSETS_AT((uint32_t)mlen) + 8u + atm_engine_offsets_bytes(mlen) + ATM_FWSET_BYTES;
    return need <= capacity;
}

static int is_ident(const char *s) {
    if (!s || !*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return 0;
    return 1;
}

int atm_fw_header(FILE *out, const uint8_t *model, size_t mlen, const char *name,
                  const char *source, char *err, size_t errlen) {
    return atm_fw_header_file(out, model, mlen, name, NULL, source, err, errlen);
}

/* A file name for a comment: printable ASCII that cannot close it. */
static void comment_safe(const char *s, char *out, size_t n) {
    size_t j = 0;
    for (const char *c = s; *c && j < n - 1; c++)
        out[j++] = ((unsigned char)*c < 0x20 || *c == 0x7F || *c == '*' || (unsigned char)*c >= 0x80) ? '_' : *c;
    out[j] = '\0';
}

int atm_fw_header_file(FILE *out, const uint8_t *model, size_t mlen, const char *name, const char *file,
                       const char *source, char *err, size_t errlen) {
    if (!out || (!model && mlen)) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "invalid argument");
    if (!name) name = "atome_model";
    if (!is_ident(name) || strlen(name) > 64) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "'%s' is not a C identifier", name);
    char up[65];
    size_t n = strlen(name);
    for (size_t i = 0; i <= n; i++) up[i] = (char)((name[i] >= 'a' && name[i] <= 'z') ? name[i] - 32 : name[i]);
    uint32_t crc = atm_crc32(model, mlen);
    /* The file names go into a comment: keep them printable and unable to close it. */
    char src[256] = "(unnamed)", dst[256];
    if (source) comment_safe(source, src, sizeof src);
    if (file) {
        const char *b = strrchr(file, '/');
        comment_safe(b ? b + 1 : file, dst, sizeof dst);
    } else snprintf(dst, sizeof dst, "%s.h", name);
    fprintf(out,
            "/* %s — generated from %s (%zu bytes, CRC-32 0x%08X) by the atome\n"
            " * tools (fwimage/fwimage.c, atm_fw_header). Do not edit; regenerate instead.\n"
            " *\n"
            " * A packed .atome container for the integer engine (core/engine.h). It is\n"
            " * const, so a microcontroller build keeps it in flash; the engine reads it\n"
            " * in place at any alignment: atm_model_open(&m, %s, %s_BYTES). */\n"
            "#ifndef %s_H\n#define %s_H\n#include <stdint.h>\n\n"
            "#define %s_BYTES %zuu\n#define %s_CRC32 0x%08Xu\n\n"
            "static const uint8_t %s[%zu] = {\n",
            dst, src, mlen, (unsigned)crc, name, up, up, up, up, mlen, up, (unsigned)crc, name,
            mlen ? mlen : (size_t)1);
    for (size_t i = 0; i < mlen; i++)
        fprintf(out, "%s0x%02X,%s", i % 12 == 0 ? "    " : " ", model[i], (i % 12 == 11 || i + 1 == mlen) ? "\n" : "");
    if (!mlen) fprintf(out, "    0x00\n");
    fprintf(out, "};\n\n#endif\n");
    if (ferror(out)) return atm_fail_code(ATM_FW_E_IO, err, errlen, "write error");
    return ATM_FW_OK;
}

/* Size of the section called name in a 32-bit little-endian ELF, or -1 if
 * there is none / the table is out of bounds. */
static int64_t elf_section_size(const uint8_t *e, size_t len, const char *name) {
    if (len < 52) return -1;
    uint32_t shoff = atm_rd_u32le(e + 32), ent = atm_rd_u16le(e + 46), num = atm_rd_u16le(e + 48), strndx = atm_rd_u16le(e + 50);
    if (ent < 40 || strndx >= num || !in_file(shoff, (uint64_t)num * ent, len)) return -1;
    const uint8_t *sh = e + shoff + (size_t)strndx * ent;
    uint32_t str_off = atm_rd_u32le(sh + 16), str_size = atm_rd_u32le(sh + 20);
    if (!in_file(str_off, str_size, len)) return -1;
    size_t want = strlen(name) + 1;
    for (uint32_t i = 0; i < num; i++) {
        const uint8_t *h = e + shoff + (size_t)i * ent;
        uint32_t nm = atm_rd_u32le(h);
        if (nm < str_size && str_size - nm >= want && memcmp(e + str_off + nm, name, want) == 0)
            return (int64_t)atm_rd_u32le(h + 20);
    }
    return -1;
}

int atm_fw_fit_model(const uint8_t *elf, size_t len, const atm_model *m, atm_fw_fit *fit, char *err, size_t errlen) {
    if (!elf || !m || !fit) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "invalid argument");
    atm_fw_slot slot;
    int rc = atm_fw_find_slot(elf, len, &slot, err, errlen);
    if (rc) return rc;
    memset(fit, 0, sizeof *fit);
    fit->capacity = slot.capacity;
    fit->arena = elf_section_size(elf, len, ".arena");
    fit->engine_bytes = atm_engine_arena_bytes(m, 0);
    if (fit->arena < 0) return ATM_FW_OK;
    for (int w = 1; w <= ATM_MAX_WINDOW; w++) {
        size_t need = atm_engine_arena_bytes(m, w);
        if (need && need + ATM_FW_MIN_TAIL <= (uint64_t)fit->arena) fit->max_window = w;
        else break;   /* the arena grows with the window */
    }
    return ATM_FW_OK;
}

static const char *encoding_name(int enc) {
    return enc == ATM_ENC_ATOME01 ? "ATOME01" : enc == ATM_ENC_ATOME02 ? "ATOME02" : "unknown";
}

int atm_fw_header_text(FILE *f, const atm_model *m, const uint8_t *model, size_t mlen, const char *name,
                       const char *file, size_t params, const char *source, char *err, size_t errlen) {
    if (!f || !m) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "invalid argument");
    static const struct { int bit; const char *name; } P[] = {
        { ATM_PATH_CONV, "conv" }, { ATM_PATH_SSM, "ssm" }, { ATM_PATH_ATTN, "attn" } };
    char pw[32];
    size_t used = 0;
    pw[0] = '\0';
    for (size_t i = 0; i < sizeof P / sizeof P[0]; i++) {
        if (!(m->cfg.pathways & P[i].bit)) continue;
        int w = snprintf(pw + used, sizeof pw - used, "%s%s", used ? "," : "", P[i].name);
        if (w > 0 && (size_t)w < sizeof pw - used) used += (size_t)w;
    }
    const atm_mconfig *c = &m->cfg;
    fprintf(f, "/* atome model config: family atome, encoding %s, vocab %d, d_model %d, layers %d,\n"
               " * d_head %d, kernel %d, attn_top_k %d, pathways %s, default window %d, train_seq %d,\n"
               " * fx %d, ",
            encoding_name(m->encoding), c->vocab, c->d_model, c->n_layers, c->d_head, c->kernel, c->top_k, pw,
            c->window, c->train_seq, c->fx);
    /* the parameter count of `atome inspect`; the file stores fewer values
     * (the SSM output vector is folded into its input weights at export) */
    if (params) fprintf(f, "%zu parameters (%u values stored)", params, (unsigned)m->n_params);
    else fprintf(f, "%u values stored", (unsigned)m->n_params);
    fprintf(f, "; engine RAM %zu bytes at window 32, %zu at window 64. */\n",
            atm_engine_arena_bytes(m, 32), atm_engine_arena_bytes(m, 64));
    return atm_fw_header_file(f, model, mlen, name, file, source, err, errlen);
}

int atm_fw_put_settings(uint8_t *elf, size_t len, const uint8_t *block, char *err, size_t errlen) {
    atm_fw_slot slot;
    int rc = atm_fw_find_slot(elf, len, &slot, err, errlen);
    if (rc) return rc;
    if (slot.capacity < ATM_FWSET_BYTES || slot.model_len > slot.capacity - ATM_FWSET_BYTES)
        return atm_fail_code(ATM_FW_E_CAPACITY, err, errlen, "the model leaves no room for the %u-byte settings block", ATM_FWSET_BYTES);
    memcpy(elf + slot.file_offset + slot.size - ATM_FWSET_BYTES, block, ATM_FWSET_BYTES);
    return ATM_FW_OK;
}

int atm_fw_expect(const atm_model *m, atm_fwset *s, char *err, size_t errlen) {
    size_t need = atm_engine_arena_bytes(m, s->window);
    if (!need) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "window %d is not usable", (int)s->window);
    void *arena = malloc(need);
    if (!arena) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "out of memory for the engine arena");
    atm_engine e;
    if (atm_engine_init(&e, m, s->window, arena, need) != ATM_OK) {
        free(arena);
        return atm_fail_code(ATM_FW_E_ARG, err, errlen, "engine: cannot initialise");
    }
    const int V = m->cfg.vocab;
    for (size_t i = 0; i < s->prompt_len; i++)
        if (s->prompt[i] >= V) { free(arena); return atm_fail_code(ATM_FW_E_ARG, err, errlen, "prompt byte 0x%02X is outside the model's vocabulary of %d", s->prompt[i], V); }
    atm_sampler_cfg c;
    if (atm_sampler_settings_why(&c, s->temperature[0] ? s->temperature : NULL, s->top_k[0] ? s->top_k : NULL,
                                 s->top_p[0] ? s->top_p : NULL, err, errlen)) {
        free(arena);
        return ATM_FW_E_ARG;
    }
    /* the one generator, as the firmware runs it (core/generate.h) */
    uint8_t order[256];
    atm_gen g;
    atm_gen_init(&g, ATM_GEN_ENGINE, &e, V, &c, s->seed, order);
    atm_gen_prompt(&g, s->prompt, s->prompt_len);
    const uint64_t k = s->n < ATM_FWSET_EXPECT ? s->n : ATM_FWSET_EXPECT;
    for (uint64_t i = 0; i < k; i++) s->expect[i] = (uint8_t)atm_gen_next(&g);
    s->expect_len = (uint8_t)k;
    free(arena);
    return ATM_FW_OK;
}

int atm_fw_flash_bytes(const uint8_t *e, size_t len, uint8_t **out, size_t *outlen, uint32_t *base,
                       char *err, size_t errlen) {
    if (len < 52 || memcmp(e, "\x7f" "ELF\x01\x01", 6) != 0) return atm_fail_code(ATM_FW_E_ELF, err, errlen, "not a 32-bit little-endian ELF file");
    const uint32_t phoff = atm_rd_u32le(e + 28), phent = atm_rd_u16le(e + 42), phnum = atm_rd_u16le(e + 44);
    if (phent < 32 || !in_file(phoff, (uint64_t)phnum * phent, len)) return atm_fail_code(ATM_FW_E_ELF, err, errlen, "program header table out of bounds");
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < phnum; i++) {
        const uint8_t *ph = e + phoff + (size_t)i * phent;
        const uint32_t type = atm_rd_u32le(ph), off = atm_rd_u32le(ph + 4), paddr = atm_rd_u32le(ph + 12), fsz = atm_rd_u32le(ph + 16);
        if (type != 1 || fsz == 0) continue;   /* PT_LOAD with file bytes */
        if (!in_file(off, fsz, len)) return atm_fail_code(ATM_FW_E_ELF, err, errlen, "segment %u out of bounds", (unsigned)i);
        if (paddr < lo) lo = paddr;
        if ((uint64_t)paddr + fsz > hi) hi = (uint64_t)paddr + fsz;
    }
    if (hi <= lo || hi - lo > ((uint64_t)64 << 20)) return atm_fail_code(ATM_FW_E_ELF, err, errlen, "no loadable flash contents");
    uint8_t *b = (uint8_t *)malloc((size_t)(hi - lo));
    if (!b) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "out of memory");
    memset(b, 0xFF, (size_t)(hi - lo));
    for (uint32_t i = 0; i < phnum; i++) {
        const uint8_t *ph = e + phoff + (size_t)i * phent;
        const uint32_t type = atm_rd_u32le(ph), off = atm_rd_u32le(ph + 4), paddr = atm_rd_u32le(ph + 12), fsz = atm_rd_u32le(ph + 16);
        if (type != 1 || fsz == 0) continue;
        memcpy(b + (paddr - lo), e + off, fsz);
    }
    *out = b;
    *outlen = (size_t)(hi - lo);
    *base = (uint32_t)lo;
    return ATM_FW_OK;
}

int atm_fw_ihex(const uint8_t *bin, size_t n, uint32_t base, char **out, size_t *outlen) {
    /* a data record is ":10AAAA00" + 32 hex + checksum + CRLF = 45 chars per
     * 16 bytes; an address record per 64 KiB; the end record */
    size_t cap = (n / 16 + 2) * 45 + (n / 65536 + 2) * 17 + 16;
    char *t = (char *)malloc(cap);
    if (!t) return -1;
    static const char hx[] = "0123456789ABCDEF";
    size_t o = 0;
#define PUT(b) do { t[o++] = hx[((b) >> 4) & 15]; t[o++] = hx[(b) & 15]; } while (0)
    uint32_t upper = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i += 16) {
        const uint32_t addr = base + (uint32_t)i;
        if ((addr >> 16) != upper) {
            upper = addr >> 16;
            const uint8_t rec[6] = { 2, 0, 0, 4, (uint8_t)(upper >> 8), (uint8_t)upper };
            uint8_t sum = 0;
            t[o++] = ':';
            for (int k = 0; k < 6; k++) { PUT(rec[k]); sum = (uint8_t)(sum + rec[k]); }
            PUT((uint8_t)(0u - sum));
            t[o++] = '\r'; t[o++] = '\n';
        }
        const uint32_t cnt = n - i < 16 ? (uint32_t)(n - i) : 16u;
        uint8_t sum = (uint8_t)(cnt + ((addr >> 8) & 0xFF) + (addr & 0xFF));
        t[o++] = ':';
        PUT((uint8_t)cnt); PUT((uint8_t)(addr >> 8)); PUT((uint8_t)addr); PUT(0);
        for (uint32_t k = 0; k < cnt; k++) { PUT(bin[i + k]); sum = (uint8_t)(sum + bin[i + k]); }
        PUT((uint8_t)(0u - sum));
        t[o++] = '\r'; t[o++] = '\n';
    }
    memcpy(t + o, ":00000001FF\r\n", 13);
    o += 13;
    t[o] = '\0';
#undef PUT
    *out = t;
    *outlen = o;
    return 0;
}

int atm_fw_settings_make(const atm_model *m, int max_window, const char *board, const atm_fw_settings_in *in,
                         atm_fwset *st, char *note, size_t notelen, char *err, size_t errlen) {
    if (note && notelen) note[0] = '\0';
    memset(st, 0, sizeof *st);
    const char *texts[3] = { in->temperature, in->top_k, in->top_p };
    char *dst[3] = { st->temperature, st->top_k, st->top_p };
    for (int i = 0; i < 3; i++) {
        if (!texts[i]) continue;
        size_t l = strlen(texts[i]);
        if (l >= ATM_FWSET_TEXT)
            return atm_fail_code(ATM_FW_E_ARG, err, errlen, "'%s' is longer than the settings block's %u characters", texts[i], ATM_FWSET_TEXT - 1);
        memcpy(dst[i], texts[i], l + 1);
    }
    if (in->prompt_len > ATM_FWSET_PROMPT_MAX)
        return atm_fail_code(ATM_FW_E_ARG, err, errlen, "the prompt is %zu bytes; the settings block holds %u", in->prompt_len, ATM_FWSET_PROMPT_MAX);
    if (in->prompt_len) memcpy(st->prompt, in->prompt, in->prompt_len);
    st->prompt_len = (uint16_t)in->prompt_len;
    for (size_t i = 0; i < st->prompt_len; i++)
        if (st->prompt[i] >= (unsigned)m->cfg.vocab)
            return atm_fail_code(ATM_FW_E_ARG, err, errlen, "prompt byte 0x%02X is outside the model's vocabulary of %d", st->prompt[i], (int)m->cfg.vocab);
    if (in->n > 1000000000000ull) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "--n must be an integer in 0..1000000000000");
    st->n = in->n;
    st->seed = in->seed;
    if (in->window) {
        if (in->window < 1 || in->window > ATM_MAX_WINDOW)
            return atm_fail_code(ATM_FW_E_ARG, err, errlen, "--window must be an integer in 1..65535 (got '%d')", in->window);
        if (max_window && in->window > max_window)
            return atm_fail_code(ATM_FW_E_CAPACITY, err, errlen, "--window %d does not fit the %s's RAM (the largest that fits is %d)",
                          in->window, board, max_window);
        st->window = in->window;
    } else if (max_window && m->cfg.window > max_window) {
        st->window = max_window;
        if (note && notelen)
            snprintf(note, notelen, "the model's default window %d does not fit the %s's RAM; the image uses window %d",
                     (int)m->cfg.window, board, max_window);
    } else {
        st->window = m->cfg.window;
    }
    st->flags = in->flags & (ATM_FWSET_LOOP | ATM_FWSET_INTERACTIVE);
    if (atm_fwset_check(st) != ATM_FWSET_OK) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "invalid sampler settings");
    return atm_fw_expect(m, st, err, errlen);
}

uint32_t atm_fw_uf2_family(const char *board) {
    const atm_board *b = atm_board_find(board);
    return b ? b->uf2_family : 0u;
}

int atm_fw_semihosting(const char *board) {
    const atm_board *b = atm_board_find(board);
    return b ? b->semihosting : 1;
}

/* The UF2 of flash[fl] at base for the board of elf's model slot. */
static int uf2_file(const uint8_t *elf, size_t len, const uint8_t *flash, size_t fl, uint32_t base, uint8_t **out,
                    size_t *outlen, char *err, size_t errlen) {
    atm_fw_slot slot;
    int rc = atm_fw_find_slot(elf, len, &slot, err, errlen);
    if (rc) return rc;
    const uint32_t family = atm_fw_uf2_family(slot.board);
    if (!family)
        return atm_fail_code(ATM_FW_E_BOARD, err, errlen, "the %s takes no UF2 file (UF2 is the pico's format; use elf, hex or bin)",
                      slot.board);
    if (base & 255u)
        return atm_fail_code(ATM_FW_E_ELF, err, errlen, "UF2 needs a flash base on a 256-byte boundary; this image starts at 0x%08X",
                      (unsigned)base);
    if (fl > 0xFFFFFFFFu - base) return atm_fail_code(ATM_FW_E_ELF, err, errlen, "the flash contents run past address 0xFFFFFFFF");
    if (atm_fw_uf2(flash, fl, base, family, out, outlen)) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "out of memory");
    return ATM_FW_OK;
}

int atm_fw_make_file(const uint8_t *elf, size_t len, int format, uint8_t **out, size_t *outlen, uint32_t *base,
                     size_t *flash_len, char *err, size_t errlen) {
    *base = 0;
    *flash_len = 0;
    if (format < ATM_FW_FORMAT_ELF || format > ATM_FW_FORMAT_UF2)
        return atm_fail_code(ATM_FW_E_ARG, err, errlen, "unknown file format %d", format);
    if (format == ATM_FW_FORMAT_ELF) {
        *out = (uint8_t *)malloc(len ? len : 1);
        if (!*out) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "out of memory");
        memcpy(*out, elf, len);
        *outlen = len;
        return ATM_FW_OK;
    }
    uint8_t *flash = NULL;
    size_t fl = 0;
    int rc = atm_fw_flash_bytes(elf, len, &flash, &fl, base, err, errlen);
    if (rc) return rc;
    *flash_len = fl;
    if (format == ATM_FW_FORMAT_BIN) { *out = flash; *outlen = fl; return ATM_FW_OK; }
    if (format == ATM_FW_FORMAT_UF2) {
        rc = uf2_file(elf, len, flash, fl, *base, out, outlen, err, errlen);
        free(flash);
        return rc;
    }
    char *hex = NULL;
    size_t hl = 0;
    rc = atm_fw_ihex(flash, fl, *base, &hex, &hl);
    free(flash);
    if (rc) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "out of memory");
    *out = (uint8_t *)hex;
    *outlen = hl;
    return ATM_FW_OK;
}

static void upper_of(const char *name, char *up, size_t n) {
    size_t i = 0;
    for (; name[i] && i + 1 < n; i++) up[i] = (char)((name[i] >= 'a' && name[i] <= 'z') ? name[i] - 32 : name[i]);
    up[i] = '\0';
}

int atm_fw_settings_text(FILE *f, const atm_model *m, const atm_fwset *st, const char *name, char *err, size_t errlen) {
    if (!name) name = "atome_model";
    char up[65];
    upper_of(name, up, sizeof up);
    uint8_t block[ATM_FWSET_BYTES];
    if (atm_fwset_encode(st, block) != ATM_FWSET_OK) return atm_fail_code(ATM_FW_E_ARG, err, errlen, "invalid settings");
    fprintf(f, "/* Generation settings for %s (core/fwsettings.h; written by `atome header` with the\n"
               " * flags of `atome generate`): n %llu, temperature %s, top-k %s, top-p %s, seed %u, window %d%s%s,\n"
               " * prompt of %u bytes. The first %u generated bytes, as the native CLI makes them:\n * ",
            name, (unsigned long long)st->n, st->temperature[0] ? st->temperature : "0", st->top_k[0] ? st->top_k : "0",
            st->top_p[0] ? st->top_p : "1", (unsigned)st->seed, (int)st->window,
            (st->flags & ATM_FWSET_LOOP) ? ", loop" : "", (st->flags & ATM_FWSET_INTERACTIVE) ? ", interactive" : "",
            (unsigned)st->prompt_len, (unsigned)st->expect_len);
    for (uint32_t i = 0; i < st->expect_len; i++) fprintf(f, "%02x", st->expect[i]);
    fprintf(f, " */\n#define %s_SETTINGS_BYTES %uu\n#define %s_ARENA_BYTES %zuu   /* atm_engine_arena_bytes(model, %d) */\n\n"
               "static const uint8_t %s_settings[%u] = {\n",
            up, ATM_FWSET_BYTES, up, atm_engine_arena_bytes(m, st->window), (int)st->window, name, ATM_FWSET_BYTES);
    for (uint32_t i = 0; i < ATM_FWSET_BYTES; i++)
        fprintf(f, "%s0x%02X,%s", i % 12 == 0 ? "    " : " ", block[i], (i % 12 == 11 || i + 1 == ATM_FWSET_BYTES) ? "\n" : "");
    fprintf(f, "};\n\n");
    if (ferror(f)) return atm_fail_code(ATM_FW_E_IO, err, errlen, "write error");
    return ATM_FW_OK;
}

/* atome_model.c's comment and includes (header: the model's header file,
 * up: the model's name in capitals). */
static void example_head(FILE *f, const char *header, const char *up) {
    fprintf(f,
"/* atome_model.c — a whole firmware main for your own board, written by `atome header`\n"
" * beside %s. It runs the model in that header with its settings block:\n"
" * the same bytes as `atome generate` with those settings, on any CPU.\n"
" *\n"
" * Build it with the engine's freestanding C99 sources (no malloc, no stdio, no libm):\n"
" *   core/engine.c core/engine_ref.c core/engine_m0.c core/engine_x86.c core/engine_wasm.c\n"
" *   core/container.c core/fixmath.c core/format.c core/sampler.c core/fwsettings.c\n"
" * (engine_x86.c / engine_wasm.c compile to nothing on other targets), -I core, and give\n"
" * it two functions of your board:\n"
" *   void atome_putc(unsigned char c);   write one byte to your UART (or screen)\n"
" *   void atome_idle(void);              called when the story is done (e.g. __WFI())\n"
" * The arena is a static buffer: its size, %s_ARENA_BYTES, is atm_engine_arena_bytes()\n"
" * of the model at the settings' window, checked again at run time. The model and the\n"
" * settings stay in flash (const); RAM is the arena, the sampler's 256 bytes and a small\n"
" * stack (about 1.4 KiB on a Cortex-M0). */\n"
"#include <stdint.h>\n"
"#include \"container.h\"\n"
"#include \"engine.h\"\n"
"#include \"fwsettings.h\"\n"
"#include \"rng.h\"\n"
"#include \"sampler.h\"\n"
"#include \"%s\"\n"
"\n", header, up, header);
}

/* atome_model.c's code: atome_model_main() on the model name (up: in capitals). */
static void example_main(FILE *f, const char *name, const char *up) {
    fprintf(f,
"void atome_putc(unsigned char c);\n"
"void atome_idle(void);\n"
"int atome_model_main(void);\n"
"\n"
"static uint32_t arena[(%s_ARENA_BYTES + 3u) / 4u];   /* 4-byte aligned, as the engine needs */\n"
"static uint8_t order[256];                           /* the sampler's scratch */\n"
"\n"
"/* 0 when the story is out; 1..4 if the model, settings or RAM do not fit. */\n"
"int atome_model_main(void) {\n"
"    atm_model m;\n"
"    atm_engine e;\n"
"    atm_fwset_view s;\n"
"    if (atm_model_open(&m, %s, %s_BYTES) != ATM_OK) return 1;\n"
"    if (atm_fwset_decode(%s_settings, &s) != ATM_FWSET_OK) return 2;\n"
"    if (atm_engine_arena_bytes(&m, s.window) > sizeof arena) return 3;\n"
"    if (atm_engine_init(&e, &m, s.window, arena, sizeof arena) != ATM_OK) return 4;\n"
"    atm_sampler_cfg cfg;\n"
"    atm_sampler_config(&cfg, s.temperature[0] ? s.temperature : 0, s.top_k[0] ? s.top_k : 0,\n"
"                       s.top_p[0] ? s.top_p : 0);\n"
"    atm_rng rng;\n"
"    atm_rng_seed(&rng, s.seed);\n"
"    static const uint8_t newline = '\\n';   /* an empty prompt is one newline, as the CLI */\n"
"    const uint8_t *p = s.prompt_len ? s.prompt : &newline;\n"
"    const uint32_t pl = s.prompt_len ? s.prompt_len : 1u;\n"
"    const int32_t *logits = 0;\n"
"    for (uint32_t i = 0; i < s.prompt_len; i++) atome_putc(s.prompt[i]);\n"
"    for (uint32_t i = 0; i < pl; i++) logits = atm_engine_step(&e, p[i]);\n"
"    for (uint64_t i = 0; i < s.n; i++) {\n"
"        int b = atm_sampler_next(&cfg, logits, m.cfg.vocab, &rng, order);\n"
"        atome_putc((unsigned char)b);\n"
"        if (i + 1 < s.n) logits = atm_engine_step(&e, b);\n"
"    }\n"
"    atome_idle();\n"
"    return 0;\n"
"}\n", up, name, up, name);
}

int atm_fw_example_text(FILE *f, const char *header, const char *name) {
    if (!name) name = "atome_model";
    char up[65];
    upper_of(name, up, sizeof up);
    example_head(f, header, up);
    example_main(f, name, up);
    return ferror(f) ? ATM_FW_E_IO : ATM_FW_OK;
}

/* ---- the encoding a board gets ---- */

int atm_fw_faster_encoding(const char *board) {
    const atm_board *b = atm_board_find(board);   /* docs/budgets.md */
    return b ? b->faster_encoding : ATM_ENC_ATOME01;
}

static const char *enc_label(int e) { return e == ATM_ENC_ATOME01 ? "ATOME01" : "ATOME02"; }

int atm_fw_choose_encoding(const char *board, const uint8_t *model, size_t mlen, size_t capacity,
                           uint8_t **out, size_t *outlen, char *why, size_t whylen) {
    *out = NULL;
    *outlen = 0;
    atm_model m;
    if (atm_model_open(&m, model, mlen) != ATM_OK) return atm_fail_code(ATM_FW_E_ARG, why, whylen, "not a valid model");
    const int fast = atm_fw_faster_encoding(board);
    size_t need = 0;
    uint8_t *conv = NULL;
    if (m.encoding != fast) {
        atm_container_convert(model, mlen, fast, NULL, 0, &need);
        if (need && need <= capacity) {
            conv = (uint8_t *)malloc(need);
            size_t got = 0;
            if (!conv || atm_container_convert(model, mlen, fast, conv, need, &got) != ATM_OK || got != need) {
                free(conv);
                return atm_fail_code(ATM_FW_E_IO, why, whylen, "cannot re-encode the model as %s", enc_label(fast));
            }
            *out = conv;
            *outlen = need;
            snprintf(why, whylen, "%s (re-encoded from %s: faster on this board)", enc_label(fast), enc_label(m.encoding));
            return ATM_FW_OK;
        }
    }
    if (mlen > capacity)
        return atm_fail_code(ATM_FW_E_CAPACITY, why, whylen, "the model is %zu bytes, the slot holds %zu", mlen, capacity);
    *out = (uint8_t *)malloc(mlen ? mlen : 1);
    if (!*out) return atm_fail_code(ATM_FW_E_IO, why, whylen, "out of memory");
    memcpy(*out, model, mlen);
    *outlen = mlen;
    if (m.encoding == fast) snprintf(why, whylen, "%s (faster on this board)", enc_label(fast));
    else snprintf(why, whylen, "%s (%s, faster here, is %zu bytes; the slot holds %zu)", enc_label(m.encoding),
                  enc_label(fast), need, capacity);
    return ATM_FW_OK;
}

/* ---- UF2 and the RP2040's boot-loader CRC ---- */


int atm_fw_uf2(const uint8_t *bin, size_t n, uint32_t base, uint32_t family, uint8_t **out, size_t *outlen) {
    *out = NULL;
    *outlen = 0;
    if (n == 0 || (base & 255u) != 0 || n > 0xFFFFFFFFu - base) return -1;
    const size_t blocks = (n + 255) / 256;
    uint8_t *u = (uint8_t *)calloc(blocks, 512);
    if (!u) return -1;
    for (size_t b = 0; b < blocks; b++) {
        uint8_t *k = u + 512 * b;
        const size_t off = 256 * b, len = n - off < 256 ? n - off : 256;
        atm_wr_u32le(k + 0, 0x0A324655u);
        atm_wr_u32le(k + 4, 0x9E5D5157u);
        atm_wr_u32le(k + 8, 0x00002000u);
        atm_wr_u32le(k + 12, base + (uint32_t)off);
        atm_wr_u32le(k + 16, 256u);
        atm_wr_u32le(k + 20, (uint32_t)b);
        atm_wr_u32le(k + 24, (uint32_t)blocks);
        atm_wr_u32le(k + 28, family);
        memcpy(k + 32, bin + off, len);
        memset(k + 32 + len, 0xFF, 256 - len);   /* the rest of the page: erased flash */
        atm_wr_u32le(k + 508, 0x0AB16F30u);
    }
    *out = u;
    *outlen = blocks * 512;
    return 0;
}

uint32_t atm_fw_crc32_mpeg2(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= (uint32_t)p[i] << 24;
        for (int k = 0; k < 8; k++) c = (c & 0x80000000u) ? (c << 1) ^ 0x04C11DB7u : c << 1;
    }
    return c;
}

/* ---- the table of boards (core/boards.def) as the front ends show it ---- */

static const char *const FORMAT_NAMES[] = { "elf", "hex", "bin", "uf2" };

const char *atm_fw_format_name(int format) {
    return format >= ATM_FW_FORMAT_ELF && format <= ATM_FW_FORMAT_UF2 ? FORMAT_NAMES[format] : NULL;
}

int atm_fw_format_parse(const char *name) {
    for (int f = ATM_FW_FORMAT_ELF; f <= ATM_FW_FORMAT_UF2; f++)
        if (name && strcmp(name, FORMAT_NAMES[f]) == 0) return f;
    return -1;
}

int atm_fw_board_takes(const char *board, int format) {
    const atm_board *b = atm_board_find(board);
    return b && atm_fw_format_name(format) && (b->formats & (1u << format)) != 0;
}

/* out[o..] += the printf text, snprintf-style: o grows by the text's length
 * whether or not it fits. */
static size_t add(char *out, size_t cap, size_t o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(o < cap ? out + o : NULL, o < cap ? cap - o : 0, fmt, ap);
    va_end(ap);
    return o + (w > 0 ? (size_t)w : 0);
}

size_t atm_fw_board_list(char *out, size_t cap, const char *last_sep) {
    size_t o = 0;
    const size_t n = atm_board_count();
    if (cap) out[0] = '\0';
    for (size_t i = 0; i < n; i++) {   /* a row's alias after its name */
        const atm_board *b = atm_board_at(i);
        o = add(out, cap, o, "%s%s", i == 0 ? "" : i + 1 == n && !b->alias[0] ? last_sep : ", ", b->name);
        if (b->alias[0]) o = add(out, cap, o, "%s%s", i + 1 == n ? last_sep : ", ", b->alias);
    }
    return o;
}

/* One board's JSON object. */
static size_t board_json(char *out, size_t cap, size_t o, const atm_board *b) {
    o = add(out, cap, o, "{\"name\":\"%s\",\"label\":\"%s\",\"cpu\":\"%s\",\"chip\":\"%s\",\"clock_hz\":%lu,"
            "\"flash_base\":\"0x%08lX\",\"flash_bytes\":%lu,\"ram_bytes\":%lu,\"slot_bytes\":%lu,\"formats\":[",
            b->name, b->label, b->cpu, b->chip, (unsigned long)b->clock_hz, (unsigned long)b->flash_base,
            (unsigned long)b->flash_bytes, (unsigned long)b->ram_bytes, (unsigned long)b->slot_bytes);
    int first = 1;
    for (int f = ATM_FW_FORMAT_ELF; f <= ATM_FW_FORMAT_UF2; f++)
        if (b->formats & (1u << f)) { o = add(out, cap, o, "%s\"%s\"", first ? "" : ",", FORMAT_NAMES[f]); first = 0; }
    int drive = 0;
    while (drive < ATM_FW_FORMAT_UF2 && !(b->drive & (1u << drive))) drive++;
    o = add(out, cap, o, "],\"drive\":\"%s\",\"faster_encoding\":\"%s\",\"uf2_family\":", FORMAT_NAMES[drive],
            enc_label(b->faster_encoding));
    o = b->uf2_family ? add(out, cap, o, "\"0x%08lX\"", (unsigned long)b->uf2_family) : add(out, cap, o, "null");
    o = add(out, cap, o, ",\"semihosting\":%s,\"offset_stream\":%s,\"tables\":%s,\"emulator\":\"%s\",\"cost\":{\"count\":\"%s\","
            "\"windows\":[", b->semihosting ? "true" : "false", b->offsets ? "true" : "false", b->tables ? "true" : "false",
            b->emulator, b->cost_count);
    for (const char *w = b->cost_windows; *w;) {
        while (*w == ' ') w++;
        const char *e = w;
        while (*e >= '0' && *e <= '9') e++;
        if (e == w) break;
        o = add(out, cap, o, "%s%.*s", w == b->cost_windows ? "" : ",", (int)(e - w), w);
        w = e;
    }
    o = add(out, cap, o, "]},\"machine\":");
    o = b->machine[0] ? add(out, cap, o, "\"%s\"", b->machine) : add(out, cap, o, "null");
    o = add(out, cap, o, ",\"alias\":");
    o = b->alias[0] ? add(out, cap, o, "\"%s\"", b->alias) : add(out, cap, o, "null");
    o = add(out, cap, o, ",\"uhex_board_id\":");
    o = b->uh_board_id ? add(out, cap, o, "\"0x%04lX\"", (unsigned long)b->uh_board_id) : add(out, cap, o, "null");
    o = add(out, cap, o, ",\"hex_with\":");
    o = b->hex_with[0] ? add(out, cap, o, "\"%s\"", b->hex_with) : add(out, cap, o, "null");
    return add(out, cap, o, ",\"card_label\":\"%s\",\"card_order\":%d}", b->card_label[0] ? b->card_label : b->label, b->card_order);
}

size_t atm_fw_boards_json(char *out, size_t cap) {
    size_t o = add(out, cap, 0, "{\"boards\":[");
    for (size_t i = 0; i < atm_board_count(); i++) {
        if (i) o = add(out, cap, o, ",");
        o = board_json(out, cap, o, atm_board_at(i));
    }
    return add(out, cap, o, "]}");
}

size_t atm_fw_format_refusal(const char *board, int format, char *out, size_t cap) {
    const char *fname = atm_fw_format_name(format);
    if (cap) out[0] = '\0';
    if (!fname) return add(out, cap, 0, "unknown file format %d", format);
    size_t o = add(out, cap, 0, "--format %s is for the", fname), takers = 0;
    const atm_board *drive_of = NULL;
    for (size_t i = 0; i < atm_board_count(); i++) {
        const atm_board *b = atm_board_at(i);
        if (!(b->formats & (1u << format))) continue;
        o = add(out, cap, o, "%s %s", takers++ ? "," : "", b->name);
        drive_of = takers == 1 && (b->drive & (1u << format)) ? b : NULL;
    }
    if (drive_of) o = add(out, cap, o, " (the %s bootrom's drive)", drive_of->chip);
    const atm_board *b = atm_board_find(board);
    if (!b) return o;
    o = add(out, cap, o, "; the %s takes", b->name);
    int n = 0, seen = 0;
    for (int f = ATM_FW_FORMAT_ELF; f <= ATM_FW_FORMAT_UF2; f++) n += (b->formats >> f) & 1u;
    for (int f = ATM_FW_FORMAT_ELF; f <= ATM_FW_FORMAT_UF2; f++)
        if (b->formats & (1u << f)) { o = add(out, cap, o, "%s%s", seen == 0 ? " " : seen + 1 == n ? " or " : ", ", FORMAT_NAMES[f]); seen++; }
    return o;
}
