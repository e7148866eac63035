/* tests/guardbuf.h — float buffers whose last element touches an
 * inaccessible page (Linux), so a kernel reading past the end faults; plain
 * malloc elsewhere. Shared by the kernel tests. Include before other headers
 * (it sets _DEFAULT_SOURCE for MAP_ANONYMOUS). */
#ifndef ATOME_TESTS_GUARDBUF_H
#define ATOME_TESTS_GUARDBUF_H
#if defined(__linux__)
#define _DEFAULT_SOURCE 1 /* MAP_ANONYMOUS */
#include <sys/mman.h>
#include <unistd.h>
#endif
#include <stdlib.h>

typedef struct { float *p; void *base; size_t len; } gbuf;

static gbuf gb_new(size_t n) {
    gbuf g = { NULL, NULL, 0 };
#if defined(__linux__)
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t bytes = (n * sizeof(float) + pg - 1) / pg * pg;
    void *b = mmap(NULL, bytes + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b != MAP_FAILED) {
        mprotect((char *)b + bytes, pg, PROT_NONE);
        g.base = b; g.len = bytes + pg;
        g.p = (float *)((char *)b + bytes) - n;
        return g;
    }
#endif
    g.p = malloc((n ? n : 1) * sizeof(float));
    return g;
}

static void gb_free(gbuf *g) {
#if defined(__linux__)
    if (g->base) { munmap(g->base, g->len); return; }
#endif
    free(g->p);
}
#endif
