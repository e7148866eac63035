/* cli/cmd_train.c — `atome train`: parse and validate everything, load the
 * corpus, build (or resume) a trainer, run the steps with progress on stderr
 * and a JSON-lines log, evaluate on the held-out chunks, write the checkpoint
 * atomically and print one JSON summary line on stdout.
 *
 * Resume: the checkpoint fixes the config, the training options and the data
 * description; flags repeated on the command line must agree with it (else a
 * usage error), except --steps (the new total), --data (the file may have
 * moved), --out, --log*, --eval-every, --ckpt-every and --quiet.
 *
 * Distillation: --teacher CKPT [--distill-weight W] adds the teacher's soft
 * next-byte distribution to the loss (core/train/trainer.h). The checkpoint
 * records the teacher's path, the CRC-32 of its file and W (section DIST);
 * a resumed run reloads that teacher (or the --teacher given, which must be
 * the same file by CRC) and continues bit-identically. */
#include "cli.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EVAL_BATCH 16     /* see cmd_eval.c: the eval result does not depend on it */
#define PROGRESS_SECONDS 1.0

/* The flags: the file names here, every number in v[] (one per row of the
 * training option table, core/train/options.h; V(STEPS).i, V(LR).x). */
typedef struct {
    const char *config, *data, *valid, *out, *resume, *log, *teacher, *init;
    atm_topt_val v[ATM_TO_COUNT];
    int quiet, options_json;
} train_args;
#define V(id) (a->v[ATM_TO_##id])

/* Preflight: can a file be created beside path? Leaves nothing behind. */
static int can_create_beside(const char *path, char *why, size_t n) {
    size_t pl = strlen(path);
    char *tmp = (char *)malloc(pl + 16);
    if (!tmp) { snprintf(why, n, "out of memory"); return -1; }
    memcpy(tmp, path, pl);
    memcpy(tmp + pl, ".tmp-XXXXXX", 12);
    int fd = mkstemp(tmp);
    if (fd < 0) { snprintf(why, n, "cannot create '%s': %s", path, strerror(errno)); free(tmp); return -1; }
    close(fd);
    unlink(tmp);
    free(tmp);
    return 0;
}

/* On --resume, the log is cut back to what the checkpoint knows: lines of
 * steps after it (the run that was interrupted went on past its last
 * checkpoint) and a last line cut short by the interruption are dropped, so
 * the resumed log reads as one uninterrupted run. Rewritten atomically; a
 * missing log is not an error (the resumed run starts a new one). */
static int trim_log(const char *path, int64_t step, char *why, size_t n) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;   /* a pipe, a tty, /dev/stdout: appended to as it is */
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t cap = 1 << 16, len = 0;
    char *buf = (char *)malloc(cap);
    for (;;) {
        if (!buf) { fclose(f); snprintf(why, n, "out of memory reading the log '%s'", path); return -1; }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        char *nb = (char *)realloc(buf, cap * 2);
        if (!nb) free(buf);
        buf = nb;
        cap *= 2;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); snprintf(why, n, "cannot read the log '%s'", path); return -1; }
    size_t keep = 0, i = 0;
    while (i < len) {
        char *nl = (char *)memchr(buf + i, '\n', len - i);
        if (!nl) break;                      /* a line cut short: dropped */
        size_t e = (size_t)(nl - buf) + 1;
        long long s = -1;
        if (e - i > 9 && memcmp(buf + i, "{\"step\":", 8) == 0) {
            s = 0;                           /* the digits, within the line */
            for (size_t k = i + 8; k < e && buf[k] >= '0' && buf[k] <= '9' && s < ((long long)1 << 55); k++) s = s * 10 + (buf[k] - '0');
        }
        if (s > step) break;                 /* past the checkpoint: dropped with all after it */
        keep = i = e;                        /* lines are dropped only from here to the end */
    }
    int rc = 0;
    if (keep != len) rc = atm_write_atomic(path, buf, keep, why, n);
    free(buf);
    return rc;
}

static void fmt_eta(double s, char *buf, size_t n) {
    if (!(s >= 0.0) || s > 1e8) { snprintf(buf, n, "?"); return; }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else if (t >= 60) snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else snprintf(buf, n, "%lds", t);
}

