/* core/engine_m3.S — the pair-sum and byte-table row kernels in Thumb-2 for the
 * Cortex-M3 / M4 (ARMv7-M; built for mps2-an385 only). Its plain-C twins
 * are rk_lut in core/engine.c (every other target with the table runs
 * that) and atm_ek_matvec_ref; tests/mcu/kernels.c checks on QEMU's
 * Cortex-M3 that they agree.
 *
 * void atm_ek_lut_rows4_m3(const uint8_t *b, uint32_t nb, uint32_t groups,
 *                          const int32_t *lut, int32_t *out);
 * Rows of nb bytes (nb a positive multiple of 4), in groups of four:
 * out[r] = sum over the row's nibbles k of lut[16 k + nibble] (the pair-sum
 * table of engine.c: lut[16 g + (c0 | c1 << 2)] = the pair's two columns
 * times their trits). Four rows walk the table together, a word (4 row
 * bytes, 8 nibbles) of each at a time: a nibble's byte offset is one AND
 * with a shifted register, then one load and one add per row; 6.9
 * instructions a row byte.
 *   r0-r3 the rows' words   r4-r7 their sums   r8 the table walker
 *   r9 0x3C   r10 scratch   r11 row 0's next word   r12 nb   lr row 0's end */
    .syntax unified
    .cpu cortex-m3
    .thumb
    .text
    .align 2
    .global atm_ek_lut_rows4_m3
    .type atm_ek_lut_rows4_m3, %function
    .thumb_func
