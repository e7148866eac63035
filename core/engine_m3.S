/* core/engine_m3.S — the pair-sum table row kernel in Thumb-2 for the
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