/* Reads the teacher checkpoint at path into *t (weights only needed) and its
 * CRC-32 into *crc. CLI_OK or the error printed. */
static int load_teacher(const char *path, atm_ckpt *t, uint32_t *crc) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc = cli_read_file("train", path, (size_t)1 << 31, &bytes, &len);
    if (rc) return cli_err(CLI_RUNTIME, "train: --teacher: cannot read '%s'", path);
    char why[600];
    atm_ckpt_init(t);
    if (atm_ckpt_parse(bytes, len, t, why, sizeof why)) {
        free(bytes);
        return cli_err(CLI_RUNTIME, "train: --teacher '%s': %s", path, why);
    }
    /* the checkpoint's own CRC-32 (its last 4 bytes, over everything before
     * them): a CRC over the whole file, which ends in its CRC, would be the
     * same constant for every checkpoint */
    *crc = atm_rd_u32le(bytes + len - 4);
    free(bytes);
    return CLI_OK;
}

/* The training options given on resume must match the checkpoint's (steps
 * is the new total, not compared). */
static int same_opts(const train_args *a, cli_opt *opts, int n, const atm_train_opts *o) {
    for (int i = 0; i < ATM_TO_COUNT; i++) {
        const atm_topt *r = &atm_topts[i];
        if (r->store == ATM_TO_RUN || i == ATM_TO_STEPS || !cli_seen(opts, n, r->name)) continue;
        double stored = atm_topt_get(o, r);
        if (i == ATM_TO_QUANT) {
            if (a->v[i].i != (int64_t)stored)
                return cli_err(CLI_USAGE, "train: --quant %s differs from the checkpoint's %s",
                               cli_quant_name((int)a->v[i].i), cli_quant_name((int)stored));
        } else if (r->store == ATM_TO_F32) {
            if ((float)a->v[i].x != (float)stored)
                return cli_err(CLI_USAGE, "train: --%s %g differs from the checkpoint's %g (a resumed run keeps its options)",
                               r->name, a->v[i].x, stored);
        } else if (a->v[i].i != (int64_t)stored) {
            return cli_err(CLI_USAGE, "train: --%s %lld differs from the checkpoint's %lld (a resumed run keeps its options)",
                           r->name, (long long)a->v[i].i, (long long)stored);
        }
    }
    return CLI_OK;
}

/* Saves the trainer. An atome-family checkpoint also carries the activation
 * statistics that `atome export` calibrates with: the current weights run
 * over the calibration sample of the training chunks (atm_calib_sample) with
 * the training seq (or the smaller --attn-window) as attention window, the
 * export's default window. They
 * depend only on the weights and the data, so saves stay deterministic. */
static int write_ckpt(const char *out, const atm_trainer *tr, const atm_ckpt *meta, const atm_chunks *train_ch,
                      double elapsed) {
    atm_ckpt ck = *meta;
    atm_ckpt_from_trainer(&ck, tr);
    ck.elapsed_s = elapsed;
    char why[600];
    uint8_t *cal = NULL;
    if (tr->L.cfg.family == ATM_FAMILY_ATOME) {
        atm_calib_stats st;
        int64_t rw = atm_config_run_window(&tr->L.cfg, tr->opt.seq);
        int window = rw <= ATM_MAX_WINDOW ? (int)rw : ATM_MAX_WINDOW;
        size_t nb = atm_calib_bytes(tr->L.cfg.n_layers);
        if (atm_calib_sample(&tr->L, tr->w, train_ch->base, train_ch->n * (size_t)train_ch->seq, window, &st, why, sizeof why))
            return cli_err(CLI_RUNTIME, "train: %s", why);
        if (!(cal = (uint8_t *)malloc(nb))) return cli_err(CLI_RUNTIME, "train: out of memory");
        ck.calib_len = atm_calib_serialize(&st, cal, nb);
        ck.calib = cal;
    }
    int rc = atm_ckpt_write(out, &ck, why, sizeof why);
    free(cal);
    if (rc) return cli_err(CLI_RUNTIME, "train: %s", why);
    return CLI_OK;
}

static void log_eval(FILE *lg, int64_t step, const atm_eval_result *r) {
    fprintf(lg, "{\"step\":%lld,\"eval_nats_per_byte\":", (long long)step);
    cli_json_num(lg, r->nats_per_byte);
    fputs(",\"eval_bpb\":", lg); cli_json_num(lg, r->bpb);
    fputs(",\"eval_ppl\":", lg); cli_json_num(lg, r->ppl);
    fprintf(lg, ",\"eval_bytes\":%llu}\n", (unsigned long long)r->bytes);
    fflush(lg);
}

