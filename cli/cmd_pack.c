/* cli/cmd_pack.c — packed models: `atome export` (float atome checkpoint ->
 * `.atome` container), `atome convert` (re-encode a container ATOME01 <->
 * ATOME02, trits and formats unchanged) and `atome inspect` (one JSON object
 * describing a container, a checkpoint or a legacy blob).
 *
 * Export picks its calibration statistics in this order: --calib FILE (the
 * calibration sample of that text), the checkpoint's ACAL section (gathered
 * by `train` on its training chunks), the checkpoint's recorded training data
 * if it can still be read (same sample `train` would take), else none: the
 * formats then come from provable bounds alone. The two fallbacks say so on
 * stderr. Output bytes depend only on the weights, the statistics and the
 * flags (export is deterministic). docs/cli.md documents the flags and the
 * JSON keys. */
#include "cli.h"
#include "core/engine.h"
#include "core/format.h"
#include "core/train/legacy.h"
#include <stdlib.h>
#include <string.h>

static int encoding_from_name(const char *s) {
    if (strcmp(s, "atome01") == 0 || strcmp(s, "ATOME01") == 0) return ATM_ENC_ATOME01;
    if (strcmp(s, "atome02") == 0 || strcmp(s, "ATOME02") == 0) return ATM_ENC_ATOME02;
    return 0;
}

static void json_pathways(FILE *f, int pw) {
    const char *sep = "";
    fputc('"', f);
    if (pw & ATM_PATH_CONV) { fprintf(f, "%sconv", sep); sep = ","; }
    if (pw & ATM_PATH_SSM) { fprintf(f, "%sssm", sep); sep = ","; }
    if (pw & ATM_PATH_ATTN) fprintf(f, "%sattn", sep);
    fputc('"', f);
}

/* Not a file export can take: a container, a legacy blob. CLI_OK if it is
 * (or may be) a checkpoint. */
static int refuse_non_ckpt(const char *cmd, const char *path) {
    int k = cli_sniff(path);
    if (k == CLI_FILE_CONTAINER)
        return cli_err(CLI_USAGE, "%s: '%s' is already a packed .atome container (re-encode it with 'atome convert')", cmd, path);
    if (k == CLI_FILE_LEGACY)
        return cli_err(CLI_USAGE, "%s: '%s' is a reference legacy blob; import it first ('atome import --legacy FILE --config NAME --out CKPT')",
                       cmd, path);
    return CLI_OK;
}

/* ------------------------------------------------------------------ export */

/* One `atome export`: the flags, the checkpoint, its layout, the statistics
 * the formats come from and the container, passed through the named steps
 * of cmd_export. */
typedef struct {
    const char     *model, *format, *out, *calib;
    int64_t         window;
    int             quiet, enc;
    atm_ckpt        ck;
    atm_layout      L;
    atm_calib_stats st;
    const char     *source;   /* the "calibration" JSON value */
    int             have;     /* st holds statistics */
    uint8_t        *buf;      /* the container, *len bytes */
    size_t          len;
    char            why[1200];
} export_job;

