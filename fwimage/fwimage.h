/* fwimage/fwimage.h — turn an `.atome` model into firmware, on the host and
 * without a cross compiler: patch it into a prebuilt template image (the
 * ELF that the `mcu` preset builds with an empty model slot), or write it as
 * a C header for people building their own firmware.
 *
 * Contract.
 *  - The template is a 32-bit little-endian ARM ELF file with a PROGBITS,
 *    ALLOC section named ".atome_model" (mcu/model_slot.c, mcu/link/common.ld).
 *    The section is found through the section header table (e_shoff,
 *    e_shnum, e_shentsize) and the section-name string table (e_shstrndx);
 *    its bytes sit at file offset sh_offset, sh_size long. Every offset and
 *    size is bounds-checked against the file before use; all fields are read
 *    byte by byte, little-endian, so the host's byte order does not matter.
 *  - The section starts with a 32-byte slot header (docs/mcu.md, "model
 *    slot"): "ATMSLOT1", u32 capacity (= sh_size - 32), u32 model length,
 *    u32 CRC-32 of the model (core/format.h), char board[12] (the QEMU machine
 *    name, NUL padded); the model bytes follow, then zeros.
 *  - Patching rewrites length, CRC, the model bytes and zero-fills the rest
 *    of the slot: the result depends only on the template's other bytes and
 *    the model, whatever model the template held before. Nothing else in the
 *    file changes (sizes, program headers and addresses stay), so the image
 *    still loads with `qemu-system-arm -kernel`.
 *  - These functions do not validate the model itself: callers open it with
 *    atm_model_open() first (tools/mcu/elfpatch.c does), so a firmware image
 *    never carries a container the engine would reject.
 *  - Host code: may use stdio. No allocation. */
#ifndef ATOME_TOOLS_FWIMAGE_H
#define ATOME_TOOLS_FWIMAGE_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/container.h"
#include "core/fwsettings.h"

#define ATM_FW_SECTION ".atome_model"
#define ATM_FW_SLOT_HEADER 32u
#define ATM_FW_BOARD_BYTES 12u

typedef enum {
    ATM_FW_OK = 0,
    ATM_FW_E_ARG = -1,       /* NULL pointer, bad symbol name */
    ATM_FW_E_ELF = -2,       /* not a 32-bit little-endian ARM ELF, or a header out of bounds */
    ATM_FW_E_NOSLOT = -3,    /* no usable .atome_model section / slot header */
    ATM_FW_E_BOARD = -4,     /* the template was built for another board */
    ATM_FW_E_CAPACITY = -5,  /* the model is larger than the slot */
    ATM_FW_E_IO = -6         /* writing the header failed */
} atm_fw_status;

typedef struct {
    uint32_t file_offset;                    /* of the section in the ELF file */
    uint32_t size;                           /* section bytes: header + capacity */
    uint32_t addr;                           /* its address in the board's flash */
    uint32_t capacity;                       /* model bytes that fit */
    uint32_t model_len;                      /* model currently in the slot (0 = empty) */
    uint32_t model_crc;                      /* its CRC-32 as recorded */
    char     board[ATM_FW_BOARD_BYTES + 1];  /* NUL terminated */
} atm_fw_slot;

/* Finds and checks the slot of elf[len]. ATM_FW_OK, or an error with a
 * one-line reason in err[errlen] (err may be NULL). */
int atm_fw_find_slot(const uint8_t *elf, size_t len, atm_fw_slot *slot, char *err, size_t errlen);

/* Writes model[mlen] into the slot of elf[len] in place. board (may be
 * NULL to skip the check) must equal the slot's board name. Where
 * atm_fw_offsets says so, the model's offset stream follows it: "ATMOFS01"
 * at the first 4-byte boundary after the model, then the 2 mlen bytes of
 * atm_engine_offsets_make (core/engine.h); the firmware checks it against
 * the model and runs its bit-plane rows from it (docs/mcu.md). */
int atm_fw_patch(uint8_t *elf, size_t len, const char *board, const uint8_t *model, size_t mlen,
                 char *err, size_t errlen);

/* 1 if a `board` image with a model of `encoding` (ATM_ENC_*) and mlen
 * bytes in a slot of `capacity` bytes holds the offset stream
 * (ATM_FW_OFFSETS_MAGIC, core/fwsettings.h): ATOME01 on a board whose row
 * says offsets (the micro:bit, whose engine runs the bit-plane kernel), when the stream fits beside
 * the model with room left for a settings block. */
