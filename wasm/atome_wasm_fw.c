/* wasm/atome_wasm_fw.c — the firmware patcher and the C-header writer of
 * `atome firmware` / `atome header` (fwimage/fwimage.c), exported from
 * atome.wasm so the page makes board files with the same C code.
 *
 * Contract. Each call takes JS-copied inputs, validates the model with
 * atm_model_open() first (as the CLI does: no image or header carries a
 * container the engine would reject), and leaves its output in one module-
 * owned buffer (atome_fw_out / atome_fw_out_len) until the next call, with a
 * JSON description in atome_fw_info() (the keys of the CLI's JSON line, minus
 * the file names). Failures return -1 (runtime: bad model or template),
 * -2 (usage: a template built for another board) or -3 (the model does not
 * fit the board: its slot or its RAM at window 1), with a one-line
 * reason in atome_fw_error() worded as the CLI's message after its
 * "firmware: " / "header: " prefix. */
#define _POSIX_C_SOURCE 200809L   /* open_memstream */
#include "core/boards.h"
#include "core/cost.h"
#include <emscripten/emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/container.h"
#include "core/engine.h"
#include "core/host/engine_host.h"
#include "core/format.h"
#include "core/fwsettings.h"

/* wasm/atome_wasm.c: the parameter count of `atome inspect` for a shape */
double atome_shape_params(const atm_mconfig *c);
#include "core/sampler.h"
#include "fwimage/fwimage.h"
#include "atome_version.h"   /* ATOME_VERSION: <build>/generated, cmake/version.cmake */

#define API EMSCRIPTEN_KEEPALIVE

static uint8_t *g_out = NULL;
static size_t g_out_len = 0;
static char g_err[600];
static char g_info[2400];

#define FAIL(code, ...) do { snprintf(g_err, sizeof g_err, __VA_ARGS__); return (code); } while (0)

static const char *enc_name(int enc) {
    return enc == ATM_ENC_ATOME01 ? "ATOME01" : enc == ATM_ENC_ATOME02 ? "ATOME02" : "unknown";
}

static int open_model(const uint8_t *model, size_t mlen, const char *what, atm_model *m) {
    atm_status st = atm_model_open(m, model, mlen);
    if (st != ATM_OK) {
        char why[300];
        atm_container_why(model, mlen, st, why, sizeof why);
        FAIL(-1, "'%s': %s", what, why);
    }
    return 0;
}

static void out_clear(void) {
    free(g_out);
    g_out = NULL;
    g_out_len = 0;
}

API const char *atome_fw_error(void) { return g_err; }

/* `atome --version`'s string after "atome ": the project version and the
 * git commit of this build. */
API const char *atome_version(void) { return ATOME_VERSION; }

/* `atome boards --json`: the table of boards (core/boards.def) as JSON,
 * built once; NULL if out of memory. */
API const char *atome_boards_json(void) {
    static char *json;
    if (!json) {
        const size_t need = atm_fw_boards_json(NULL, 0);
        json = (char *)malloc(need + 1);
        if (json) atm_fw_boards_json(json, need + 1);
    }
    return json;
}
API const char *atome_fw_info(void) { return g_info; }
API uint8_t *atome_fw_out(void) { return g_out; }
API size_t atome_fw_out_len(void) { return g_out_len; }

static void choose_encoding(const uint8_t *tmpl, size_t tlen, const uint8_t **model, size_t *mlen, int settings);
static void info_add_choice(void);

/* The fit of a model in a template, without patching: info JSON
 * {"board","capacity","model_bytes","arena_bytes","window","engine_bytes",
 *  "max_window","fits_flash"}. 0, or -1. */
/* ,"estimate_insns_per_byte":N,"estimate_bytes_per_s":R,"clock_hz":H for
 * model m on board at window w (nothing when there is no fit for it). */