static int export_flags(export_job *j, int argc, char **argv) {
    cli_opt opts[] = {
        { "model",  OPT_STR,  &j->model, 0, 0, 0, 0 },
        { "format", OPT_STR,  &j->format, 0, 0, 0, 0 },
        { "out",    OPT_STR,  &j->out, 0, 0, 0, 0 },
        { "calib",  OPT_STR,  &j->calib, 0, 0, 0, 0 },
        { "window", OPT_INT,  &j->window, 1, ATM_MAX_WINDOW, 0, 0 },
        { "quiet",  OPT_FLAG, &j->quiet, 0, 0, 0, 0 },
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("export", argc, argv, opts, n);
    if (rc) return rc;
    if (!j->model) return cli_err(CLI_USAGE, "export: --model is required");
    if (!j->format) return cli_err(CLI_USAGE, "export: --format is required (atome01 or atome02)");
    if (!j->out || !*j->out) return cli_err(CLI_USAGE, "export: --out is required");
    j->enc = encoding_from_name(j->format);
    if (!j->enc) return cli_err(CLI_USAGE, "export: --format must be atome01 or atome02 (got '%s')", j->format);
    if ((rc = refuse_non_ckpt("export", j->model))) return rc;
    if (!cli_seen(opts, n, "window")) j->window = -1;   /* the checkpoint's run window (load_model) */
    return CLI_OK;
}

/* The checkpoint (an atome-family one), the default window and the layout. */
static int load_model(export_job *j) {
    atm_ckpt *ck = &j->ck;
    if (atm_ckpt_read(j->model, ck, j->why, sizeof j->why)) return cli_err(CLI_RUNTIME, "export: %s", j->why);
    if (ck->cfg.family != ATM_FAMILY_ATOME)
        return cli_err(CLI_RUNTIME, "export: '%s' is a %s model; only the atome family can be packed", j->model,
                       atm_family_name(ck->cfg.family));
    if (j->window < 0) {
        j->window = atm_config_run_window(&ck->cfg, ck->opt.seq);
        if (j->window > ATM_MAX_WINDOW)
            return cli_err(CLI_USAGE, "export: the training seq %d exceeds the engine's %d positions; give --window",
                           (int)ck->opt.seq, ATM_MAX_WINDOW);
    }
    if (atm_layout_build(&ck->cfg, &j->L)) return cli_err(CLI_RUNTIME, "export: cannot build the layout");
    return CLI_OK;
}

/* The calibration sample of the checkpoint's recorded training chunks:
 * *taken = 1, or 0 if the data cannot be read (reason in j->why). */
static int calib_training_data(export_job *j, int *taken) {
    const atm_ckpt *ck = &j->ck;
    atm_corpus c;
    atm_chunks ch;
    *taken = 0;
    if (atm_corpus_load(ck->data_path, ck->max_bytes, &c, j->why, sizeof j->why)) return CLI_OK;
    int seq = ck->opt.seq;
    int ok = (ck->valid_path[0] ? atm_chunks_all(&c, seq, &ch, j->why, sizeof j->why)
                                : atm_chunks_split(&c, seq, ck->split, &ch, NULL, j->why, sizeof j->why)) == 0;
    if (ok && atm_calib_sample(&j->L, ck->w, ch.base, ch.n * (size_t)ch.seq, (int)j->window, &j->st, j->why, sizeof j->why)) {
        atm_corpus_free(&c);
        return cli_err(CLI_RUNTIME, "export: %s", j->why);
    }
    atm_corpus_free(&c);
    *taken = ok;
    return CLI_OK;
}

/* The statistics, in the order of the header comment: --calib, the
 * checkpoint's ACAL section, its training data, else provable bounds. */
static int pick_calibration(export_job *j) {
    const atm_ckpt *ck = &j->ck;
    j->source = "bounds";
    if (j->calib) {
        atm_corpus c;
        if (atm_corpus_load(j->calib, 0, &c, j->why, sizeof j->why)) return cli_err(CLI_RUNTIME, "export: --calib: %s", j->why);
        int rc = atm_calib_sample(&j->L, ck->w, c.bytes, c.n_bytes, (int)j->window, &j->st, j->why, sizeof j->why);
        atm_corpus_free(&c);
        if (rc) return cli_err(CLI_RUNTIME, "export: %s", j->why);
        j->source = "calib-file";
        j->have = 1;
    } else if (ck->calib) {
        if (atm_calib_parse(ck->calib, ck->calib_len, &j->st, j->why, sizeof j->why))
            return cli_err(CLI_RUNTIME, "export: checkpoint '%s': %s", j->model, j->why);
        j->source = "checkpoint";
        j->have = 1;
    } else if (ck->has_data) {
        int taken, rc = calib_training_data(j, &taken);
        if (rc) return rc;
        if (taken) {
            j->source = "training-data";
            j->have = 1;
            if (!j->quiet)
                fprintf(stderr, "export: the checkpoint has no calibration statistics; calibrated on its training data '%s'\n",
                        ck->data_path);
        } else if (!j->quiet) {
            fprintf(stderr, "export: the checkpoint has no calibration statistics and its training data is unreadable (%s); "
                    "formats from provable bounds only\n", j->why);
        }
    } else if (!j->quiet) {
        fprintf(stderr, "export: the checkpoint has no calibration statistics and records no training data; "
                "formats from provable bounds only\n");
    }
    if (!j->quiet && cli_ckpt_quant(ck) != ATM_QUANT_TERNARY)
        fprintf(stderr, "export: note: the checkpoint's weights are evaluated in fp32; the container holds their ternary quantisation\n");
    return CLI_OK;
}

/* The container, written atomically to --out. */
static int write_container(export_job *j) {
    atm_export_opts eo;
    memset(&eo, 0, sizeof eo);
    eo.encoding = j->enc;
    eo.window = (int32_t)j->window;
    eo.train_seq = j->ck.opt.seq <= ATM_MAX_WINDOW ? j->ck.opt.seq : 0;
    eo.calib = j->have ? &j->st : NULL;
    if (atm_export_atome(&j->L, j->ck.w, &eo, &j->buf, &j->len, j->why, sizeof j->why)) return cli_err(CLI_RUNTIME, "%s", j->why);
    if (atm_write_atomic(j->out, j->buf, j->len, j->why, sizeof j->why)) return cli_err(CLI_RUNTIME, "export: %s", j->why);
    return CLI_OK;
}

static int export_report(const export_job *j) {
    FILE *f = stdout;
    fputs("{\"out\":", f); cli_json_str(f, j->out);
    fprintf(f, ",\"format\":\"atome\",\"encoding\":\"%s\",\"bytes\":%zu,\"window\":%lld,\"calibration\":\"%s\",\"calib_positions\":%llu}\n",
            cli_encoding_name(j->enc), j->len, (long long)j->window, j->source,
            j->have ? (unsigned long long)j->st.positions : 0ull);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "export: cannot write to stdout");
    return CLI_OK;
}

