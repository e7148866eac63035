/* tools/mcu/elfpatch.c — command-line front end of fwimage/fwimage.c, used by the
 * firmware tests and by hand until `atome firmware` / `atome header` exist:
 *
 *   elfpatch --template T.elf --board B --model M.atome --out O.elf
 *       copy of the template with M in its model slot
 *   elfpatch --info T.elf
 *       one JSON line describing the slot (board, capacity, offsets, model)
 *   elfpatch --header --model M.atome --out model.h [--name atome_model]
 *       the model as a C header
 *   elfpatch --universal-hex [--blocks] [--v1 V1.hex] [--v2 V2.hex] --out U.hex
 *       the micro:bit Universal Hex of the single-board files (v1 first;
 *       fwimage/uhex.c, atm_fw_universal_hex; --blocks: the 512-character
 *       block layout instead of the default sections)
 *
 * The model is opened with atm_model_open() first, so only containers the
 * engine accepts get in. Exit status: 0 ok, 1 runtime error (unreadable or
 * invalid input, slot too small, write failure), 2 usage error (bad flags,
 * wrong board). Errors are one line on stderr. Outputs are written to a
 * temporary file and renamed, so a failure leaves no partial file. */
#define _POSIX_C_SOURCE 200809L
#include "fwimage/fwimage.h"
#include "core/container.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int die(int code, const char *a, const char *b) {
    fprintf(stderr, "elfpatch: %s%s\n", a, b ? b : "");
    return code;
}

/* Whole file into a malloc'd buffer; NULL on failure. */
static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    while (b) {
        n += fread(b + n, 1, cap - n, f);
        if (n < cap) break;
        uint8_t *nb = realloc(b, cap * 2);
        if (!nb) { free(b); b = NULL; break; }
        b = nb;
        cap *= 2;
    }
    if (b && ferror(f)) { free(b); b = NULL; }
    fclose(f);
    *len = n;
    return b;
}

static int write_atomic(const char *path, const uint8_t *b, size_t n, int header,
                        const char *name, const char *source) {
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) return die(1, "output path too long", NULL);
    FILE *f = fopen(tmp, "wb");
    if (!f) return die(1, "cannot write ", tmp);
    int ok;
    if (header) {
        char err[256];
        ok = atm_fw_header(f, b, n, name, source, err, sizeof err) == ATM_FW_OK;
        if (!ok) { fclose(f); remove(tmp); return die(strstr(err, "identifier") ? 2 : 1, err, NULL); }
    } else {
        ok = fwrite(b, 1, n, f) == n;
    }
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) { remove(tmp); return die(1, "cannot write ", path); }
    return 0;
}

static const uint8_t *load_model(const char *path, size_t *len, uint8_t **owned, int *rc) {
    *owned = slurp(path, len);
    if (!*owned) { *rc = die(1, "cannot read model ", path); return NULL; }
    atm_model m;
    atm_status st = atm_model_open(&m, *owned, *len);
    if (st != ATM_OK) {
        fprintf(stderr, "elfpatch: %s: %s\n", path, atm_status_str(st));
        *rc = 1;
        return NULL;
    }
    return *owned;
}

/* A command's flags from argv[from]: each valued flag (FLAG VALUE) stores
 * its value in its slot, the one switch sets *sw. 0, or die()'s code for an
 * unknown flag or a missing value. */
typedef struct { const char *flag; const char **dst; } flag_slot;
static int parse_flags(int argc, char **argv, int from, const char *sw_flag, int *sw,
                       const flag_slot *slots, int nslots) {
    for (int i = from; i < argc; i++) {
        const char *a = argv[i];
        const char **dst = NULL;
        if (!strcmp(a, sw_flag)) { *sw = 1; continue; }
        for (int k = 0; k < nslots && !dst; k++)
            if (!strcmp(a, slots[k].flag)) dst = slots[k].dst;
        if (!dst) return die(2, "unknown argument ", a);
        if (i + 1 >= argc) return die(2, a, " needs a value");
        *dst = argv[++i];
    }
    return 0;
}