static void estimate_json(char *dst, size_t cap, const atm_model *m, const char *board, int w, int ox) {
    const uint64_t ipb = atm_cost_insns_per_byte(&m->cfg, m->encoding, board, w, ox);
    const uint32_t hz = atm_cost_clock_hz(board);
    dst[0] = 0;
    if (ipb && hz)
        snprintf(dst, cap, ",\"offset_stream\":%s,\"estimate_insns_per_byte\":%llu,\"estimate_bytes_per_s\":%.1f,\"clock_hz\":%u",
                 ox ? "true" : "false", (unsigned long long)ipb, (double)hz / (double)ipb, (unsigned)hz);
}

static int fit_json(const uint8_t *tmpl, size_t tlen, const atm_model *m, size_t mlen, atm_fw_slot *slot) {
    char err[400];
    if (atm_fw_find_slot(tmpl, tlen, slot, err, sizeof err) != ATM_FW_OK) FAIL(-1, "template: %s", err);
    atm_fw_fit fit;
    if (atm_fw_fit_model(tmpl, tlen, m, &fit, err, sizeof err) != ATM_FW_OK || fit.arena < 0)
        FAIL(-1, "template has no .arena section (not an atome firmware image?)");
    const int w = m->cfg.window;
    snprintf(g_info, sizeof g_info,
             "{\"board\":\"%s\",\"model_bytes\":%zu,\"capacity\":%u,\"container_crc32\":\"0x%08X\",\"encoding\":\"%s\","
             "\"arena_bytes\":%lld,\"window\":%d,\"engine_bytes\":%zu,\"max_window\":%d,\"fits_flash\":%s}",
             slot->board, mlen, (unsigned)fit.capacity, (unsigned)atm_rd_u32le(m->blob + mlen - 4),
             enc_name(m->encoding), (long long)fit.arena, w, atm_engine_arena_bytes(m, w), fit.max_window,
             mlen <= fit.capacity ? "true" : "false");
    return 0;
}

/* `atome firmware`'s --encoding auto: the model re-encoded with the
 * board's faster encoding when that fits the slot (less the settings block
 * when there is one), else as it came; *model and *mlen then point at what
 * the board gets (owned here until the next call) and g_choice says which. */
static uint8_t *g_chosen;
static char g_choice[256];
static void choose_encoding(const uint8_t *tmpl, size_t tlen, const uint8_t **model, size_t *mlen, int settings) {
    free(g_chosen);
    g_chosen = NULL;
    g_choice[0] = 0;
    atm_fw_slot slot;
    if (atm_fw_find_slot(tmpl, tlen, &slot, NULL, 0) != ATM_FW_OK) return;   /* the caller reports it */
    const size_t extra = settings ? ATM_FWSET_BYTES : 0;
    const size_t room = slot.capacity > extra ? slot.capacity - extra : 0;
    uint8_t *b = NULL;
    size_t bl = 0;
    if (atm_fw_choose_encoding(slot.board, *model, *mlen, room, &b, &bl, g_choice, sizeof g_choice) != ATM_FW_OK) {
        g_choice[0] = 0;
        return;
    }
    g_chosen = b;
    *model = b;
    *mlen = bl;
}

/* g_info with "encoding_choice" added (when there is one). */
static void info_add_choice(void) {
    size_t n = strlen(g_info);
    if (!g_choice[0] || n < 2 || g_info[n - 1] != '}') return;
    snprintf(g_info + n - 1, sizeof g_info - (n - 1), ",\"encoding_choice\":\"%s\"}", g_choice);
}

/* The model opened and fitted to the template (g_info gets the fit JSON),
 * the template checked to be the named board's: 0, -1 (bad model or
 * template), -2 (another board's template). */
static int open_for_board(const uint8_t *tmpl, size_t tlen, const char *board, const uint8_t *model, size_t mlen,
                          atm_model *m, atm_fw_slot *slot) {
    if (open_model(model, mlen, "model", m)) return -1;
    if (fit_json(tmpl, tlen, m, mlen, slot)) return -1;
    if (board && strcmp(board, slot->board) != 0)
        FAIL(-2, "template: the template was built for board '%s', not '%s'", slot->board, board);
    return 0;
}