int cmd_export(int argc, char **argv) {
    export_job j;
    memset(&j, 0, sizeof j);
    atm_ckpt_init(&j.ck);
    int rc = export_flags(&j, argc, argv);
    if (!rc) rc = load_model(&j);
    if (!rc) rc = pick_calibration(&j);
    if (!rc) rc = write_container(&j);
    atm_ckpt_free(&j.ck);
    if (!rc) rc = export_report(&j);
    free(j.buf);
    return rc;
}

/* ----------------------------------------------------------------- convert */

int cmd_convert(int argc, char **argv) {
    const char *model = NULL, *format = NULL, *out = NULL;
    cli_opt opts[] = {
        { "model",  OPT_STR, &model, 0, 0, 0, 0 },
        { "format", OPT_STR, &format, 0, 0, 0, 0 },
        { "out",    OPT_STR, &out, 0, 0, 0, 0 },
    };
    int rc = cli_parse("convert", argc, argv, opts, 3);
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "convert: --model is required");
    if (!format) return cli_err(CLI_USAGE, "convert: --format is required (atome01 or atome02)");
    if (!out || !*out) return cli_err(CLI_USAGE, "convert: --out is required");
    int enc = encoding_from_name(format);
    if (!enc) return cli_err(CLI_USAGE, "convert: --format must be atome01 or atome02 (got '%s')", format);
    int kind = cli_sniff(model);
    if (kind == CLI_FILE_CKPT)
        return cli_err(CLI_USAGE, "convert: '%s' is a float checkpoint; pack it with 'atome export'", model);
    if (kind == CLI_FILE_LEGACY)
        return cli_err(CLI_USAGE, "convert: '%s' is a reference legacy blob; import it first ('atome import')", model);
    uint8_t *blob = NULL;
    size_t len = 0;
    atm_model m;
    if ((rc = cli_open_container("convert", model, &blob, &len, &m))) return rc;
    size_t need = 0;
    atm_container_convert(blob, len, enc, NULL, 0, &need);
    uint8_t *buf = need ? (uint8_t *)malloc(need) : NULL;
    size_t got = 0;
    atm_status st = buf ? atm_container_convert(blob, len, enc, buf, need, &got) : ATM_E_CAPACITY;
    free(blob);
    if (st != ATM_OK) { free(buf); return cli_err(CLI_RUNTIME, "convert: %s", atm_status_str(st)); }
    char why[600];
    rc = atm_write_atomic(out, buf, got, why, sizeof why);
    free(buf);
    if (rc) return cli_err(CLI_RUNTIME, "convert: %s", why);
    FILE *f = stdout;
    fputs("{\"out\":", f); cli_json_str(f, out);
    fprintf(f, ",\"format\":\"atome\",\"encoding\":\"%s\",\"bytes\":%zu}\n", cli_encoding_name(enc), got);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "convert: cannot write to stdout");
    return CLI_OK;
}