/* --resume's data description: the checkpoint's (repeated flags must agree),
 * or, when it names none, --data's; into *meta. CLI_OK, or the error printed. */
static int resume_data(const train_args *a, cli_opt *opts, int n, const atm_ckpt *resume, atm_ckpt *meta) {
#define SEEN(nm) cli_seen(opts, n, nm)
    if (!resume->has_data) {
        if (!a->data) return cli_err(CLI_USAGE, "train: the checkpoint names no data; --data is required");
        meta->max_bytes = SEEN("max-bytes") ? (uint64_t)V(MAX_BYTES).i : 0;
        meta->split = V(SPLIT).x;
        snprintf(meta->data_path, sizeof meta->data_path, "%s", a->data);
        if (a->valid) snprintf(meta->valid_path, sizeof meta->valid_path, "%s", a->valid);
        return CLI_OK;
    }
    if (SEEN("max-bytes") && V(MAX_BYTES).i != (int64_t)resume->max_bytes)
        return cli_err(CLI_USAGE, "train: --max-bytes %lld differs from the checkpoint's %lld (a resumed run keeps its options)",
                       (long long)V(MAX_BYTES).i, (long long)resume->max_bytes);
    if (SEEN("split") && (resume->valid_path[0] || V(SPLIT).x != resume->split))
        return cli_err(CLI_USAGE, "train: --split %g differs from the checkpoint's data split", V(SPLIT).x);
    if (SEEN("valid") && strcmp(a->valid, resume->valid_path) != 0)
        return cli_err(CLI_USAGE, "train: --valid '%s' differs from the checkpoint's '%s'", a->valid, resume->valid_path);
    meta->max_bytes = resume->max_bytes;
    meta->split = resume->split;
    snprintf(meta->valid_path, sizeof meta->valid_path, "%s", resume->valid_path);
    snprintf(meta->data_path, sizeof meta->data_path, "%s", a->data ? a->data : resume->data_path);
    return CLI_OK;
#undef SEEN
}

/* --resume: reads the checkpoint into *resume, takes config, options and data
 * description from it, and checks that repeated flags agree (see the top of
 * this file). CLI_OK, or the error already printed. */
static int setup_resume(train_args *a, cli_opt *opts, int n, cli_shape *shape, int any_shape,
                        atm_ckpt *resume, atm_config *cfg, atm_train_opts *o, atm_ckpt *meta) {
    char why[1200];
    int rc;
    if (!*a->resume) return cli_err(CLI_USAGE, "train: --resume needs a file name");
    if (atm_ckpt_read(a->resume, resume, why, sizeof why)) return cli_err(CLI_RUNTIME, "train: %s", why);
    if (!resume->has_opt || !resume->has_state) {
        atm_ckpt_free(resume);
        return cli_err(CLI_RUNTIME, "train: checkpoint '%s' has no training state to resume", a->resume);
    }
    *cfg = resume->cfg;
    *o = resume->opt;
    rc = CLI_OK;
    if (a->config || any_shape) {
        atm_config want;
        const char *nm = a->config ? a->config : resume->name;
        if ((rc = cli_build_config("train", nm, shape, opts, n, &want))) goto fail;
        if (memcmp(&want, cfg, sizeof want) != 0) {
            rc = cli_err(CLI_USAGE, "train: --config %s (with its shape flags) differs from the checkpoint's model", nm);
            goto fail;
        }
    }
    if ((rc = same_opts(a, opts, n, o))) goto fail;
    if ((rc = resume_data(a, opts, n, resume, meta))) goto fail;
    if (cli_seen(opts, n, "steps")) o->steps = V(STEPS).i;
    if (o->steps < resume->step) {
        rc = cli_err(CLI_USAGE, "train: the checkpoint is at step %lld, beyond --steps %lld",
                     (long long)resume->step, (long long)o->steps);
        goto fail;
    }
    snprintf(meta->name, sizeof meta->name, "%s", resume->name);
    meta->elapsed_s = resume->elapsed_s;
    if (!a->out) a->out = a->resume;
    return CLI_OK;
fail:
    atm_ckpt_free(resume);
    return rc;
}

