/* tests/check.h — minimal test helpers: CHECK prints file:line and the
 * expression on failure and counts it; CHECK_DONE() prints a summary and
 * returns the exit status. */
#ifndef ATOME_TESTS_CHECK_H
#define ATOME_TESTS_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <stdint.h>

static int check_fails = 0, check_count = 0;
#define CHECK(cond) do { check_count++; if (!(cond)) { check_fails++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECKF(cond, ...) do { check_count++; if (!(cond)) { check_fails++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
#define CHECK_DONE() (printf("%d checks, %d failed\n", check_count, check_fails), check_fails ? 1 : 0)

/* Directory of the shared data (env ATOME_SHARED_DIR, else the build-time default). */
static inline const char *check_shared_dir(void) {
    const char *e = getenv("ATOME_SHARED_DIR");
#ifdef ATOME_SHARED_DIR
    if (!e || !*e) e = ATOME_SHARED_DIR;
#endif
    return e;
}
/* The whole of a file, malloc'd (NULL if it cannot be read); *len its size. */
static inline uint8_t *check_read_file(const char *path, size_t *len) {
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = n >= 0 ? (uint8_t *)malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) { free(b); b = NULL; }
    fclose(f);
    if (b) *len = (size_t)n;
    return b;
}
#endif
