/* mcu/libc_min.c — the four C library functions GCC may call on its own
 * even in freestanding code (struct copies, zeroing loops; GCC documents
 * that memcpy, memmove, memset and memcmp must be provided). The firmware
 * links with -nostdlib, so these are the only "libc" in the image; the map
 * file (atome-fw-<board>.map) shows every object that was linked.
 *
 * Byte loops on purpose: they are small and only run on setup paths
 * (the engine clears its arena with its own loop). This file is compiled
 * with -fno-tree-loop-distribute-patterns (mcu/CMakeLists.txt) so GCC cannot
 * turn the loops back into calls to themselves. */
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *restrict dst, const void *restrict src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    while (n--) *d++ = *s++;
    return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    if (d < s) {
        while (n--) *d++ = *s++;
    } else {
        while (n--) d[n] = s[n];
    }
    return dst;
}

void *memset(void *dst, int c, size_t n) {
    uint8_t *d = (uint8_t *)dst;
    while (n--) *d++ = (uint8_t)c;
    return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
    const uint8_t *p = (const uint8_t *)a, *q = (const uint8_t *)b;
    for (; n; n--, p++, q++)
        if (*p != *q) return *p < *q ? -1 : 1;
    return 0;
}