int atm_fw_offsets(const char *board, int encoding, size_t mlen, size_t capacity);

/* The trit encoding the engine runs fastest from on a board, its row's
 * faster encoding: ATOME01 on every board today (mps2-an385, microbit,
 * pico; the instruction counts of both encodings are in docs/budgets.md,
 * from tools/bench-mcu). */
int atm_fw_faster_encoding(const char *board);

/* What a board is given: the model re-encoded with the board's faster
 * encoding when that fits `capacity` bytes (the slot, less the settings
 * block when there is one), else as it came if that fits. *out is malloc'd
 * (a copy when nothing changes), *why says which and why, e.g. "ATOME01
 * (faster on this board)" or "ATOME02 (ATOME01 is 17,844 bytes, the slot
 * holds 16,000)". ATM_FW_E_CAPACITY if neither fits. */
int atm_fw_choose_encoding(const char *board, const uint8_t *model, size_t mlen, size_t capacity,
                           uint8_t **out, size_t *outlen, char *why, size_t whylen);

/* Writes model[mlen] as a C header: `static const uint8_t <name>[]`
 * (flash-resident on an MCU), <NAME>_BYTES and <NAME>_CRC32 macros, and a
 * provenance comment naming `source` (a file name; may be NULL). name must
 * be a C identifier (NULL = "atome_model"). */
int atm_fw_header(FILE *out, const uint8_t *model, size_t mlen, const char *name,
                  const char *source, char *err, size_t errlen);
/* atm_fw_header whose comment names `file`, the file the text is written to
 * (its base name; NULL = "<name>.h"). */
int atm_fw_header_file(FILE *out, const uint8_t *model, size_t mlen, const char *name, const char *file,
                       const char *source, char *err, size_t errlen);

/* The firmware's RAM below its arena end that the engine may not use: at
 * least the sampler's 256-byte scratch (mcu/main.c ORDER_BYTES), more while
 * a long command line is held. */
#define ATM_FW_MIN_TAIL 256u

/* What a model needs of a board: the template's `.arena` section is the RAM
 * the engine gets (docs/mcu.md, "memory maps"); max_window is the largest
 * attention window whose engine state plus ATM_FW_MIN_TAIL fits it (0: none
 * fits). engine_bytes is the engine's arena at the model's default window. */
typedef struct {
    uint32_t capacity;      /* model slot bytes */
    int64_t  arena;         /* .arena section bytes, -1 if the template has none */
    int      max_window;
    size_t   engine_bytes;  /* atm_engine_arena_bytes(m, 0) */
} atm_fw_fit;

/* Fills fit for model m in template elf[len] (already accepted by
 * atm_fw_find_slot); ATM_FW_OK or ATM_FW_E_NOSLOT / ATM_FW_E_ELF. */
int atm_fw_fit_model(const uint8_t *elf, size_t len, const atm_model *m, atm_fw_fit *fit, char *err, size_t errlen);

/* The whole text `atome header` writes: a comment with the model's config,
 * its parameter count (`params`, as `atome inspect` "params" gives it: the
 * trainer's count for this shape, which the caller knows; 0 = unknown, then
 * the values the file stores are named as such) and engine RAM at windows
 * 32 and 64, then atm_fw_header_file's array, whose comment names `file`. */
int atm_fw_header_text(FILE *out, const atm_model *m, const uint8_t *model, size_t mlen, const char *name,
                       const char *file, size_t params, const char *source, char *err, size_t errlen);

/* ---- settings block (core/fwsettings.h): standalone images ---- */

/* Writes the encoded block block[ATM_FWSET_BYTES] into the last bytes of
 * the model slot of elf[len] (patched with its model already, which must
 * leave that room: model length <= capacity - ATM_FWSET_BYTES). */
int atm_fw_put_settings(uint8_t *elf, size_t len, const uint8_t *block, char *err, size_t errlen);

/* The known answer: the first min(n, 64) bytes story 0 of settings s
 * generates with model m (the engine and sampler of `atome generate`), into
 * s->expect / s->expect_len. 0, or -1 (out of memory, window, prompt byte
 * outside the vocabulary) with a reason. Allocates the engine's arena. */