/* Everything one `atome train` holds, freed in one place (train_free). */
typedef struct {
    train_args a;
    cli_opt opts[24 + ATM_TO_COUNT];
    int n, shape_first;
    cli_shape shape;
    atm_ckpt meta;            /* name, data description, elapsed: carried into every save */
    atm_ckpt resume, init, teacher;
    atm_config cfg;
    atm_train_opts o;
    atm_corpus corpus, vcorpus;
    atm_chunks train_ch, eval_ch;
    atm_trainer *tr;
    FILE *lg;
    char *logpath;
} train_run;

static void train_free(train_run *r) {
    if (r->lg) fclose(r->lg);
    free(r->logpath);
    atm_trainer_free(r->tr);
    atm_corpus_free(&r->corpus);
    atm_corpus_free(&r->vcorpus);
    atm_ckpt_free(&r->resume);
    atm_ckpt_free(&r->init);
    atm_ckpt_free(&r->teacher);
}

#define SEEN(nm) cli_seen(r->opts, r->n, nm)

/* The flags, and the checks that need no file. */
static int parse_flags(train_run *r, int argc, char **argv) {
    train_args *a = &r->a;
    atm_train_opts_default(&r->o);
    const cli_opt t[] = {
        { "config",      OPT_STR,   &a->config, 0, 0, 0, 0 },
        { "data",        OPT_STR,   &a->data, 0, 0, 0, 0 },
        { "valid",       OPT_STR,   &a->valid, 0, 0, 0, 0 },
        { "out",         OPT_STR,   &a->out, 0, 0, 0, 0 },
        { "resume",      OPT_STR,   &a->resume, 0, 0, 0, 0 },
        { "log",         OPT_STR,   &a->log, 0, 0, 0, 0 },
        { "quiet",       OPT_FLAG,  &a->quiet, 0, 0, 0, 0 },
        { "teacher",     OPT_STR,   &a->teacher, 0, 0, 0, 0 },
        { "init",        OPT_STR,   &a->init, 0, 0, 0, 0 },
        { "options-json", OPT_FLAG, &a->options_json, 0, 0, 0, 0 },
    };
    r->n = (int)(sizeof t / sizeof t[0]);
    memcpy(r->opts, t, sizeof t);
    r->n += cli_table_opts(a->v, r->opts + r->n);   /* every number: the option table's rows */
    r->shape_first = r->n;
    r->n += cli_shape_opts(&r->shape, r->opts + r->n);
    int rc = cli_parse("train", argc, argv, r->opts, r->n);
    if (rc) return rc;
    if (a->options_json) return CLI_OK;
    cli_threads(SEEN("threads"), V(THREADS).i);
    if (SEEN("split") && SEEN("valid")) return cli_err(CLI_USAGE, "train: give --split or --valid, not both");
    if (SEEN("train-bytes") && SEEN("steps")) return cli_err(CLI_USAGE, "train: give --steps or --train-bytes, not both");
    if (SEEN("distill-weight") && !a->teacher && !a->resume)
        return cli_err(CLI_USAGE, "train: --distill-weight needs --teacher CKPT");
    if (a->teacher && !*a->teacher) return cli_err(CLI_USAGE, "train: --teacher needs a file name");
    if (a->init && !*a->init) return cli_err(CLI_USAGE, "train: --init needs a file name");
    if (a->init && a->resume) return cli_err(CLI_USAGE, "train: give --init (a new run from a checkpoint's weights) or --resume, not both");
    return CLI_OK;
}

/* A new run: the config, the options and the data description from the
 * flags; --init's checkpoint read and checked against the shape. */