/* Describes how model fits the template (info JSON); no output buffer. */
API int atome_fw_fit(const uint8_t *tmpl, size_t tlen, const uint8_t *model, size_t mlen, int window) {
    atm_model m;
    g_info[0] = 0;
    if (open_model(model, mlen, "model", &m)) return -1;
    choose_encoding(tmpl, tlen, &model, &mlen, 1);   /* what a standalone image gets */
    if (open_model(model, mlen, "model", &m)) return -1;
    atm_fw_slot slot;
    const int rc = fit_json(tmpl, tlen, &m, mlen, &slot);
    if (rc) return rc;
    info_add_choice();
    char est[200];
    estimate_json(est, sizeof est, &m, slot.board, window, atm_fw_offsets(slot.board, m.encoding, mlen, slot.capacity));
    const size_t n = strlen(g_info);
    if (est[0] && n > 1 && g_info[n - 1] == '}') snprintf(g_info + n - 1, sizeof g_info - (n - 1), "%s}", est);
    return 0;
}

/* Engine RAM of model at window w (0 = its default) plus the firmware's
 * minimum tail: what the board's .arena must hold. 0 if invalid. */
API double atome_fw_ram(const uint8_t *model, size_t mlen, int window) {
    atm_model m;
    if (atm_model_open(&m, model, mlen) != ATM_OK) return 0;
    size_t need = atm_engine_arena_bytes(&m, window);
    return need ? (double)(need + ATM_FW_MIN_TAIL) : 0;
}

/* The model's fit in the template, refused when it fits the board's RAM at
 * no window: 0, or -1. */
static int fit_window1(const uint8_t *tmpl, size_t tlen, const atm_model *m, const atm_fw_slot *slot, atm_fw_fit *fit) {
    char err[400];
    if (atm_fw_fit_model(tmpl, tlen, m, fit, err, sizeof err) != ATM_FW_OK) FAIL(-1, "template: %s", err);
    if (fit->max_window == 0)
        FAIL(-3, "the model needs %zu bytes of RAM at window 1 (engine state + %u), the %s has %lld",
             atm_engine_arena_bytes(m, 1) + ATM_FW_MIN_TAIL, ATM_FW_MIN_TAIL, slot->board, (long long)fit->arena);
    return 0;
}

/* `atome firmware --model M --board B`: the template with the model in its
 * slot, in the output buffer; info JSON as fit. Refused as the CLI refuses:
 * a template of another board (-2), a model larger than the slot, or one
 * that fits the board's RAM at no window (-1). */
API int atome_fw_patch(const uint8_t *tmpl, size_t tlen, const char *board, const uint8_t *model, size_t mlen) {
    out_clear();
    g_info[0] = 0;
    choose_encoding(tmpl, tlen, &model, &mlen, 0);
    atm_model m;
    atm_fw_slot slot;
    const int orc = open_for_board(tmpl, tlen, board, model, mlen, &m, &slot);
    if (orc) return orc;
    if (mlen > slot.capacity)
        FAIL(-3, "the model is %zu bytes, too big for the %s model slot of %u bytes", mlen, slot.board,
             (unsigned)slot.capacity);
    atm_fw_fit fit;
    char err[400];
    const int frc = fit_window1(tmpl, tlen, &m, &slot, &fit);
    if (frc) return frc;
    g_out = (uint8_t *)malloc(tlen ? tlen : 1);
    if (!g_out) FAIL(-1, "out of memory for a %zu-byte image", tlen);
    memcpy(g_out, tmpl, tlen);
    if (atm_fw_patch(g_out, tlen, board, model, mlen, err, sizeof err) != ATM_FW_OK) {
        out_clear();
        FAIL(-1, "template: %s", err);
    }
    g_out_len = tlen;
    info_add_choice();
    return (int)tlen;
}

