/* cli/cli.h — shared pieces of the `atome` command-line tool.
 *
 * Contract. Every command is a function (argc, argv after the command name)
 * returning the process exit status: 0 success, 2 usage error (bad or missing
 * flag, bad number, unknown config), 1 runtime error (missing/empty/short
 * data, unreadable or corrupt checkpoint, write failure, out of memory).
 * Every failure prints exactly ONE line "atome: <reason>" on stderr (cli_err)
 * and leaves no partial output file: outputs are written atomically and only
 * after every input has been validated. docs/cli.md is the user reference. */
#ifndef ATOME_CLI_H
#define ATOME_CLI_H
#include <stdint.h>
#include <stdio.h>
#include "core/train/model.h"
#include "core/train/trainer.h"
#include "core/train/options.h"
#include "core/train/pool.h"
#include "core/train/ckpt.h"
#include "core/train/export.h"
#include "core/host/engine_host.h"
#include "core/container.h"
#include "core/sampler.h"

#define CLI_OK 0
#define CLI_RUNTIME 1
#define CLI_USAGE 2

/* Prints "atome: <msg>\n" to stderr (control characters in msg become '?',
 * so a hostile path cannot split the line) and returns code. */
#define CLI_ERR_MAX 1024   /* the longest line cli_err prints */
int cli_err(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- flag parsing ---- */
/* OPT_ROW: the row of the training option table (core/train/options.h)
 * of that name: dst is an atm_topt_val*, the range, grammar and words are
 * the row's. */
enum { OPT_FLAG, OPT_INT, OPT_U32, OPT_FLOAT, OPT_STR, OPT_ROW };

typedef struct {
    const char *name;   /* without the leading "--" */
    int         kind;   /* OPT_* */
    void       *dst;    /* int64_t* (INT), uint32_t* (U32), double* (FLOAT), const char** (STR), int* (FLAG) */
    double      lo, hi; /* range for numbers, inclusive except lo when lo_open */
    int         lo_open;
    int         seen;   /* set by cli_parse */
} cli_opt;

/* Parses "--name value", "--name=value" and bare "--flag" against opts[n].
 * Returns CLI_OK, or prints the error and returns CLI_USAGE. */
int cli_parse(const char *cmd, int argc, char **argv, cli_opt *opts, int n);
/* The entry for name (must exist). */
cli_opt *cli_find(cli_opt *opts, int n, const char *name);
int cli_seen(cli_opt *opts, int n, const char *name);
/* Appends one OPT_ROW entry per row of the training option table (vals[i]
 * for atm_topts[i], set to the row's default first); returns ATM_TO_COUNT. */
int cli_table_opts(atm_topt_val *vals, cli_opt *opts);
/* `atome train --options-json`: the table's JSON (atm_topt_json) with the
 * shape overrides added as "shape" rows, one line on stdout. */
int cli_print_options_json(void);

/* --threads: the value given, else ATOME_THREADS, else the number of cores
 * capped (pool.h). Sets the trainer's pool; returns the count in effect. */
int cli_threads(int seen, int64_t value);

/* ---- shape overrides shared by train, init and params ---- */
typedef struct {
    int64_t d_model, layers, d_head, heads, kernel, top_k, d_ff, d_inner, max_seq, attn_window;
    const char *pathways, *pos;
} cli_shape;
/* Appends the shape override entries to opts (at most CLI_SHAPE_OPTS). */
#define CLI_SHAPE_OPTS 12
int cli_shape_opts(cli_shape *s, cli_opt *opts);
/* Looks up name, applies the overrides that were seen, validates. On error
 * prints it and returns CLI_USAGE. */
int cli_build_config(const char *cmd, const char *name, cli_shape *s, cli_opt *opts, int n, atm_config *c);
/* --pos's text (learned, none, ternary) -> *pos = ATM_POS_*: CLI_OK, or
 * CLI_USAGE (printed). cli_pos_name is the text of an ATM_POS_*. */
int cli_pos(const char *cmd, const char *s, int32_t *pos);
const char *cli_pos_name(int pos);
/* --quant's text (NULL: the family's default) -> *quant = ATM_QUANT_*:
 * CLI_OK, or CLI_USAGE (printed). */
int cli_quant(const char *cmd, const char *s, int family, int32_t *quant);
/* "ternary" / "fp32" -> ATM_QUANT_*, or -1. */
int cli_quant_from_name(const char *s);
const char *cli_quant_name(int q);
int cli_default_quant(int family);
/* Quantiser a checkpoint's weights are evaluated with: the one its next
 * training step would use. */
int cli_ckpt_quant(const atm_ckpt *ck);

/* ---- JSON helpers ---- */
/* A finite double with 17 significant digits (exact round trip), or null. */
void cli_json_num(FILE *f, double x);
/* A float with the fewest digits (6..9) that read back as the same float. */
void cli_json_float(FILE *f, float x);
/* A JSON string with escapes. */
void cli_json_str(FILE *f, const char *s);

/* Monotonic seconds. */
double cli_now(void);

/* ---- files and packed models (cli/packed.c) ---- */
/* Whole file into a malloc'd buffer; CLI_OK or CLI_RUNTIME (error printed).
 * Files above max_len are refused before they are read in full. */
int cli_read_file(const char *cmd, const char *path, size_t max_len, uint8_t **buf, size_t *len);
enum { CLI_FILE_UNKNOWN = 0, CLI_FILE_CONTAINER, CLI_FILE_CKPT, CLI_FILE_LEGACY };
/* What the first bytes say: CLI_FILE_*. */
int cli_file_kind(const uint8_t *b, size_t len);
/* The same for a path; -1 if it cannot be opened. */
int cli_sniff(const char *path);
/* Reads and opens a .atome container (*blob malloc'd; the model views it).
 * CLI_OK, or CLI_RUNTIME with the error printed and nothing to free. */
int cli_open_container(const char *cmd, const char *path, uint8_t **blob, size_t *len, atm_model *m);
/* cli_open_container for the engine's runs (generate, eval, bench): an ATOME02
 * model is re-encoded to ATOME01 in memory once (the same logits, no
 * re-encoding at every step); *file_enc (if not NULL) is the file's own encoding */
int cli_open_engine_model(const char *cmd, const char *path, uint8_t **blob, size_t *len, atm_model *m, int *file_enc);
const char *cli_encoding_name(int enc);

/* --temperature/--top-k/--top-p text (NULL = default) -> fixed-point settings
 * with the core parser (core/sampler.h). CLI_OK or CLI_USAGE (printed). */
int cli_sampler_settings(const char *cmd, const char *temperature, const char *top_k, const char *top_p,
                         atm_sampler_cfg *sc);
/* Calibration sample and float-logit -> Q16: atm_calib_sample
 * (core/train/export.h) and atm_logits_q16 (core/host/engine_host.h), shared
 * with the wasm front end. */

/* ---- commands ---- */
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_params(int argc, char **argv);
int cmd_match(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_strip(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_firmware(int argc, char **argv);   /* cli/cmd_firmware.c */
int cmd_header(int argc, char **argv);
int cmd_boards(int argc, char **argv);     /* cli/cmd_boards.c */

/* Usage texts (cli/main.c). */
void cli_usage(FILE *f, const char *cmd);

#endif