static int setup_new(train_run *r) {
    train_args *a = &r->a;
    atm_train_opts *o = &r->o;
    atm_ckpt *meta = &r->meta;
    char why[1200];
    int rc;
    if (!a->config) return cli_err(CLI_USAGE, "train: --config is required");
    if (!a->data) return cli_err(CLI_USAGE, "train: --data is required");
    if (!a->out) return cli_err(CLI_USAGE, "train: --out is required");
    if ((rc = cli_build_config("train", a->config, &r->shape, r->opts, r->n, &r->cfg))) return rc;
    o->quant = cli_default_quant(r->cfg.family);
    for (int i = 0; i < ATM_TO_COUNT; i++)   /* the rest: the table's defaults (parse_flags) */
        if (atm_topts[i].store != ATM_TO_RUN && SEEN(atm_topts[i].name)) atm_topt_put(o, &atm_topts[i], &a->v[i]);
    if (!SEEN("lr2")) o->lr2 = o->lr;
    if (SEEN("lr2") && !SEEN("fp-fraction"))
        return cli_err(CLI_USAGE, "train: --lr2 only applies with --fp-fraction");
    snprintf(meta->name, sizeof meta->name, "%s", a->config);
    meta->max_bytes = SEEN("max-bytes") ? (uint64_t)V(MAX_BYTES).i : 0;
    meta->split = V(SPLIT).x;
    snprintf(meta->data_path, sizeof meta->data_path, "%s", a->data);
    if (a->valid) snprintf(meta->valid_path, sizeof meta->valid_path, "%s", a->valid);
    if (a->init) {
        /* --init: the weights of another checkpoint of the same shape; the
         * attention window may differ (it has no parameters) */
        if (atm_ckpt_read(a->init, &r->init, why, sizeof why)) return cli_err(CLI_RUNTIME, "train: --init: %s", why);
        atm_config ic = r->init.cfg;
        ic.attn_window = r->cfg.attn_window;
        if (memcmp(&ic, &r->cfg, sizeof ic) != 0)
            return cli_err(CLI_USAGE, "train: --init '%s' holds a %s model of another shape than --config %s and its flags",
                           a->init, atm_family_name(r->init.cfg.family), a->config);
    }
    return CLI_OK;
}

/* --train-bytes, and the checks every run needs once its options are known. */
static int check_run(train_run *r) {
    train_args *a = &r->a;
    char why[600];
    if (SEEN("train-bytes")) {
        /* a byte budget: the fewest whole steps of batch x seq bytes that cover it */
        int64_t per = (int64_t)r->o.batch * (int64_t)r->o.seq;
        r->o.steps = V(TRAIN_BYTES).i / per + (V(TRAIN_BYTES).i % per != 0);
        if (a->resume && r->o.steps < r->resume.step)
            return cli_err(CLI_USAGE, "train: the checkpoint is at step %lld, beyond --train-bytes %lld (%lld steps)",
                           (long long)r->resume.step, (long long)V(TRAIN_BYTES).i, (long long)r->o.steps);
    }
    r->meta.has_data = 1;
    if (!*a->out) return cli_err(CLI_USAGE, "train: --out needs a file name");
    if (strlen(r->meta.data_path) + 1 >= sizeof r->meta.data_path || (a->valid && strlen(a->valid) + 1 >= sizeof r->meta.valid_path))
        return cli_err(CLI_USAGE, "train: data path too long");
    if (atm_train_opts_validate(&r->o, why, sizeof why)) return cli_err(CLI_USAGE, "train: %s", why);
    return CLI_OK;
}

/* Distillation: the teacher of a new run, or the one a resumed run names
 * (the same file, by CRC). */
static int setup_teacher(train_run *r) {
    train_args *a = &r->a;
    atm_ckpt *meta = &r->meta;
    const atm_ckpt *res = &r->resume;
    int rc;
    if (a->resume && res->has_dist) {
        if (SEEN("distill-weight") && (float)V(DISTILL_WEIGHT).x != res->distill_weight)
            return cli_err(CLI_USAGE, "train: --distill-weight %g differs from the checkpoint's %g (a resumed run keeps its options)",
                           V(DISTILL_WEIGHT).x, (double)res->distill_weight);
        meta->has_dist = 1;
        meta->distill_weight = res->distill_weight;
        meta->teacher_crc = res->teacher_crc;
        snprintf(meta->teacher_path, sizeof meta->teacher_path, "%s", a->teacher ? a->teacher : res->teacher_path);
    } else if (a->resume && (a->teacher || SEEN("distill-weight"))) {
        return cli_err(CLI_USAGE, "train: the checkpoint was trained without a teacher; a resumed run keeps its options");
    } else if (a->teacher) {
        if (strlen(a->teacher) + 1 >= sizeof meta->teacher_path) return cli_err(CLI_USAGE, "train: --teacher path too long");
        meta->has_dist = 1;
        meta->distill_weight = (float)V(DISTILL_WEIGHT).x;   /* the table's default: 0.5 */
        snprintf(meta->teacher_path, sizeof meta->teacher_path, "%s", a->teacher);
    }
    if (meta->has_dist) {
        uint32_t crc = 0;
        if ((rc = load_teacher(meta->teacher_path, &r->teacher, &crc))) return rc;
        if (a->resume && crc != meta->teacher_crc)
            return cli_err(CLI_RUNTIME, "train: teacher '%s' is not the file the run was trained with (CRC-32 0x%08X, recorded 0x%08X)",
                           meta->teacher_path, (unsigned)crc, (unsigned)meta->teacher_crc);
        meta->teacher_crc = crc;
    }
    if (r->cfg.family == ATM_FAMILY_VANILLA && r->o.seq - 1 > r->cfg.max_seq)
        return cli_err(CLI_USAGE, "train: --seq %d needs %d positions; the model has max-seq %d", (int)r->o.seq, (int)r->o.seq - 1, (int)r->cfg.max_seq);
    return CLI_OK;
}

