/* core/le.h — the project's one set of little-endian scalar helpers (any
 * alignment, freestanding C99): every file format here (the .atome
 * container, checkpoints, the firmware slot and settings block, ELF and
 * UF2 images) stores its integers little-endian through these. */
#ifndef ATOME_LE_H
#define ATOME_LE_H
#include <stdint.h>

static inline uint16_t atm_rd_u16le(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline int16_t atm_rd_i16le(const uint8_t *p) {
    uint16_t u = atm_rd_u16le(p);
    return (int16_t)(u < 0x8000u ? (int32_t)u : (int32_t)u - 65536);
}
static inline uint32_t atm_rd_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t atm_rd_u64le(const uint8_t *p) {
    return (uint64_t)atm_rd_u32le(p) | ((uint64_t)atm_rd_u32le(p + 4) << 32);
}
static inline void atm_wr_u16le(uint8_t *p, uint32_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void atm_wr_u32le(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void atm_wr_u64le(uint8_t *p, uint64_t v) {
    atm_wr_u32le(p, (uint32_t)v);
    atm_wr_u32le(p + 4, (uint32_t)(v >> 32));
}

#endif