/* `atome header --model M [--name N] --out FILE`: the header text (source =
 * the model file's base name, file = the name of the file it is saved as,
 * as the CLI writes them; NULL or "" = "<name>.h") in the output buffer. */
API int atome_fw_header(const uint8_t *model, size_t mlen, const char *name, const char *source, const char *file) {
    out_clear();
    atm_model m;
    if (open_model(model, mlen, source ? source : "model", &m)) return -1;
    char *text = NULL;
    size_t tl = 0;
    FILE *f = open_memstream(&text, &tl);
    if (!f) FAIL(-1, "out of memory");
    char err[300];
    double params = atome_shape_params(&m.cfg);      /* `atome inspect`'s count (wasm/atome_wasm.c) */
    int st = atm_fw_header_text(f, &m, model, mlen, name && *name ? name : NULL, file && *file ? file : NULL,
                                params > 0 ? (size_t)params : 0, source, err, sizeof err);
    int closed = fclose(f);
    if (st != ATM_FW_OK || closed != 0) {
        free(text);
        if (st == ATM_FW_E_ARG) FAIL(-2, "--name: %s", err);
        FAIL(-1, "%s", st != ATM_FW_OK ? err : "out of memory");
    }
    g_out = (uint8_t *)text;
    g_out_len = tl;
    snprintf(g_info, sizeof g_info, "{\"model_bytes\":%zu,\"name\":\"%s\",\"encoding\":\"%s\"}", mlen,
             name && *name ? name : "atome_model", enc_name(m.encoding));
    return (int)tl;
}

/* `atome convert --model M --format atome01|atome02` (encoding 1 or 2): the
 * re-encoded container in the output buffer. */
API int atome_fw_convert(const uint8_t *model, size_t mlen, int encoding) {
    out_clear();
    atm_model m;
    if (open_model(model, mlen, "model", &m)) return -1;
    if (encoding != ATM_ENC_ATOME01 && encoding != ATM_ENC_ATOME02) FAIL(-2, "--format must be atome01 or atome02");
    size_t need = 0, got = 0;
    atm_container_convert(model, mlen, encoding, NULL, 0, &need);
    g_out = need ? (uint8_t *)malloc(need) : NULL;
    atm_status st = g_out ? atm_container_convert(model, mlen, encoding, g_out, need, &got) : ATM_E_CAPACITY;
    if (st != ATM_OK) { out_clear(); FAIL(-1, "%s", atm_status_str(st)); }
    g_out_len = got;
    snprintf(g_info, sizeof g_info, "{\"format\":\"atome\",\"encoding\":\"%s\",\"bytes\":%zu}", enc_name(encoding), got);
    return (int)got;
}

/* g_info with the CLI's "uf2_blocks" and "uf2_family" of a .uf2 file of
 * flash_bytes of flash. */
static void info_add_uf2(size_t flash_bytes, const char *board) {
    size_t n = strlen(g_info);
    if (n < 2 || g_info[n - 1] != '}') return;
    snprintf(g_info + n - 1, sizeof g_info - (n - 1), ",\"uf2_blocks\":%zu,\"uf2_family\":\"0x%08X\"}", (flash_bytes + 255) / 256,
             (unsigned)atm_fw_uf2_family(board));
}

/* The settings of a standalone image from the call's texts (seed NULL = 1):
 * 0, or -2 (usage) with the reason. */
static int settings_in(atm_fw_settings_in *in, const uint8_t *prompt, size_t plen, double n, const char *temperature,
                       const char *top_k, const char *top_p, const char *seed, int window, int flags) {
    char err[400];
    atm_sampler_cfg sc;
    if (atm_sampler_settings_why(&sc, temperature, top_k, top_p, err, sizeof err)) FAIL(-2, "%s", err);
    memset(in, 0, sizeof *in);
    in->seed = 1;
    if (seed && atm_sampler_parse_uint(seed, 4294967295u, &in->seed))
        FAIL(-2, "--seed must be an integer in 0..4294967295 (got '%s')", seed);
    if (!(n >= 0 && n <= (double)ATM_GEN_N_MAX) || n != (double)(uint64_t)n) FAIL(-2, "--n must be an integer in 0..1000000000000");
    in->prompt = prompt;
    in->prompt_len = plen;
    in->n = (uint64_t)n;
    in->temperature = temperature;
    in->top_k = top_k;
    in->top_p = top_p;
    in->window = window;
    in->flags = (uint32_t)flags;
    return 0;
}