/* ----------------------------------------------------------------- inspect */

static const char *status_word(int st) {
    switch (st) {
    case ATM_OK: return "ok";
    case ATM_E_MAGIC: return "magic";
    case ATM_E_TRUNCATED: return "truncated";
    case ATM_E_OVERSIZE: return "oversized";
    case ATM_E_VERSION: return "version";
    case ATM_E_CRC: return "crc";
    case ATM_E_HEADER: return "header";
    case ATM_E_CONFIG: return "config";
    case ATM_E_TABLE: return "table";
    case ATM_E_TRITS: return "trits";
    case ATM_E_VALUE: return "value";
    default: return "error";
    }
}

/* Arena bytes at the windows reported by inspect: the model default, the
 * issue's two budgets (32 and 64) and an explicit --window. */
static void json_arena(FILE *f, const atm_model *m, int window) {
    int ws[4] = { 32, 64, (int)m->cfg.window, window };
    fprintf(f, ",\"arena_bytes\":%zu,\"arena_window\":%d,\"arena_bytes_by_window\":{",
            atm_engine_arena_bytes(m, window), window);
    for (int i = 0; i < 4; i++) {
        int dup = 0;
        for (int j = 0; j < i; j++) dup |= ws[j] == ws[i];
        if (dup) continue;
        fprintf(f, "%s\"%d\":%zu", i ? "," : "", ws[i], atm_engine_arena_bytes(m, ws[i]));
    }
    fputc('}', f);
}

