/* mcu/semihost.c — the four semihosting calls the firmware needs. Contract
 * in semihost.h; operation numbers and argument blocks are those of ARM's
 * "Semihosting for AArch32 and AArch64" (SYS_OPEN 0x01, SYS_WRITE 0x05,
 * SYS_GET_CMDLINE 0x15, SYS_EXIT 0x18, SYS_EXIT_EXTENDED 0x20). */
#include "semihost.h"

enum { SYS_OPEN = 0x01, SYS_WRITE = 0x05, SYS_GET_CMDLINE = 0x15, SYS_EXIT = 0x18,
       SYS_EXIT_EXTENDED = 0x20 };
#define ADP_STOPPED_APPLICATION_EXIT 0x20026u

/* r0 = operation, r1 = argument block; the host returns its result in r0.
 * "memory" because the host reads and writes the block and the buffers. */
static int32_t sh_call(uint32_t op, const void *arg) {
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile ("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return (int32_t)r0;
}

/* ":tt" modes: 4 = "w" (stdout), 8 = "a" (stderr) under QEMU. */
static int32_t open_tt(uint32_t mode) {
    static const char tt[] = ":tt";
    uint32_t a[3] = { (uint32_t)(uintptr_t)tt, mode, 3u };
    return sh_call(SYS_OPEN, a);
}

static int32_t fd_out = -1, fd_err = -1;

static int write_fd(int32_t *fd, uint32_t mode, const void *buf, size_t n) {
    if (*fd < 0) *fd = open_tt(mode);
    if (*fd < 0) return -1;
    const uint8_t *p = (const uint8_t *)buf;
    while (n > 0) {
        uint32_t a[3] = { (uint32_t)*fd, (uint32_t)(uintptr_t)p, (uint32_t)n };
        int32_t left = sh_call(SYS_WRITE, a);          /* bytes NOT written */
        if (left < 0 || (size_t)left >= n) return -1;  /* no progress: give up */
        p += n - (size_t)left;
        n = (size_t)left;
    }
    return 0;
}

int sh_write_out(const void *buf, size_t n) { return write_fd(&fd_out, 4u, buf, n); }
int sh_write_err(const void *buf, size_t n) { return write_fd(&fd_err, 8u, buf, n); }

long sh_get_cmdline(char *buf, size_t cap) {
    if (cap < 1) return -1;
    uint32_t a[2] = { (uint32_t)(uintptr_t)buf, (uint32_t)cap };
    if (sh_call(SYS_GET_CMDLINE, a) != 0 || a[1] >= cap) return -1;
    buf[a[1]] = '\0';
    return (long)a[1];
}

void sh_exit(int code) {
    uint32_t a[2] = { ADP_STOPPED_APPLICATION_EXIT, (uint32_t)code };
    sh_call(SYS_EXIT_EXTENDED, a);
    /* A host without the extended call: plain SYS_EXIT can only say 0 / 1. */
    sh_call(SYS_EXIT, (const void *)(uintptr_t)(code == 0 ? ADP_STOPPED_APPLICATION_EXIT : 0x20023u));
    for (;;) { }
}
