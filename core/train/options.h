/* core/train/options.h — the one table of training options.
 *
 * Contract. Every numeric (and the few enumerated) setting of a training run
 * is one row of atm_topts[]: its name (the CLI flag without "--", also the
 * JS API's and the JSON's name), its camelCase key (the JS API and the page's
 * saved settings), kind, default, range, help, and where it is stored (a
 * field of atm_train_opts, or a setting of the run that the front end keeps).
 * `atome train` builds its flags from it (cli/cmd_train.c), the wasm module's
 * setter looks names up in it (wasm/atome_wasm.c), and atm_topt_json()
 * exports it as JSON (`atome train --options-json`, the module's
 * atome_options_json) for wasm/atome.mjs and the page, so every front end
 * accepts the same values and refuses the others with the same words:
 * "<name> must be <want> (got '<text>')".
 *
 * Values are parsed from text by one grammar (atm_topt_parse): an integer is
 * an optional sign and decimal digits; a number is an optional sign, digits
 * with an optional '.' and fraction (or '.' and digits) and an optional
 * exponent, and must be finite. Nothing else (no spaces, hex or "inf").
 * The JS twin is parseOption in wasm/atome.mjs (tests/node/options.test.mjs
 * checks they agree).
 *
 * Adding an option: a row here (an ATM_TO_* index, then its row in
 * options.c), its use in the trainer (trainer.c) if it is stored in
 * atm_train_opts, and on the page a field in web/index.html with its line in
 * web/train.mjs FIELDS. The CLI flag, the JS API key and the JSON follow. */
#ifndef ATOME_TRAIN_OPTIONS_H
#define ATOME_TRAIN_OPTIONS_H
#include <stddef.h>
#include <stdint.h>
#include "trainer.h"

/* Kinds: an integer, a (finite) number, a 0/1 switch (a bare CLI flag), one
 * of a few names. */
enum { ATM_TO_KIND_INT, ATM_TO_KIND_NUM, ATM_TO_KIND_FLAG, ATM_TO_KIND_ENUM };
/* Storage in atm_train_opts (ATM_TO_RUN: a setting of the run, kept by the
 * front end, not by the trainer). */
enum { ATM_TO_RUN, ATM_TO_F32, ATM_TO_I32, ATM_TO_I64, ATM_TO_U32 };

/* The rows, in table order. */
enum {
    ATM_TO_STEPS, ATM_TO_BATCH, ATM_TO_SEQ, ATM_TO_LR, ATM_TO_SEED, ATM_TO_QUANT,
    ATM_TO_WARMUP, ATM_TO_COSINE, ATM_TO_LR_MIN, ATM_TO_CLIP, ATM_TO_WD,
    ATM_TO_BETA1, ATM_TO_BETA2, ATM_TO_EPS, ATM_TO_FP_FRACTION, ATM_TO_LR2,
    ATM_TO_TRAIN_BYTES, ATM_TO_MAX_BYTES, ATM_TO_SPLIT, ATM_TO_DISTILL_WEIGHT,
    ATM_TO_EVAL_EVERY, ATM_TO_LOG_EVERY, ATM_TO_CKPT_EVERY, ATM_TO_STOP_AT, ATM_TO_THREADS,
    ATM_TO_COUNT
};

#define ATM_TO_ENUM_MAX 4

typedef struct {
    const char *name;      /* "lr-min": the CLI flag without "--" */
    const char *key;       /* "lrMin": the JS API's camelCase key */
    int         kind;      /* ATM_TO_KIND_* */
    double      def;       /* default (flag: 0/1; enum: the stored code); see def_note */
    const char *def_note;  /* a default that is not a constant ("= lr"), or NULL */
    double      lo, hi;    /* inclusive range, unless lo_open / hi_open */
    int         lo_open, hi_open;
    const char *values[ATM_TO_ENUM_MAX];  /* enum: the names, NULL-terminated */
    int         codes[ATM_TO_ENUM_MAX];   /* enum: the stored code of each name */
    int         store;     /* ATM_TO_RUN or the C type of the atm_train_opts field */
    size_t      off;       /* offsetof(atm_train_opts, field) */
    const char *stored;    /* where it lives, for people: "atm_train_opts.lr_min" */
    const char *help;      /* one line */
} atm_topt;

/* A parsed value: i exact for integers (and the flag's 0/1, the enum's
 * code), x its double (the number itself for ATM_TO_KIND_NUM). */
typedef struct { int64_t i; double x; } atm_topt_val;

extern const atm_topt atm_topts[ATM_TO_COUNT];

/* The row named name (its CLI name or its camelCase key), or NULL. */
const atm_topt *atm_topt_find(const char *name);
/* Parses text (the grammar above) within the row's range: 0, or -1. */
int atm_topt_parse(const atm_topt *r, const char *text, atm_topt_val *v);
/* The words after "must be": "an integer in 1..1099511627776",
 * "a number in (0, 1000]", "ternary or fp32", "0 or 1". */
void atm_topt_want(const atm_topt *r, char *buf, size_t n);
/* "<label> must be <want> (got '<text>')" into buf. */
void atm_topt_error(const atm_topt *r, const char *label, const char *text, char *buf, size_t n);
/* Stores v in the row's atm_train_opts field (nothing for a run setting). */
void atm_topt_put(atm_train_opts *o, const atm_topt *r, const atm_topt_val *v);
/* The row's atm_train_opts field as a double (NaN for a run setting). */
double atm_topt_get(const atm_train_opts *o, const atm_topt *r);
/* The table as JSON text ({"options":[...]}, one line) into buf[n]; returns
 * the length it needs (without the NUL), as snprintf does. */
size_t atm_topt_json(char *buf, size_t n);

#endif
