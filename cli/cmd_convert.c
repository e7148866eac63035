/* cli/cmd_convert.c — `atome import` (the reference's headerless legacy
 * ATOME01/ATOME02 blob -> float checkpoint) and `atome strip` (drop the AdamW
 * moments from a checkpoint, for shipping). Both validate the whole input
 * before writing anything and write atomically. */
#include "cli.h"
#include "core/train/legacy.h"
#include <stdlib.h>
#include <string.h>

int cmd_import(int argc, char **argv) {
    const char *legacy = NULL, *config = NULL, *out = NULL;
    int64_t seq = 256;
    cli_opt opts[] = {
        { "legacy", OPT_STR, &legacy, 0, 0, 0, 0 },
        { "config", OPT_STR, &config, 0, 0, 0, 0 },
        { "out",    OPT_STR, &out, 0, 0, 0, 0 },
        { "seq",    OPT_INT, &seq, 2, 65537, 0, 0 },
    };
    int n = (int)(sizeof opts / sizeof opts[0]);
    int rc = cli_parse("import", argc, argv, opts, n);
    if (rc) return rc;
    if (!legacy) return cli_err(CLI_USAGE, "import: --legacy is required");
    if (!config) return cli_err(CLI_USAGE, "import: --config is required");
    if (!out || !*out) return cli_err(CLI_USAGE, "import: --out is required");
    atm_config c;
    if (atm_config_by_name(config, &c)) return cli_err(CLI_USAGE, "import: unknown config '%s'", config);
    if (c.family != ATM_FAMILY_ATOME || c.pathways != ATM_PATH_ALL)
        return cli_err(CLI_USAGE, "import: '%s' is not a 3-pathway atome config (the legacy layout has all three)", config);
    atm_layout L;
    if (atm_layout_build(&c, &L)) return cli_err(CLI_RUNTIME, "import: cannot build the %s layout", config);
    uint8_t *blob = NULL; size_t len = 0;
    if ((rc = cli_read_file("import", legacy, (size_t)64 << 20, &blob, &len))) return rc;
    float *w = (float *)calloc(L.n_params, sizeof(float));
    if (!w) { free(blob); return cli_err(CLI_RUNTIME, "import: out of memory"); }
    char why[256];
    rc = atm_legacy_import(blob, len, &c, w, why, sizeof why);
    free(blob);
    if (rc) { free(w); return cli_err(CLI_RUNTIME, "import: '%s': %s", legacy, why); }
    atm_ckpt ck;
    atm_ckpt_init(&ck);
    ck.cfg = c;
    snprintf(ck.name, sizeof ck.name, "%s", config);
    ck.opt.quant = ATM_QUANT_TERNARY;
    ck.opt.seq = (int32_t)seq;      /* the reference trained its 944K model on 256-byte chunks */
    atm_rng_seed(&ck.rng, 0);      /* a valid generator state for a later --resume */
    ck.has_state = 1;
    ck.stage = 1;
    ck.n_params = L.n_params;
    ck.w = w;
    if (atm_train_opts_validate(&ck.opt, why, sizeof why)) { free(w); return cli_err(CLI_USAGE, "import: %s", why); }
    rc = atm_ckpt_write(out, &ck, why, sizeof why);
    free(w);
    if (rc) return cli_err(CLI_RUNTIME, "import: %s", why);
    return CLI_OK;
}

int cmd_strip(int argc, char **argv) {
    const char *model = NULL, *out = NULL;
    cli_opt opts[] = {
        { "model", OPT_STR, &model, 0, 0, 0, 0 },
        { "out",   OPT_STR, &out, 0, 0, 0, 0 },
    };
    int rc = cli_parse("strip", argc, argv, opts, 2);
    if (rc) return rc;
    if (!model) return cli_err(CLI_USAGE, "strip: --model is required");
    if (!out || !*out) return cli_err(CLI_USAGE, "strip: --out is required");
    atm_ckpt ck;
    char why[256];
    if (atm_ckpt_read(model, &ck, why, sizeof why)) return cli_err(CLI_RUNTIME, "strip: %s", why);
    atm_ckpt keep = ck;              /* owns the buffers, freed below */
    ck.m = ck.v = NULL;              /* written without moments */
    rc = atm_ckpt_write(out, &ck, why, sizeof why);
    atm_ckpt_free(&keep);
    if (rc) return cli_err(CLI_RUNTIME, "strip: %s", why);
    return CLI_OK;
}