int atm_fw_expect(const atm_model *m, atm_fwset *s, char *err, size_t errlen);

/* The settings of a standalone image from generate's inputs (the texts
 * already checked by the caller's sampler parser, with its messages): the
 * window resolved (window 0: the model's default if it fits max_window,
 * else max_window, with a note in note[]; an explicit window above
 * max_window is ATM_FW_E_CAPACITY), the prompt (at most
 * ATM_FWSET_PROMPT_MAX bytes; else ATM_FW_E_ARG) and the known answer
 * (atm_fw_expect). note[0] = 0 when there is nothing to say. */
typedef struct {
    const uint8_t *prompt;
    size_t         prompt_len;
    uint64_t       n;
    const char    *temperature, *top_k, *top_p;   /* NULL = default */
    uint32_t       seed;
    int            window;                        /* 0 = resolve */
    uint32_t       flags;                         /* ATM_FWSET_LOOP | ATM_FWSET_INTERACTIVE */
} atm_fw_settings_in;

int atm_fw_settings_make(const atm_model *m, int max_window, const char *board, const atm_fw_settings_in *in,
                         atm_fwset *st, char *note, size_t notelen, char *err, size_t errlen);

/* The settings block as C for a header (written before its #endif): a
 * comment with the settings and the known answer, <NAME>_SETTINGS_BYTES,
 * <NAME>_ARENA_BYTES (atm_engine_arena_bytes at the block's window) and
 * `static const uint8_t <name>_settings[]` (the encoded block). */
int atm_fw_settings_text(FILE *out, const atm_model *m, const atm_fwset *st, const char *name, char *err, size_t errlen);

/* atome_model.c: a one-file example firmware main (CMSIS-style: no malloc,
 * the arena a static buffer checked against atm_engine_arena_bytes) that
 * runs the header's model with its settings block; `header` is the
 * header's file name as it is #included, name its array name. */
int atm_fw_example_text(FILE *out, const char *header, const char *name);

/* ---- files a board takes ---- */

enum { ATM_FW_FORMAT_ELF = 0, ATM_FW_FORMAT_HEX = 1, ATM_FW_FORMAT_BIN = 2, ATM_FW_FORMAT_UF2 = 3 };

/* The UF2 family id of the boot loader drive of a board that takes UF2
 * files (its row of core/boards.def: ATM_FW_UF2_FAMILY_RP2040 for "pico");
 * 0 for every other board (the micro:bit's drive takes Intel HEX, the
 * MPS2's a raw binary). */
uint32_t atm_fw_uf2_family(const char *board);

/* 1 if an image of the board without a settings block reads its settings
 * over semihosting (QEMU or a debugger answers: mps2-an385, microbit), 0
 * if the board is standalone only (the pico: such an image prints one line
 * saying it has no settings block, docs/mcu.md). Its row's semihosting. */
int atm_fw_semihosting(const char *board);

/* The file for a board from a patched image: the ELF itself, its flash
 * contents as Intel HEX, as raw binary from the flash base, or as UF2
 * (atm_fw_uf2 with the family of the board named in the image's model slot;
 * refused with a reason for a board that takes no UF2 and for a flash base
 * that is not 256-aligned). *out is malloc'd; *base and *flash_len describe
 * the flash contents (0 for ELF). */
int atm_fw_make_file(const uint8_t *elf, size_t len, int format, uint8_t **out, size_t *outlen, uint32_t *base,
                     size_t *flash_len, char *err, size_t errlen);

/* The flash contents of elf[len]: every PT_LOAD segment with file bytes,
 * at its physical (load) address, from the lowest such address; gaps are
 * 0xFF (erased flash). *out is malloc'd (free it). */
int atm_fw_flash_bytes(const uint8_t *elf, size_t len, uint8_t **out, size_t *outlen, uint32_t *base,
                       char *err, size_t errlen);

/* Intel HEX text of bin[n] at address base: type-04 extended linear address
 * records, 16 data bytes a record, CRLF line ends, the type-01 end record.
 * *out is malloc'd and NUL-terminated; *outlen excludes the NUL. 0 / -1. */
int atm_fw_ihex(const uint8_t *bin, size_t n, uint32_t base, char **out, size_t *outlen);

