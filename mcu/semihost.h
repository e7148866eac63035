/* mcu/semihost.h — ARM semihosting (BKPT 0xAB on M-profile) as QEMU 7.2
 * implements it with `-semihosting-config enable=on,target=native`.
 *
 * Contract.
 *  - sh_write_out/sh_write_err write raw bytes (no translation of any byte
 *    value, NUL included) to QEMU's stdout / stderr: ":tt" opened with mode
 *    4 ("w") is stdout, with mode 8 ("a") stderr. Both loop until every byte
 *    is taken and return 0, or -1 if the host refuses.
 *  - sh_exit ends the run with SYS_EXIT_EXTENDED (ADP_Stopped_ApplicationExit
 *    + code); QEMU exits with that status (taken mod 256 by the host).
 *  - sh_get_cmdline copies the command line that QEMU joined from its
 *    `arg=` options (separated by single spaces) into buf[cap], NUL
 *    terminated; returns its length, or -1 (host error or cap too small).
 *  - Without semihosting enabled in QEMU, BKPT escalates to a lockup and
 *    QEMU aborts: nothing here can hang silently. */
#ifndef ATOME_SEMIHOST_H
#define ATOME_SEMIHOST_H
#include <stddef.h>
#include <stdint.h>

int  sh_write_out(const void *buf, size_t n);
int  sh_write_err(const void *buf, size_t n);
long sh_get_cmdline(char *buf, size_t cap);
void sh_exit(int code) __attribute__((noreturn));

#endif
