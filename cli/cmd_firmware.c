/* cli/cmd_firmware.c — `atome firmware` (a `.atome` model patched into the
 * prebuilt firmware template of a board: an ELF that QEMU or a debugger
 * loads) and `atome header` (the model as a C header for people building
 * their own firmware). Neither needs a cross compiler.
 *
 * Contract.
 *  - The model is read and opened with atm_model_open() before anything
 *    else, so only containers the engine accepts get into an image or a
 *    header; a damaged file gets the same one-line reason as `generate`.
 *  - firmware: the template is --template, else the board's image of the
 *    `mcu` preset, searched in $ATOME_MCU_BUILD/mcu, then beside this binary
 *    (<dir of atome>/../mcu/mcu: build/native/atome -> build/mcu/mcu), then
 *    <source dir>/build/mcu/mcu. Its model slot is found and filled by
 *    tools/fwimage.c (atm_fw_patch: slot header, CRC, zero fill; nothing
 *    else in the file changes, docs/mcu.md "model slot"). The board must be
 *    the one the template was built for.
 *  - The board's RAM is checked too: the template's `.arena` section is the
 *    RAM the engine gets (docs/mcu.md, "memory maps"); max_window is the
 *    largest attention window whose engine state plus the firmware's minimum
 *    256-byte tail fits it. A model that fits at no window is refused; one
 *    whose default window does not fit gets a note on stderr (run it with
 *    --window <= max_window).
 *  - Outputs are written atomically (atm_write_atomic) after every check
 *    passed; errors are one line "atome: firmware: ..." / "atome: header:
 *    ...", exit 2 for usage (flags, unknown board, a template of another
 *    board), 1 for everything else (unreadable or invalid model, missing or
 *    broken template, model larger than the slot or the RAM, write error).
 *  - Success prints one JSON line (docs/cli.md). */
#include "cli.h"
#include "engine.h"
#include "format.h"
#include "../tools/fwimage.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef ATOME_SOURCE_DIR
#define ATOME_SOURCE_DIR "."
#endif

static const char *const BOARDS[] = { "mps2-an385", "microbit" };

/* Directory of the running binary ("" if unknown), without the trailing '/'. */
static void exe_dir(char *out, size_t n) {
    out[0] = '\0';
    ssize_t got = readlink("/proc/self/exe", out, n - 1);
    if (got <= 0 || (size_t)got >= n - 1) { out[0] = '\0'; return; }
    out[got] = '\0';
    char *slash = strrchr(out, '/');
    if (slash) *slash = '\0'; else out[0] = '\0';
}

