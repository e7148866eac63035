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
 *    fwimage/fwimage.c (atm_fw_patch: slot header, CRC, zero fill; nothing
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
#include "fwsettings.h"
#include "sampler.h"
#include "fwimage/fwimage.h"
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

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The generation settings flags of `atome generate`, for the settings block
 * (core/fwsettings.h). Shared by `firmware` and `header`. */
typedef struct {
    const char *prompt, *prompt_hex, *temperature, *top_k, *top_p, *seed;
    int64_t n, window;
    int loop, interactive;
} settings_args;

#define SETTINGS_OPTS(sa) \
    { "prompt",      OPT_STR,  &(sa).prompt, 0, 0, 0, 0 }, \
    { "prompt-hex",  OPT_STR,  &(sa).prompt_hex, 0, 0, 0, 0 }, \
    { "n",           OPT_INT,  &(sa).n, 0, (double)ATM_GEN_N_MAX, 0, 0 }, \
    { "temperature", OPT_STR,  &(sa).temperature, 0, 0, 0, 0 }, \
    { "top-k",       OPT_STR,  &(sa).top_k, 0, 0, 0, 0 }, \
    { "top-p",       OPT_STR,  &(sa).top_p, 0, 0, 0, 0 }, \
    { "seed",        OPT_STR,  &(sa).seed, 0, 0, 0, 0 }, \
    { "window",      OPT_INT,  &(sa).window, 1, ATM_MAX_WINDOW, 0, 0 }, \
    { "loop",        OPT_FLAG, &(sa).loop, 0, 0, 0, 0 }, \
    { "interactive", OPT_FLAG, &(sa).interactive, 0, 0, 0, 0 }
#define N_SETTINGS_OPTS 10

/* 1 if any settings flag was given (opts[first .. first+10)). */
static int settings_seen(const cli_opt *opts, int first) {
    for (int i = first; i < first + N_SETTINGS_OPTS; i++) if (opts[i].seen) return 1;
    return 0;
}

/* Fills *st from the flags with generate's rules and messages (the texts
 * through the CLI's sampler check, then fwimage/fwimage.c's
 * atm_fw_settings_make: prompt, window, known answer). CLI_OK or the error
 * printed. */
static int settings_build(const char *cmd, const settings_args *sa, cli_opt *opts, int n_opts,
                          const atm_model *m, int max_window, const char *board, atm_fwset *st) {
    if (sa->prompt && sa->prompt_hex) return cli_err(CLI_USAGE, "%s: give --prompt or --prompt-hex, not both", cmd);
    if (!sa->prompt && !sa->prompt_hex) return cli_err(CLI_USAGE, "%s: --prompt or --prompt-hex is required with the generation settings", cmd);
    atm_sampler_cfg sc;
    int rc = cli_sampler_settings(cmd, sa->temperature, sa->top_k, sa->top_p, &sc);
    if (rc) return rc;
    atm_fw_settings_in in;
    memset(&in, 0, sizeof in);
    if (sa->seed && atm_sampler_parse_uint(sa->seed, 4294967295u, &in.seed))
        return cli_err(CLI_USAGE, "%s: --seed must be an integer in 0..4294967295 (got '%s')", cmd, sa->seed);
    if (!sa->seed) in.seed = 1;
    uint8_t pb[ATM_FWSET_PROMPT_MAX + 1];
    if (sa->prompt_hex) {
        size_t hl = strlen(sa->prompt_hex);
        if (hl % 2) return cli_err(CLI_USAGE, "%s: --prompt-hex needs an even number of hex digits", cmd);
        if (hl / 2 > ATM_FWSET_PROMPT_MAX)
            return cli_err(CLI_USAGE, "%s: the prompt is %zu bytes; the settings block holds %u", cmd, hl / 2, ATM_FWSET_PROMPT_MAX);
        for (size_t i = 0; i < hl / 2; i++) {
            int hi = hexval((unsigned char)sa->prompt_hex[2 * i]), lo = hexval((unsigned char)sa->prompt_hex[2 * i + 1]);
            if (hi < 0 || lo < 0) return cli_err(CLI_USAGE, "%s: --prompt-hex has a non-hex digit", cmd);
            pb[i] = (uint8_t)(hi * 16 + lo);
        }
        in.prompt = pb;
        in.prompt_len = hl / 2;
    } else {
        in.prompt = (const uint8_t *)sa->prompt;
        in.prompt_len = strlen(sa->prompt);
    }
    in.n = (uint64_t)sa->n;
    in.temperature = sa->temperature;
    in.top_k = sa->top_k;
    in.top_p = sa->top_p;
    in.window = cli_seen(opts, n_opts, "window") ? (int)sa->window : 0;
    in.flags = (sa->loop ? ATM_FWSET_LOOP : 0u) | (sa->interactive ? ATM_FWSET_INTERACTIVE : 0u);
    char note[300], err[300];
    int st_rc = atm_fw_settings_make(m, max_window, board, &in, st, note, sizeof note, err, sizeof err);
    if (st_rc == ATM_FW_E_ARG) return cli_err(CLI_USAGE, "%s: %s", cmd, err);
    if (st_rc != ATM_FW_OK) return cli_err(CLI_RUNTIME, "%s: %s", cmd, err);
    if (note[0]) fprintf(stderr, "%s: note: %s\n", cmd, note);
    return CLI_OK;
}

static void json_settings(FILE *f, const atm_fwset *st) {
    fprintf(f, ",\"standalone\":true,\"settings\":{\"n\":%llu,\"prompt_hex\":\"", (unsigned long long)st->n);
    for (size_t i = 0; i < st->prompt_len; i++) fprintf(f, "%02x", st->prompt[i]);
    fputs("\",\"temperature\":", f); cli_json_str(f, st->temperature[0] ? st->temperature : "0");
    fputs(",\"top_k\":", f); cli_json_str(f, st->top_k[0] ? st->top_k : "0");
    fputs(",\"top_p\":", f); cli_json_str(f, st->top_p[0] ? st->top_p : "1");
    fprintf(f, ",\"seed\":%u,\"window\":%d,\"loop\":%s,\"interactive\":%s},\"expect_hex\":\"", (unsigned)st->seed, (int)st->window,
            (st->flags & ATM_FWSET_LOOP) ? "true" : "false", (st->flags & ATM_FWSET_INTERACTIVE) ? "true" : "false");
    for (size_t i = 0; i < st->expect_len; i++) fprintf(f, "%02x", st->expect[i]);
    fputc('"', f);
}

int cmd_firmware(int argc, char **argv) {
    const char *model = NULL, *board = NULL, *out = NULL, *tmpl = NULL, *format = "elf";
    settings_args sa;
    memset(&sa, 0, sizeof sa);
    sa.n = ATM_GEN_N_DEFAULT;       /* no --n: the shared default length */
    cli_opt opts[] = {
        { "model",    OPT_STR, &model, 0, 0, 0, 0 },
        { "board",    OPT_STR, &board, 0, 0, 0, 0 },
        { "out",      OPT_STR, &out, 0, 0, 0, 0 },
        { "template", OPT_STR, &tmpl, 0, 0, 0, 0 },
        { "format",   OPT_STR, &format, 0, 0, 0, 0 },
        SETTINGS_OPTS(sa),
    };
    const int nopts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("firmware", argc, argv, opts, nopts);
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "firmware: --model is required");
    if (!board) return cli_err(CLI_USAGE, "firmware: --board is required (mps2-an385 or microbit)");
    if (!out || !*out) return cli_err(CLI_USAGE, "firmware: --out is required");
    int known = 0;
    for (size_t i = 0; i < sizeof BOARDS / sizeof BOARDS[0]; i++) known |= strcmp(board, BOARDS[i]) == 0;
    if (!known) return cli_err(CLI_USAGE, "firmware: unknown board '%s' (mps2-an385 or microbit)", board);
    if (strcmp(format, "elf") && strcmp(format, "hex") && strcmp(format, "bin"))
        return cli_err(CLI_USAGE, "firmware: --format must be elf, hex or bin (got '%s')", format);
    const int with_settings = settings_seen(opts, 5);

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
    if (st == ATM_FW_OK && with_settings && blen + ATM_FWSET_BYTES > slot.capacity) {
        free(blob); free(elf);
        return cli_err(CLI_RUNTIME, "firmware: '%s' is %zu bytes, too big for the %s model slot of %u bytes with its %u-byte settings block",
                       model, blen, board, (unsigned)slot.capacity, ATM_FWSET_BYTES);
    }
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
    atm_fwset set;
    if (with_settings) {
        if ((rc = settings_build("firmware", &sa, opts, nopts, &m, max_window, board, &set))) { free(blob); free(elf); return rc; }
        uint8_t block[ATM_FWSET_BYTES];
        if (atm_fwset_encode(&set, block) != ATM_FWSET_OK || atm_fw_put_settings(elf, elen, block, err, sizeof err) != ATM_FW_OK) {
            free(blob); free(elf);
            return cli_err(CLI_RUNTIME, "firmware: cannot write the settings block: %s", err);
        }
    }
    /* the file a board takes: the ELF, or its flash contents as Intel HEX or raw binary */
    const int fmt = strcmp(format, "hex") == 0 ? ATM_FW_FORMAT_HEX : strcmp(format, "bin") == 0 ? ATM_FW_FORMAT_BIN : ATM_FW_FORMAT_ELF;
    uint8_t *data = NULL;
    size_t dlen = 0, fl = 0;
    uint32_t base = 0;
    if (atm_fw_make_file(elf, elen, fmt, &data, &dlen, &base, &fl, err, sizeof err) != ATM_FW_OK) {
        free(blob); free(elf);
        return cli_err(CLI_RUNTIME, "firmware: template '%s': %s", path, err);
    }
    char why[512];
    rc = atm_write_atomic(out, data, dlen, why, sizeof why);
    free(data);
    if (rc) { free(blob); free(elf); return cli_err(CLI_RUNTIME, "firmware: %s", why); }
    const int defw = m.cfg.window;
    if (!with_settings && defw > max_window)
        fprintf(stderr, "firmware: note: the model's default window %d does not fit the %s's RAM; run it with --window %d or less\n",
                defw, board, max_window);
    printf("{\"out\":");
    cli_json_str(stdout, out);
    printf(",\"board\":\"%s\",\"template\":", board);
    cli_json_str(stdout, path);
    printf(",\"model_bytes\":%zu,\"capacity\":%u,\"container_crc32\":\"0x%08X\",\"encoding\":\"%s\","
           "\"arena_bytes\":%ld,\"window\":%d,\"engine_bytes\":%zu,\"max_window\":%d,\"format\":\"%s\"",
           blen, (unsigned)slot.capacity, (unsigned)atm_rd_u32le(blob + blen - 4), cli_encoding_name(m.encoding), arena,
           with_settings ? (int)set.window : defw, atm_engine_arena_bytes(&m, with_settings ? set.window : defw), max_window, format);
    if (strcmp(format, "elf") != 0) printf(",\"flash_base\":\"0x%08X\",\"flash_bytes\":%zu", (unsigned)base, fl);
    if (with_settings) json_settings(stdout, &set);
    else printf(",\"standalone\":false");
    printf("}\n");
    free(blob); free(elf);
    return CLI_OK;
}

