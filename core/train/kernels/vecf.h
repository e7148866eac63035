/* core/train/kernels/vecf.h — the plain-C vector helpers of the atome pathway
 * references (pathways_ref.c) and of the float generation (atome.c, gen_step).
 *
 * Written as 4- or 8-statement groups over restrict pointers so that gcc -O2
 * (whose default "very cheap" vectoriser skips runtime-length loops) and
 * clang pack each group into SIMD registers; the arithmetic per lane is the
 * same as the scalar reading, so results do not depend on the vector width. */
#ifndef ATOME_TRAIN_KERNELS_VECF_H
#define ATOME_TRAIN_KERNELS_VECF_H

/* sum_i a[i]*b[i]: eight partial sums (lane i % 8), the scalar tail goes to
 * lane 0, combined as ((l0+l4)+(l1+l5)) + ((l2+l6)+(l3+l7)). */
static inline float dotf(const float *restrict a, const float *restrict b, int n) {
    float l[8] = { 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f };
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        l[0] += a[i] * b[i];         l[1] += a[i + 1] * b[i + 1];
        l[2] += a[i + 2] * b[i + 2]; l[3] += a[i + 3] * b[i + 3];
        l[4] += a[i + 4] * b[i + 4]; l[5] += a[i + 5] * b[i + 5];
        l[6] += a[i + 6] * b[i + 6]; l[7] += a[i + 7] * b[i + 7];
    }
    for (; i < n; i++) l[0] += a[i] * b[i];
    return ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]));
}

/* y += a * x */
static inline void axpyf(float *restrict y, float a, const float *restrict x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        y[i] += a * x[i]; y[i + 1] += a * x[i + 1]; y[i + 2] += a * x[i + 2]; y[i + 3] += a * x[i + 3];
    }
    for (; i < n; i++) y[i] += a * x[i];
}

/* y += a .* x (elementwise) */
static inline void vmlaf(float *restrict y, const float *restrict a, const float *restrict x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        y[i] += a[i] * x[i]; y[i + 1] += a[i + 1] * x[i + 1];
        y[i + 2] += a[i + 2] * x[i + 2]; y[i + 3] += a[i + 3] * x[i + 3];
    }
    for (; i < n; i++) y[i] += a[i] * x[i];
}

/* y = a .* x (elementwise) */
static inline void vmulf(float *restrict y, const float *restrict a, const float *restrict x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        y[i] = a[i] * x[i]; y[i + 1] = a[i + 1] * x[i + 1]; y[i + 2] = a[i + 2] * x[i + 2]; y[i + 3] = a[i + 3] * x[i + 3];
    }
    for (; i < n; i++) y[i] = a[i] * x[i];
}

#endif