static int file_exists(const char *p) {
    FILE *f = fopen(p, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* Finds the default template of board into path[n]; 0, or -1 with the
 * places looked at in tried[tn]. */
static int find_template(const char *board, char *path, size_t n, char *tried, size_t tn) {
    char cand[3][4096];
    int nc = 0;
    const char *env = getenv("ATOME_MCU_BUILD");
    if (env && *env) snprintf(cand[nc++], sizeof cand[0], "%s/mcu/atome-fw-%s.elf", env, board);
    char dir[4096];
    exe_dir(dir, sizeof dir);
    if (dir[0]) snprintf(cand[nc++], sizeof cand[0], "%s/../mcu/mcu/atome-fw-%s.elf", dir, board);
    snprintf(cand[nc++], sizeof cand[0], "%s/build/mcu/mcu/atome-fw-%s.elf", ATOME_SOURCE_DIR, board);
    tried[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < nc; i++) {
        size_t l = strlen(cand[i]);
        if (l < n && file_exists(cand[i])) { memcpy(path, cand[i], l + 1); return 0; }
        int w = snprintf(tried + used, tn - used, "%s%s", i ? ", " : "", cand[i]);
        if (w > 0 && (size_t)w < tn - used) used += (size_t)w;
    }
    return -1;
}

int cmd_firmware(int argc, char **argv) {
    const char *model = NULL, *board = NULL, *out = NULL, *tmpl = NULL;
    cli_opt opts[] = {
        { "model",    OPT_STR, &model, 0, 0, 0, 0 },
        { "board",    OPT_STR, &board, 0, 0, 0, 0 },
        { "out",      OPT_STR, &out, 0, 0, 0, 0 },
        { "template", OPT_STR, &tmpl, 0, 0, 0, 0 },
    };
    int rc = cli_parse("firmware", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "firmware: --model is required");
    if (!board) return cli_err(CLI_USAGE, "firmware: --board is required (mps2-an385 or microbit)");
    if (!out || !*out) return cli_err(CLI_USAGE, "firmware: --out is required");
    int known = 0;
    for (size_t i = 0; i < sizeof BOARDS / sizeof BOARDS[0]; i++) known |= strcmp(board, BOARDS[i]) == 0;
    if (!known) return cli_err(CLI_USAGE, "firmware: unknown board '%s' (mps2-an385 or microbit)", board);

    uint8_t *blob = NULL;
    size_t blen = 0;
    atm_model m;
    if ((rc = cli_open_container("firmware", model, &blob, &blen, &m))) return rc;

    char path[4096], tried[8192];
    if (tmpl) {
        snprintf(path, sizeof path, "%s", tmpl);
    } else if (find_template(board, path, sizeof path, tried, sizeof tried)) {
        free(blob);
        return cli_err(CLI_RUNTIME, "firmware: no template image for %s (looked for %s): run 'cmake --preset mcu && "
                       "cmake --build --preset mcu' or pass --template ELF", board, tried);
    }
    uint8_t *elf = NULL;
    size_t elen = 0;
    if (!file_exists(path)) {
        free(blob);
        return cli_err(CLI_RUNTIME, "firmware: cannot open template '%s' (run 'cmake --preset mcu && cmake --build --preset mcu')",
                       path);
    }
    if ((rc = cli_read_file("firmware", path, (size_t)64 << 20, &elf, &elen))) { free(blob); return rc; }

    char err[512];
    atm_fw_slot slot;
    int st = atm_fw_find_slot(elf, elen, &slot, err, sizeof err);
    if (st == ATM_FW_OK) st = atm_fw_patch(elf, elen, board, blob, blen, err, sizeof err);
    if (st != ATM_FW_OK) {
        free(blob); free(elf);
        if (st == ATM_FW_E_CAPACITY)
            return cli_err(CLI_RUNTIME, "firmware: '%s' is %zu bytes, too big for the %s model slot of %u bytes", model, blen,
                           board, (unsigned)slot.capacity);
        return cli_err(st == ATM_FW_E_BOARD ? CLI_USAGE : CLI_RUNTIME, "firmware: template '%s': %s", path, err);
    }

    atm_fw_fit fit;
    if (atm_fw_fit_model(elf, elen, &m, &fit, err, sizeof err) != ATM_FW_OK || fit.arena < 0) {
        free(blob); free(elf);
        return cli_err(CLI_RUNTIME, "firmware: template '%s' has no .arena section (not an atome firmware image?)", path);
    }
    const long arena = (long)fit.arena;
    const int max_window = fit.max_window;
    if (max_window == 0) {
        size_t need = atm_engine_arena_bytes(&m, 1);
        free(blob); free(elf);
        return cli_err(CLI_RUNTIME, "firmware: '%s' needs %zu bytes of RAM at window 1 (engine state + %u), the %s has %ld",
                       model, need + ATM_FW_MIN_TAIL, ATM_FW_MIN_TAIL, board, arena);
    }
    char why[512];
    rc = atm_write_atomic(out, elf, elen, why, sizeof why);
    if (rc) { free(blob); free(elf); return cli_err(CLI_RUNTIME, "firmware: %s", why); }
    const int defw = m.cfg.window;
    if (defw > max_window)
        fprintf(stderr, "firmware: note: the model's default window %d does not fit the %s's RAM; run it with --window %d or less\n",
                defw, board, max_window);
    printf("{\"out\":");
    cli_json_str(stdout, out);
    printf(",\"board\":\"%s\",\"template\":", board);
    cli_json_str(stdout, path);
    printf(",\"model_bytes\":%zu,\"capacity\":%u,\"container_crc32\":\"0x%08X\",\"encoding\":\"%s\","
           "\"arena_bytes\":%ld,\"window\":%d,\"engine_bytes\":%zu,\"max_window\":%d}\n",
           blen, (unsigned)slot.capacity, (unsigned)atm_rd_u32le(blob + blen - 4), cli_encoding_name(m.encoding), arena, defw,
           atm_engine_arena_bytes(&m, defw), max_window);
    free(blob); free(elf);
    return CLI_OK;
}

int cmd_header(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *name = NULL;
    cli_opt opts[] = {
        { "model", OPT_STR, &model, 0, 0, 0, 0 },
        { "out",   OPT_STR, &out, 0, 0, 0, 0 },
        { "name",  OPT_STR, &name, 0, 0, 0, 0 },
    };
    int rc = cli_parse("header", argc, argv, opts, (int)(sizeof opts / sizeof opts[0]));
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "header: --model is required");
    if (!out || !*out) return cli_err(CLI_USAGE, "header: --out is required");
    uint8_t *blob = NULL;
    size_t blen = 0;
    atm_model m;
    if ((rc = cli_open_container("header", model, &blob, &blen, &m))) return rc;

    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (!f) { free(blob); return cli_err(CLI_RUNTIME, "header: out of memory"); }
    const char *base = strrchr(model, '/');
    char err[256];
    int st = atm_fw_header_text(f, &m, blob, blen, name, base ? base + 1 : model, err, sizeof err);
    int closed = fclose(f);
    free(blob);
    if (st != ATM_FW_OK || closed != 0) {
        free(text);
        if (st == ATM_FW_E_ARG) return cli_err(CLI_USAGE, "header: --name: %s", err);
        return cli_err(CLI_RUNTIME, "header: %s", st != ATM_FW_OK ? err : "out of memory");
    }
    char why[512];
    rc = atm_write_atomic(out, text, tlen, why, sizeof why);
    free(text);
    if (rc) return cli_err(CLI_RUNTIME, "header: %s", why);
    printf("{\"out\":");
    cli_json_str(stdout, out);
    printf(",\"model_bytes\":%zu,\"name\":\"%s\",\"encoding\":\"%s\"}\n", blen, name ? name : "atome_model",
           cli_encoding_name(m.encoding));
    return CLI_OK;
}