int cmd_header(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *name = NULL;
    settings_args sa;
    memset(&sa, 0, sizeof sa);
    sa.n = ATM_GEN_N_DEFAULT;       /* no --n: the shared default length */
    cli_opt opts[] = {
        { "model", OPT_STR, &model, 0, 0, 0, 0 },
        { "out",   OPT_STR, &out, 0, 0, 0, 0 },
        { "name",  OPT_STR, &name, 0, 0, 0, 0 },
        SETTINGS_OPTS(sa),
    };
    const int nopts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("header", argc, argv, opts, nopts);
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "header: --model is required");
    if (!out || !*out) return cli_err(CLI_USAGE, "header: --out is required");
    const int with_settings = settings_seen(opts, 3);
    uint8_t *blob = NULL;
    size_t blen = 0;
    atm_model m;
    if ((rc = cli_open_container("header", model, &blob, &blen, &m))) return rc;
    atm_fwset set;
    if (with_settings && (rc = settings_build("header", &sa, opts, nopts, &m, 0, "board", &set))) { free(blob); return rc; }

    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (!f) { free(blob); return cli_err(CLI_RUNTIME, "header: out of memory"); }
    const char *base = strrchr(model, '/');
    char err[256];
    int st = atm_fw_header_text(f, &m, blob, blen, name, base ? base + 1 : model, err, sizeof err);
    if (st == ATM_FW_OK && with_settings) {
        /* the settings go before the header's closing #endif */
        fflush(f);
        static const char tail[] = "#endif\n";
        if (tlen >= sizeof tail - 1 && memcmp(text + tlen - (sizeof tail - 1), tail, sizeof tail - 1) == 0) {
            fseeko(f, -(off_t)(sizeof tail - 1), SEEK_END);
            st = atm_fw_settings_text(f, &m, &set, name, err, sizeof err);
            fputs(tail, f);
        } else {
            st = ATM_FW_E_IO;
            snprintf(err, sizeof err, "the header text does not end in #endif");
        }
    }
    int closed = fclose(f);
    free(blob);
    if (st != ATM_FW_OK || closed != 0) {
        free(text);
        if (st == ATM_FW_E_ARG) return cli_err(CLI_USAGE, "header: --name: %s", err);
        return cli_err(CLI_RUNTIME, "header: %s", st != ATM_FW_OK ? err : "out of memory");
    }
    char why[512];
    /* with settings: the one-file example firmware main beside the header,
     * written first; if the header then fails, the example goes too */
    char example[4096] = "";
    if (with_settings) {
        const char *slash = strrchr(out, '/');
        snprintf(example, sizeof example, "%.*satome_model.c", slash ? (int)(slash - out + 1) : 0, out);
        if (strcmp(example, out) == 0) {
            free(text);
            return cli_err(CLI_USAGE, "header: --out '%s' is where the example atome_model.c goes; name the header otherwise", out);
        }
        char *et = NULL;
        size_t el = 0;
        FILE *ef = open_memstream(&et, &el);
        if (!ef || atm_fw_example_text(ef, slash ? slash + 1 : out, name) != ATM_FW_OK) {
            if (ef) fclose(ef);
            free(et);
            free(text);
            return cli_err(CLI_RUNTIME, "header: out of memory");
        }
        fclose(ef);
        rc = atm_write_atomic(example, et, el, why, sizeof why);
        free(et);
        if (rc) { free(text); return cli_err(CLI_RUNTIME, "header: %s", why); }
    }
    rc = atm_write_atomic(out, text, tlen, why, sizeof why);
    free(text);
    if (rc) {
        if (example[0]) remove(example);
        return cli_err(CLI_RUNTIME, "header: %s", why);
    }
    printf("{\"out\":");
    cli_json_str(stdout, out);
    printf(",\"model_bytes\":%zu,\"name\":\"%s\",\"encoding\":\"%s\"", blen, name ? name : "atome_model",
           cli_encoding_name(m.encoding));
    if (with_settings) {
        fputs(",\"example\":", stdout);
        cli_json_str(stdout, example);
        json_settings(stdout, &set);
    }
    printf("}\n");
    return CLI_OK;
}
