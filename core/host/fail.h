/* core/host/fail.h — the one error helper of the host side (the trainer
 * and the engine host). Functions that can fail take (char *err, size_t
 * errlen), write one line of reason there (either may be NULL / 0: no
 * reason wanted) and return -1:
 *     if (n == 0) ATM_FAIL("nothing to evaluate");
 * ATM_FAIL_GOTO(label, ...) writes the reason and jumps to a cleanup label. */
#ifndef ATOME_HOST_FAIL_H
#define ATOME_HOST_FAIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

static inline int atm_fail(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static inline int atm_fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#define ATM_FAIL(...) return atm_fail(err, errlen, __VA_ARGS__)
#define ATM_FAIL_GOTO(label, ...) do { atm_fail(err, errlen, __VA_ARGS__); goto label; } while (0)

#endif