/* The corpus (and --valid) cut into chunks. */
static int load_data(train_run *r) {
    const atm_ckpt *meta = &r->meta;
    int seq = r->o.seq;
    char why[1200];
    if (atm_corpus_load(meta->data_path, meta->max_bytes, &r->corpus, why, sizeof why)) return cli_err(CLI_RUNTIME, "train: %s", why);
    if (meta->valid_path[0]) {
        if (atm_chunks_all(&r->corpus, seq, &r->train_ch, why, sizeof why)) return cli_err(CLI_RUNTIME, "train: '%s': %s", meta->data_path, why);
        if (atm_corpus_load(meta->valid_path, meta->max_bytes, &r->vcorpus, why, sizeof why)) return cli_err(CLI_RUNTIME, "train: %s", why);
        if (atm_chunks_all(&r->vcorpus, seq, &r->eval_ch, why, sizeof why)) return cli_err(CLI_RUNTIME, "train: '%s': %s", meta->valid_path, why);
    } else if (atm_chunks_split(&r->corpus, seq, meta->split, &r->train_ch, &r->eval_ch, why, sizeof why)) {
        return cli_err(CLI_RUNTIME, "train: '%s': %s", meta->data_path, why);
    }
    return CLI_OK;
}

/* The trainer: built, then the resumed state, --init's weights or the teacher. */
static int build_trainer(train_run *r) {
    char why[1200];
    r->tr = atm_trainer_new(&r->cfg, &r->o);
    if (!r->tr) return cli_err(CLI_RUNTIME, "train: cannot build the %s model (family not built or out of memory)", atm_family_name(r->cfg.family));
    if (r->a.resume && atm_trainer_load_ckpt(r->tr, &r->resume)) return cli_err(CLI_RUNTIME, "train: checkpoint does not fit the model");
    atm_ckpt_free(&r->resume);
    if (r->a.init) {                /* the weights only: step 0, zero moments, this run's schedule and seed */
        if (r->init.n_params != r->tr->L.n_params || !r->init.w) return cli_err(CLI_RUNTIME, "train: --init: checkpoint does not fit the model");
        memcpy(r->tr->w, r->init.w, r->tr->L.n_params * sizeof(float));
        atm_ckpt_free(&r->init);
    }
    if (r->meta.has_dist) {
        if (atm_trainer_set_teacher(r->tr, &r->teacher.cfg, r->teacher.w, cli_ckpt_quant(&r->teacher), r->meta.distill_weight, why, sizeof why))
            return cli_err(CLI_USAGE, "train: --teacher '%s': %s", r->meta.teacher_path, why);
        atm_ckpt_free(&r->teacher);
    }
    return CLI_OK;
}

