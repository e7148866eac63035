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
 *    ...", exit 2 for usage (flags, unknown board, a format the board does
 *    not take, a template of another board), 1 for everything else (unreadable or invalid model, missing or
 *    broken template, model larger than the slot or the RAM, write error).
 *  - Success prints one JSON line (docs/cli.md). */
#include "cli.h"
#include "core/boards.h"
#include "core/engine.h"
#include "core/format.h"
#include "core/cost.h"
#include "core/fwsettings.h"
#include "core/sampler.h"
#include "fwimage/fwimage.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef ATOME_SOURCE_DIR
#define ATOME_SOURCE_DIR "."
#endif

/* "unknown board 'x' (mps2-an385, microbit or pico)": CLI_USAGE. */
static int unknown_board(const char *cmd, const char *board) {
    char names[256];
    atm_fw_board_list(names, sizeof names, " or ");
    if (!board) return cli_err(CLI_USAGE, "%s: --board is required (%s)", cmd, names);
    return cli_err(CLI_USAGE, "%s: unknown board '%s' (%s)", cmd, board, names);
}

/* The template (and model-slot board name) of a board: its row's name
 * ("microbit-v1", the alias, is the "microbit" row). "microbit" is the v1
 * (nRF51822, QEMU's microbit machine) everywhere but in `--format hex`, where
 * its row's hex_with makes it the Universal Hex of the v1 and the v2. */
static const char *template_board(const char *board) {
    const atm_board *b = atm_board_find(board);
    return b ? b->name : board;
}

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

/* One `atome firmware` job: the model, the template and what was made. */
typedef struct {
    const char *model, *board, *out, *format, *encoding;
    const char *tboard;   /* the template's board (template_board) */
    char encoding_why[256];
    uint8_t *blob, *elf;
    size_t blen, elen;
    atm_model m;
    char path[4096];
    int keep_refusal;              /* a fit refusal is kept in refused, not printed (the Universal Hex) */
    char refused[CLI_ERR_MAX];     /* why the model does not fit this board, when kept */
    atm_fw_slot slot;
    long arena;
    int max_window, with_settings;
    atm_fwset set;
    uint32_t base;
    size_t flash_bytes;
} fw_job;

/* The board's template image: --template, or the mcu build's. */
static int load_template(fw_job *j, const char *tmpl) {
    char tried[8192];
    if (tmpl) snprintf(j->path, sizeof j->path, "%s", tmpl);
    else if (find_template(j->tboard, j->path, sizeof j->path, tried, sizeof tried))
        return cli_err(CLI_RUNTIME, "firmware: no template image for %s (looked for %s): run 'cmake --preset mcu && "
                       "cmake --build --preset mcu' or pass --template ELF", j->board, tried);
    if (!file_exists(j->path))
        return cli_err(CLI_RUNTIME, "firmware: cannot open template '%s' (run 'cmake --preset mcu && cmake --build --preset mcu')",
                       j->path);
    return cli_read_file("firmware", j->path, (size_t)64 << 20, &j->elf, &j->elen);
}

/* A refusal because the model does not fit the board (its slot or its RAM):
 * an error, or, with j->keep_refusal, kept in j->refused for the caller
 * that leaves this board out instead (every other failure stays an error). */