static int inspect_container(const char *path, const uint8_t *b, size_t len, int64_t window) {
    atm_inspect_info in;
    atm_container_inspect(b, len, &in);
    atm_model m;
    int ok = in.status == ATM_OK && atm_model_open(&m, b, len) == ATM_OK;
    int version_ok = in.version == ATM_CONTAINER_VERSION;
    FILE *f = stdout;
    fputs("{\"format\":\"atome\",\"file\":", f); cli_json_str(f, path);
    if (in.version >= 0) fprintf(f, ",\"version\":%d", (int)in.version); else fputs(",\"version\":null", f);
    fprintf(f, ",\"valid\":%s,\"status\":\"%s\"", ok ? "true" : "false", status_word(in.status));
    if (!version_ok) fputs(",\"crc_ok\":null", f);
    else fprintf(f, ",\"crc_ok\":%s", in.crc_ok ? "true" : "false");
    if (in.header_ok) {
        const atm_mconfig *c = &in.cfg;
        fprintf(f, ",\"encoding\":\"%s\"", cli_encoding_name(in.encoding));
        fprintf(f, ",\"config\":{\"family\":\"atome\",\"vocab\":%d,\"d_model\":%d,\"layers\":%d,\"d_head\":%d,\"kernel\":%d,"
                   "\"attn_top_k\":%d,\"pathways\":", (int)c->vocab, (int)c->d_model, (int)c->n_layers, (int)c->d_head,
                (int)c->kernel, (int)c->top_k);
        json_pathways(f, c->pathways);
        fprintf(f, ",\"window\":%d,\"train_seq\":%d,\"fx\":%d}", (int)c->window, (int)c->train_seq, (int)c->fx);
        /* params: the model's parameter count, as `atome params` reports it for
         * this shape; stored_values: what the file holds (the SSM output vector
         * is folded into its input weights at export, so it stores fewer). */
        size_t fp = atm_export_float_params(c);
        if (fp) fprintf(f, ",\"params\":%zu", fp);
        else fputs(",\"params\":null", f);
        fprintf(f, ",\"stored_values\":%u,\"trit_params\":%u,\"vector_params\":%u,\"tensors\":%u", (unsigned)in.params,
                (unsigned)in.trit_params, (unsigned)(in.params - in.trit_params), (unsigned)in.n_tensors);
        fprintf(f, ",\"bytes\":{\"header\":%u,\"table\":%u,\"trits\":%u,\"vectors\":%u,\"crc\":%u,\"total\":%u,\"file\":%zu}",
                (unsigned)in.header_bytes, (unsigned)in.table_bytes, (unsigned)in.trit_bytes, (unsigned)in.vector_bytes,
                (unsigned)in.crc_bytes, (unsigned)in.file_bytes, len);
        fprintf(f, ",\"window\":%d,\"train_seq\":%d", (int)c->window, (int)c->train_seq);
    } else {
        fprintf(f, ",\"encoding\":null,\"config\":null,\"params\":null,\"bytes\":{\"file\":%zu},\"window\":null", len);
    }
    if (ok) json_arena(f, &m, window > 0 ? (int)window : (int)m.cfg.window);
    else fputs(",\"arena_bytes\":null", f);
    char why[256];
    why[0] = 0;
    if (in.status != ATM_OK) atm_container_why(b, len, in.status, why, sizeof why);
    fputs(",\"error\":", f);
    if (in.status != ATM_OK) cli_json_str(f, why); else fputs("null", f);
    fputs("}\n", f);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "inspect: cannot write to stdout");
    if (!ok) return cli_err(CLI_RUNTIME, "inspect: '%s': %s", path, why);
    return CLI_OK;
}