/* The checkpoint can be written; the log opened (cut back on --resume). */
static int open_outputs(train_run *r) {
    train_args *a = &r->a;
    char why[1200];
    if (can_create_beside(a->out, why, sizeof why)) return cli_err(CLI_RUNTIME, "train: %s", why);
    if (a->log) r->logpath = strdup(a->log);
    else {
        size_t ol = strlen(a->out);
        r->logpath = (char *)malloc(ol + 11);
        if (r->logpath) { memcpy(r->logpath, a->out, ol); memcpy(r->logpath + ol, ".log.jsonl", 11); }
    }
    if (!r->logpath) return cli_err(CLI_RUNTIME, "train: out of memory");
    if (a->resume && trim_log(r->logpath, r->tr->step, why, sizeof why)) return cli_err(CLI_RUNTIME, "train: %s", why);
    r->lg = fopen(r->logpath, a->resume ? "a" : "w");
    if (!r->lg) return cli_err(CLI_RUNTIME, "train: cannot open log '%s': %s", r->logpath, strerror(errno));
    if (!a->quiet)
        fprintf(stderr, "train: %s (%s, %s, %zu params) on %zu train / %zu eval chunks of %d bytes, steps %lld..%lld\n",
                r->meta.name[0] ? r->meta.name : atm_family_name(r->cfg.family), atm_family_name(r->cfg.family),
                cli_quant_name(r->o.quant), r->tr->L.n_params, r->train_ch.n, r->eval_ch.n, (int)r->o.seq,
                (long long)r->tr->step, (long long)r->o.steps);
    return CLI_OK;
}

/* The steps, with the log, the progress line, evaluations and checkpoints
 * on their cadences; *seconds: training time over all resumes. */
static int run_steps(train_run *r, double *seconds) {
    train_args *a = &r->a;
    atm_trainer *tr = r->tr;
    FILE *lg = r->lg;
    char why[1200];
    int rc;
    double t0 = cli_now(), last_print = t0;
    int64_t step0 = tr->step;
    double bytes_per_step = (double)r->o.batch * (double)r->o.seq;
    atm_eval_result er;
    int64_t stop = r->o.steps;
    if (SEEN("stop-at") && V(STOP_AT).i < stop) stop = V(STOP_AT).i;
    while (tr->step < stop) {
        double loss = atm_trainer_train_batch(tr, &r->train_ch);
        int64_t s = tr->step;
        if (!isfinite(loss)) return cli_err(CLI_RUNTIME, "train: diverged: loss is not finite at step %lld", (long long)s);
        double now = cli_now(), dt = now - t0;
        double bps = dt > 0.0 ? (double)(s - step0) * bytes_per_step / dt : 0.0;
        if (s % V(LOG_EVERY).i == 0 || s == stop) {
            fprintf(lg, "{\"step\":%lld,\"loss\":", (long long)s);
            cli_json_num(lg, loss);
            fputs(",\"lr\":", lg); cli_json_float(lg, tr->last_lr);
            fputs(",\"bytes_per_s\":", lg); cli_json_num(lg, bps);
            fputs(",\"elapsed_s\":", lg); cli_json_num(lg, r->meta.elapsed_s + dt);
            fprintf(lg, ",\"stage\":%d,\"quant\":\"%s\"}\n", (int)tr->stage,
                    cli_quant_name(tr->stage == 0 ? ATM_QUANT_FP32 : r->o.quant));
        }
        if (!a->quiet && (now - last_print >= PROGRESS_SECONDS || s == stop)) {
            char eta[32];
            double sps = dt > 0.0 ? (double)(s - step0) / dt : 0.0;
            fmt_eta(sps > 0.0 ? (double)(r->o.steps - s) / sps : -1.0, eta, sizeof eta);
            fprintf(stderr, "step %lld/%lld  loss %.4f  lr %.3g  %.0f bytes/s  ETA %s\n",
                    (long long)s, (long long)r->o.steps, loss, (double)tr->last_lr, bps, eta);
            last_print = now;
        }
        if (V(EVAL_EVERY).i > 0 && s % V(EVAL_EVERY).i == 0 && s < stop) {
            if (atm_eval_chunks(&tr->L, tr->w, atm_trainer_quant(tr), &r->eval_ch, EVAL_BATCH, &er, why, sizeof why))
                return cli_err(CLI_RUNTIME, "train: eval: %s", why);
            log_eval(lg, s, &er);
            if (!a->quiet) fprintf(stderr, "step %lld  eval %.4f nats/byte  %.4f bpb  ppl %.3f\n",
                                   (long long)s, er.nats_per_byte, er.bpb, er.ppl);
        }
        if (V(CKPT_EVERY).i > 0 && s % V(CKPT_EVERY).i == 0 && s < stop) {
            fflush(lg);
            if ((rc = write_ckpt(a->out, tr, &r->meta, &r->train_ch, r->meta.elapsed_s + (cli_now() - t0)))) return rc;
        }
    }
    *seconds = r->meta.elapsed_s + (cli_now() - t0);
    return CLI_OK;
}

