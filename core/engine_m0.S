/* core/engine_m0.S — the bit-plane row kernel in Thumb-1 for the Cortex-M0
 * and M0+ (ARMv6-M; built for the micro:bit and the Pico only). Its plain-C
 * twin is atm_ek_planes_rows in core/engine.c (every other target runs that);
 * tests/mcu/kernels.c checks on QEMU's Cortex-M0 that the two agree.
 *
 * void atm_ek_planes_rows_m0(const uint8_t *b, uint32_t stride, uint32_t rows,
 *                            uint32_t nbytes, const int32_t *tab, int32_t *out,
 *                            int add);
 * rows >= 1, nbytes >= 4 and a multiple of 4. out[r] (= or += with add) =
 * S0 - 2 S1 over the row's bytes v, S0 += tab_j[PL0[v]], S1 += tab_j[PL1[v]]
 * (byte offsets; tab_j = the 16-word table of byte j, 64 bytes each).
 *
 * 8 instructions a row byte plus 3 per 4 bytes (GCC keeps the table bases
 * of the C loop on the stack: 12 a byte), 12 a row. Registers:
 *   r0 b   r1 t   r2 s0   r3 s1   r4 v   r5 a   r6 PL0   r7 PL1
 *   r8 tab  r9 tab + 64 nbytes  r10 stride - nbytes  r11 out  r12 out + rows */
    .syntax unified
    .cpu cortex-m0
    .thumb
    .text
    .align 2
    .global atm_ek_planes_rows_m0
    .type atm_ek_planes_rows_m0, %function
    .thumb_func
atm_ek_planes_rows_m0:
    push {r4, r5, r6, r7, lr}
    mov r4, r8
    mov r5, r9
    mov r6, r10
    mov r7, r11
    push {r4, r5, r6, r7}
    mov r4, r12
    push {r4}
    /* 10 words pushed: tab at [sp, #40], out at [sp, #44], add at [sp, #48] */
    subs r1, r1, r3
    mov r10, r1                 /* stride - nbytes */
    ldr r4, [sp, #40]
    mov r8, r4                  /* tab */
    lsls r3, r3, #6
    adds r4, r4, r3
    mov r9, r4                  /* tab + 64 nbytes */
    ldr r4, [sp, #44]
    mov r11, r4                 /* out */
    lsls r2, r2, #2
    adds r4, r4, r2
    mov r12, r4                 /* out + rows */
    ldr r6, =atm_ek_pl
    movs r7, r6
    adds r7, #255
    adds r7, #1                 /* PL1 = PL0 + 256 */
    ldr r4, [sp, #48]
    cmp r4, #0
    bne .Ladd

    .macro PBYTE k
    ldrb r4, [r0, #\k]
    ldrb r5, [r6, r4]
    ldr  r5, [r1, r5]
    adds r2, r2, r5
    ldrb r4, [r7, r4]
    ldr  r4, [r1, r4]
    adds r3, r3, r4
    adds r1, #64
    .endm

    .macro PROWS addflag
1:
    mov r1, r8
    movs r2, #0
    movs r3, #0
2:
    PBYTE 0
    PBYTE 1
    PBYTE 2
    PBYTE 3
    adds r0, #4
    cmp r1, r9
    bne 2b
    lsls r3, r3, #1
    subs r2, r2, r3
    mov r4, r11
    .if \addflag
    ldr r5, [r4]
    adds r2, r2, r5
    .endif
    stmia r4!, {r2}
    mov r11, r4
    add r0, r10
    cmp r11, r12
    bne 1b
    b .Ldone
    .endm

    PROWS 0
.Ladd:
    PROWS 1
.Ldone:
    pop {r4}
    mov r12, r4
    pop {r4, r5, r6, r7}
    mov r8, r4
    mov r9, r5
    mov r10, r6
    mov r11, r7
    pop {r4, r5, r6, r7, pc}
    .ltorg
    .size atm_ek_planes_rows_m0, . - atm_ek_planes_rows_m0