/* The template with the model and the settings block st in, as a file of
 * format into the output buffer (*base, *fl: its flash base and bytes): 0,
 * or -1. */
static int standalone_file(const uint8_t *tmpl, size_t tlen, const char *board, const uint8_t *model, size_t mlen,
                           const atm_fwset *st, int format, uint32_t *base, size_t *fl) {
    char err[400];
    uint8_t *elf = (uint8_t *)malloc(tlen ? tlen : 1);
    if (!elf) FAIL(-1, "out of memory for a %zu-byte image", tlen);
    memcpy(elf, tmpl, tlen);
    uint8_t block[ATM_FWSET_BYTES];
    if (atm_fw_patch(elf, tlen, board, model, mlen, err, sizeof err) != ATM_FW_OK ||
        atm_fwset_encode(st, block) != ATM_FWSET_OK || atm_fw_put_settings(elf, tlen, block, err, sizeof err) != ATM_FW_OK) {
        free(elf);
        FAIL(-1, "template: %s", err);
    }
    int rc = atm_fw_make_file(elf, tlen, format, &g_out, &g_out_len, base, fl, err, sizeof err);
    free(elf);
    if (rc != ATM_FW_OK) { g_out = NULL; g_out_len = 0; FAIL(-1, "template: %s", err); }
    return 0;
}

static void hex_of(const uint8_t *b, size_t n, char *out) {
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) { out[2 * i] = hx[b[i] >> 4]; out[2 * i + 1] = hx[b[i] & 15]; }
    out[2 * n] = 0;
}

/* g_info of a standalone image: the CLI's keys. */
static void standalone_info(const atm_fw_slot *slot, size_t mlen, const atm_fwset *st, int max_window, int format,
                            uint32_t base, size_t fl, const char *note) {
    char ph[2 * ATM_FWSET_PROMPT_MAX + 1], eh[2 * ATM_FWSET_EXPECT + 1];
    hex_of(st->prompt, st->prompt_len, ph);
    hex_of(st->expect, st->expect_len, eh);
    static const char *const fmts[] = { "elf", "hex", "bin", "uf2" };
    snprintf(g_info, sizeof g_info,
             "{\"board\":\"%s\",\"model_bytes\":%zu,\"capacity\":%u,\"window\":%d,\"max_window\":%d,\"format\":\"%s\","
             "\"flash_base\":\"0x%08X\",\"flash_bytes\":%zu,\"standalone\":true,\"settings\":{\"n\":%llu,\"prompt_hex\":\"%s\","
             "\"temperature\":\"%s\",\"top_k\":\"%s\",\"top_p\":\"%s\",\"seed\":%u,\"window\":%d,\"loop\":%s,\"interactive\":%s},"
             "\"expect_hex\":\"%s\",\"note\":\"%s\"}",
             slot->board, mlen, (unsigned)slot->capacity, (int)st->window, max_window, fmts[format],
             (unsigned)base, fl, (unsigned long long)st->n, ph, st->temperature[0] ? st->temperature : "0",
             st->top_k[0] ? st->top_k : "0", st->top_p[0] ? st->top_p : "1", (unsigned)st->seed, (int)st->window,
             (st->flags & ATM_FWSET_LOOP) ? "true" : "false", (st->flags & ATM_FWSET_INTERACTIVE) ? "true" : "false", eh, note);
}