/* The final evaluation (with the quantiser `atome eval` will use on the
 * saved checkpoint), the save and the summary line. */
static int finish(train_run *r, double seconds) {
    train_args *a = &r->a;
    atm_trainer *tr = r->tr;
    atm_eval_result er;
    char why[1200];
    int rc;
    if (atm_eval_chunks(&tr->L, tr->w, atm_trainer_quant(tr), &r->eval_ch, EVAL_BATCH, &er, why, sizeof why))
        return cli_err(CLI_RUNTIME, "train: eval: %s", why);
    log_eval(r->lg, tr->step, &er);
    if (fflush(r->lg) || ferror(r->lg)) return cli_err(CLI_RUNTIME, "train: cannot write log '%s'", r->logpath);
    if ((rc = write_ckpt(a->out, tr, &r->meta, &r->train_ch, seconds))) return rc;
    if (!a->quiet) fprintf(stderr, "eval %.4f nats/byte  %.4f bpb  ppl %.3f  (%llu bytes)  %.1f s\n",
                           er.nats_per_byte, er.bpb, er.ppl, (unsigned long long)er.bytes, seconds);
    FILE *f = stdout;
    fprintf(f, "{\"steps\":%lld,\"train_loss\":", (long long)tr->step);
    cli_json_num(f, tr->last_loss);
    fputs(",\"nats_per_byte\":", f); cli_json_num(f, er.nats_per_byte);
    fputs(",\"bpb\":", f); cli_json_num(f, er.bpb);
    fputs(",\"ppl\":", f); cli_json_num(f, er.ppl);
    fprintf(f, ",\"bytes\":%llu,\"params\":%zu,\"seconds\":", (unsigned long long)er.bytes, tr->L.n_params);
    cli_json_num(f, seconds);
    fputs(",\"config\":", f); cli_json_str(f, r->meta.name);
    if (r->meta.has_dist) {
        fputs(",\"teacher\":", f); cli_json_str(f, r->meta.teacher_path);
        fputs(",\"distill_weight\":", f); cli_json_float(f, r->meta.distill_weight);
    }
    fputs(",\"family\":", f); cli_json_str(f, atm_family_name(r->cfg.family));
    fprintf(f, ",\"quant\":\"%s\",\"seed\":%u,\"threads\":%d,\"out\":", cli_quant_name(r->o.quant), (unsigned)r->o.seed,
            atm_threads());
    cli_json_str(f, a->out);
    fputs("}\n", f);
    if (fflush(f) || ferror(f)) return cli_err(CLI_RUNTIME, "train: cannot write to stdout");
    return CLI_OK;
}
#undef SEEN

int cmd_train(int argc, char **argv) {
    train_run *r = (train_run *)calloc(1, sizeof *r);
    if (!r) return cli_err(CLI_RUNTIME, "train: out of memory");
    atm_ckpt_init(&r->meta);
    atm_ckpt_init(&r->resume);
    atm_ckpt_init(&r->init);
    atm_ckpt_init(&r->teacher);
    double seconds = 0.0;
    int rc = parse_flags(r, argc, argv);
    if (!rc && r->a.options_json) {   /* the option table as JSON, nothing else */
        rc = cli_print_options_json();
        train_free(r);
        free(r);
        return rc;
    }
    if (!rc) {
        int any_shape = 0;
        for (int i = r->shape_first; i < r->n; i++) any_shape |= r->opts[i].seen;
        rc = r->a.resume ? setup_resume(&r->a, r->opts, r->n, &r->shape, any_shape, &r->resume, &r->cfg, &r->o, &r->meta)
                         : setup_new(r);
    }
    if (!rc) rc = check_run(r);
    if (!rc) rc = setup_teacher(r);
    if (!rc) rc = load_data(r);
    if (!rc) rc = build_trainer(r);
    if (!rc) rc = open_outputs(r);
    if (!rc) rc = run_steps(r, &seconds);
    if (!rc) rc = finish(r, seconds);
    train_free(r);
    free(r);
    return rc;
}
