/* core/sampler.h — fixed-point next-byte sampling from the engine's Q16
 * logits, and the parser that turns the decimal text of a setting into its
 * fixed-point value (freestanding C99: no malloc, no stdio, no libm, no
 * float arithmetic). Every front end (native CLI, wasm, firmware) parses the
 * same text with the same function, so all targets round alike and a given
 * model + prompt + settings + seed yields the same bytes everywhere.
 * Algorithm, rounding and PRNG use: docs/sampling.md.
 *
 * Settings: temperature T and top-p P are Q16 (value * 65536); T = 0 means
 * greedy (argmax, lowest byte on ties, no PRNG draw); top_k = 0 or >= V and
 * P >= 65536 mean "off". Each non-greedy sample draws exactly one
 * atm_rng_u32 from the caller's xoshiro128** state (core/rng.h). */
#ifndef ATOME_SAMPLER_H
#define ATOME_SAMPLER_H
#include <stddef.h>
#include <stdint.h>
#include "rng.h"

#define ATM_SAMPLER_T_MAX ((int32_t)100 << 16)   /* temperature <= 100 */

/* The length and seed rules every front end shares (atome generate,
 * firmware and header, the wasm module, the page's Generate and board cards,
 * the firmware's semihosting flags and settings block): n bytes in
 * 0..ATM_GEN_N_MAX, ATM_GEN_N_DEFAULT when not given (an empty field on the
 * page); the seed a uint32, ATM_GEN_SEED_DEFAULT when not given. */
#define ATM_GEN_N_MAX 1000000000000LL
#define ATM_GEN_N_DEFAULT 256
#define ATM_GEN_SEED_DEFAULT 1u

typedef struct {
    int32_t temperature;  /* Q16, 0 (greedy) or 1..ATM_SAMPLER_T_MAX */
    int32_t top_k;        /* 0 = off */
    int32_t top_p;        /* Q16, 0..65536; 65536 = off */
} atm_sampler_cfg;

/* greedy, top_k off, top_p off */
void atm_sampler_default(atm_sampler_cfg *c);

/* Decimal text -> Q16, rounded half up: digits, optionally a '.' and at most
 * 9 more digits, at least one digit in all ("0.8", "1", "0", ".5", "1." are
 * accepted; "", ".", "-1", "+1", "1e3", " 1", "0x1", "1.2.3", "nan" are
 * not). The value must not exceed max_q16 after rounding. 0 on success
 * (*out set), -1 on any rejection (*out untouched). */
int atm_sampler_parse(const char *s, int32_t max_q16, int32_t *out);
/* Unsigned decimal integer (digits only, no sign or spaces) <= max. 0 / -1. */
int atm_sampler_parse_uint(const char *s, uint32_t max, uint32_t *out);

/* Parses the three settings at once (NULL text = default); -1 if any is
 * rejected (temperature 0..100, top-k 0..2^31-1, top-p 0..1). */
int atm_sampler_config(atm_sampler_cfg *c, const char *temperature, const char *top_k,
                       const char *top_p);

/* The one settings validator every front end uses (the CLI, wasm and the
 * page, the firmware's semihosting flags): the three texts (NULL =
 * default) parsed into *c, or the code of the first rejected one. The
 * canonical message of a code names the CLI flag and the rule
 * ("--temperature must be a decimal number in 0..100, at most 9 decimals");
 * a front end appends " (got '<text>')" and may rename the flag to its
 * field's label. *c is untouched on failure. */
enum { ATM_SET_OK = 0, ATM_SET_E_TEMPERATURE, ATM_SET_E_TOP_K, ATM_SET_E_TOP_P };
int atm_sampler_settings(atm_sampler_cfg *c, const char *temperature, const char *top_k, const char *top_p);
const char *atm_sampler_settings_msg(int code);
/* atm_sampler_settings, and on a rejection the whole reason in err[errlen]
 * (NUL-terminated, cut to fit): "<the code's message> (got '<text>')", the
 * words every front end prints (the CLI after "generate: "). */
int atm_sampler_settings_why(atm_sampler_cfg *c, const char *temperature, const char *top_k, const char *top_p,
                             char *err, size_t errlen);

/* Next byte from logits[V] (Q16, |logit| <= 2^30 as the engine returns),
 * 1 <= V <= 256. scratch[V] receives the truncation order and is needed
 * only when top-k or top-p is active; with scratch NULL no truncation is
 * applied (plain temperature sampling). */
int atm_sampler_next(const atm_sampler_cfg *c, const int32_t *logits, int V, atm_rng *rng,
                     uint8_t *scratch);

#endif