/* UF2 (the Raspberry Pi Pico's drag-and-drop format, and other boards'):
 * bin[n] at address base cut into 256-byte payloads, one 512-byte block
 * each: magics 0x0A324655 0x9E5D5157, flags 0x00002000 (family id
 * present), the target address, payload size 256, block number, block
 * count, `family` (0xe48bff56: the RP2040), the payload zero-padded to 476
 * bytes, end magic 0x0AB16F30; the last payload is padded with 0xFF (erased
 * flash). base must be 256-aligned. *out is malloc'd. 0, or -1 (out of
 * memory, an unaligned base, an empty image). */
#define ATM_FW_UF2_FAMILY_RP2040 0xe48bff56u
int atm_fw_uf2(const uint8_t *bin, size_t n, uint32_t base, uint32_t family, uint8_t **out, size_t *outlen);

/* The RP2040 bootrom's check of a second-stage boot loader: CRC-32 with
 * polynomial 0x04c11db7, MSB first, initial value 0xffffffff, no final xor
 * (CRC-32/MPEG-2; "123456789" gives 0x0376e6e7), over the first 252 bytes;
 * the boot loader's last word holds it (little-endian). */
uint32_t atm_fw_crc32_mpeg2(const uint8_t *p, size_t n);

/* ---- the table of boards (core/boards.h, rows in core/boards.def) ---- */

/* "elf", "hex", "bin", "uf2" for ATM_FW_FORMAT_*, NULL for another value;
 * and back (-1 for an unknown name). */
const char *atm_fw_format_name(int format);
int atm_fw_format_parse(const char *name);

/* 1 if the board takes files of that format (its row's formats). */
int atm_fw_board_takes(const char *board, int format);

/* The boards' names in the table's order for a message: "a, b<last_sep>c"
 * (last_sep " or ", say). snprintf-style: writes at most cap bytes
 * (NUL-terminated when cap > 0), returns the text's full length. */
size_t atm_fw_board_list(char *out, size_t cap, const char *last_sep);

/* The table as one JSON object, the text of `atome boards --json` and of
 * the wasm module's boards(): {"boards":[{"name","label","cpu","chip",
 * "clock_hz","flash_base":"0x...","flash_bytes","ram_bytes","slot_bytes",
 * "formats":["elf",...],"drive","faster_encoding":"ATOME01","uf2_family":
 * "0x..." or null,"semihosting","offset_stream","tables","emulator",
 * "cost":{"count":"insns_per_byte"|"cycles_per_byte","windows":[...]},
 * "machine","alias","uhex_board_id":"0x9900","hex_with" (each null for
 * none),"card_label","card_order"}, ...]} (docs/cli.md). snprintf-style, as atm_fw_board_list. */
size_t atm_fw_boards_json(char *out, size_t cap);

/* Why the board takes no file of that format, as the CLI and the page say
 * it: "--format uf2 is for the pico (the RP2040 bootrom's drive); the
 * microbit takes elf, hex or bin". snprintf-style. */
size_t atm_fw_format_refusal(const char *board, int format, char *out, size_t cap);

/* ---- the micro:bit Universal Hex (fwimage/uhex.c) ---- */

/* The board IDs of the micro:bit versions in a Universal Hex (the
 * Foundation's microbitBoardId: V1 = 0x9900, for the v1.3, v1.3B and v1.5
 * boards; V2 = 0x9903). */
#define ATM_FW_UH_BOARD_V1 0x9900u
#define ATM_FW_UH_BOARD_V2 0x9903u

typedef struct {
    const char *hex;     /* an Intel HEX file's text (CRLF or LF lines) */
    size_t      len;
    uint16_t    board_id;
} atm_fw_uh_part;

/* One Universal Hex of parts[n] in the order given (v1 first, as the
 * Foundation's editors write it): the bytes createUniversalHex(parts, blocks)
 * of @microbit/microbit-universal-hex 0.2.2 returns, "sections" when blocks
 * is 0 (the library's default), 512-character "blocks" otherwise; LF line
 * ends. *out is malloc'd and NUL-terminated; ATM_FW_OK, or ATM_FW_E_ARG with
 * a reason (a line that is not a record, an End Of File record before the
 * end, a part that is already a Universal Hex, out of memory). */
int atm_fw_universal_hex(const atm_fw_uh_part *parts, size_t n, int blocks, char **out, size_t *outlen,
                         char *err, size_t errlen);

#endif