/* elfpatch --universal-hex ... */
static int uhex_main(int argc, char **argv) {
    const char *v1 = NULL, *v2 = NULL, *out = NULL;
    int blocks = 0;
    const flag_slot slots[] = { { "--v1", &v1 }, { "--v2", &v2 }, { "--out", &out } };
    int bad = parse_flags(argc, argv, 2, "--blocks", &blocks, slots, 3);
    if (bad) return bad;
    if (!out || (!v1 && !v2)) return die(2, "usage: elfpatch --universal-hex [--blocks] [--v1 V1.hex] [--v2 V2.hex] --out U.hex", NULL);
    atm_fw_uh_part parts[2];
    uint8_t *bufs[2] = { NULL, NULL };
    size_t np = 0;
    const char *files[2] = { v1, v2 };
    const uint16_t ids[2] = { ATM_FW_UH_BOARD_V1, ATM_FW_UH_BOARD_V2 };
    int rc = 0;
    for (int k = 0; k < 2 && !rc; k++) {
        if (!files[k]) continue;
        size_t len;
        bufs[k] = slurp(files[k], &len);
        if (!bufs[k]) { rc = die(1, "cannot read ", files[k]); break; }
        parts[np].hex = (const char *)bufs[k];
        parts[np].len = len;
        parts[np++].board_id = ids[k];
    }
    char *u = NULL, err[256];
    size_t ul = 0;
    if (!rc && atm_fw_universal_hex(parts, np, blocks, &u, &ul, err, sizeof err)) rc = die(1, err, NULL);
    if (!rc) rc = write_atomic(out, (const uint8_t *)u, ul, 0, NULL, NULL);
    free(u); free(bufs[0]); free(bufs[1]);
    return rc;
}

/* elfpatch --info T.elf: the slot as one JSON line. */
static int info_main(const char *info) {
    char err[256];
    size_t len;
    uint8_t *elf = slurp(info, &len);
    if (!elf) return die(1, "cannot read ", info);
    atm_fw_slot s;
    int rc = atm_fw_find_slot(elf, len, &s, err, sizeof err);
    free(elf);
    if (rc) return die(1, err, NULL);
    printf("{\"board\":\"%s\",\"section\":\"%s\",\"file_offset\":%u,\"addr\":%u,\"size\":%u,"
           "\"capacity\":%u,\"model_bytes\":%u,\"model_crc32\":%u}\n",
           s.board, ATM_FW_SECTION, (unsigned)s.file_offset, (unsigned)s.addr, (unsigned)s.size,
           (unsigned)s.capacity, (unsigned)s.model_len, (unsigned)s.model_crc);
    return 0;
}

/* elfpatch --header --model M --out H [--name N]: the model as a C header. */
static int header_main(const char *model, const char *out, const char *name) {
    if (!model || !out) return die(2, "--header needs --model and --out", NULL);
    size_t mlen;
    uint8_t *owned;
    int rc = 0;
    const uint8_t *m = load_model(model, &mlen, &owned, &rc);
    if (!m) { free(owned); return rc; }
    const char *base = strrchr(model, '/');
    rc = write_atomic(out, m, mlen, 1, name, base ? base + 1 : model);
    free(owned);
    return rc;
}

/* elfpatch --template T.elf --board B --model M --out O.elf: the template
 * with the model in its slot. */
static int patch_main(const char *tmpl, const char *board, const char *model, const char *out) {
    if (!tmpl || !board || !model || !out)
        return die(2, "usage: elfpatch --template T.elf --board B --model M.atome --out O.elf | --info T.elf | --header --model M --out H", NULL);
    char err[256];
    size_t mlen, elen;
    uint8_t *owned;
    int rc = 0;
    const uint8_t *m = load_model(model, &mlen, &owned, &rc);
    if (!m) { free(owned); return rc; }
    uint8_t *elf = slurp(tmpl, &elen);
    if (!elf) { free(owned); return die(1, "cannot read template ", tmpl); }
    rc = atm_fw_patch(elf, elen, board, m, mlen, err, sizeof err);
    if (rc) {
        free(owned); free(elf);
        return die(rc == ATM_FW_E_BOARD ? 2 : 1, err, NULL);
    }
    rc = write_atomic(out, elf, elen, 0, NULL, NULL);
    free(owned); free(elf);
    return rc;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "--universal-hex")) return uhex_main(argc, argv);
    const char *tmpl = NULL, *board = NULL, *model = NULL, *out = NULL, *info = NULL, *name = NULL;
    int header = 0;
    const flag_slot slots[] = { { "--template", &tmpl }, { "--board", &board }, { "--model", &model },
                                { "--out", &out }, { "--info", &info }, { "--name", &name } };
    int bad = parse_flags(argc, argv, 1, "--header", &header, slots, 6);
    if (bad) return bad;
    if (info) return info_main(info);
    if (header) return header_main(model, out, name);
    return patch_main(tmpl, board, model, out);
}
