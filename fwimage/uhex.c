/* fwimage/uhex.c — the micro:bit Universal Hex (fwimage.h,
 * atm_fw_universal_hex): several Intel HEX files, one per board version, in
 * one text file that each micro:bit's interface chip (DAPLink) reads, taking
 * only the records of its own board.
 *
 * The format, as the micro:bit Foundation specifies it (spec-universal-hex)
 * and as its library @microbit/microbit-universal-hex 0.2.2 writes it
 * (createUniversalHex; tests/node/uhex.test.mjs compares byte for byte):
 *  - record types beyond Intel's: 0x0A Block Start (data: board ID, big
 *    endian, then 0xC0 0xDE), 0x0B Block End (data: 0xFF padding), 0x0C
 *    Padded Data (0xFF bytes the board ignores), 0x0D Custom Data (a data
 *    record for a board that is not the v1; the v1's DAPLink knows only 0x00);
 *  - each part starts with an Extended Linear Address record and its Block
 *    Start; records are joined with "\n";
 *  - "sections" (the default): one part per board, padded with Padded Data
 *    records and ended by a Block End record so its length in characters
 *    (a newline each) is a multiple of 512;
 *  - "blocks": each part cut into 512-character blocks, each with its own
 *    Extended Linear Address, Block Start, Padded Data and Block End;
 *  - the End Of File record only once, at the very end; Start Segment /
 *    Start Linear Address records are dropped in sections (kept in blocks),
 *    Extended Segment Address records become Extended Linear Address ones.
 * Host code: malloc, no stdio beyond snprintf for errors. */
#include "fwimage.h"
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define UH_BLOCK 512u
#define UH_REC_MAX 75u            /* ":" + 2+4+2 + 64 data + 2 checksum: 32 data bytes */
#define UH_REC_MIN 11u
enum { T_DATA = 0, T_EOF = 1, T_ESA = 2, T_ELA = 4, T_BSTART = 0x0A, T_BEND = 0x0B, T_PAD = 0x0C, T_CUSTOM = 0x0D };

static int uh_err(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return ATM_FW_E_ARG;
}

/* A growing text. */
typedef struct { char *t; size_t n, cap; int oom; } uh_text;

static void put_str(uh_text *o, const char *s, size_t n) {
    if (o->oom) return;
    if (o->n + n + 1 > o->cap) {
        size_t c = o->cap ? o->cap : 4096;
        while (c < o->n + n + 1) c *= 2;
        char *t = (char *)realloc(o->t, c);
        if (!t) { o->oom = 1; return; }
        o->t = t;
        o->cap = c;
    }
    memcpy(o->t + o->n, s, n);
    o->n += n;
    o->t[o->n] = '\0';
}

