/* core/host/fail.h — the one error helper of the host side (the trainer
 * and the engine host). Functions that can fail take (char *err, size_t
 * errlen), write one line of reason there (either may be NULL / 0: no
 * reason wanted) and return -1:
 *     if (n == 0) ATM_FAIL("nothing to evaluate");
 * ATM_FAIL_GOTO(label, ...) writes the reason and jumps to a cleanup label.
 * atm_fail_code does the same and returns a code of the caller's (the
 * legacy importer's and the firmware image library's error codes). */
#ifndef ATOME_HOST_FAIL_H
#define ATOME_HOST_FAIL_H
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#if defined(__GNUC__)
#define ATM_FAIL_FORMAT(i) __attribute__((format(printf, i, i + 1)))
#else
#define ATM_FAIL_FORMAT(i)
#endif

static inline int atm_failv(int code, char *err, size_t errlen, const char *fmt, va_list ap) {
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    return code;
}
static inline int atm_fail_code(int code, char *err, size_t errlen, const char *fmt, ...) ATM_FAIL_FORMAT(4);
static inline int atm_fail_code(int code, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    atm_failv(code, err, errlen, fmt, ap);
    va_end(ap);
    return code;
}
static inline int atm_fail(char *err, size_t errlen, const char *fmt, ...) ATM_FAIL_FORMAT(3);
static inline int atm_fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    atm_failv(-1, err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

#define ATM_FAIL(...) return atm_fail(err, errlen, __VA_ARGS__)
#define ATM_FAIL_GOTO(label, ...) do { atm_fail(err, errlen, __VA_ARGS__); goto label; } while (0)

#endif
