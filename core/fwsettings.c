/* core/fwsettings.c — the firmware settings block (contract in fwsettings.h). */
#include "fwsettings.h"
#include "format.h"
#include "sampler.h"
#include "container.h"   /* ATM_MAX_WINDOW */


static int text_ok(const char *t) {
    for (uint32_t i = 0; i < ATM_FWSET_TEXT; i++) if (!t[i]) return 1;
    return 0;   /* not terminated */
}

int atm_fwset_check(const atm_fwset *s) {
    if (!s) return ATM_FWSET_E_FIELD;
    if ((s->flags & ~(ATM_FWSET_LOOP | ATM_FWSET_INTERACTIVE)) != 0) return ATM_FWSET_E_FIELD;
    if (s->n > (uint64_t)ATM_GEN_N_MAX) return ATM_FWSET_E_FIELD;
    if (s->window < 1 || s->window > ATM_MAX_WINDOW) return ATM_FWSET_E_FIELD;
    if (!text_ok(s->temperature) || !text_ok(s->top_k) || !text_ok(s->top_p)) return ATM_FWSET_E_FIELD;
    atm_sampler_cfg c;
    if (atm_sampler_config(&c, s->temperature[0] ? s->temperature : 0, s->top_k[0] ? s->top_k : 0,
                           s->top_p[0] ? s->top_p : 0))
        return ATM_FWSET_E_FIELD;
    if (s->prompt_len > ATM_FWSET_PROMPT_MAX || s->expect_len > ATM_FWSET_EXPECT) return ATM_FWSET_E_FIELD;
    return ATM_FWSET_OK;
}

int atm_fwset_encode(const atm_fwset *s, uint8_t *out) {
    if (atm_fwset_check(s) != ATM_FWSET_OK) return ATM_FWSET_E_FIELD;
    for (uint32_t i = 0; i < ATM_FWSET_BYTES; i++) out[i] = 0;
    const char *m = ATM_FWSET_MAGIC;
    for (int i = 0; i < 8; i++) out[i] = (uint8_t)m[i];
    atm_wr_u32le(out + 12, s->flags);
    atm_wr_u32le(out + 16, (uint32_t)s->n);
    atm_wr_u32le(out + 20, (uint32_t)(s->n >> 32));
    atm_wr_u32le(out + 24, s->seed);
    atm_wr_u32le(out + 28, (uint32_t)s->window);
    for (uint32_t i = 0; i < ATM_FWSET_TEXT && s->temperature[i]; i++) out[32 + i] = (uint8_t)s->temperature[i];
    for (uint32_t i = 0; i < ATM_FWSET_TEXT && s->top_k[i]; i++) out[48 + i] = (uint8_t)s->top_k[i];
    for (uint32_t i = 0; i < ATM_FWSET_TEXT && s->top_p[i]; i++) out[64 + i] = (uint8_t)s->top_p[i];
    atm_wr_u16le(out + 80, s->prompt_len);
    out[82] = s->expect_len;
    for (uint32_t i = 0; i < s->expect_len; i++) out[84 + i] = s->expect[i];
    for (uint32_t i = 0; i < s->prompt_len; i++) out[ATM_FWSET_PROMPT_OFF + i] = s->prompt[i];
    atm_wr_u32le(out + 8, atm_crc32(out + 12, ATM_FWSET_BYTES - 12));
    return ATM_FWSET_OK;
}

int atm_fwset_decode(const uint8_t *in, atm_fwset_view *v) {
    const char *m = ATM_FWSET_MAGIC;
    for (int i = 0; i < 8; i++) if (in[i] != (uint8_t)m[i]) return ATM_FWSET_NONE;
    if (atm_crc32(in + 12, ATM_FWSET_BYTES - 12) != atm_rd_u32le(in + 8)) return ATM_FWSET_E_CRC;
    v->flags = atm_rd_u32le(in + 12);
    v->n = (uint64_t)atm_rd_u32le(in + 16) | ((uint64_t)atm_rd_u32le(in + 20) << 32);
    v->seed = atm_rd_u32le(in + 24);
    v->window = (int32_t)atm_rd_u32le(in + 28);
    v->temperature = (const char *)(in + 32);
    v->top_k = (const char *)(in + 48);
    v->top_p = (const char *)(in + 64);
    v->prompt_len = atm_rd_u16le(in + 80);
    v->expect_len = in[82];
    v->expect = in + 84;
    v->prompt = in + ATM_FWSET_PROMPT_OFF;
    if ((v->flags & ~(ATM_FWSET_LOOP | ATM_FWSET_INTERACTIVE)) != 0 || v->n > (uint64_t)ATM_GEN_N_MAX ||
        v->window < 1 || v->window > ATM_MAX_WINDOW || !text_ok(v->temperature) || !text_ok(v->top_k) || !text_ok(v->top_p) ||
        v->prompt_len > ATM_FWSET_PROMPT_MAX || v->expect_len > ATM_FWSET_EXPECT || in[83] != 0)
        return ATM_FWSET_E_FIELD;
    atm_sampler_cfg c;
    if (atm_sampler_config(&c, v->temperature[0] ? v->temperature : 0, v->top_k[0] ? v->top_k : 0,
                           v->top_p[0] ? v->top_p : 0))
        return ATM_FWSET_E_FIELD;
    return ATM_FWSET_OK;
}

const char *atm_fwset_why(int status) {
    switch (status) {
    case ATM_FWSET_OK: return "ok";
    case ATM_FWSET_NONE: return "no settings block";
    case ATM_FWSET_E_CRC: return "settings block: CRC-32 mismatch";
    case ATM_FWSET_E_FIELD: return "settings block: a field is out of range";
    default: return "settings block: unknown error";
    }
}