static int hexv(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One record of an input file: its text (without line end), type and data. */
typedef struct { const char *s; size_t len; int type; uint8_t data[32]; int count; uint16_t addr; } uh_rec;

/* Reads the record s[len]; 0 or -1 (not a record the library accepts). */
static int rec_parse(const char *s, size_t len, uh_rec *r) {
    if (len < UH_REC_MIN || len > UH_REC_MAX || s[0] != ':' || (len - 1) % 2) return -1;
    uint8_t b[37];
    for (size_t i = 1; i < len; i += 2) {
        const int hi = hexv(s[i]), lo = hexv(s[i + 1]);
        if (hi < 0 || lo < 0) return -1;
        b[(i - 1) / 2] = (uint8_t)(hi * 16 + lo);
    }
    const size_t nb = (len - 1) / 2;
    r->s = s;
    r->len = len;
    r->count = b[0];
    r->addr = (uint16_t)((b[1] << 8) | b[2]);
    r->type = b[3];
    if ((size_t)r->count + 5 != nb) return -1;
    if (!((r->type >= 0 && r->type <= 5) || (r->type >= 0x0A && r->type <= 0x0E))) return -1;
    memcpy(r->data, b + 4, (size_t)r->count);
    return 0;
}

/* A record of type `type` at 16-bit address addr with data[n], in upper-case hex. */
static size_t rec_make(char *out, int type, uint16_t addr, const uint8_t *data, int n) {
    static const char hx[] = "0123456789ABCDEF";
    uint8_t head[4] = { (uint8_t)n, (uint8_t)(addr >> 8), (uint8_t)addr, (uint8_t)type };
    size_t o = 0;
    unsigned sum = 0;
    out[o++] = ':';
    for (int i = 0; i < 4 + n; i++) {
        const uint8_t v = i < 4 ? head[i] : data[i - 4];
        sum += v;
        out[o++] = hx[v >> 4];
        out[o++] = hx[v & 15];
    }
    const uint8_t ck = (uint8_t)(0u - sum);
    out[o++] = hx[ck >> 4];
    out[o++] = hx[ck & 15];
    out[o] = '\0';
    return o;
}

static size_t rec_fill(char *out, int type, int n) {   /* n bytes of 0xFF */
    uint8_t ff[32];
    memset(ff, 0xFF, sizeof ff);
    return rec_make(out, type, 0, ff, n);
}

/* The records of a part: what goes out for input record r (data records of
 * a board other than the v1 become Custom Data; an Extended Segment
 * Address becomes the Extended Linear Address of the same base). */
static int rec_out(const uh_rec *r, int custom, char *out, size_t *len) {
    if (r->type == T_DATA && custom) { *len = rec_make(out, T_CUSTOM, r->addr, r->data, r->count); return 0; }
    if (r->type == T_ESA) {
        if (r->count != 2 || (r->data[0] & 0x0F) || r->data[1] != 0) return -1;
        const uint8_t a[2] = { 0, (uint8_t)(r->data[0] >> 4) };   /* (seg << 4) >> 16 */
        *len = rec_make(out, T_ELA, 0, a, 2);
        return 0;
    }
    memcpy(out, r->s, r->len);
    out[r->len] = '\0';
    *len = r->len;
    return 0;
}

/* The input's records (blank lines and CRs dropped). *recs malloc'd. */
static int split_records(const char *hex, size_t len, uh_rec **recs, size_t *n, char *err, size_t errlen) {
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += hex[i] == '\n';
    uh_rec *r = (uh_rec *)malloc(lines * sizeof *r);
    if (!r) return uh_err(err, errlen, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < len; ) {
        size_t j = i;
        while (j < len && hex[j] != '\n') j++;
        size_t e = j;
        while (e > i && hex[e - 1] == '\r') e--;
        int cr = 0;
        for (size_t q = i; q < e; q++) cr |= hex[q] == '\r';
        if (e > i) {
            if (cr || rec_parse(hex + i, e - i, &r[k])) {
                free(r);
                return uh_err(err, errlen, "line %zu is not an Intel HEX record", k + 1);
            }
            k++;
        }
        i = j + 1;
    }
    *recs = r;
    *n = k;
    return 0;
}

/* The library's findDataFieldLength: the record data length used for padding. */
static int data_field_len(const uh_rec *r, size_t n) {
    int max = 16, count = 0;
    for (size_t i = 0; i < n; i++) {
        const int d = (int)(r[i].len - UH_REC_MIN) / 2;
        if (d > max) { max = d; count = 0; }
        else if (d == max) count++;
        if (count > 12) break;
    }
    return max;
}

static void put_line(uh_text *o, const char *s, size_t n) { put_str(o, s, n); put_str(o, "\n", 1); }

/* One board's part as a section: its records, Padded Data up to a multiple
 * of 512 characters, the Block End; *eof = 1 if the input ended with EOF. */
static int part_section(uh_text *o, const uh_rec *r, size_t n, uint16_t id, int custom, int *eof,
                        char *err, size_t errlen) {
    char rec[80];
    size_t rl, len = 0, i = 0;
    const uint8_t bs[4] = { (uint8_t)(id >> 8), (uint8_t)id, 0xC0, 0xDE };
    static const uint8_t zero2[2] = { 0, 0 };
    if (r[0].type == T_ELA || r[0].type == T_ESA) {
        if (rec_out(&r[0], 0, rec, &rl)) return uh_err(err, errlen, "invalid Extended Segment Address record");
        i = 1;
    } else {
        rl = rec_make(rec, T_ELA, 0, zero2, 2);
    }
    put_line(o, rec, rl); len += rl + 1;
    rl = rec_make(rec, T_BSTART, 0, bs, 4);
    put_line(o, rec, rl); len += rl + 1;
    *eof = 0;
    for (; i < n; ) {
        const uh_rec *x = &r[i++];
        if (x->type == T_EOF) { *eof = 1; break; }
        if (x->type != T_DATA && x->type != T_ESA && x->type != T_ELA) continue;
        if (rec_out(x, custom, rec, &rl)) return uh_err(err, errlen, "invalid Extended Segment Address record");
        put_line(o, rec, rl); len += rl + 1;
    }
    if (i != n) return uh_err(err, errlen, "End Of File record before the end of board 0x%04X's file", (unsigned)id);
    len += UH_REC_MIN + 1;   /* the Block End record's own length */
    const int cap = data_field_len(r, n);
    size_t need = (UH_BLOCK - len % UH_BLOCK) % UH_BLOCK;
    while (need > (size_t)cap * 2) {
        const int b = (int)((need - (UH_REC_MIN + 1)) >> 1);
        rl = rec_fill(rec, T_PAD, b < cap ? b : cap);
        put_line(o, rec, rl); len += rl + 1;
        need = (UH_BLOCK - len % UH_BLOCK) % UH_BLOCK;
    }
    rl = rec_fill(rec, T_BEND, (int)(need >> 1));
    put_line(o, rec, rl);
    return 0;
}

/* One board's part as 512-character blocks. */
static int part_blocks(uh_text *o, const uh_rec *r, size_t n, uint16_t id, int custom, int *eof,
                       char *err, size_t errlen) {
    char rec[80], ela[80], bsr[80];
    size_t rl, el, bl, i = 0;
    const uint8_t bs[4] = { (uint8_t)(id >> 8), (uint8_t)id, 0xC0, 0xDE };
    static const uint8_t zero2[2] = { 0, 0 };
    el = rec_make(ela, T_ELA, 0, zero2, 2);
    const size_t ela_len = el;
    bl = rec_make(bsr, T_BSTART, 0, bs, 4);
    const int cap = data_field_len(r, n);
    *eof = 0;
    while (i < n) {
        if (r[i].type == T_ELA || r[i].type == T_ESA) {
            if (rec_out(&r[i], 0, ela, &el)) return uh_err(err, errlen, "invalid Extended Segment Address record");
            i++;
        }
        put_line(o, ela, el);
        put_line(o, bsr, bl);
        size_t len = (ela_len + 1) + (bl + 1) + (UH_REC_MIN + 1);
        while (i < n && UH_BLOCK >= len + r[i].len + 1) {
            const uh_rec *x = &r[i++];
            if (x->type == T_EOF) { *eof = 1; break; }
            if (rec_out(x, custom, rec, &rl)) return uh_err(err, errlen, "invalid Extended Segment Address record");
            if (x->type == T_ELA || x->type == T_ESA) { memcpy(ela, rec, rl + 1); el = rl; }
            put_line(o, rec, rl); len += rl + 1;
        }
        if (*eof) {
            if (i != n) return uh_err(err, errlen, "End Of File record before the end of board 0x%04X's file", (unsigned)id);
            rl = rec_fill(rec, T_BEND, 0);
            put_line(o, rec, rl);
            put_line(o, ":00000001FF", 11);
            return 0;
        }
        while (UH_BLOCK - len > (size_t)cap * 2) {
            const int b = (int)((UH_BLOCK - len - (UH_REC_MIN + 1)) / 2);
            rl = rec_fill(rec, T_PAD, b < cap ? b : cap);
            put_line(o, rec, rl); len += rl + 1;
        }
        rl = rec_fill(rec, T_BEND, (int)((UH_BLOCK - len) / 2));
        put_line(o, rec, rl);
    }
    return 0;
}

int atm_fw_universal_hex(const atm_fw_uh_part *parts, size_t nparts, int blocks, char **out, size_t *outlen,
                         char *err, size_t errlen) {
    *out = NULL;
    *outlen = 0;
    if (!parts || nparts == 0) return uh_err(err, errlen, "no hex files to combine");
    uh_text o = { NULL, 0, 0, 0 };
    for (size_t p = 0; p < nparts; p++) {
        uh_rec *r = NULL;
        size_t n = 0;
        int rc = split_records(parts[p].hex, parts[p].len, &r, &n, err, errlen);
        if (rc) { free(o.t); return rc; }
        if (n >= 2 && r[0].type == T_ELA && r[1].type == T_BSTART && r[n - 1].type == T_EOF) {
            free(r);
            free(o.t);
            return uh_err(err, errlen, "board 0x%04X's file is already a Universal Hex", (unsigned)parts[p].board_id);
        }
        const int custom = parts[p].board_id != ATM_FW_UH_BOARD_V1 && parts[p].board_id != 0x9901u;
        int eof = 0;
        const size_t at = o.n;
        if (n) rc = blocks ? part_blocks(&o, r, n, parts[p].board_id, custom, &eof, err, errlen)
                           : part_section(&o, r, n, parts[p].board_id, custom, &eof, err, errlen);
        free(r);
        if (rc) { free(o.t); return rc; }
        if (!blocks && eof) put_line(&o, ":00000001FF", 11);
        /* only the last part keeps its End Of File record */
        static const char eofnl[] = ":00000001FF\n";
        const size_t el = sizeof eofnl - 1;
        const int ends = o.n - at >= el && memcmp(o.t + o.n - el, eofnl, el) == 0;
        if (p + 1 < nparts && ends) o.n -= el;
        if (p + 1 == nparts && !ends) put_str(&o, eofnl, el);
    }
    if (o.oom || !o.t) { free(o.t); return uh_err(err, errlen, "out of memory"); }
    o.t[o.n] = '\0';
    *out = o.t;
    *outlen = o.n;
    return ATM_FW_OK;
}
