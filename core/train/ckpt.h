/* core/train/ckpt.h — training checkpoints: read, write (atomic), validate.
 *
 * Contract. A checkpoint holds everything that determines the rest of a
 * training run — config, training options, fp32 weights, AdamW m and v, step,
 * Adam step counter, stage and generator state — plus the data description
 * (file paths, max-bytes, split), so `atome train --resume` continues
 * bit-identically. The format (docs/checkpoint.md) is little-endian: a header
 * (magic "ATOMECKP", version, section count, file size), a list of tagged
 * sections, and a CRC-32 of everything before it. Unknown sections are skipped
 * unless their REQUIRED flag is set, so later issues can add sections
 * without a version bump; the optional ACAL section (activation statistics
 * that `train` gathers for `export`) was added that way, and checkpoints
 * without it stay readable.
 *
 * The reader checks, before any use: the magic, the version, the declared
 * size against the real size (truncation), the CRC, every section length and
 * count against the bytes present, the config (atm_config_validate), the
 * options (atm_train_opts_validate) and the tensor counts against the layout.
 * It never reads outside the buffer and allocates only sizes that the file
 * already proved it holds. Each failure class has its own code and message.
 *
 * Writes go to a temporary file in the destination directory, are fsync'ed
 * and renamed over the destination, so a reader sees the old or the new file,
 * never a partial one. */
#ifndef ATOME_TRAIN_CKPT_H
#define ATOME_TRAIN_CKPT_H
#include <stddef.h>
#include <stdint.h>
#include "trainer.h"
#include "../format.h"

#define ATM_CKPT_VERSION 1
#define ATM_CKPT_PATH_MAX 4096   /* data paths, including the terminating NUL */
#define ATM_CKPT_NAME_MAX 64     /* config name, including the terminating NUL */

enum {
    ATM_CKPT_OK = 0,
    ATM_CKPT_EIO = 1,        /* cannot open / read / write */
    ATM_CKPT_ETRUNC = 2,     /* fewer bytes than the header declares */
    ATM_CKPT_EMAGIC = 3,     /* not a checkpoint */
    ATM_CKPT_EVERSION = 4,   /* a format version this build does not read */
    ATM_CKPT_ECRC = 5,       /* CRC-32 mismatch */
    ATM_CKPT_EFORMAT = 6,    /* inconsistent structure (lengths, counts, sections) */
    ATM_CKPT_ECONFIG = 7,    /* config or training options fail validation */
    ATM_CKPT_ENOMEM = 8
};

typedef struct {
    atm_config     cfg;
    char           name[ATM_CKPT_NAME_MAX];   /* config name ("" if unknown) */
    atm_train_opts opt;                        /* defaults if the file has none */
    int            has_opt;
    /* training state */
    int64_t        step, adam_t;
    int32_t        stage;
    atm_rng        rng;
    double         elapsed_s;                  /* training seconds so far (informative) */
    double         last_loss;                  /* loss of the last step (informative) */
    int            has_state;
    /* data description */
    char           data_path[ATM_CKPT_PATH_MAX];
    char           valid_path[ATM_CKPT_PATH_MAX]; /* "" = split mode */
    uint64_t       max_bytes;                  /* 0 = whole file */
    double         split;
    int            has_data;
    /* activation-calibration statistics (section ACAL, atome family only):
     * the atm_calib_serialize() bytes of core/train/export.h, validated by
     * the reader with atm_calib_parse() against the config; NULL if absent */
    uint8_t       *calib;
    size_t         calib_len;
    /* distillation (section DIST): the teacher checkpoint's path, its CRC-32
     * (the one stored at the end of the teacher's file) and the weight of its
     * soft targets */
    int            has_dist;
    float          distill_weight;
    uint32_t       teacher_crc;
    char           teacher_path[ATM_CKPT_PATH_MAX];
    /* tensors, [n_params] each; m and v are NULL when absent */
    size_t         n_params;
    float         *w, *m, *v;
    int            owns;                       /* 1 if w/m/v/calib were malloc'd by the reader */
} atm_ckpt;

/* Zeroed struct with default options (no tensors). */
void atm_ckpt_init(atm_ckpt *ck);
void atm_ckpt_free(atm_ckpt *ck);

/* Parses a complete file image. Returns ATM_CKPT_* and a one-line reason. */
int atm_ckpt_parse(const uint8_t *buf, size_t len, atm_ckpt *ck, char *err, size_t errlen);
/* Reads and parses path; the message names the file. */
int atm_ckpt_read(const char *path, atm_ckpt *ck, char *err, size_t errlen);

/* Serialises ck into a malloc'd image (*buf, *len). ATM_CKPT_OK or ENOMEM. */
int atm_ckpt_serialize(const atm_ckpt *ck, uint8_t **buf, size_t *len);
/* Serialises and writes atomically (temp file in the same directory, fsync,
 * rename). On failure nothing is left at path or beside it. */
int atm_ckpt_write(const char *path, const atm_ckpt *ck, char *err, size_t errlen);
/* Writes bytes atomically to path, same guarantees (also used for other outputs). */
int atm_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);

/* The checksum is core/format.h's atm_crc32 (zlib's CRC-32). */

/* A checkpoint view of a trainer: pointers into the trainer (owns = 0); the
 * caller fills the data description and name. */
void atm_ckpt_from_trainer(atm_ckpt *ck, const atm_trainer *tr);
/* Copies weights, moments (zero if absent) and state into a trainer built
 * from ck->cfg. -1 if the layout sizes differ. */
int  atm_trainer_load_ckpt(atm_trainer *tr, const atm_ckpt *ck);

#endif