/* `atome firmware --model M --board B --prompt-hex P --n N [--temperature T
 * --top-k K --top-p P --seed S --window W --loop --interactive] --format F`:
 * a standalone image (settings block, known answer) as ELF (format 0),
 * Intel HEX (1), raw binary (2) or UF2 (3: the pico only), in the output
 * buffer; info JSON with the
 * CLI's keys (settings, expect_hex, format). Texts may be NULL (default);
 * seed is text too (NULL = 1); window 0 = resolve as the CLI does (a note
 * goes into info's "note"). */
API int atome_fw_standalone(const uint8_t *tmpl, size_t tlen, const char *board, const uint8_t *model, size_t mlen,
                            const uint8_t *prompt, size_t plen, double n, const char *temperature, const char *top_k,
                            const char *top_p, const char *seed, int window, int flags, int format) {
    out_clear();
    g_info[0] = 0;
    if (format < ATM_FW_FORMAT_ELF || format > ATM_FW_FORMAT_UF2) FAIL(-2, "--format must be elf, hex, bin or uf2");
    if (board && atm_board_find(board) && !atm_fw_board_takes(board, format)) {
        char why[300];
        atm_fw_format_refusal(board, format, why, sizeof why);
        FAIL(-2, "%s", why);
    }
    choose_encoding(tmpl, tlen, &model, &mlen, 1);
    atm_model m;
    atm_fw_slot slot;
    int rc = open_for_board(tmpl, tlen, board, model, mlen, &m, &slot);
    if (rc) return rc;
    if (mlen + ATM_FWSET_BYTES > slot.capacity)
        FAIL(-3, "the model is %zu bytes, too big for the %s model slot of %u bytes with its %u-byte settings block", mlen,
             slot.board, (unsigned)slot.capacity, ATM_FWSET_BYTES);
    atm_fw_settings_in in;
    if ((rc = settings_in(&in, prompt, plen, n, temperature, top_k, top_p, seed, window, flags))) return rc;
    atm_fw_fit fit;
    const int frc = fit_window1(tmpl, tlen, &m, &slot, &fit);
    if (frc) return frc;
    char err[400], note[300];
    atm_fwset st;
    rc = atm_fw_settings_make(&m, fit.max_window, slot.board, &in, &st, note, sizeof note, err, sizeof err);
    if (rc == ATM_FW_E_ARG) FAIL(-2, "%s", err);
    if (rc != ATM_FW_OK) FAIL(-1, "%s", err);
    uint32_t base = 0;
    size_t fl = 0;
    if (standalone_file(tmpl, tlen, board, model, mlen, &st, format, &base, &fl)) return -1;
    standalone_info(&slot, mlen, &st, fit.max_window, format, base, fl, note);
    info_add_choice();
    if (format == ATM_FW_FORMAT_UF2) info_add_uf2(fl, slot.board);
    return (int)g_out_len;
}

/* `atome firmware --board microbit --format hex`: the Universal Hex of the
 * micro:bit v1 file v1[l1] (l1 = 0: none, the model fits the v2 only) and
 * the v2 file v2[l2] (fwimage/uhex.c), in the output buffer. */
API int atome_fw_universal_hex(const uint8_t *v1, size_t l1, const uint8_t *v2, size_t l2) {
    out_clear();
    g_info[0] = 0;
    atm_fw_uh_part parts[2];
    size_t n = 0;
    if (l1) { parts[n].hex = (const char *)v1; parts[n].len = l1; parts[n++].board_id = ATM_FW_UH_BOARD_V1; }
    if (l2) { parts[n].hex = (const char *)v2; parts[n].len = l2; parts[n++].board_id = ATM_FW_UH_BOARD_V2; }
    char *u = NULL, err[256];
    size_t ul = 0;
    if (atm_fw_universal_hex(parts, n, 0, &u, &ul, err, sizeof err) != ATM_FW_OK) FAIL(-1, "Universal Hex: %s", err);
    g_out = (uint8_t *)u;
    g_out_len = ul;
    snprintf(g_info, sizeof g_info, "{\"universal_hex\":true,\"file_bytes\":%zu}", ul);
    return (int)ul;
}