static int fit_refusal(fw_job *j, const char *fmt, ...) {
    char buf[CLI_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (!j->keep_refusal) return cli_err(CLI_RUNTIME, "firmware: %s", buf);
    memcpy(j->refused, buf, sizeof buf);
    return CLI_RUNTIME;
}

/* The container into the slot (with room for the settings block when there
 * are settings), then the RAM fit: the largest window. */
static int patch_model(fw_job *j) {
    char err[512];
    int st = atm_fw_find_slot(j->elf, j->elen, &j->slot, err, sizeof err);
    if (st == ATM_FW_OK && strcmp(j->encoding, "auto") == 0) {
        /* the faster encoding for the board when it fits (docs/mcu.md) */
        const size_t extra = j->with_settings ? ATM_FWSET_BYTES : 0;
        const size_t room = j->slot.capacity > extra ? j->slot.capacity - extra : 0;
        uint8_t *b = NULL;
        size_t bl = 0;
        if (atm_fw_choose_encoding(j->slot.board, j->blob, j->blen, room, &b, &bl, j->encoding_why,
                                   sizeof j->encoding_why) == ATM_FW_OK) {
            free(j->blob);
            j->blob = b;
            j->blen = bl;
            if (atm_model_open(&j->m, j->blob, j->blen) != ATM_OK)
                return cli_err(CLI_RUNTIME, "firmware: the re-encoded model does not open (a bug)");
        }
    }
    if (st == ATM_FW_OK && j->with_settings && j->blen + ATM_FWSET_BYTES > j->slot.capacity)
        return fit_refusal(j, "'%s' is %zu bytes, too big for the %s model slot of %u bytes with its %u-byte settings block",
                           j->model, j->blen, j->board, (unsigned)j->slot.capacity, ATM_FWSET_BYTES);
    if (st == ATM_FW_OK) st = atm_fw_patch(j->elf, j->elen, j->tboard, j->blob, j->blen, err, sizeof err);
    if (st == ATM_FW_E_CAPACITY)
        return fit_refusal(j, "'%s' is %zu bytes, too big for the %s model slot of %u bytes", j->model, j->blen,
                           j->board, (unsigned)j->slot.capacity);
    if (st != ATM_FW_OK) return cli_err(st == ATM_FW_E_BOARD ? CLI_USAGE : CLI_RUNTIME, "firmware: template '%s': %s", j->path, err);
    atm_fw_fit fit;
    if (atm_fw_fit_model(j->elf, j->elen, &j->m, &fit, err, sizeof err) != ATM_FW_OK || fit.arena < 0)
        return cli_err(CLI_RUNTIME, "firmware: template '%s' has no .arena section (not an atome firmware image?)", j->path);
    j->arena = (long)fit.arena;
    j->max_window = fit.max_window;
    if (j->max_window == 0)
        return fit_refusal(j, "'%s' needs %zu bytes of RAM at window 1 (engine state + %u), the %s has %ld",
                           j->model, atm_engine_arena_bytes(&j->m, 1) + ATM_FW_MIN_TAIL, ATM_FW_MIN_TAIL, j->board, j->arena);
    return CLI_OK;
}

/* The settings block, then the file a board takes: the ELF, or its flash
 * contents as Intel HEX or raw binary; *data malloc'd. */
static int make_image(fw_job *j, const settings_args *sa, cli_opt *opts, int nopts, uint8_t **data, size_t *dlen) {
    char err[512];
    int rc;
    if (j->with_settings) {
        if ((rc = settings_build("firmware", sa, opts, nopts, &j->m, j->max_window, j->board, &j->set))) return rc;
        uint8_t block[ATM_FWSET_BYTES];
        if (atm_fwset_encode(&j->set, block) != ATM_FWSET_OK || atm_fw_put_settings(j->elf, j->elen, block, err, sizeof err) != ATM_FW_OK)
            return cli_err(CLI_RUNTIME, "firmware: cannot write the settings block: %s", err);
    }
    const int fmt = atm_fw_format_parse(j->format);
    if (atm_fw_make_file(j->elf, j->elen, fmt, data, dlen, &j->base, &j->flash_bytes, err, sizeof err) != ATM_FW_OK)
        return cli_err(CLI_RUNTIME, "firmware: template '%s': %s", j->path, err);
    return CLI_OK;
}

/* One board's image, start to end: the model, the template, the patch, the
 * file bytes (*data malloc'd). */
static int build_image(fw_job *j, const char *tmpl, const settings_args *sa, cli_opt *opts, int nopts, uint8_t **data,
                       size_t *dlen) {
    j->tboard = template_board(j->board);
    int rc = cli_open_container("firmware", j->model, &j->blob, &j->blen, &j->m);
    if (!rc) rc = load_template(j, tmpl);
    if (!rc) rc = patch_model(j);
    if (!rc) rc = make_image(j, sa, opts, nopts, data, dlen);
    return rc;
}

static void free_job(fw_job *j) {
    free(j->blob);
    free(j->elf);
    j->blob = j->elf = NULL;
}

/* A job's JSON fields after "out" (its notes go to stderr). */
static void json_job(const fw_job *j) {
    const int defw = j->m.cfg.window;
    if (!j->with_settings && !atm_fw_semihosting(j->board))
        fprintf(stderr, "firmware: note: the %s runs standalone images only (no semihosting): this one will print that it has "
                        "no settings block; add --prompt TEXT (and --n N) for a story\n", j->board);
    else if (!j->with_settings && defw > j->max_window)
        fprintf(stderr, "firmware: note: the model's default window %d does not fit the %s's RAM; run it with --window %d or less\n",
                defw, j->board, j->max_window);
    const int w = j->with_settings ? (int)j->set.window : defw;
    printf(",\"board\":\"%s\",\"template\":", j->board);
    cli_json_str(stdout, j->path);
    printf(",\"model_bytes\":%zu,\"capacity\":%u,\"container_crc32\":\"0x%08X\",\"encoding\":\"%s\","
           "\"arena_bytes\":%ld,\"window\":%d,\"engine_bytes\":%zu,\"max_window\":%d,\"format\":\"%s\"",
           j->blen, (unsigned)j->slot.capacity, (unsigned)atm_rd_u32le(j->blob + j->blen - 4), cli_encoding_name(j->m.encoding),
           j->arena, w, atm_engine_arena_bytes(&j->m, w), j->max_window, j->format);
    if (strcmp(j->format, "elf") != 0) printf(",\"flash_base\":\"0x%08X\",\"flash_bytes\":%zu", (unsigned)j->base, j->flash_bytes);
    if (strcmp(j->format, "uf2") == 0)   /* one 512-byte block per 256 flash bytes */
        printf(",\"uf2_blocks\":%zu,\"uf2_family\":\"0x%08X\"", (j->flash_bytes + 255) / 256, (unsigned)atm_fw_uf2_family(j->board));
    const int ox = atm_fw_offsets(j->tboard, j->m.encoding, j->blen, j->slot.capacity);
    printf(",\"offset_stream\":%s", ox ? "true" : "false");
    const uint64_t ipb = atm_cost_insns_per_byte(&j->m.cfg, j->m.encoding, j->tboard, w, ox);
    const uint32_t hz = atm_cost_clock_hz(j->tboard);
    if (ipb && hz)   /* docs/mcu-cost.md: one instruction per cycle, an upper bound */
        printf(",\"estimate_insns_per_byte\":%llu,\"estimate_bytes_per_s\":%.1f,\"clock_hz\":%u",
               (unsigned long long)ipb, (double)hz / (double)ipb, (unsigned)hz);
    if (j->encoding_why[0]) {
        printf(",\"encoding_choice\":");
        cli_json_str(stdout, j->encoding_why);
    }
    if (j->with_settings) json_settings(stdout, &j->set);
    else printf(",\"standalone\":false");
}

static void print_firmware(const fw_job *j) {
    printf("{\"out\":");
    cli_json_str(stdout, j->out);
    json_job(j);
    printf("}\n");
}

/* The name a row's single-board files go by: its alias ("microbit-v1") or its name. */
static const char *single_name(const atm_board *b) { return b->alias[0] ? b->alias : b->name; }

/* `--format hex` on a board whose row has hex_with (`--board microbit`):
 * the Universal Hex of its image and hex_with's (fwimage/uhex.c; the v1 and
 * the v2), the second's alone when the model does not fit the first (its
 * slot or its RAM; said on stderr). The second is built first; any error
 * of either but that fit refusal is the command's. */
static int universal_hex(const fw_job *base, const char *tmpl, const settings_args *sa, cli_opt *opts, int nopts) {
    const atm_board *row[2] = { atm_board_find(base->board), NULL };
    row[1] = atm_board_find(row[0]->hex_with);
    fw_job v[2];
    uint8_t *hex[2] = { NULL, NULL };
    size_t hl[2] = { 0, 0 };
    for (int k = 0; k < 2; k++) { v[k] = *base; v[k].board = row[k]->name; }
    int rc = build_image(&v[1], NULL, sa, opts, nopts, &hex[1], &hl[1]);
    int rc1 = rc;
    if (!rc) {
        v[0].keep_refusal = 1;
        rc1 = build_image(&v[0], tmpl, sa, opts, nopts, &hex[0], &hl[0]);
        if (rc1 && !v[0].refused[0]) rc = rc1;   /* not a fit refusal: already said, the command fails */
    }
    const char *w = v[0].refused;
    char *u = NULL, err[256];
    size_t ul = 0;
    if (!rc) {
        atm_fw_uh_part parts[2];
        for (int k = 0; k < 2; k++) { parts[k].hex = (const char *)hex[k]; parts[k].len = hl[k]; parts[k].board_id = (uint16_t)row[k]->uh_board_id; }
        const int first = rc1 ? 1 : 0;
        if (atm_fw_universal_hex(parts + first, (size_t)(2 - first), 0, &u, &ul, err, sizeof err) != ATM_FW_OK)
            rc = cli_err(CLI_RUNTIME, "firmware: Universal Hex: %s", err);
        else if ((rc = atm_write_atomic(base->out, u, ul, err, sizeof err))) rc = cli_err(CLI_RUNTIME, "firmware: %s", err);
    }
    if (!rc) {
        if (rc1) fprintf(stderr, "firmware: note: the model does not fit the %s (%s): the file is for the %s only\n", row[0]->label, w, row[1]->label);
        printf("{\"out\":");
        cli_json_str(stdout, base->out);
        printf(",\"board\":\"%s\",\"format\":\"hex\",\"universal_hex\":true,\"file_bytes\":%zu,\"boards\":[", row[0]->name, ul);
        if (!rc1) printf("\"%s\",", single_name(row[0]));
        printf("\"%s\"]", single_name(row[1]));
        if (rc1) { printf(",\"v1_refused\":"); cli_json_str(stdout, w); }
        for (int k = rc1 ? 1 : 0; k < 2; k++) {   /* "v1": the row's own image, "v2": hex_with's */
            printf(",\"%s\":{\"out\":", k ? "v2" : "v1");
            cli_json_str(stdout, base->out);
            json_job(&v[k]);
            printf("}");
        }
        printf("}\n");
    }
    free(u);
    for (int k = 0; k < 2; k++) { free(hex[k]); free_job(&v[k]); }
    return rc;
}

int cmd_firmware(int argc, char **argv) {
    fw_job j;
    memset(&j, 0, sizeof j);
    const char *tmpl = NULL;
    j.format = "elf";
    j.encoding = "auto";
    settings_args sa;
    memset(&sa, 0, sizeof sa);
    sa.n = ATM_GEN_N_DEFAULT;       /* no --n: the shared default length */
    cli_opt opts[] = {
        { "model",    OPT_STR, &j.model, 0, 0, 0, 0 },
        { "board",    OPT_STR, &j.board, 0, 0, 0, 0 },
        { "out",      OPT_STR, &j.out, 0, 0, 0, 0 },
        { "template", OPT_STR, &tmpl, 0, 0, 0, 0 },
        { "format",   OPT_STR, &j.format, 0, 0, 0, 0 },
        { "encoding", OPT_STR, &j.encoding, 0, 0, 0, 0 },
        SETTINGS_OPTS(sa),
    };
    const int nopts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("firmware", argc, argv, opts, nopts);
    if (rc) return rc;
    if (!j.model) return cli_err(CLI_USAGE, "firmware: --model is required");
    if (!j.board) return unknown_board("firmware", NULL);
    if (!j.out || !*j.out) return cli_err(CLI_USAGE, "firmware: --out is required");
    if (!atm_board_find(j.board)) return unknown_board("firmware", j.board);
    const int fmt = atm_fw_format_parse(j.format);
    if (fmt < 0) return cli_err(CLI_USAGE, "firmware: --format must be elf, hex, bin or uf2 (got '%s')", j.format);
    if (!atm_fw_board_takes(j.board, fmt)) {
        char why[300];
        atm_fw_format_refusal(j.board, fmt, why, sizeof why);
        return cli_err(CLI_USAGE, "firmware: %s", why);
    }
    if (strcmp(j.encoding, "auto") && strcmp(j.encoding, "keep"))
        return cli_err(CLI_USAGE, "firmware: --encoding must be auto or keep (got '%s')", j.encoding);
    j.with_settings = settings_seen(opts, 6);
    const atm_board *row = atm_board_find(j.board);
    if (fmt == ATM_FW_FORMAT_HEX && row->hex_with[0] && strcmp(j.board, row->name) == 0)   /* not by its alias */
        return universal_hex(&j, tmpl, &sa, opts, nopts);
    uint8_t *data = NULL;
    size_t dlen = 0;
    char why[512];
    rc = build_image(&j, tmpl, &sa, opts, nopts, &data, &dlen);
    if (!rc && atm_write_atomic(j.out, data, dlen, why, sizeof why)) rc = cli_err(CLI_RUNTIME, "firmware: %s", why);
    if (!rc) print_firmware(&j);
    free(data);
    free_job(&j);
    return rc;
}

/* The header text (and the settings before its closing #endif); *text malloc'd. */
static int header_text(const char *model, const atm_model *m, const uint8_t *blob, size_t blen, const char *name,
                       const char *out, const atm_fwset *set, char **text, size_t *tlen) {
    FILE *f = open_memstream(text, tlen);
    if (!f) return cli_err(CLI_RUNTIME, "header: out of memory");
    const char *base = strrchr(model, '/');
    char err[256];
    /* the comment names the file written and the parameter count of `atome inspect` */
    int st = atm_fw_header_text(f, m, blob, blen, name, out, atm_export_float_params(&m->cfg), base ? base + 1 : model,
                                err, sizeof err);
    if (st == ATM_FW_OK && set) {
        /* the settings go before the header's closing #endif */
        fflush(f);
        static const char tail[] = "#endif\n";
        if (*tlen >= sizeof tail - 1 && memcmp(*text + *tlen - (sizeof tail - 1), tail, sizeof tail - 1) == 0) {
            fseeko(f, -(off_t)(sizeof tail - 1), SEEK_END);
            st = atm_fw_settings_text(f, m, set, name, err, sizeof err);
            fputs(tail, f);
        } else {
            st = ATM_FW_E_IO;
            snprintf(err, sizeof err, "the header text does not end in #endif");
        }
    }
    int closed = fclose(f);
    if (st == ATM_FW_OK && closed == 0) return CLI_OK;
    free(*text);
    *text = NULL;
    if (st == ATM_FW_E_ARG) return cli_err(CLI_USAGE, "header: --name: %s", err);
    return cli_err(CLI_RUNTIME, "header: %s", st != ATM_FW_OK ? err : "out of memory");
}

/* With settings, the one-file example firmware main beside the header
 * (atome_model.c), written first; its path in example. */
static int write_example(const char *out, const char *name, char *example, size_t cap) {
    const char *slash = strrchr(out, '/');
    snprintf(example, cap, "%.*satome_model.c", slash ? (int)(slash - out + 1) : 0, out);
    if (strcmp(example, out) == 0)
        return cli_err(CLI_USAGE, "header: --out '%s' is where the example atome_model.c goes; name the header otherwise", out);
    char *et = NULL, why[512];
    size_t el = 0;
    FILE *ef = open_memstream(&et, &el);
    if (!ef || atm_fw_example_text(ef, slash ? slash + 1 : out, name) != ATM_FW_OK) {
        if (ef) fclose(ef);
        free(et);
        return cli_err(CLI_RUNTIME, "header: out of memory");
    }
    fclose(ef);
    int rc = atm_write_atomic(example, et, el, why, sizeof why);
    free(et);
    return rc ? cli_err(CLI_RUNTIME, "header: %s", why) : CLI_OK;
}

/* header --board: the largest window whose engine fits the board's RAM
 * (its template's arena, as for `atome firmware`). */
static int header_board_fit(const char *board, const atm_model *m, int *max_window, long long *arena) {
    if (!atm_board_find(board)) return unknown_board("header", board);
    char path[4096], tried[8192], err[512];
    if (find_template(template_board(board), path, sizeof path, tried, sizeof tried))
        return cli_err(CLI_RUNTIME, "header: no template image for %s (looked for %s): run 'cmake --preset mcu && "
                       "cmake --build --preset mcu'", board, tried);
    uint8_t *elf = NULL;
    size_t elen = 0;
    int rc = cli_read_file("header", path, (size_t)64 << 20, &elf, &elen);
    if (rc) return rc;
    atm_fw_slot slot;
    atm_fw_fit fit;
    int st = atm_fw_find_slot(elf, elen, &slot, err, sizeof err);
    if (st == ATM_FW_OK) st = atm_fw_fit_model(elf, elen, m, &fit, err, sizeof err);
    free(elf);
    if (st != ATM_FW_OK) return cli_err(CLI_RUNTIME, "header: template '%s': %s", path, err);
    if (fit.max_window == 0)
        return cli_err(CLI_RUNTIME, "header: the model does not fit the %s's RAM at any window (%lld bytes for the engine)",
                       board, (long long)fit.arena);
    *max_window = fit.max_window;
    *arena = (long long)fit.arena;
    return CLI_OK;
}

int cmd_header(int argc, char **argv) {
    const char *model = NULL, *out = NULL, *name = NULL, *board = NULL;
    settings_args sa;
    memset(&sa, 0, sizeof sa);
    sa.n = ATM_GEN_N_DEFAULT;       /* no --n: the shared default length */
    cli_opt opts[] = {
        { "model", OPT_STR, &model, 0, 0, 0, 0 },
        { "out",   OPT_STR, &out, 0, 0, 0, 0 },
        { "name",  OPT_STR, &name, 0, 0, 0, 0 },
        { "board", OPT_STR, &board, 0, 0, 0, 0 },
        SETTINGS_OPTS(sa),
    };
    const int nopts = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("header", argc, argv, opts, nopts);
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "header: --model is required");
    if (!out || !*out) return cli_err(CLI_USAGE, "header: --out is required");
    const int with_settings = settings_seen(opts, 4);
    uint8_t *blob = NULL;
    size_t blen = 0;
    atm_model m;
    if ((rc = cli_open_container("header", model, &blob, &blen, &m))) return rc;
    int max_window = 0;
    long long arena = -1;
    if (board && (rc = header_board_fit(board, &m, &max_window, &arena))) { free(blob); return rc; }
    atm_fwset set;
    if (with_settings && (rc = settings_build("header", &sa, opts, nopts, &m, max_window, board ? board : "board", &set))) {
        free(blob);
        return rc;
    }
    char *text = NULL;
    size_t tlen = 0;
    rc = header_text(model, &m, blob, blen, name, out, with_settings ? &set : NULL, &text, &tlen);
    free(blob);
    if (rc) return rc;
    char example[4096] = "", why[512];
    if (with_settings && (rc = write_example(out, name, example, sizeof example))) { free(text); return rc; }
    rc = atm_write_atomic(out, text, tlen, why, sizeof why);
    free(text);
    if (rc) {
        if (example[0]) remove(example);     /* the header failed: the example goes too */
        return cli_err(CLI_RUNTIME, "header: %s", why);
    }
    printf("{\"out\":");
    cli_json_str(stdout, out);
    printf(",\"model_bytes\":%zu,\"name\":\"%s\",\"encoding\":\"%s\"", blen, name ? name : "atome_model",
           cli_encoding_name(m.encoding));
    if (board) printf(",\"board\":\"%s\",\"arena_bytes\":%lld,\"max_window\":%d", board, arena, max_window);
    if (with_settings) {
        fputs(",\"example\":", stdout);
        cli_json_str(stdout, example);
        json_settings(stdout, &set);
    }
    printf("}\n");
    return CLI_OK;
}
