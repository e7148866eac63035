/* cli/packed.c — helpers shared by the commands that read or write packed
 * models: whole-file reads with a size cap, recognising a file by its first
 * bytes, one-line reasons for a container that fails to open, the
 * deterministic calibration sample (used by `train` and `export`), and the
 * fixed-point sampler settings (parsed from their text by the core parser, as
 * every front end does) with the float-logit bridge into that sampler. */
#include "cli.h"
#include "core/format.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int cli_read_file(const char *cmd, const char *path, size_t max_len, uint8_t **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return cli_err(CLI_RUNTIME, "%s: cannot open '%s'", cmd, path);
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = (uint8_t *)malloc(cap);
    while (b) {
        if (n == cap) {
            if (cap > max_len) break;
            uint8_t *nb = (uint8_t *)realloc(b, cap * 2);
            if (!nb) { free(b); b = NULL; break; }
            b = nb; cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (!b) return cli_err(CLI_RUNTIME, "%s: out of memory reading '%s'", cmd, path);
    if (bad) { free(b); return cli_err(CLI_RUNTIME, "%s: read error on '%s' (is it a directory?)", cmd, path); }
    if (n > max_len) { free(b); return cli_err(CLI_RUNTIME, "%s: '%s' is larger than %zu bytes", cmd, path, max_len); }
    *buf = b; *len = n;
    return CLI_OK;
}

static const uint8_t CONTAINER_MAGIC[8] = { 'A', 'T', 'M', 'C', 0x0D, 0x0A, 0x1A, 0x0A };

int cli_file_kind(const uint8_t *b, size_t len) {
    /* Four bytes suffice to tell the formats apart; a container cut inside
     * its magic still goes to the container reader, which calls it truncated. */
    if (len >= 4 && memcmp(b, CONTAINER_MAGIC, 4) == 0) return CLI_FILE_CONTAINER;
    if (len >= 8 && memcmp(b, "ATOMECKP", 8) == 0) return CLI_FILE_CKPT;
    if (len >= ATM_LEGACY_MAGIC_LEN && (memcmp(b, "ATOME01", 7) == 0 || memcmp(b, "ATOME02", 7) == 0))
        return CLI_FILE_LEGACY;
    return CLI_FILE_UNKNOWN;
}

int cli_sniff(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    uint8_t head[8];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return cli_file_kind(head, n);
}


int cli_open_container(const char *cmd, const char *path, uint8_t **blob, size_t *len, atm_model *m) {
    int rc = cli_read_file(cmd, path, (size_t)ATM_CONTAINER_MAX_BYTES + 64, blob, len);
    if (rc) return rc;
    atm_status st = atm_model_open(m, *blob, *len);
    if (st != ATM_OK) {
        char why[256];
        atm_container_why(*blob, *len, st, why, sizeof why);
        free(*blob);
        *blob = NULL;
        return cli_err(CLI_RUNTIME, "%s: '%s': %s", cmd, path, why);
    }
    return CLI_OK;
}

int cli_open_engine_model(const char *cmd, const char *path, uint8_t **blob, size_t *len, atm_model *m, int *file_enc) {
    int rc = cli_open_container(cmd, path, blob, len, m);
    if (rc) return rc;
    if (file_enc) *file_enc = m->encoding;
    if (m->encoding != ATM_ENC_ATOME02) return CLI_OK;
    /* The engine's row kernels take ATOME01 bytes and re-encode an ATOME02
     * payload at every product; done once here (as the M3 firmware does after
     * its copy) it costs 25 % more memory for the trits and nothing per byte:
     * the same trits, scales and vectors, so the same logits. Kept as it is
     * if the copy cannot be made. */
    size_t need = 0, got = 0;
    atm_container_convert(*blob, *len, ATM_ENC_ATOME01, NULL, 0, &need);
    uint8_t *conv = need ? malloc(need) : NULL;
    atm_model m1;
    if (conv && atm_container_convert(*blob, *len, ATM_ENC_ATOME01, conv, need, &got) == ATM_OK && got == need &&
        atm_model_open(&m1, conv, got) == ATM_OK) {
        free(*blob);
        *blob = conv;
        *len = got;
        *m = m1;
    } else {
        free(conv);
    }
    return CLI_OK;
}

const char *cli_encoding_name(int enc) {
    return enc == ATM_ENC_ATOME01 ? "ATOME01" : enc == ATM_ENC_ATOME02 ? "ATOME02" : "unknown";
}

/* ---- sampling ---- */

int cli_sampler_settings(const char *cmd, const char *temperature, const char *top_k, const char *top_p,
                         atm_sampler_cfg *sc) {
    int e = atm_sampler_settings(sc, temperature, top_k, top_p);
    if (e == ATM_SET_OK) return CLI_OK;
    const char *got = e == ATM_SET_E_TEMPERATURE ? temperature : e == ATM_SET_E_TOP_K ? top_k : top_p;
    return cli_err(CLI_USAGE, "%s: %s (got '%s')", cmd, atm_sampler_settings_msg(e), got);
}