atm_ek_lut_rows4_m3:
    push {r4-r11, lr}
    sub  sp, #16
    /* [sp] b, [sp, #4] groups, [sp, #8] lut; out at [sp, #52] */
    str  r0, [sp]
    str  r2, [sp, #4]
    str  r3, [sp, #8]
    mov  r12, r1
    mov  r9, #0x3C
1:
    ldr  r11, [sp]
    add  lr, r11, r12
    ldr  r8, [sp, #8]
    movs r4, #0
    movs r5, #0
    movs r6, #0
    movs r7, #0
2:
    ldr  r0, [r11]
    ldr  r1, [r11, r12]
    ldr  r2, [r11, r12, lsl #1]
    add  r10, r11, r12, lsl #1
    ldr  r3, [r10, r12]
    add  r11, r11, #4

    .macro NIB4 sh, op
    and  r10, r9, r0, \op #\sh
    ldr  r10, [r8, r10]
    add  r4, r10
    and  r10, r9, r1, \op #\sh
    ldr  r10, [r8, r10]
    add  r5, r10
    and  r10, r9, r2, \op #\sh
    ldr  r10, [r8, r10]
    add  r6, r10
    and  r10, r9, r3, \op #\sh
    ldr  r10, [r8, r10]
    add  r7, r10
    add  r8, r8, #64
    .endm

    NIB4 2, lsl
    NIB4 2, lsr
    NIB4 6, lsr
    NIB4 10, lsr
    NIB4 14, lsr
    NIB4 18, lsr
    NIB4 22, lsr
    NIB4 26, lsr
    cmp  r11, lr
    bne  2b

    ldr  r10, [sp, #52]
    stmia r10!, {r4-r7}
    str  r10, [sp, #52]
    ldr  r11, [sp]
    add  r11, r11, r12, lsl #2
    str  r11, [sp]
    ldr  r10, [sp, #4]
    subs r10, r10, #1
    str  r10, [sp, #4]
    bne  1b
    add  sp, #16
    pop  {r4-r11, pc}
    .size atm_ek_lut_rows4_m3, . - atm_ek_lut_rows4_m3

/* void atm_ek_lut8_rows4_m3(const uint8_t *b, uint32_t nb, uint32_t groups,
 *                           const int32_t *t, int32_t *out);
 * The byte-table rows (engine_kernels.h; twin atm_ek_lut8_rows in
 * core/engine.c): rows of nb >= 1 bytes, in groups of four; out[r] =
 * sum_j t[256 j + b[r nb + j]]. Four rows walk the tables together, a row
 * byte being one post-incremented byte load, one table load and one add;
 * 3.4 instructions a row byte (a second copy of the loop takes the last
 * nb % 4 bytes of each row one at a time; a third, for nb = 16, has the
 * row bytes unrolled: 3.3).
 *   r0-r2, lr scratch   r3 row 0's end   r4-r7 the sums   r8-r11 the rows
 *   r12 the table walker (256 words a column group) */
    .macro LUT8GROUP
    ldrb r0, [r8], #1
    ldrb r1, [r9], #1
    ldrb r2, [r10], #1
    ldrb lr, [r11], #1
    ldr  r0, [r12, r0, lsl #2]
    ldr  r1, [r12, r1, lsl #2]
    ldr  r2, [r12, r2, lsl #2]
    ldr  lr, [r12, lr, lsl #2]
    add  r4, r0
    add  r5, r1
    add  r6, r2
    add  r7, lr
    add  r12, r12, #1024
    .endm

    /* the rows' loop; tail: nb % 4 may be nonzero (nb >= 1), else nb % 4 == 0;
     * tail 2: nb == 16 (64-column rows, every row of the board model), the
     * row bytes unrolled with no inner loop */
    .macro LUT8ROWS tail
1:
    ldr  r0, [sp]
    add  r9, r8, r0
    add  r10, r9, r0
    add  r11, r10, r0
    .if \tail == 1
    bic  r3, r0, #3
    add  r3, r8, r3              /* row 0's end of its 4-byte blocks */
    .elseif \tail == 0
    mov  r3, r9
    .endif
    ldr  r12, [sp, #8]
    movs r4, #0
    movs r5, #0
    movs r6, #0
    movs r7, #0
    .if \tail == 1
    cmp  r8, r3
    beq  5f
    .endif
    .if \tail == 2
    .rept 16
    LUT8GROUP
    .endr
    .else
2:
    .rept 4
    LUT8GROUP
    .endr
    cmp  r8, r3
    bne  2b
    .endif
    .if \tail == 1
5:
    ldr  r3, [sp]
    and  r3, r3, #3              /* the last nb % 4 bytes one at a time */
3:
    LUT8GROUP
    subs r3, r3, #1
    bne  3b
    .endif
    ldr  r0, [sp, #52]
    stmia r0!, {r4-r7}
    str  r0, [sp, #52]
    mov  r8, r11                 /* row 3's end: the next group's row 0 */
    ldr  r0, [sp, #4]
    subs r0, r0, #1
    str  r0, [sp, #4]
    bne  1b
    add  sp, #16
    pop  {r4-r11, pc}
    .endm

    .align 2
    .global atm_ek_lut8_rows4_m3
    .type atm_ek_lut8_rows4_m3, %function
    .thumb_func
atm_ek_lut8_rows4_m3:
    push {r4-r11, lr}
    sub  sp, #16
    /* [sp] nb, [sp, #4] groups, [sp, #8] t; out at [sp, #52] */
    str  r1, [sp]
    str  r2, [sp, #4]
    str  r3, [sp, #8]
    mov  r8, r0
    cmp  r1, #16
    beq  .Llut8_16
    tst  r1, #3
    bne  .Llut8_tail
    LUT8ROWS 0
.Llut8_tail:
    LUT8ROWS 1
.Llut8_16:
    LUT8ROWS 2
    .size atm_ek_lut8_rows4_m3, . - atm_ek_lut8_rows4_m3

/* void atm_ek_lut8_build_m3(const int16_t *x, uint32_t cols, int32_t *t);
 * The byte tables (engine_kernels.h; twin atm_ek_lut8_build in
 * core/engine.c) for cols a positive multiple of 4: per group of 4 columns
 * a, b, c, d the 9 sums of a, b with trits (codes 0, 1, 3 of bits 0-3) stay
 * in registers, and each of the 9 sums of c, d (bits 4-7) is added to them
 * and stored at fixed offsets, adjacent pairs by one STRD: 81 entries in
 * 122 instructions.
 *   r0 the tables   r1 x, then scratch   r2-r9 a, -a, b, a+b, b-a, -b, a-b,
 *   -a-b   r10 c   r11 d   r12 the (c, d) sum   lr scratch; [sp] x's end,
 *   [sp, #4] x */
    .macro LUT8ROW q, offj
    add  lr, \q, r2
    strd \q, lr, [r0, #(64 * \offj)]
    add  lr, \q, r3
    add  r1, \q, r4
    strd lr, r1, [r0, #(64 * \offj + 12)]
    add  lr, \q, r5
    str  lr, [r0, #(64 * \offj + 20)]
    add  lr, \q, r6
    str  lr, [r0, #(64 * \offj + 28)]
    add  lr, \q, r7
    add  r1, \q, r8
    strd lr, r1, [r0, #(64 * \offj + 48)]
    add  lr, \q, r9
    str  lr, [r0, #(64 * \offj + 60)]
    .endm

    .align 2
    .global atm_ek_lut8_build_m3
    .type atm_ek_lut8_build_m3, %function
    .thumb_func
atm_ek_lut8_build_m3:
    push {r4-r11, lr}
    sub  sp, #8
    add  r1, r0, r1, lsl #1
    str  r1, [sp]
    mov  r1, r0
    mov  r0, r2
1:
    ldrsh r2, [r1], #2
    ldrsh r4, [r1], #2
    ldrsh r10, [r1], #2
    ldrsh r11, [r1], #2
    str  r1, [sp, #4]                /* r1 is the rows' second scratch */
    rsb  r3, r2, #0
    add  r5, r2, r4
    sub  r6, r4, r2
    rsb  r7, r4, #0
    sub  r8, r2, r4
    rsb  r9, r5, #0
    movs r12, #0
    strd r12, r2, [r0]
    strd r3, r4, [r0, #12]
    str  r5, [r0, #20]
    str  r6, [r0, #28]
    strd r7, r8, [r0, #48]
    str  r9, [r0, #60]
    LUT8ROW r10, 1
    rsb  r12, r10, #0
    LUT8ROW r12, 3
    LUT8ROW r11, 4
    add  r12, r10, r11
    LUT8ROW r12, 5
    sub  r12, r11, r10
    LUT8ROW r12, 7
    rsb  r12, r11, #0
    LUT8ROW r12, 12
    sub  r12, r10, r11
    LUT8ROW r12, 13
    add  r12, r10, r11
    rsb  r12, r12, #0
    LUT8ROW r12, 15
    add  r0, r0, #1024
    ldr  r1, [sp, #4]
    ldr  lr, [sp]
    cmp  r1, lr
    bne  1b
    add  sp, #8
    pop  {r4-r11, pc}
    .size atm_ek_lut8_build_m3, . - atm_ek_lut8_build_m3

/* int atm_ek_dots_m3(const int16_t *q, const int8_t *k, int dh, int n, int32_t *out);
 * Attention's dot products (engine_kernels.h; twin atm_ek_dots_ref) for
 * dh = 8, 16, 32 or 64, k word aligned, n >= 1; returns 0, or 1 without
 * touching anything for another dh (the caller then runs the C kernel).
 * Eight query values at a time sit in r4-r11; each key row's 8 int8 values
 * of that pass are two word loads, four sign extensions and four
 * multiply-adds each, the key walker advanced by the first load: 2.6
 * instructions a product at dh = 16.
 *   r0 the key walker   r1 out   r2 out's end   r3 four keys   r12 one key
 *   lr the sum   [sp] q's next 8   [sp, #4] k's next 8 columns   [sp, #8] passes left */
    .macro DOT4 w, qa, qb, qc, qd, first
    sxtb r12, \w
    .if \first
    mul  lr, r12, \qa
    .else
    mla  lr, r12, \qa, lr
    .endif
    sxtb r12, \w, ror #8
    mla  lr, r12, \qb, lr
    sxtb r12, \w, ror #16
    mla  lr, r12, \qc, lr
    asr  r12, \w, #24
    mla  lr, r12, \qd, lr
    .endm

    /* one pass of 8 columns over the n keys; first: store, else add */
    .macro DOTPASS dh, first
1:
    ldr  r3, [r0], #\dh
    .if \first
    DOT4 r3, r4, r5, r6, r7, 1
    .else
    ldr  lr, [r1]
    DOT4 r3, r4, r5, r6, r7, 0
    .endif
    ldr  r3, [r0, #(4 - \dh)]
    DOT4 r3, r8, r9, r10, r11, 0
    str  lr, [r1], #4
    cmp  r1, r2
    bne  1b
    .endm

    .macro DOTS dh
    push {r4-r11, lr}
    sub  sp, #16
    str  r0, [sp]
    str  r1, [sp, #4]
    movs r12, #(\dh / 8)
    str  r12, [sp, #8]
    ldr  r1, [sp, #52]               /* out */
    add  r2, r1, r3, lsl #2
    str  r1, [sp, #12]
    movs r3, #1                      /* the first pass stores */
2:
    ldr  r12, [sp]
    ldrsh r4, [r12], #2
    ldrsh r5, [r12], #2
    ldrsh r6, [r12], #2
    ldrsh r7, [r12], #2
    ldrsh r8, [r12], #2
    ldrsh r9, [r12], #2
    ldrsh r10, [r12], #2
    ldrsh r11, [r12], #2
    str  r12, [sp]
    ldr  r0, [sp, #4]
    add  r12, r0, #8
    str  r12, [sp, #4]
    ldr  r1, [sp, #12]
    cbz  r3, 3f
    DOTPASS \dh, 1
    b    4f
3:
    DOTPASS \dh, 0
4:
    movs r3, #0
    ldr  r12, [sp, #8]
    subs r12, r12, #1
    str  r12, [sp, #8]
    bne  2b
    add  sp, #16
    movs r0, #0
    pop  {r4-r11, pc}
    .endm

    .align 2
    .global atm_ek_dots_m3
    .type atm_ek_dots_m3, %function
    .thumb_func
atm_ek_dots_m3:
    cmp  r2, #16
    beq  .Ldots16
    cmp  r2, #64
    beq  .Ldots64
    cmp  r2, #32
    beq  .Ldots32
    cmp  r2, #8
    beq  .Ldots8
    movs r0, #1
    bx   lr
.Ldots16:
    DOTS 16
.Ldots64:
    DOTS 64
.Ldots32:
    DOTS 32
.Ldots8:
    DOTS 8
    .size atm_ek_dots_m3, . - atm_ek_dots_m3

/* int atm_ek_mix_m3(const int32_t *w, const int32_t *idx, const int8_t *base, int n, int d, int32_t *out);
 * Attention's mix (engine_kernels.h; twin atm_ek_mix_ref): out[c] = sum_i
 * w[i] base[idx[i] d + c] for d a positive multiple of 8, base word
 * aligned, 1 <= n <= 32; returns 0, or 1 without touching out otherwise.
 * The (weight, row) pairs go to the stack once; then eight output columns
 * at a time sit in r4-r11 while the pairs are walked: a pair's 8 values are
 * one LDRD, eight sign extensions and eight multiply-adds, walked from
 * the last pair down to sp (the sums are exact, so their order changes
 * nothing): 2.6 instructions a product.
 *   r0 weight   r1 row, then one value   r2, r3 four values each   r12 pair walker
 *   lr column offset   [sp, #256] pairs' end   [sp, #260] out   [sp, #264] d */
    .macro MIX4 w, a0, a1, a2, a3
    sxtb r1, \w
    mla  \a0, r1, r0, \a0
    sxtb r1, \w, ror #8
    mla  \a1, r1, r0, \a1
    sxtb r1, \w, ror #16
    mla  \a2, r1, r0, \a2
    asr  r1, \w, #24
    mla  \a3, r1, r0, \a3
    .endm

    .align 2
    .global atm_ek_mix_m3
    .type atm_ek_mix_m3, %function
    .thumb_func
atm_ek_mix_m3:
    push {r4-r11, lr}
    ldr  r12, [sp, #36]              /* d */
    tst  r12, #7
    bne  9f
    cmp  r12, #0
    beq  9f
    tst  r2, #3
    bne  9f
    cmp  r3, #1
    blt  9f
    cmp  r3, #32
    bgt  9f
    sub  sp, #272
    str  r12, [sp, #264]
    ldr  r4, [sp, #312]              /* out */
    str  r4, [sp, #260]
    mov  r4, sp
1:                                   /* pairs: (w[i], base + idx[i] d) */
    ldr  r5, [r0], #4
    ldr  r6, [r1], #4
    mla  r6, r6, r12, r2
    strd r5, r6, [r4], #8
    subs r3, r3, #1
    bne  1b
    str  r4, [sp, #256]
    mov  lr, #0
2:
    movs r4, #0
    movs r5, #0
    movs r6, #0
    movs r7, #0
    mov  r8, #0
    mov  r9, #0
    mov  r10, #0
    mov  r11, #0
    ldr  r12, [sp, #256]
3:                                   /* the pairs from the last down to sp */
    ldrd r0, r1, [r12, #-8]!
    add  r1, r1, lr
    ldrd r2, r3, [r1]
    MIX4 r2, r4, r5, r6, r7
    MIX4 r3, r8, r9, r10, r11
    cmp  r12, sp
    bne  3b
    ldr  r0, [sp, #260]
    stmia r0!, {r4-r11}
    str  r0, [sp, #260]
    add  lr, lr, #8
    ldr  r0, [sp, #264]
    cmp  lr, r0
    bne  2b
    add  sp, #272
    movs r0, #0
    pop  {r4-r11, pc}
9:
    movs r0, #1
    pop  {r4-r11, pc}
    .size atm_ek_mix_m3, . - atm_ek_mix_m3

/* void atm_ek_conv5_m3(const int8_t *t, int nc, const int16_t *u,
 *                      const int8_t *const rp[4], const int32_t e[4], int32_t *acc);
 * The conv taps (twin atm_ek_conv_ref) for K = 5 and all 5 taps, nc >= 1:
 * acc[c] = t[5c] u[c] + sum_{j=1..4} t[5c + j] (rp[j-1][c] << e[j-1]), a
 * channel at a time, its trits and ring values loaded with post-increment
 * and summed in a register by MUL / MLA: 23 instructions a channel (the C
 * of atm_ek_conv_m0 spills the ring pointers and shifts: 36).
 *   r0 trits   r1, r2 scratch   r3 u   r4-r7 the ring rows   r8-r11 their
 *   shifts   r12 acc   lr the sum; [sp] acc's end */
    .align 2
    .global atm_ek_conv5_m3
    .type atm_ek_conv5_m3, %function
    .thumb_func
atm_ek_conv5_m3:
    push {r4-r11, lr}
    sub  sp, #8
    ldr  r12, [sp, #44]              /* e */
    ldr  r8, [r12]
    ldr  r9, [r12, #4]
    ldr  r10, [r12, #8]
    ldr  r11, [r12, #12]
    ldm  r3, {r4-r7}
    ldr  r12, [sp, #48]              /* acc */
    add  r1, r12, r1, lsl #2
    str  r1, [sp]
    mov  r3, r2

    .macro CTAP ring, shift
    ldrsb r1, [\ring], #1
    lsl  r1, r1, \shift
    ldrsb r2, [r0], #1
    mla  lr, r1, r2, lr
    .endm
1:
    ldrsh r1, [r3], #2
    ldrsb r2, [r0], #1
    mul  lr, r1, r2
    CTAP r4, r8
    CTAP r5, r9
    CTAP r6, r10
    CTAP r7, r11
    str  lr, [r12], #4
    ldr  r1, [sp]
    cmp  r12, r1
    bne  1b
    add  sp, #8
    pop  {r4-r11, pc}
    .size atm_ek_conv5_m3, . - atm_ek_conv5_m3

/* void atm_ek_ssm_m3s(int32_t *s, const uint8_t *a, const uint8_t *bc,
 *                     const int16_t *u, int d, int sb);
 * atm_ek_ssm_ref for -1 <= sb <= 31 and d >= 1 (the C wrapper in
 * engine_m3.c checks): t1 = (a s + 2^14) >> 15 = floor((2^17 a s + 2^31) /
 * 2^32), the high word of SMULL(2^16 a, 2 s) plus its low word's top bit
 * (|s| <= 2^30 - 1, as the engine keeps the state, so 2 s fits int32),
 * t2 = ((bc u << ls) + hb) >> rs (ls = 1, 0 or 0; rs = 0, 0 or sb), their
 * sum with ADDS, an overflow (V) beyond the clamp on t2's side, else SSAT
 * to [-2^30, 2^30 - 1] and -2^30 moved to -(2^30 - 1). a and bc are int16
 * at any address (unaligned LDRSH). 21 instructions an element.
 *   r0 s   r1 a   r2 bc   r3 u   r4 s's end   r5 hb   r6 rs   r7 ls
 *   r8, r9 the product   r10-r12, lr scratch */
    .align 2
    .global atm_ek_ssm_m3s
    .type atm_ek_ssm_m3s, %function
    .thumb_func
atm_ek_ssm_m3s:
    push {r4-r11, lr}
    ldr  r4, [sp, #36]               /* d */
    add  r4, r0, r4, lsl #2
    ldr  r6, [sp, #40]               /* sb */
    movs r5, #0
    movs r7, #0
    cmp  r6, #1
    bge  2f
    negs r7, r6                      /* sb 0 / -1: shift left by 0 / 1, no rounding */
    movs r6, #0
    b    1f
2:
    subs r5, r6, #1
    movs r10, #1
    lsl  r5, r10, r5                 /* hb = 2^(sb - 1) */
1:
    ldr  r10, [r0]
    ldrsh r11, [r1], #2
    lsl  r10, r10, #1                /* 2 s: |s| <= 2^30 - 1 */
    lsl  r11, r11, #16               /* 2^16 a */
    smull r8, r9, r11, r10           /* 2^17 a s */
    add  r8, r9, r8, lsr #31         /* t1 = (a s + 2^14) >> 15: the high word plus the low word's top bit */
    ldrsh r11, [r2], #2
    ldrsh r12, [r3], #2
    mul  r11, r11, r12               /* bc u */
    lsl  r11, r11, r7
    add  r11, r11, r5
    asr  r11, r11, r6                /* t2 */
    adds r12, r8, r11
    bvs  3f
    ssat r12, #31, r12
    cmn  r12, #0x40000000
    it   eq
    addeq r12, r12, #1
    str  r12, [r0], #4
    cmp  r0, r4
    bne  1b
    pop  {r4-r11, pc}
3:                                   /* t1 + t2 overflowed: beyond the clamp on t2's side */
    mvn  r12, #0xC0000000            /* 2^30 - 1 */
    cmp  r11, #0
    it   lt
    neglt r12, r12
    str  r12, [r0], #4
    cmp  r0, r4
    bne  1b
    pop  {r4-r11, pc}
    .size atm_ek_ssm_m3s, . - atm_ek_ssm_m3s

/* void atm_ek_ln_out_m3s(int16_t *u, const uint8_t *g, const uint8_t *b, int d,
 *                        int32_t r15, int sg, int sb);
 * atm_ek_ln_out_ref for 15 <= sg <= 31, 1 <= sb <= 30 and d >= 1 (the
 * common case; the C wrapper in engine_m3.c checks): u = sat16(round(u gr
 * / 2^sg) + round(b / 2^sb)), gr = r15 g, the product's rounded quotient
 * from SMLAL's two words (|u gr| < 2^45: it fits int32), SSAT to 16 bits
 * and -32768 moved to -32767. g and b are int16 at any address. 21
 * instructions an element; 18 for sg >= 16, where u 2^(32 - sg) fits int32
 * and the rounded quotient is the high word of its product with gr plus
 * the low word's top bit (floor((P + 2^31) / 2^32), P = u gr 2^(32 - sg)).
 *   r0 u   r1 g   r2 b   r3 u's end   r4 r15   r5 sg   r6 32 - sg
 *   r7 2^(sg-1)   r8 sb   r9 2^(sb-1)   r10-r12, lr scratch */
    /* the quotient in r12 plus the rounded beta, saturated and stored; the
     * loop's compare */
    .macro LNOUT_TAIL
    ldrsh r11, [r2], #2
    add  r11, r11, r9
    asr  r11, r11, r8                /* the rounded beta */
    add  r12, r12, r11
    ssat r12, #16, r12
    cmn  r12, #32768
    it   eq
    addeq r12, r12, #1
    strh r12, [r0], #2
    cmp  r0, r3
    .endm

    .align 2
    .global atm_ek_ln_out_m3s
    .type atm_ek_ln_out_m3s, %function
    .thumb_func
atm_ek_ln_out_m3s:
    push {r4-r11, lr}
    add  r3, r0, r3, lsl #1
    ldr  r4, [sp, #36]               /* r15 */
    ldr  r5, [sp, #40]               /* sg */
    ldr  r8, [sp, #44]               /* sb */
    rsb  r6, r5, #32
    movs r10, #1
    sub  r11, r5, #1
    lsl  r7, r10, r11
    sub  r11, r8, #1
    lsl  r9, r10, r11
    cmp  r5, #16
    blt  1f
2:                                   /* sg >= 16: u 2^(32-sg) fits int32 */
    ldrsh r10, [r1], #2
    mul  r10, r10, r4                /* gr */
    ldrsh r11, [r0]
    lsl  r11, r11, r6
    smull r12, lr, r11, r10          /* u gr 2^(32-sg) */
    add  r12, lr, r12, lsr #31       /* its high word, rounded: the quotient */
    LNOUT_TAIL
    bne  2b
    pop  {r4-r11, pc}
1:
    ldrsh r10, [r1], #2
    mul  r10, r10, r4                /* gr */
    ldrsh r11, [r0]
    mov  r12, r7
    movs lr, #0
    smlal r12, lr, r11, r10          /* u gr + 2^(sg-1) */
    lsr  r12, r12, r5
    lsl  lr, lr, r6
    orr  r12, r12, lr                /* the rounded quotient */
    LNOUT_TAIL
    bne  1b
    pop  {r4-r11, pc}
    .size atm_ek_ln_out_m3s, . - atm_ek_ln_out_m3s

/* ---- LayerNorm's sums and the int8 quantisers' extremes ----------------
 * void atm_ek_ln_stats_m3s(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);
 * atm_ek_ln_stats_ref for d >= 1: the 64-bit sum by ADDS / ADC, the
 * running minimum and maximum by a compare and a branch around the move
 * (they change at few elements: 2 instructions when they do not, where a
 * conditional move takes 3), two values a load: 7.5 instructions an element.
 *   r0 x   r1 scratch   r2 sum   r3 lo   r4, r5 min, max   r6, r7 the sum
 *   r8 x's end */
    .align 2
    .global atm_ek_ln_stats_m3s
    .type atm_ek_ln_stats_m3s, %function
    .thumb_func
atm_ek_ln_stats_m3s:
    push {r4-r8, lr}
    ldr  r4, [r0]
    mov  r5, r4
    movs r6, #0
    movs r7, #0
    add  r8, r0, r1, lsl #2
    tst  r1, #1
    beq  1f
    ldr  r1, [r0], #4                /* odd d: x[0] alone (already the extremes) */
    adds r6, r6, r1
    adc  r7, r7, r1, asr #31
    cmp  r0, r8
    beq  9f
1:                                   /* two values a round */
    ldrd r1, lr, [r0], #8
    adds r6, r6, r1
    adc  r7, r7, r1, asr #31
    adds r6, r6, lr
    adc  r7, r7, lr, asr #31
    cmp  r1, r4
    bge  2f
    mov  r4, r1
2:
    cmp  r1, r5
    ble  3f
    mov  r5, r1
3:
    cmp  lr, r4
    bge  4f
    mov  r4, lr
4:
    cmp  lr, r5
    ble  5f
    mov  r5, lr
5:
    cmp  r0, r8
    bne  1b
9:
    strd r6, r7, [r2]
    str  r4, [r3]
    ldr  r1, [sp, #24]               /* hi */
    str  r5, [r1]
    pop  {r4-r8, pc}
    .size atm_ek_ln_stats_m3s, . - atm_ek_ln_stats_m3s


/* int atm_ek_topk_ins_m3(const int32_t *sc, int run, int32_t t0, int32_t *pr, int cnt, int keff);
 * Attention's kept set by sorted insertion (twin atm_ek_topk_ins_ref,
 * engine_kernels.h): pr[0] is a sentinel pair whose score is INT32_MAX,
 * pr[1 .. cnt] the kept (score, position) pairs, highest score first and
 * equal scores older first; sc[0, run) enter in turn with positions
 * t0 + i. While fewer than keff are kept a score is inserted; then only a
 * score strictly above the last kept one is, and the last kept one drops
 * out. Scores must be below INT32_MAX (the sentinel stops every shift,
 * so the shift has no bounds test). Returns the new count. run >= 0,
 * 0 <= cnt <= keff, keff >= 1.
 * A rejected score costs 5 instructions, a shift by one pair 4.5.
 *   r0 sc walker   r1 sc's end   r2 t0 - (sc >> 2) - 1 (a position from
 *   the walker)   r3 pr   r4 cnt   r5 keff   r6 the last kept score
 *   r7 &pr[keff]   r8 the score   r9 the pair above the free slot
 *   r10, r11, lr scratch */
    .macro TOPK_SHIFT
1:
    .rept 2                          /* two shifts a round */
    ldrd lr, r11, [r9], #-8
    cmp  lr, r8
    bge  2f
    strd lr, r11, [r9, #16]
    .endr
    b    1b
2:
    add  r10, r2, r0, lsr #2
    strd r8, r10, [r9, #16]
    .endm

    .align 2
    .global atm_ek_topk_ins_m3
    .type atm_ek_topk_ins_m3, %function
    .thumb_func
atm_ek_topk_ins_m3:
    push {r4-r11, lr}
    ldr  r4, [sp, #36]               /* cnt */
    ldr  r5, [sp, #40]               /* keff */
    add  r1, r0, r1, lsl #2
    sub  r2, r2, r0, lsr #2
    sub  r2, r2, #1
    add  r7, r3, r5, lsl #3
    cmp  r4, r5
    bge  5f
3:                                   /* filling: every score goes in */
    cmp  r0, r1
    beq  9f
    ldr  r8, [r0], #4
    add  r9, r3, r4, lsl #3
    adds r4, r4, #1
    TOPK_SHIFT
    cmp  r4, r5
    blt  3b
5:
    ldr  r6, [r7]
6:                                   /* full: only a score above the last kept */
    cmp  r0, r1
    beq  9f
    ldr  r8, [r0], #4
    cmp  r8, r6
    ble  6b
    sub  r9, r7, #8
    TOPK_SHIFT
    ldr  r6, [r7]
    b    6b
9:
    mov  r0, r4
    pop  {r4-r11, pc}
    .size atm_ek_topk_ins_m3, . - atm_ek_topk_ins_m3

/* int atm_ek_scores_m3s(const int32_t *dots, const uint8_t *kexp, int n,
 *                       int32_t m, int sbase, int32_t *out);
 * atm_ek_scores_m3's common case in Thumb-2: out[j] = the product P =
 * dots[j] m (0 <= m < 2^30) divided by 2^sh, sh = sbase - kexp[j],
 * rounded, while 32 <= sh <= 62; returns how many keys it did (it stops
 * at the first other sh, or at n). T = floor(P / 2^31) = 2 hi + (lo >> 31)
 * fits int32 (|P| < 2^61), and the rounded quotient is ((T >> (sh - 32))
 * + 1) >> 1 (floor((P + 2^(sh-1)) / 2^sh) = floor((floor(P / 2^(sh-1))
 * + 1) / 2)); |r| <= 2^29: no clamp. 14 instructions a key.
 *   r0 dots   r1 kexp   r2 dots' end   r3 m   r4 sbase - 32   r5 out
 *   r6 dots' start   r7 sh - 32   r8 the dot, then lo   r9 hi, then T */
    .align 2
    .global atm_ek_scores_m3s
    .type atm_ek_scores_m3s, %function
    .thumb_func
atm_ek_scores_m3s:
    push {r4-r9, lr}
    ldr  r4, [sp, #28]               /* sbase */
    sub  r4, r4, #32
    ldr  r5, [sp, #32]               /* out */
    mov  r6, r0
    add  r2, r0, r2, lsl #2
    cmp  r0, r2
    beq  9f
1:
    ldrb r7, [r1], #1
    sub  r7, r4, r7                  /* sh - 32 */
    cmp  r7, #30
    bhi  9f
    ldr  r8, [r0], #4
    smull r8, r9, r8, r3
    lsl  r9, r9, #1
    orr  r9, r9, r8, lsr #31         /* T */
    asr  r9, r9, r7
    add  r9, r9, #1
    asr  r9, r9, #1
    str  r9, [r5], #4
    cmp  r0, r2
    bne  1b
9:
    sub  r0, r0, r6
    lsr  r0, r0, #2
    pop  {r4-r9, pc}
    .size atm_ek_scores_m3s, . - atm_ek_scores_m3s
