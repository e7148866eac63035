/* wasm/atome_wasm_fw.c — the firmware patcher and the C-header writer of
 * `atome firmware` / `atome header` (tools/fwimage.c), exported from
 * atome.wasm so the page makes board files with the same C code.
 *
 * Contract. Each call takes JS-copied inputs, validates the model with
 * atm_model_open() first (as the CLI does: no image or header carries a
 * container the engine would reject), and leaves its output in one module-
 * owned buffer (atome_fw_out / atome_fw_out_len) until the next call, with a
 * JSON description in atome_fw_info() (the keys of the CLI's JSON line, minus
 * the file names). Failures return -1 (runtime: bad model, template, too
 * big) or -2 (usage: a template built for another board), with a one-line
 * reason in atome_fw_error() worded as the CLI's message after its
 * "firmware: " / "header: " prefix. */
#define _POSIX_C_SOURCE 200809L   /* open_memstream */
#include <emscripten/emscripten.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "container.h"
#include "engine.h"
#include "export.h"
#include "format.h"
#include "../tools/fwimage.h"

#define API EMSCRIPTEN_KEEPALIVE

static uint8_t *g_out = NULL;
static size_t g_out_len = 0;
static char g_err[600];
static char g_info[600];

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
API const char *atome_fw_info(void) { return g_info; }
API uint8_t *atome_fw_out(void) { return g_out; }
API size_t atome_fw_out_len(void) { return g_out_len; }

/* The fit of a model in a template, without patching: info JSON
 * {"board","capacity","model_bytes","arena_bytes","window","engine_bytes",
 *  "max_window","fits_flash"}. 0, or -1. */
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

/* Describes how model fits the template (info JSON); no output buffer. */
API int atome_fw_fit(const uint8_t *tmpl, size_t tlen, const uint8_t *model, size_t mlen) {
    atm_model m;
    g_info[0] = 0;
    if (open_model(model, mlen, "model", &m)) return -1;
    atm_fw_slot slot;
    return fit_json(tmpl, tlen, &m, mlen, &slot);
}

/* Engine RAM of model at window w (0 = its default) plus the firmware's
 * minimum tail: what the board's .arena must hold. 0 if invalid. */
API double atome_fw_ram(const uint8_t *model, size_t mlen, int window) {
    atm_model m;
    if (atm_model_open(&m, model, mlen) != ATM_OK) return 0;
    size_t need = atm_engine_arena_bytes(&m, window);
    return need ? (double)(need + ATM_FW_MIN_TAIL) : 0;
}

/* `atome firmware --model M --board B`: the template with the model in its
 * slot, in the output buffer; info JSON as fit. Refused as the CLI refuses:
 * a template of another board (-2), a model larger than the slot, or one
 * that fits the board's RAM at no window (-1). */
API int atome_fw_patch(const uint8_t *tmpl, size_t tlen, const char *board, const uint8_t *model, size_t mlen) {
    out_clear();
    g_info[0] = 0;
    atm_model m;
    if (open_model(model, mlen, "model", &m)) return -1;
    atm_fw_slot slot;
    if (fit_json(tmpl, tlen, &m, mlen, &slot)) return -1;
    if (board && strcmp(board, slot.board) != 0)
        FAIL(-2, "template: the template was built for board '%s', not '%s'", slot.board, board);
    if (mlen > slot.capacity)
        FAIL(-1, "the model is %zu bytes, too big for the %s model slot of %u bytes", mlen, slot.board,
             (unsigned)slot.capacity);
    atm_fw_fit fit;
    char err[400];
    if (atm_fw_fit_model(tmpl, tlen, &m, &fit, err, sizeof err) != ATM_FW_OK) FAIL(-1, "template: %s", err);
    if (fit.max_window == 0)
        FAIL(-1, "the model needs %zu bytes of RAM at window 1 (engine state + %u), the %s has %lld",
             atm_engine_arena_bytes(&m, 1) + ATM_FW_MIN_TAIL, ATM_FW_MIN_TAIL, slot.board, (long long)fit.arena);
    g_out = (uint8_t *)malloc(tlen ? tlen : 1);
    if (!g_out) FAIL(-1, "out of memory for a %zu-byte image", tlen);
    memcpy(g_out, tmpl, tlen);
    if (atm_fw_patch(g_out, tlen, board, model, mlen, err, sizeof err) != ATM_FW_OK) {
        out_clear();
        FAIL(-1, "template: %s", err);
    }
    g_out_len = tlen;
    return (int)tlen;
}

/* `atome header --model M [--name N]`: the header text (source = the model
 * file's base name, as the CLI writes it) in the output buffer. */
API int atome_fw_header(const uint8_t *model, size_t mlen, const char *name, const char *source) {
    out_clear();
    atm_model m;
    if (open_model(model, mlen, source ? source : "model", &m)) return -1;
    char *text = NULL;
    size_t tl = 0;
    FILE *f = open_memstream(&text, &tl);
    if (!f) FAIL(-1, "out of memory");
    char err[300];
    int st = atm_fw_header_text(f, &m, model, mlen, name && *name ? name : NULL, source, err, sizeof err);
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
