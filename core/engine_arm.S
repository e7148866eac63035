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