static int inspect_ckpt(const char *path, const uint8_t *b, size_t len) {
    atm_ckpt ck;
    char why[600];
    if (atm_ckpt_parse(b, len, &ck, why, sizeof why)) return cli_err(CLI_RUNTIME, "inspect: checkpoint '%s': %s", path, why);
    atm_layout L;
    int have_layout = atm_layout_build(&ck.cfg, &L) == 0;
    FILE *f = stdout;
    const atm_config *c = &ck.cfg;
    fputs("{\"format\":\"checkpoint\",\"file\":", f); cli_json_str(f, path);
    fprintf(f, ",\"version\":%d,\"valid\":true,\"status\":\"ok\",\"crc_ok\":true,\"encoding\":\"f32\",\"name\":", ATM_CKPT_VERSION);
    cli_json_str(f, ck.name);
    fprintf(f, ",\"config\":{\"family\":\"%s\",\"vocab\":%d,\"d_model\":%d,\"layers\":%d", atm_family_name(c->family),
            (int)c->vocab, (int)c->d_model, (int)c->n_layers);
    if (c->family == ATM_FAMILY_ATOME) {
        fprintf(f, ",\"d_head\":%d,\"kernel\":%d,\"attn_top_k\":%d,\"pathways\":", (int)c->d_head, (int)c->kernel, (int)c->top_k);
        json_pathways(f, c->pathways);
        fprintf(f, ",\"attn_window\":%d", (int)c->attn_window);
    } else if (c->family == ATM_FAMILY_VANILLA) {
        fprintf(f, ",\"heads\":%d,\"d_head\":%d,\"d_ff\":%d,\"max_seq\":%d", (int)c->n_heads, (int)c->d_head, (int)c->d_ff, (int)c->max_seq);
    } else {
        fprintf(f, ",\"d_ff\":%d,\"d_inner\":%d", (int)c->d_ff, (int)c->d_inner);
    }
    fputc('}', f);
    fprintf(f, ",\"quant\":\"%s\",\"params\":%zu", cli_quant_name(cli_ckpt_quant(&ck)), ck.n_params);
    if (have_layout) fprintf(f, ",\"quant_params\":%zu", atm_layout_quant_params(&L));
    /* bytes per section: the parse above proved the walk stays in bounds */
    fputs(",\"bytes\":{\"header\":24", f);
    {
        uint32_t nsec = atm_rd_u32le(b + 12);
        size_t p = 24;
        for (uint32_t s = 0; s < nsec && p + 16 <= len - 4; s++) {
            uint64_t sl = (uint64_t)atm_rd_u32le(b + p + 8) | ((uint64_t)atm_rd_u32le(b + p + 12) << 32);
            char tag[5];
            for (int i = 0; i < 4; i++) tag[i] = (b[p + i] >= 0x20 && b[p + i] < 0x7F && b[p + i] != '"' && b[p + i] != '\\') ? (char)b[p + i] : '?';
            tag[4] = 0;
            fprintf(f, ",\"%s\":%llu", tag, (unsigned long long)(16 + sl));
            p += 16 + (size_t)sl;
        }
    }
    fprintf(f, ",\"crc\":4,\"total\":%zu}", len);
    fprintf(f, ",\"step\":%lld,\"train_seq\":%d,\"window\":%d,\"moments\":%s", (long long)ck.step, (int)ck.opt.seq,
            (int)(c->family == ATM_FAMILY_VANILLA && ck.opt.seq > c->max_seq ? c->max_seq : ck.opt.seq),
            ck.m && ck.v ? "true" : "false");
    atm_calib_stats cs;
    if (ck.calib && atm_calib_parse(ck.calib, ck.calib_len, &cs, why, sizeof why) == 0)
        fprintf(f, ",\"calib\":true,\"calib_positions\":%llu", (unsigned long long)cs.positions);
    else
        fputs(",\"calib\":false", f);
    fputs(",\"data\":", f);
    if (ck.has_data) cli_json_str(f, ck.data_path); else fputs("null", f);
    fputs(",\"arena_bytes\":null,\"error\":null}\n", f);
    atm_ckpt_free(&ck);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "inspect: cannot write to stdout");
    return CLI_OK;
}

/* A legacy blob has no shape: list the named 3-pathway atome configs it
 * validates against (magic, exact size, trits, scales, vectors). */
