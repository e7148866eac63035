/* core/engine_arm.S — scans in the Thumb instructions every Cortex-M has
 * (ARMv6-M's Thumb-1, which ARMv7-M runs too): assembled for the M0 and
 * the M3 builds alike (mcu/CMakeLists.txt). The plain-C twins are in
 * core/engine_ref.c; tests/mcu/kernels.c checks on QEMU's M0 and M3 that
 * they agree.
 *
 * int atm_ek_first_above(const int32_t *v, int n, int32_t t);
 * The first i < n with v[i] > t (signed), or n; n >= 0, v word aligned.
 * Four values a load (LDM) and a compare and branch each: 2.75
 * instructions a value.
 *   r0 the walker   r1 the end   r2 t   r3 v   r4-r7 four values
 *   r12 the end of the whole blocks of four */
    .syntax unified
    .thumb
    .text
    .align 2
    .global atm_ek_first_above
    .type atm_ek_first_above, %function
    .thumb_func
atm_ek_first_above:
    push {r4-r7, lr}
    movs r3, r0
    lsls r1, r1, #2                  /* n's bytes */
    lsrs r4, r1, #4
    lsls r4, r4, #4
    adds r4, r0, r4                  /* v + 4 floor(n / 4) */
    mov  r12, r4
    adds r1, r0, r1                  /* the end */
    cmp  r0, r4
    beq  2f
1:
    ldm  r0!, {r4-r7}
    cmp  r4, r2
    bgt  4f
    cmp  r5, r2
    bgt  5f
    cmp  r6, r2
    bgt  6f
    cmp  r7, r2
    bgt  7f
    cmp  r0, r12
    bne  1b
2:                                   /* the last n % 4 */
    cmp  r0, r1
    beq  3f
    ldm  r0!, {r4}
    cmp  r4, r2
    ble  2b
    subs r0, r0, #4
    b    8f
3:
    subs r0, r0, r3
    lsrs r0, r0, #2
    pop  {r4-r7, pc}
4:
    subs r0, r0, #16
    b    8f
5:
    subs r0, r0, #12
    b    8f
6:
    subs r0, r0, #8
    b    8f
7:
    subs r0, r0, #4
8:
    subs r0, r0, r3
    asrs r0, r0, #2
    pop  {r4-r7, pc}
    .size atm_ek_first_above, . - atm_ek_first_above

/* ---- the quantisers' loops (the twins: core/engine_m0.c's C loops of
 * QUANT_BODY; tests/mcu/kernels.c compares on QEMU's M0 and M3) ------------- */

/* r1 and r5 into the running extremes r3 (min) and r4 (max) */
    .macro MINMAX2
    cmp  r1, r3
    bge  3f
    movs r3, r1
3:
    cmp  r1, r4
    ble  4f
    movs r4, r1
4:
    cmp  r5, r3
    bge  6f
    movs r3, r5
6:
    cmp  r5, r4
    ble  7f
    movs r4, r5
7:
    .endm

/* the extremes' loop end (r6 pairs left, back to 2:) and the stores */
    .macro MMLOOP
    MINMAX2
    subs r6, #1
    bne  2b
9:
    str  r3, [r2]
    str  r4, [r2, #4]
    pop  {r4, r5, r6, pc}
    .endm

/* void atm_ek_minmax32_m0(const int32_t *v, int n, int32_t *mm);
 * n >= 1: mm[0] = the smallest v, mm[1] = the largest; two values a load,
 * a compare and a branch around each rare move: 5.5 instructions a value. */
    .align 2
    .global atm_ek_minmax32_m0
    .type atm_ek_minmax32_m0, %function
    .thumb_func
atm_ek_minmax32_m0:
    push {r4, r5, r6, lr}
    ldm  r0!, {r3}                   /* lo */
    movs r4, r3                      /* hi */
    subs r1, r1, #1
    lsrs r6, r1, #1                  /* pairs left; C: one single first */
    bcc  1f
    ldm  r0!, {r5}
    cmp  r5, r3
    bge  5f
    movs r3, r5
5:
    cmp  r5, r4
    ble  1f
    movs r4, r5
1:
    cmp  r6, #0
    beq  9f
2:
    ldm  r0!, {r1, r5}
    MMLOOP
    .size atm_ek_minmax32_m0, . - atm_ek_minmax32_m0

/* void atm_ek_minmax16_m0(const int16_t *v, int n, int32_t *mm);
 * the same for int16 values, n >= 2 even and v word aligned (the caller
 * checks): a word, its two halves sign-extended. */
    .align 2
    .global atm_ek_minmax16_m0
    .type atm_ek_minmax16_m0, %function
    .thumb_func
atm_ek_minmax16_m0:
    push {r4, r5, r6, lr}
    ldr  r3, [r0]
    sxth r3, r3                      /* lo */
    movs r4, r3                      /* hi */
    lsrs r6, r1, #1                  /* words */
2:
    ldm  r0!, {r5}
    sxth r1, r5
    asrs r5, r5, #16
    MMLOOP
    .size atm_ek_minmax16_m0, . - atm_ek_minmax16_m0

/* void atm_ek_qstore32_m0(const int32_t *src, int n, int8_t *dst, int sh);
 * dst[i] = (src[i] + (2^sh >> 1)) >> sh for n >= 1, 0 <= sh <= 31 (the
 * quantisers' second loop: the result fits int8 by the choice of sh);
 * four values a load: 4 instructions a value. */
    .align 2
    .global atm_ek_qstore32_m0
    .type atm_ek_qstore32_m0, %function
    .thumb_func
atm_ek_qstore32_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    push {r4}
    movs r4, #1
    lsls r4, r3
    lsrs r4, r4, #1                  /* half */
    lsls r5, r1, #30
    lsrs r5, r5, #30
    mov  r12, r5                     /* n % 4 */
    lsrs r5, r1, #2
    lsls r5, r5, #4
    adds r5, r0, r5
    mov  r8, r5                      /* the end of the blocks of four */
    cmp  r0, r8
    beq  3f
2:
    ldm  r0!, {r1, r5, r6, r7}
    adds r1, r1, r4
    asrs r1, r3
    strb r1, [r2, #0]
    adds r5, r5, r4
    asrs r5, r3
    strb r5, [r2, #1]
    adds r6, r6, r4
    asrs r6, r3
    strb r6, [r2, #2]
    adds r7, r7, r4
    asrs r7, r3
    strb r7, [r2, #3]
    adds r2, #4
    cmp  r0, r8
    bne  2b
3:
    mov  r1, r12
    cmp  r1, #0
    beq  9f
4:
    ldm  r0!, {r5}
    adds r5, r5, r4
    asrs r5, r3
    strb r5, [r2, #0]
    adds r2, #1
    subs r1, #1
    bne  4b
9:
    pop  {r4}
    mov  r8, r4
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_qstore32_m0, . - atm_ek_qstore32_m0

/* void atm_ek_qstore16_m0(const int16_t *src, int n, int8_t *dst, int sh);
 * the same from int16 values, n >= 2 even and src word aligned (the caller
 * checks): a word, its two halves sign-extended. */
    .align 2
    .global atm_ek_qstore16_m0
    .type atm_ek_qstore16_m0, %function
    .thumb_func
atm_ek_qstore16_m0:
    push {r4, r5, r6, lr}
    movs r4, #1
    lsls r4, r3
    lsrs r4, r4, #1                  /* half */
    lsrs r1, r1, #1                  /* words */
2:
    ldm  r0!, {r5}
    sxth r6, r5
    asrs r5, r5, #16
    adds r6, r6, r4
    asrs r6, r3
    strb r6, [r2, #0]
    adds r5, r5, r4
    asrs r5, r3
    strb r5, [r2, #1]
    adds r2, #2
    subs r1, #1
    bne  2b
    pop  {r4, r5, r6, pc}
    .size atm_ek_qstore16_m0, . - atm_ek_qstore16_m0