static int inspect_legacy(const char *path, const uint8_t *b, size_t len) {
    int err = 0, fmt = atm_legacy_detect(b, len, &err);
    FILE *f = stdout;
    fputs("{\"format\":\"legacy\",\"file\":", f); cli_json_str(f, path);
    fprintf(f, ",\"version\":null,\"valid\":null,\"status\":\"legacy\",\"crc_ok\":null,\"encoding\":\"%s\"",
            fmt == 1 ? "ATOME01" : "ATOME02");
    fputs(",\"configs\":[", f);
    int first = -1, k = 0;
    atm_config fc;
    memset(&fc, 0, sizeof fc);
    for (int i = 0; atm_config_names[i]; i++) {
        atm_config c;
        atm_legacy_shape sh;
        if (atm_config_by_name(atm_config_names[i], &c) || c.family != ATM_FAMILY_ATOME || c.pathways != ATM_PATH_ALL) continue;
        if (atm_legacy_shape_from_config(&c, &sh)) continue;
        if (atm_legacy_validate(b, len, &sh, NULL, NULL) != 0) continue;
        fprintf(f, "%s", k++ ? "," : "");
        cli_json_str(f, atm_config_names[i]);
        if (first < 0) { first = i; fc = c; }
    }
    fputc(']', f);
    atm_layout L;
    if (first >= 0 && atm_layout_build(&fc, &L) == 0) fprintf(f, ",\"params\":%zu", L.n_params);
    else fputs(",\"params\":null", f);
    fprintf(f, ",\"bytes\":{\"total\":%zu},\"arena_bytes\":null,\"window\":null,\"note\":", len);
    cli_json_str(f, "headerless reference blob (no shape, no CRC): convert with 'atome import --legacy FILE --config NAME --out CKPT'");
    fputs(",\"error\":null}\n", f);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "inspect: cannot write to stdout");
    return CLI_OK;
}

int cmd_inspect(int argc, char **argv) {
    const char *model = NULL;
    int64_t window = 0;
    cli_opt opts[] = {
        { "model",  OPT_STR, &model, 0, 0, 0, 0 },
        { "window", OPT_INT, &window, 1, ATM_MAX_WINDOW, 0, 0 },
    };
    /* `atome inspect FILE [--window W]`: one positional argument (the file),
     * anywhere except as a flag's value; --model FILE also works. */
    char **rest = (char **)malloc(sizeof(char *) * (size_t)(argc + 1));
    if (!rest) return cli_err(CLI_RUNTIME, "inspect: out of memory");
    int nr = 0;
    const char *pos = NULL;
    for (int i = 0; i < argc; i++) {
        int is_value = i > 0 && (strcmp(argv[i - 1], "--model") == 0 || strcmp(argv[i - 1], "--window") == 0);
        if (!is_value && strncmp(argv[i], "--", 2) != 0) {
            if (pos) { free(rest); return cli_err(CLI_USAGE, "inspect: unexpected argument '%s' (one file at a time)", argv[i]); }
            pos = argv[i];
            continue;
        }
        rest[nr++] = argv[i];
    }
    int rc = cli_parse("inspect", nr, rest, opts, 2);
    free(rest);
    if (rc) return rc;
    if (pos && model) return cli_err(CLI_USAGE, "inspect: give the file once (FILE or --model FILE)");
    if (pos) model = pos;
    if (!model) return cli_err(CLI_USAGE, "inspect: a FILE is required ('atome inspect FILE')");
    uint8_t *b = NULL;
    size_t len = 0;
    /* checkpoints of the largest models are far above the container limit */
    if ((rc = cli_read_file("inspect", model, (size_t)1 << 33, &b, &len))) return rc;
    int kind = cli_file_kind(b, len);
    if (kind != CLI_FILE_CONTAINER && len < 8 && len > 0 && memcmp(b, "ATOMECKP", len) == 0) kind = CLI_FILE_CKPT;
    switch (kind) {
    case CLI_FILE_CONTAINER: rc = inspect_container(model, b, len, window); break;
    case CLI_FILE_CKPT:
        rc = cli_seen(opts, 2, "window") ? cli_err(CLI_USAGE, "inspect: --window applies to .atome containers only")
                                         : inspect_ckpt(model, b, len);
        break;
    case CLI_FILE_LEGACY:
        rc = cli_seen(opts, 2, "window") ? cli_err(CLI_USAGE, "inspect: --window applies to .atome containers only")
                                         : inspect_legacy(model, b, len);
        break;
    default:
        rc = len == 0 ? cli_err(CLI_RUNTIME, "inspect: '%s' is empty", model)
                      : cli_err(CLI_RUNTIME, "inspect: '%s' is not an .atome container, a checkpoint or a legacy ATOME01/ATOME02 blob (unknown magic)", model);
    }
    free(b);
    return rc;
}
