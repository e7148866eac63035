/* core/engine_m0.S — Thumb-1 kernels for the Cortex-M0 and M0+ (ARMv6-M;
 * built for the micro:bit and the Pico only): the bit-plane rows and table
 * builds, the residual update and logit scale, and a 32 x 32 -> 64-bit
 * product. Their plain-C twins: atm_ek_planes_rows / atm_ek_planes_build
 * (core/engine.c), atm_ek_addsc_ref / atm_ek_scale_ref (core/engine_ref.c),
 * atm_smull_halves (core/fixmath.h); tests/mcu/kernels.c checks on QEMU's
 * Cortex-M0 that each pair agrees.
 *
 * The bit-plane rows:
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
    /* r8-r11 saved and restored through r4-r7 (Thumb-1 pushes low registers only) */
    .macro PUSH_HI
    mov  r4, r8
    mov  r5, r9
    mov  r6, r10
    mov  r7, r11
    push {r4, r5, r6, r7}
    .endm
    .macro POP_HI
    pop  {r4, r5, r6, r7}
    mov  r8, r4
    mov  r9, r5
    mov  r10, r6
    mov  r11, r7
    .endm
    /* the full save of a routine that uses r4-r12: 10 words, r12 last */
    .macro MS_PUSH
    push {r4, r5, r6, r7, lr}
    mov r4, r8
    mov r5, r9
    mov r6, r10
    mov r7, r11
    push {r4, r5, r6, r7}
    mov r4, r12
    push {r4}
    .endm

    .macro MS_POP
    pop {r4}
    mov r12, r4
    pop {r4, r5, r6, r7}
    mov r8, r4
    mov r9, r5
    mov r10, r6
    mov r11, r7
    pop {r4, r5, r6, r7, pc}
    .endm
    .cpu cortex-m0
    .thumb
    .text
    .align 2
    .global atm_ek_planes_rows_m0
    .type atm_ek_planes_rows_m0, %function
    .thumb_func
atm_ek_planes_rows_m0:
    MS_PUSH
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

    /* one row byte at [r0, #off]: s0 += tab[PL0[v]], s1 += tab[PL1[v]] (op:
     * ADDS for low sums, ADD for sums in high registers) */
    .macro PLOOK off, op, s0, s1
    ldrb r4, [r0, #\off]
    ldrb r5, [r6, r4]
    ldr  r5, [r1, r5]
    \op \s0, r5
    ldrb r4, [r7, r4]
    ldr  r4, [r1, r4]
    \op \s1, r4
    .endm
    .macro PBYTE k
    PLOOK \k, adds, r2, r3
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
    MS_POP
    .ltorg
    .size atm_ek_planes_rows_m0, . - atm_ek_planes_rows_m0

/* The bit-plane rows two at a time, for rows 16 bytes apart (64 columns:
 * every row of the board model):
 *
 * void atm_ek_planes_pairs16_m0(const uint8_t *b, uint32_t pairs, uint32_t nbytes,
 *                               const int32_t *tab, int32_t *out, int add);
 * pairs >= 1, 4 <= nbytes <= 16 and a multiple of 4: rows 2i and 2i + 1
 * (at b + 32 i and b + 32 i + 16) as atm_ek_planes_rows_m0 does them. The
 * two rows share the table walker and the loop, and the second row's bytes
 * are immediate offsets (#16 + k) from the first's: 15 instructions a pair
 * of row bytes plus 3 per 4 (8.75 a row byte alone), and one row epilogue
 * a pair; for nbytes = 8 (the micro:bit's 32-column chunks) the bytes are
 * unrolled with no inner loop (7.5 instructions a row byte). The second
 * row's sums live in r8 / r9 (ADD takes high registers).
 *   r0 b   r1 t   r2 s0   r3 s1   r4 v   r5 a   r6 PL0   r7 PL1
 *   r8 s0'  r9 s1'  r10 32 - nbytes  r11 out  r12 out + 2 pairs  lr tab + 64 nbytes
 *   [sp] tab */
    .align 2
    .global atm_ek_planes_pairs16_m0
    .type atm_ek_planes_pairs16_m0, %function
    .thumb_func
atm_ek_planes_pairs16_m0:
    MS_PUSH
    /* 10 words pushed: out at [sp, #40], add at [sp, #44] */
    movs r4, r3                 /* tab */
    ldr r5, [sp, #40]
    ldr r3, [sp, #44]
    sub sp, #8
    str r4, [sp]
    movs r6, #32
    subs r6, r6, r2
    mov r10, r6                 /* 32 - nbytes */
    lsls r2, r2, #6
    adds r4, r4, r2
    mov lr, r4                  /* tab + 64 nbytes */
    mov r11, r5                 /* out */
    lsls r1, r1, #3
    adds r5, r5, r1
    mov r12, r5                 /* out + 2 pairs */
    ldr r6, =atm_ek_pl
    movs r7, r6
    adds r7, #255
    adds r7, #1                 /* PL1 = PL0 + 256 */
    mov r4, r10
    cmp r4, #24                 /* nbytes 8 */
    bne 3f
    b .Lp8
3:
    cmp r3, #0
    bne .Lpadd

    .macro PBYTE2 k
    PLOOK \k, adds, r2, r3
    PLOOK (16 + \k), add, r8, r9
    adds r1, #64
    .endm

    /* a pair's start: the table walker from [sp], the four sums zeroed */
    .macro PPRO
    ldr r1, [sp]
    movs r2, #0
    movs r3, #0
    mov r8, r2
    mov r9, r2
    .endm

    /* a pair's results r2, r4 (plus out's, addflag) stored at out (r11),
     * which walks on; p: a free low register */
    .macro PSTORE2 p, addflag
    mov \p, r11
    .if \addflag
    ldr r3, [\p]
    adds r2, r2, r3
    ldr r3, [\p, #4]
    adds r4, r4, r3
    .endif
    stmia \p!, {r2, r4}
    mov r11, \p
    .endm

    /* a pair's two sums S0 - 2 S1 (plus out's, addflag), stored; out walks on */
    .macro PEPI addflag
    lsls r3, r3, #1
    subs r2, r2, r3             /* the first row's S0 - 2 S1 */
    mov r4, r8
    mov r5, r9
    lsls r5, r5, #1
    subs r4, r4, r5             /* the second row's */
    PSTORE2 r5, \addflag
    .endm

    .macro PPAIRS addflag
1:
    PPRO
2:
    PBYTE2 0
    PBYTE2 1
    PBYTE2 2
    PBYTE2 3
    adds r0, #4
    cmp r1, lr
    bne 2b
    PEPI \addflag
    add r0, r10
    cmp r11, r12
    bne 1b
    b .Lpdone
    .endm

    /* nbytes = 8 (32-column chunks: the micro:bit's): the 8 row bytes
     * unrolled, no inner loop; b walks on by 32 a pair in the epilogue */
    .macro PPAIRS8 addflag
1:
    PPRO
    PBYTE2 0
    PBYTE2 1
    PBYTE2 2
    PBYTE2 3
    PBYTE2 4
    PBYTE2 5
    PBYTE2 6
    PLOOK 7, adds, r2, r3
    PLOOK 23, add, r8, r9
    PEPI \addflag
    adds r0, #32
    cmp r11, r12
    beq 2f
    b 1b                        /* beyond a conditional branch's reach */
2:
    b .Lpdone
    .endm

    PPAIRS 0
.Lpadd:
    PPAIRS 1
.Lp8:
    cmp r3, #0
    beq 4f
    b .Lp8add                   /* beyond a conditional branch's reach */
4:
    PPAIRS8 0
.Lp8add:
    PPAIRS8 1
.Lpdone:
    add sp, #8
    MS_POP
    .ltorg
    .size atm_ek_planes_pairs16_m0, . - atm_ek_planes_pairs16_m0

/* The bit-plane rows two at a time from the model's offset stream
 * (core/engine.h, atm_engine_set_offsets; twin: atm_ek_planes_rows_ox's C
 * loop):
 *
 * void atm_ek_planes_pairso_m0(const uint8_t *o, uint32_t stride, uint32_t pairs,
 *                              uint32_t nbytes, const int32_t *tab, int32_t *out, int add);
 * pairs >= 1, nbytes 4, 8 or 16, stride (model bytes between rows) <= 63:
 * rows 2i and 2i + 1, their stream bytes at o + 4 i stride and
 * o + (4 i + 2) stride (two a row byte: the table offsets of its two bit
 * planes, 64 (j % 4) included), so a row byte is two loads of offsets, two
 * table loads and two adds (6 instructions; 7 from the model's bytes) and
 * the table walker moves once every 4 row bytes; a pair's first byte starts
 * the four sums (no zeroing). The row bytes unrolled, no inner loop.
 *   r0 oA  r1 t  r2 s0A  r3 s1A  r4 s0B  r5 s1B  r6 oB = oA + 2 stride
 *   r7 offset / value  r8 256  r9 tab  r10 4 stride  r11 out  r12 out + 2 pairs */
    .align 2
    .global atm_ek_planes_pairso_m0
    .type atm_ek_planes_pairso_m0, %function
    .thumb_func
atm_ek_planes_pairso_m0:
    MS_PUSH
    /* 10 words pushed: tab at [sp, #40], out at [sp, #44], add at [sp, #48] */
    lsls r1, r1, #1
    movs r6, r0
    adds r6, r6, r1             /* the second row's stream */
    lsls r1, r1, #1
    mov r10, r1                 /* 4 stride: a pair */
    ldr r4, [sp, #40]
    mov r9, r4                  /* tab */
    ldr r4, [sp, #44]
    mov r11, r4                 /* out */
    lsls r2, r2, #3
    adds r4, r4, r2
    mov r12, r4                 /* out + 2 pairs */
    movs r4, #1
    lsls r4, r4, #8
    mov r8, r4                  /* 256 */
    ldr r2, [sp, #48]           /* add */
    cmp r3, #8
    bne 6f
    cmp r2, #0
    beq 5f
    b .Lo8add                   /* beyond a conditional branch's reach */
5:
    b .Lo8
6:
    cmp r3, #4
    beq 7f
    b .Lo16                     /* beyond a conditional branch's reach */
7:
    cmp r2, #0
    beq .Lo4
    b .Lo4add

    /* a pair's byte k: both rows' two offsets, their table values added */
    .macro OBYTE k
    ldrb r7, [r0, #(2 * \k)]
    ldr  r7, [r1, r7]
    adds r2, r2, r7
    ldrb r7, [r0, #(2 * \k + 1)]
    ldr  r7, [r1, r7]
    adds r3, r3, r7
    ldrb r7, [r6, #(2 * \k)]
    ldr  r7, [r1, r7]
    adds r4, r4, r7
    ldrb r7, [r6, #(2 * \k + 1)]
    ldr  r7, [r1, r7]
    adds r5, r5, r7
    .endm

    /* a pair's S0 - 2 S1 (plus out's, addflag), stored; the streams walk on */
    .macro OEPI addflag
    lsls r3, r3, #1
    subs r2, r2, r3
    lsls r5, r5, #1
    subs r4, r4, r5
    PSTORE2 r7, \addflag
    add r0, r10
    add r6, r10
    .endm

    .macro OPAIRS nb, addflag
1:
    mov r1, r9
    ldrb r7, [r0, #0]           /* byte 0's values start the four sums */
    ldr  r2, [r1, r7]
    ldrb r7, [r0, #1]
    ldr  r3, [r1, r7]
    ldrb r7, [r6, #0]
    ldr  r4, [r1, r7]
    ldrb r7, [r6, #1]
    ldr  r5, [r1, r7]
    OBYTE 1
    OBYTE 2
    OBYTE 3
    .if \nb >= 8
    add r1, r8
    OBYTE 4
    OBYTE 5
    OBYTE 6
    OBYTE 7
    .endif
    .if \nb == 16
    add r1, r8
    OBYTE 8
    OBYTE 9
    OBYTE 10
    OBYTE 11
    add r1, r8
    OBYTE 12
    OBYTE 13
    OBYTE 14
    OBYTE 15
    .endif
    OEPI \addflag
    cmp r11, r12
    beq 2f
    b 1b                        /* beyond a conditional branch's reach */
2:
    b .Lodone
    .endm

.Lo4:
    OPAIRS 4, 0
.Lo4add:
    OPAIRS 4, 1
.Lo8:
    OPAIRS 8, 0
.Lo8add:
    OPAIRS 8, 1
.Lo16:
    cmp r2, #0
    beq 3f
    b .Lo16add                  /* beyond a conditional branch's reach */
3:
    OPAIRS 16, 0
.Lo16add:
    OPAIRS 16, 1
.Lodone:
    MS_POP
    .size atm_ek_planes_pairso_m0, . - atm_ek_planes_pairso_m0

/* ---- the residual update and the logit scale ----------------------------
 * void atm_ek_addsc_m0(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
 * void atm_ek_scale_m0(int32_t *v, int n, int32_t mul, int s);
 * 1 <= s <= 31, n >= 1 (the C wrappers in engine_m0.c check; twins:
 * atm_ek_addsc_ref / atm_ek_scale_ref). r = round(v mul / 2^s) from the
 * 64-bit product built in (r3:r2) from four 16 x 16-bit products, plus
 * 2^(s-1), shifted as two words; a quotient beyond int32 is beyond every
 * clamp (|x| <= 2^30 - 1), so only its sign counts. Then x + r (or r)
 * clamped to +-(2^30 - 1). 45 instructions an element.
 *   r8 ml = mul & 0xFFFF   r9 mh = mul >> 16   r10 2^(s-1)   r11 s
 *   r12 32 - s             lr end of x (or v) */
    .macro MULSH              /* v in r4 -> r in r2; r3..r7 clobbered; branches to 8f when |r| >= 2^31 */
    uxth r5, r4
    asrs r4, r4, #16
    mov  r2, r8
    muls r2, r5               /* lo = vl ml */
    mov  r3, r9
    muls r3, r4               /* hi = vh mh */
    mov  r6, r9
    muls r6, r5               /* vl mh */
    mov  r7, r8
    muls r7, r4               /* vh ml */
    lsls r4, r6, #16
    asrs r6, r6, #16
    adds r2, r2, r4
    adcs r3, r6
    lsls r4, r7, #16
    asrs r7, r7, #16
    adds r2, r2, r4
    adcs r3, r7
    mov  r4, r10
    movs r5, #0
    adds r2, r2, r4
    adcs r3, r5               /* + 2^(s-1) */
    mov  r4, r11
    lsrs r2, r4
    movs r5, r3
    mov  r6, r12
    lsls r5, r6
    orrs r2, r5               /* low word of the shifted product */
    asrs r3, r4               /* its high word */
    asrs r5, r2, #31
    cmp  r5, r3
    bne  8f
    .endm

    .macro MS_SETUP mulreg, sreg   /* mul, s -> r8..r12 */
    uxth r4, \mulreg
    mov  r8, r4
    asrs r4, \mulreg, #16
    mov  r9, r4
    movs r4, #1
    subs r5, \sreg, #1
    lsls r4, r5
    mov  r10, r4
    mov  r11, \sreg
    movs r4, #32
    subs r4, r4, \sreg
    mov  r12, r4
    .endm


    /* the loop of atm_ek_addsc_m0 (short = 0) and atm_ek_addscv_m0 (short =
     * 1: elements whose v fits int16 take label 2, with H at [sp] and s - 16
     * at [sp, #4] on an 8-byte frame); lr is the end of x */
    .macro ADDSC_LOOP short
1:
    ldm  r1!, {r4}
    .if \short
    sxth r5, r4
    cmp  r5, r4
    beq  2f
    .endif
    MULSH
    ldr  r4, [r0]
    adds r4, r4, r2
    bvs  8f                   /* x + r beyond int32: r's sign (r3) decides */
3:
    ldr  r5, 9f
    cmp  r4, r5
    bgt  5f
    cmn  r4, r5
    blt  6f
4:
    str  r4, [r0]
    adds r0, #4
    cmp  r0, lr
    bne  1b
    .if \short
    add  sp, #8
    .endif
    MS_POP
    .if \short
2:                            /* v fits int16: two products */
    mov  r2, r9
    muls r2, r4               /* v mh */
    mov  r3, r8
    muls r3, r4               /* v ml */
    asrs r3, r3, #16
    adds r2, r2, r3
    ldr  r3, [sp]
    adds r2, r2, r3
    ldr  r3, [sp, #4]
    asrs r2, r3               /* r, |r| <= 2^30 */
    ldr  r4, [r0]
    adds r4, r4, r2
    b    3b
    .endif
5:  movs r4, r5               /* + limit */
    b    4b
6:  rsbs r4, r5, #0           /* - limit */
    b    4b
8:  ldr  r5, 9f               /* |r| >= 2^31, or x + r overflowed: r3 holds r's sign */
    movs r4, r5
    cmp  r3, #0
    bge  4b
    rsbs r4, r5, #0
    b    4b
    .align 2
9:
    .word 0x3FFFFFFF
    .endm

    .align 2
    .global atm_ek_addsc_m0
    .type atm_ek_addsc_m0, %function
    .thumb_func
atm_ek_addsc_m0:
    MS_PUSH
    /* 10 words pushed: s at [sp, #40] */
    ldr  r7, [sp, #40]
    MS_SETUP r3, r7
    lsls r2, r2, #2
    adds r2, r0, r2
    mov  lr, r2               /* end of x */
    ADDSC_LOOP 0
    .size atm_ek_addsc_m0, . - atm_ek_addsc_m0

/* The same for 17 <= s <= 31 (the conv and attention updates, whose
 * multipliers are 31-bit): an element whose v fits int16 (about half of
 * them in the board model) takes two products, v = v mh 2^16 + v ml with
 * ml unsigned: r = (v mh + H + (v ml >> 16)) >> (s - 16), H = 2^(s-17),
 * exact and within int32 (|v mh| <= 2^30, |v ml| < 2^31); the others take
 * MULSH. 25 instructions an element on the short way, 48 on the long.
 * void atm_ek_addscv_m0(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
 *   [sp] H   [sp, #4] s - 16   (registers as atm_ek_addsc_m0) */
    .align 2
    .global atm_ek_addscv_m0
    .type atm_ek_addscv_m0, %function
    .thumb_func
atm_ek_addscv_m0:
    MS_PUSH
    /* 10 words pushed: s at [sp, #40] */
    ldr  r7, [sp, #40]
    sub  sp, #8
    movs r5, r7
    subs r5, #16
    str  r5, [sp, #4]         /* s - 16 */
    subs r5, r5, #1
    movs r4, #1
    lsls r4, r5
    str  r4, [sp]             /* H */
    MS_SETUP r3, r7
    lsls r2, r2, #2
    adds r2, r0, r2
    mov  lr, r2               /* end of x */
    ADDSC_LOOP 1
    .size atm_ek_addscv_m0, . - atm_ek_addscv_m0

/* The same for a 16-bit multiplier, where two products do:
 * void atm_ek_addsc16_m0(int32_t *x, const int32_t *v, int n, int32_t mul, int s);
 *   0 <= mul < 2^16, 17 <= s <= 31, n >= 1 (the SSM's update: mul is the
 *   router weight). v = vh 2^16 + vl (vl unsigned) and 2^(s-1) = H 2^16, so
 *   r = (vh mul + H + (vl mul >> 16)) >> (s - 16) exactly (floor of a floor),
 *   every term and the sum within int32; |r| <= 2^30, so x + r does not
 *   overflow before the clamp. 18 instructions an element.
 *   r0 x   r1 v   r2 end of x   r3 mul   r4 r5 scratch   r6 limit   r7 s - 16
 *   r12 H */
    .align 2
    .global atm_ek_addsc16_m0
    .type atm_ek_addsc16_m0, %function
    .thumb_func
atm_ek_addsc16_m0:
    push {r4, r5, r6, r7, lr}
    ldr  r7, [sp, #20]        /* s */
    subs r7, #16
    movs r4, #1
    subs r5, r7, #1
    lsls r4, r5
    mov  r12, r4              /* H = 2^(s-17) */
    lsls r2, r2, #2
    adds r2, r0, r2
    ldr  r6, .Llim16
1:
    ldm  r1!, {r4}
    uxth r5, r4
    asrs r4, r4, #16
    muls r4, r3
    muls r5, r3
    lsrs r5, r5, #16
    adds r4, r4, r5
    add  r4, r12
    asrs r4, r7
    ldr  r5, [r0]
    adds r4, r4, r5
    cmp  r4, r6
    bgt  5f
    cmn  r4, r6
    blt  6f
4:
    stm  r0!, {r4}
    cmp  r0, r2
    bne  1b
    pop  {r4, r5, r6, r7, pc}
5:  movs r4, r6
    b    4b
6:  rsbs r4, r6, #0
    b    4b
    .align 2
.Llim16:
    .word 0x3FFFFFFF
    .size atm_ek_addsc16_m0, . - atm_ek_addsc16_m0

/* void atm_ek_scale16_m0(int32_t *v, int n, int32_t mul, int s);
 *   0 <= mul < 2^16, 2 <= s <= 16, n >= 1 (the logit scale: mul is the
 *   output head's 16-bit mantissa). With k = 16 - s, r = (vh mul << k) +
 *   ((vl mul + 2^(s-1)) >> s) exactly, the second term below 2^30. When
 *   vh mul << k leaves int32, or the sum overflows, r is beyond the clamp on
 *   the side of vh's sign (of +: the second term is >= 0). 24 instructions
 *   an element.
 *   r0 v   r1 scratch   r2 mul   r3 s   r4-r6 scratch   r7 k   r8 2^(s-1)
 *   r9 limit   r10 -limit   lr end of v */
    .align 2
    .global atm_ek_scale16_m0
    .type atm_ek_scale16_m0, %function
    .thumb_func
atm_ek_scale16_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    mov  r5, r9
    mov  r6, r10
    push {r4, r5, r6}
    movs r7, #16
    subs r7, r7, r3           /* k */
    movs r4, #1
    subs r5, r3, #1
    lsls r4, r5
    mov  r8, r4               /* 2^(s-1) */
    ldr  r4, .Llim16b
    mov  r9, r4
    rsbs r4, r4, #0
    mov  r10, r4
    lsls r1, r1, #2
    adds r1, r0, r1
    mov  lr, r1
1:
    ldr  r4, [r0]
    uxth r5, r4
    asrs r4, r4, #16
    muls r4, r2               /* vh mul */
    muls r5, r2               /* vl mul, unsigned */
    add  r5, r8
    lsrs r5, r3
    movs r6, r4
    lsls r6, r7
    movs r1, r6
    asrs r1, r7
    cmp  r1, r4
    bne  7f                   /* vh mul << k beyond int32 */
    adds r6, r6, r5
    bvs  5f
    cmp  r6, r9
    bgt  5f
    cmp  r6, r10
    blt  6f
4:
    stm  r0!, {r6}
    cmp  r0, lr
    bne  1b
    pop  {r4, r5, r6}
    mov  r8, r4
    mov  r9, r5
    mov  r10, r6
    pop  {r4, r5, r6, r7, pc}
5:  mov  r6, r9
    b    4b
6:  mov  r6, r10
    b    4b
7:  cmp  r4, #0
    bge  5b
    b    6b
    .align 2
.Llim16b:
    .word 0x3FFFFFFF
    .size atm_ek_scale16_m0, . - atm_ek_scale16_m0

    .align 2
    .global atm_ek_scale_m0
    .type atm_ek_scale_m0, %function
    .thumb_func
atm_ek_scale_m0:
    MS_PUSH
    MS_SETUP r2, r3
    lsls r1, r1, #2
    adds r1, r0, r1
    mov  lr, r1               /* end of v */
    movs r1, r0               /* read and write pointers */
1:
    ldm  r1!, {r4}
    MULSH
    movs r4, r2
3:
    ldr  r5, .Llim2
    cmp  r4, r5
    bgt  5f
    cmn  r4, r5
    blt  6f
4:
    str  r4, [r0]
    adds r0, #4
    cmp  r0, lr
    bne  1b
    MS_POP
5:  movs r4, r5
    b    4b
6:  rsbs r4, r5, #0
    b    4b
8:  ldr  r5, .Llim2
    movs r4, r5
    cmp  r3, #0
    bge  4b
    rsbs r4, r5, #0
    b    4b
    .align 2
.Llim2:
    .word 0x3FFFFFFF
    .size atm_ek_scale_m0, . - atm_ek_scale_m0

/* a * b exactly from four 16 x 16-bit products: sh is ASRS for the signed
 * product (atm_smull_m0), LSRS for the unsigned one (atm_umull_m0) */
    .macro MULL64 sh
    push {r4, r5, r6}
    uxth r2, r0               /* al */
    \sh r0, r0, #16          /* ah */
    uxth r3, r1               /* bl */
    \sh r1, r1, #16          /* bh */
    movs r4, r2
    muls r4, r3               /* al bl: the low word */
    movs r5, r0
    muls r5, r1               /* ah bh: the high word */
    muls r2, r1               /* al bh */
    muls r3, r0               /* bl ah */
    lsls r6, r2, #16
    \sh r2, r2, #16
    adds r4, r4, r6
    adcs r5, r2
    lsls r6, r3, #16
    \sh r3, r3, #16
    adds r0, r4, r6
    adcs r5, r3
    movs r1, r5
    pop {r4, r5, r6}
    bx lr
    .endm

/* ---- int64_t atm_smull_m0(int32_t a, int32_t b): a * b exactly ----------
 * fixmath.h's atm_smull on the Cortex-M0 when this file is assembled (its C
 * version, atm_smull_halves, is the twin): four 16 x 16-bit products, 19
 * instructions with the return. */
    .align 2
    .global atm_smull_m0
    .type atm_smull_m0, %function
    .thumb_func
atm_smull_m0:
    MULL64 asrs
    .size atm_smull_m0, . - atm_smull_m0

/* ---- uint64_t atm_umull_m0(uint32_t a, uint32_t b): a * b exactly --------
 * fixmath.h's atm_umull on the Cortex-M0 (LayerNorm's reciprocal square
 * root) when this file is assembled; its C version atm_umull_halves is the
 * twin: atm_smull_m0 with the halves and the cross products' high parts
 * unsigned. 19 instructions with the return. */
    .align 2
    .global atm_umull_m0
    .type atm_umull_m0, %function
    .thumb_func
atm_umull_m0:
    MULL64 lsrs
    .size atm_umull_m0, . - atm_umull_m0

/* ---- void atm_ek_planes_build_m0(const int16_t *x, uint32_t cols, int32_t *tab)
 * atm_ek_planes_build (engine.c, the twin) in Thumb-1 for a 4-aligned x and
 * cols a positive multiple of 4: per group of 4 columns (a, b, c, d) the
 * rows {0, a, b, a+b}, + c, + d, + c + d of its 16-entry table, each row one
 * 4-register store; 33 instructions a group. r10 = c, r11 = d - c. */
    .align 2
    .global atm_ek_planes_build_m0
    .type atm_ek_planes_build_m0, %function
    .thumb_func
atm_ek_planes_build_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r10
    mov  r5, r11
    push {r4, r5}
    lsls r1, r1, #1
    adds r1, r0, r1           /* end of x */
1:
    ldm  r0!, {r3, r4}
    sxth r5, r3               /* a */
    asrs r6, r3, #16          /* b */
    sxth r7, r4               /* c */
    asrs r4, r4, #16          /* d */
    subs r4, r4, r7
    mov  r10, r7
    mov  r11, r4
    movs r3, #0
    movs r4, r5
    movs r5, r6
    adds r6, r4, r5
    stmia r2!, {r3, r4, r5, r6}        /* 0, a, b, a + b */
    mov  r7, r10
    adds r3, r3, r7
    adds r4, r4, r7
    adds r5, r5, r7
    adds r6, r6, r7
    stmia r2!, {r3, r4, r5, r6}        /* + c */
    mov  r7, r11
    adds r3, r3, r7
    adds r4, r4, r7
    adds r5, r5, r7
    adds r6, r6, r7
    stmia r2!, {r3, r4, r5, r6}        /* + d */
    mov  r7, r10
    adds r3, r3, r7
    adds r4, r4, r7
    adds r5, r5, r7
    adds r6, r6, r7
    stmia r2!, {r3, r4, r5, r6}        /* + c + d */
    cmp  r0, r1
    bne  1b
    pop  {r4, r5}
    mov  r10, r4
    mov  r11, r5
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_planes_build_m0, . - atm_ek_planes_build_m0

/* ---- void atm_ek_dots16_m0(const int16_t *q, const int8_t *k, int n, int32_t *out)
 * atm_ek_dots_ref for dh = 16, n >= 1, q and k word-aligned (the C wrapper
 * atm_ek_dots_m0 checks): per key, four words of int8 values and eight of
 * int16 pairs, each value sign-extended in place (SXTB / SXTH, or a shift
 * pair) and multiplied in; 87 instructions a key (the C loop: 120).
 *   r0 q   r1 k   r2, r7 scratch   r3 out   r4 the sum   r5 a key word
 *   r6 a word of q   r8 out's end */
    .macro DGRP j, first
    ldr  r5, [r1, #(4 * \j)]
    ldr  r6, [r0, #(8 * \j)]
    .if \first
    sxtb r4, r5
    sxth r2, r6
    muls r4, r2
    .else
    sxtb r7, r5
    sxth r2, r6
    muls r7, r2
    adds r4, r4, r7
    .endif
    lsls r7, r5, #16
    asrs r7, r7, #24
    asrs r2, r6, #16
    muls r7, r2
    adds r4, r4, r7
    ldr  r6, [r0, #(8 * \j + 4)]
    lsls r7, r5, #8
    asrs r7, r7, #24
    sxth r2, r6
    muls r7, r2
    adds r4, r4, r7
    asrs r7, r5, #24
    asrs r2, r6, #16
    muls r7, r2
    adds r4, r4, r7
    .endm

    .align 2
    .global atm_ek_dots16_m0
    .type atm_ek_dots16_m0, %function
    .thumb_func
atm_ek_dots16_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    push {r4}
    lsls r2, r2, #2
    adds r2, r3, r2
    mov  r8, r2                      /* out's end */
1:
    DGRP 0, 1
    DGRP 1, 0
    DGRP 2, 0
    DGRP 3, 0
    stmia r3!, {r4}
    adds r1, #16
    cmp  r3, r8
    bne  1b
    pop  {r4}
    mov  r8, r4
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_dots16_m0, . - atm_ek_dots16_m0

/* ---- int32_t atm_ek_exp2poly_m0(int32_t g, const int32_t *c)
 * atm_exp_q16's Horner steps: p = c[7], then for k = 6 .. 0
 * p = round(p g / 2^30) + c[k] + 2^14, for |g| < 2^29 (its range there)
 * and the positive p of those steps; the caller's c[k] for k < 7 are the
 * coefficients less 2^14, which cancels the -2^14 below. With p = 2^15 ph + pl, g = 2^15 gh + gl (pl,
 * gl in [0, 2^15)): round(p g / 2^30) = ph gh + (Y >> 15) - 2^14, Y =
 * ph gl + pl gh + (pl gl >> 15) + 2^14 + 2^29 in [0, 2^32) (the 2^29 keeps
 * the sum unsigned). 17 instructions a step (the C's 32-bit halves: 29).
 *   r0 p   r1 gh   r2 gl   r3 c   r4-r7 scratch   r8 2^14 + 2^29 */
    .macro HSTEP k
    lsrs r4, r0, #15                 /* ph */
    lsls r5, r0, #17
    lsrs r5, r5, #17                 /* pl */
    movs r6, r1
    muls r6, r4                      /* ph gh */
    muls r4, r2                      /* ph gl */
    movs r7, r1
    muls r7, r5                      /* pl gh */
    muls r5, r2                      /* pl gl */
    lsrs r5, r5, #15
    adds r4, r4, r7
    adds r4, r4, r5
    add  r4, r8
    lsrs r4, r4, #15
    adds r6, r6, r4
    ldr  r7, [r3, #(4 * \k)]
    adds r0, r6, r7
    .endm

    .align 2
    .global atm_ek_exp2poly_m0
    .type atm_ek_exp2poly_m0, %function
    .thumb_func
atm_ek_exp2poly_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    push {r4}
    asrs r2, r0, #15
    lsls r3, r0, #17
    lsrs r3, r3, #17
    mov  r0, r1                      /* c */
    movs r1, r2                      /* gh */
    movs r2, r3                      /* gl */
    movs r3, r0                      /* c */
    ldr  r0, =0x20004000             /* 2^29 + 2^14 */
    mov  r8, r0
    ldr  r0, [r3, #28]               /* p = c[7] */
    HSTEP 6
    HSTEP 5
    HSTEP 4
    HSTEP 3
    HSTEP 2
    HSTEP 1
    HSTEP 0
    pop  {r4}
    mov  r8, r4
    pop  {r4, r5, r6, r7, pc}
    .ltorg
    .size atm_ek_exp2poly_m0, . - atm_ek_exp2poly_m0

/* ---- void atm_ek_conv5_m0(const int8_t *t, int nc, const int16_t *u,
 *                           const int8_t *const rp[4], const int32_t e[4], int32_t *acc)
 * The conv taps (twin atm_ek_conv_ref) for K = 5 with all 5 taps and nc >= 1:
 * acc[c] = t[5c] u[c] + sum_{j=1..4} t[5c + j] (rp[j-1][c] << e[j-1]), a
 * channel at a time, summed in a register; the ring rows in r8-r11 and
 * their shifts on the stack (a load each, as a move from a high register
 * would cost). 43 instructions a channel (the C: 64).
 *   r0 trits   r1 c   r2 the sum   r3, r4 scratch   r5 u   r6 acc
 *   r7 nc   r8-r11 the ring rows   [sp] .. [sp, #12] the shifts */
    .macro CTAP0 j, ring
    mov  r3, \ring
    ldrsb r3, [r3, r1]
    ldr  r4, [sp, #(4 * (\j - 1))]
    lsls r3, r4
    ldrb r4, [r0, #\j]
    sxtb r4, r4
    muls r3, r4
    adds r2, r2, r3
    .endm

    .align 2
    .global atm_ek_conv5_m0
    .type atm_ek_conv5_m0, %function
    .thumb_func
atm_ek_conv5_m0:
    push {r4, r5, r6, r7, lr}
    PUSH_HI
    sub  sp, #16
    /* 9 words pushed + 16 bytes: e at [sp, #52], acc at [sp, #56] */
    ldr  r4, [r3, #0]
    mov  r8, r4
    ldr  r4, [r3, #4]
    mov  r9, r4
    ldr  r4, [r3, #8]
    mov  r10, r4
    ldr  r4, [r3, #12]
    mov  r11, r4
    ldr  r3, [sp, #52]
    ldr  r4, [r3, #0]
    str  r4, [sp, #0]
    ldr  r4, [r3, #4]
    str  r4, [sp, #4]
    ldr  r4, [r3, #8]
    str  r4, [sp, #8]
    ldr  r4, [r3, #12]
    str  r4, [sp, #12]
    ldr  r6, [sp, #56]
    mov  r5, r2
    mov  r7, r1
    movs r1, #0
1:
    ldrh r2, [r5, #0]
    sxth r2, r2
    ldrb r3, [r0, #0]
    sxtb r3, r3
    muls r2, r3
    adds r5, #2
    CTAP0 1, r8
    CTAP0 2, r9
    CTAP0 3, r10
    CTAP0 4, r11
    stmia r6!, {r2}
    adds r0, #5
    adds r1, #1
    cmp  r1, r7
    bne  1b
    add  sp, #16
    POP_HI
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_conv5_m0, . - atm_ek_conv5_m0

/* ---- void atm_ek_ssm0_m0(int32_t *s, const int16_t *a, const int16_t *bc,
 *                         const int16_t *u, int d, int ls);
 * atm_ek_ssm_i32 for sb = -ls, ls 0 or 1 (the shift of the shipped models),
 * d >= 1, a, bc and u halfword-aligned (the C wrapper checks): s = a s
 * rounded to Q(FS) from two 16 x 32-bit halves (2 A + (B + 2^14) >> 15,
 * the second term as ((B >> 14) + 1) >> 1), plus bc u << ls, ADDS with the
 * overflow flag for the wrap (beyond the clamp on the operands' side), then
 * the clamp to +-(2^30 - 1). a, bc and u at one index register (LDRSH's
 * register offset sign-extends): 31 instructions an element (the C: 52).
 *   r0 s   r1 a   r2 bc   r3 u   r4-r6 scratch   r7 the index (bytes)
 *   r8 s's end   r10 2^30 - 1   r11 ls */
    .align 2
    .global atm_ek_ssm0_m0
    .type atm_ek_ssm0_m0, %function
    .thumb_func
atm_ek_ssm0_m0:
    push {r4, r5, r6, r7, lr}
    PUSH_HI
    ldr  r4, [sp, #36]               /* d */
    lsls r4, r4, #2
    adds r4, r0, r4
    mov  r8, r4
    ldr  r4, =0x3FFFFFFF
    mov  r10, r4
    ldr  r4, [sp, #40]               /* ls */
    mov  r11, r4
    movs r7, #0
1:
    ldrsh r4, [r1, r7]               /* a */
    ldr  r5, [r0, #0]
    asrs r6, r5, #16
    uxth r5, r5
    muls r6, r4                      /* A = a sh */
    muls r5, r4                      /* B = a sl */
    asrs r5, r5, #14
    adds r5, #1
    asrs r5, r5, #1                  /* (B + 2^14) >> 15 */
    lsls r6, r6, #1
    adds r6, r6, r5                  /* t1 */
    ldrsh r4, [r2, r7]
    ldrsh r5, [r3, r7]
    muls r4, r5
    mov  r5, r11
    lsls r4, r5                      /* t2 */
    adds r6, r6, r4
    bvs  4f
    mov  r5, r10
    cmp  r6, r5
    bgt  5f
    negs r5, r5
    cmp  r6, r5
    bge  2f
5:
    movs r6, r5                      /* r5: the bound crossed */
2:
    stmia r0!, {r6}
    adds r7, #2
    cmp  r0, r8
    bne  1b
    POP_HI
    pop  {r4, r5, r6, r7, pc}
4:                                   /* t1 + t2 wrapped: beyond the clamp on t2's side */
    mov  r6, r10
    cmp  r4, #0
    bge  2b
    negs r6, r6
    b    2b
    .ltorg
    .size atm_ek_ssm0_m0, . - atm_ek_ssm0_m0

/* ---- void atm_ek_lnout_m0(int16_t *u, const int16_t *g, const int16_t *b, int d,
 *                          int32_t r15, int sg, int sb);
 * atm_ek_ln_out_i32 for 17 <= sg <= 46, 1 <= sb <= 30, d >= 1 and g, b on
 * halfword boundaries (the C wrapper checks): gr = r15 g, u gr as
 * 2^16 A + B (A = u (gr >> 16), B = u (gr & 0xFFFF)), q = ((A + (B >> 16) +
 * 2^(sg-17)) >> (sg - 16)) + ((b + 2^(sb-1)) >> sb), clamped to +-32767.
 * u, g and b at one index register (LDRSH's register offset sign-extends):
 * 28 instructions an element (the C: 42).
 *   r0 u   r1 g   r2 b   r3 the index (bytes)   r4-r6 scratch   r7 32767   r8 2 d
 *   r9 r15   r10 2^(sg-17)   r11 sg - 16   r12 2^(sb-1)   [sp] sb */
    .align 2
    .global atm_ek_lnout_m0
    .type atm_ek_lnout_m0, %function
    .thumb_func
atm_ek_lnout_m0:
    push {r4, r5, r6, r7, lr}
    PUSH_HI
    mov  r4, r12
    push {r4}
    sub  sp, #4
    /* 10 words pushed + 4: r15 at [sp, #44], sg at [sp, #48], sb at [sp, #52] */
    lsls r3, r3, #1
    mov  r8, r3                      /* d's bytes */
    ldr  r4, [sp, #44]
    mov  r9, r4
    ldr  r4, [sp, #48]
    subs r5, r4, #7
    subs r5, r5, #10                 /* sg - 17 */
    movs r6, #1
    lsls r6, r5
    mov  r10, r6
    adds r5, r5, #1
    mov  r11, r5                     /* sg - 16 */
    ldr  r4, [sp, #52]
    str  r4, [sp, #0]
    subs r4, r4, #1
    movs r6, #1
    lsls r6, r4
    mov  r12, r6                     /* 2^(sb-1) */
    ldr  r7, =32767
    movs r3, #0
1:
    ldrsh r4, [r1, r3]
    mov  r5, r9
    muls r4, r5                      /* gr */
    asrs r5, r4, #16
    uxth r4, r4
    ldrsh r6, [r0, r3]               /* u */
    muls r5, r6                      /* A */
    muls r4, r6                      /* B */
    asrs r4, r4, #16
    adds r5, r5, r4
    mov  r4, r10
    adds r5, r5, r4
    mov  r4, r11
    asrs r5, r4
    ldrsh r6, [r2, r3]
    mov  r4, r12
    adds r6, r6, r4
    ldr  r4, [sp, #0]
    asrs r6, r4                      /* beta */
    adds r5, r5, r6
    cmp  r5, r7
    ble  2f
    movs r5, r7
2:
    cmn  r5, r7                      /* below -32767? */
    bge  3f
    negs r5, r7
3:
    strh r5, [r0, r3]
    adds r3, #2
    cmp  r3, r8
    bne  1b
    add  sp, #4
    pop  {r4}
    mov  r12, r4
    POP_HI
    pop  {r4, r5, r6, r7, pc}
    .ltorg
    .size atm_ek_lnout_m0, . - atm_ek_lnout_m0

/* ---- attention's mix ------------------------------------------------------
 * void atm_ek_mix4_m0(const int32_t *w, const int32_t *idx, const int8_t *base,
 *                     int n, int d, int32_t *out);
 * out[c] = sum_i w[i] base[idx[i] d + c] (twin atm_ek_mix_ref) for n >= 1,
 * d >= 4 a multiple of 4 and base word aligned. The (weight, row) pairs of
 * up to 8 positions at a time go to the stack; then four output columns at
 * a time sit in r6, r7, r8, r9 while the pairs are walked: one LDM for the
 * pair, one word load for its four values, and per value a sign extension
 * (one or two instructions), a MULS and an ADD: 18 instructions a pair
 * (4.5 a product; the C loop it replaces spilled: 6.4). The sums are exact
 * int32 sums (the order of the positions does not matter).
 *   r0 four values   r1 a value   r2 weight   r3 row   r4 pair walker
 *   r5 column offset   r10 the pairs' end   r11 out walker
 *   [sp] w   [sp, #4] idx   [sp, #8] positions left   [sp, #12] base
 *   [sp, #16] the pairs (64 bytes)   [sp, #120] d   [sp, #124] out */
    /* one (weight, row) pair at r4 (advanced) times the row's four values
     * at column offset r5, into r6, r7, r8, r9 */
    .macro MIXPAIR
    ldm  r4!, {r2, r3}
    ldr  r0, [r3, r5]
    sxtb r1, r0
    muls r1, r2
    adds r6, r6, r1
    lsls r1, r0, #16
    asrs r1, r1, #24
    muls r1, r2
    adds r7, r7, r1
    lsls r1, r0, #8
    asrs r1, r1, #24
    muls r1, r2
    add  r8, r1
    asrs r1, r0, #24
    muls r1, r2
    add  r9, r1
    .endm

    /* the four sums r6-r9 to out (r11, advanced); the next four columns */
    .macro MIXSTORE
    mov  r0, r11
    movs r1, r6
    movs r2, r7
    mov  r3, r8
    mov  r4, r9
    stm  r0!, {r1, r2, r3, r4}
    mov  r11, r0
    adds r5, #4
    .endm

    .align 2
    .global atm_ek_mix4_m0
    .type atm_ek_mix4_m0, %function
    .thumb_func
atm_ek_mix4_m0:
    MS_PUSH
    sub  sp, #80
    str  r0, [sp]
    str  r1, [sp, #4]
    str  r3, [sp, #8]
    str  r2, [sp, #12]
    ldr  r0, [sp, #124]           /* out */
    ldr  r1, [sp, #120]           /* d */
    lsls r1, r1, #2
    adds r1, r0, r1
    movs r2, #0
    movs r3, #0
    movs r4, #0
    movs r5, #0
1:                                /* out = 0 */
    stm  r0!, {r2, r3, r4, r5}
    cmp  r0, r1
    bne  1b
2:                                /* the next (up to) 8 positions */
    ldr  r3, [sp, #8]
    cmp  r3, #8
    ble  3f
    movs r3, #8
3:
    ldr  r2, [sp, #8]
    subs r2, r2, r3
    str  r2, [sp, #8]
    ldr  r0, [sp]
    ldr  r1, [sp, #4]
    ldr  r2, [sp, #120]
    ldr  r7, [sp, #12]
    add  r4, sp, #16
4:                                /* pairs: (w[i], base + idx[i] d) */
    ldm  r0!, {r5}
    ldm  r1!, {r6}
    muls r6, r2
    adds r6, r6, r7
    stm  r4!, {r5, r6}
    subs r3, #1
    bne  4b
    str  r0, [sp]
    str  r1, [sp, #4]
    mov  r10, r4
    ldr  r0, [sp, #124]
    mov  r11, r0
    movs r5, #0
5:                                /* four columns */
    mov  r0, r11
    ldm  r0!, {r1, r2, r3, r4}
    movs r6, r1
    movs r7, r2
    mov  r8, r3
    mov  r9, r4
    add  r4, sp, #16
6:
    MIXPAIR
    cmp  r4, r10
    bne  6b
    MIXSTORE
    ldr  r0, [sp, #120]
    cmp  r5, r0
    bne  5b
    ldr  r3, [sp, #8]
    cmp  r3, #0
    bne  2b
    add  sp, #80
    MS_POP
    .size atm_ek_mix4_m0, . - atm_ek_mix4_m0

/* ---- attention's dot products, two keys at a time ------------------------
 * void atm_ek_dots16x2_m0(const int16_t *q, const int8_t *k, int pairs, int32_t *out);
 * out[j] = sum_t q[t] k[16 j + t] for j < 2 pairs (twin atm_ek_dots_ref,
 * dh = 16), pairs >= 1, k word aligned. The 16 query values go to the
 * stack as words once; then each pair of keys is walked a word (four
 * values) of each at a time: per query value one load, and per key a sign
 * extension (one or two instructions), a MULS and an ADD: 34 instructions
 * per 8 products, about 70 a key (atm_ek_dots16_m0: 87).
 *   r0 the keys   r1 a value   r2, r3 the two sums   r4, r5 the two words
 *   r6 a query value   r7 out   r8 out's end   [sp] .. [sp, #60] q */
    /* r1 = the signed byte `lane` of word w */
    .macro SXLANE w, lane
    .if \lane == 0
    sxtb r1, \w
    .elseif \lane == 3
    asrs r1, \w, #24
    .else
    lsls r1, \w, #(24 - 8 * \lane)
    asrs r1, r1, #24
    .endif
    .endm
    .macro D2LANE j, lane
    ldr  r6, [sp, #(16 * \j + 4 * \lane)]
    SXLANE r4, \lane
    muls r1, r6
    adds r2, r2, r1
    SXLANE r5, \lane
    muls r1, r6
    adds r3, r3, r1
    .endm
    .macro D2GRP j
    ldr  r4, [r0, #(4 * \j)]
    ldr  r5, [r0, #(16 + 4 * \j)]
    D2LANE \j, 0
    D2LANE \j, 1
    D2LANE \j, 2
    D2LANE \j, 3
    .endm

    .align 2
    .global atm_ek_dots16x2_m0
    .type atm_ek_dots16x2_m0, %function
    .thumb_func
atm_ek_dots16x2_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    push {r4}
    sub  sp, #64
    movs r4, #0
    mov  r6, sp
1:                                /* q as words on the stack */
    ldrsh r5, [r0, r4]
    lsls r7, r4, #1
    str  r5, [r6, r7]
    adds r4, #2
    cmp  r4, #32
    bne  1b
    movs r7, r3
    lsls r2, r2, #3
    adds r2, r3, r2
    mov  r8, r2                   /* out's end: 2 pairs words */
    movs r0, r1
2:
    movs r2, #0
    movs r3, #0
    D2GRP 0
    D2GRP 1
    D2GRP 2
    D2GRP 3
    stm  r7!, {r2, r3}
    adds r0, #32
    cmp  r7, r8
    beq  3f
    b    2b                       /* the loop is beyond a conditional branch's reach */
3:
    add  sp, #64
    pop  {r4}
    mov  r8, r4
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_dots16x2_m0, . - atm_ek_dots16x2_m0

/* int atm_ek_topk_ins_m0(const int32_t *sc, int run, int32_t t0, int32_t *pr, int cnt, int keff);
 * atm_ek_topk_ins_ref in Thumb-1 (engine_kernels.h: the kept set by sorted
 * insertion over (score, position) pairs behind a sentinel whose score is
 * INT32_MAX, so a shift needs no bounds test). A rejected score costs 5
 * instructions, a shift by one pair 7.5.
 *   r0 sc walker   r1, r5 scratch   r2 t0 - (sc >> 2) - 1 (a position from
 *   the walker)   r3 the pair above the free slot   r4 the score
 *   r6 cnt, then the last kept score   r7 &pr[keff]   r8 sc's end   r9 pr
 *   r10 keff */
    .macro TOPK_SHIFT_M0
1:
    .rept 2                          /* two shifts a round */
    ldr  r1, [r3]
    cmp  r1, r4
    bge  2f
    ldr  r5, [r3, #4]
    str  r1, [r3, #8]
    str  r5, [r3, #12]
    subs r3, #8
    .endr
    b    1b
2:
    lsrs r1, r0, #2
    adds r1, r2, r1
    str  r4, [r3, #8]
    str  r1, [r3, #12]
    .endm

    .align 2
    .global atm_ek_topk_ins_m0
    .type atm_ek_topk_ins_m0, %function
    .thumb_func
atm_ek_topk_ins_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    mov  r5, r9
    mov  r6, r10
    push {r4, r5, r6}
    ldr  r6, [sp, #32]               /* cnt */
    ldr  r5, [sp, #36]               /* keff */
    mov  r10, r5
    lsls r1, r1, #2
    adds r1, r0, r1
    mov  r8, r1
    lsrs r4, r0, #2
    subs r2, r2, r4
    subs r2, #1
    lsls r7, r5, #3
    adds r7, r3, r7
    mov  r9, r3
    cmp  r6, r5
    bge  5f
3:                                   /* filling: every score goes in */
    cmp  r0, r8
    beq  8f
    ldm  r0!, {r4}
    lsls r3, r6, #3
    add  r3, r9
    adds r6, #1
    TOPK_SHIFT_M0
    cmp  r6, r10
    blt  3b
5:
    ldr  r6, [r7]
6:                                   /* full: only a score above the last kept */
    cmp  r0, r8
    beq  9f
    ldm  r0!, {r4}
    cmp  r4, r6
    ble  6b
    movs r3, r7
    subs r3, #8
    TOPK_SHIFT_M0
    ldr  r6, [r7]
    b    6b
8:
    movs r0, r6
    b    10f
9:
    mov  r0, r10
10:
    pop  {r4, r5, r6}
    mov  r8, r4
    mov  r9, r5
    mov  r10, r6
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_topk_ins_m0, . - atm_ek_topk_ins_m0

/* int atm_ek_scores16_m0(const int32_t *dots, const uint8_t *kexp, int n,
 *                        int32_t m, int sbase, int32_t *out);
 * atm_ek_scores_m3's common case on the Cortex-M0, which has no 32 x 32 ->
 * 64 multiply: out[j] = the product P = dots[j] m (0 <= m < 2^30) divided
 * by 2^sh, sh = sbase - kexp[j], rounded, while 32 <= sh <= 62 and
 * |dots[j]| < 2^26 (a key of up to 32 int8 values against an int16
 * query); returns how many keys it did (it stops at the first other key,
 * or at n). From 16-bit halves, d = 2^16 dh + dl, m = 2^16 mh + ml:
 * floor(P / 2^16) = 2^16 dh mh + C with C = dh ml + dl mh + (dl ml >> 16)
 * (|C| < 2^31), so T = floor(P / 2^31) = 2 dh mh + (C >> 15), and the
 * rounded quotient is ((T >> (sh - 32)) + 1) >> 1 (|r| < 2^24: no clamp).
 * 35 instructions a key.
 *   r0 dots walker   r1 kexp walker   r2 out walker   r3 mh   r4 ml
 *   r5 the dot, dh, T   r6, r7 scratch   r8 sbase - 32   r9 dots' end
 *   r10 2^26   r11 dots   r12 sh - 32 */
    .align 2
    .global atm_ek_scores16_m0
    .type atm_ek_scores16_m0, %function
    .thumb_func
atm_ek_scores16_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    mov  r5, r9
    mov  r6, r10
    mov  r7, r11
    push {r4, r5, r6, r7}
    mov  r11, r0
    lsls r2, r2, #2
    adds r2, r0, r2
    mov  r9, r2
    ldr  r2, [sp, #36]               /* sbase */
    subs r2, #32
    mov  r8, r2
    movs r2, #1
    lsls r2, r2, #26
    mov  r10, r2
    ldr  r2, [sp, #40]               /* out */
    lsls r4, r3, #16
    lsrs r4, r4, #16                 /* ml */
    asrs r3, r3, #16                 /* mh */
    cmp  r0, r9
    beq  9f
1:
    ldrb r7, [r1]
    mov  r6, r8
    subs r7, r6, r7                  /* sh - 32 */
    cmp  r7, #30
    bhi  9f
    ldr  r5, [r0]
    mov  r6, r10
    adds r6, r5, r6
    lsrs r6, r6, #27                 /* |d| < 2^26 */
    bne  9f
    adds r0, #4
    adds r1, #1
    mov  r12, r7
    lsls r6, r5, #16
    lsrs r6, r6, #16                 /* dl */
    asrs r5, r5, #16                 /* dh */
    movs r7, r6
    muls r7, r4                      /* dl ml */
    lsrs r7, r7, #16
    muls r6, r3                      /* dl mh */
    adds r7, r7, r6
    movs r6, r5
    muls r6, r4                      /* dh ml */
    adds r7, r7, r6                  /* C */
    asrs r7, r7, #15
    muls r5, r3                      /* dh mh */
    lsls r5, r5, #1
    adds r5, r5, r7                  /* T */
    mov  r7, r12
    asrs r5, r7
    adds r5, #1
    asrs r5, r5, #1
    stm  r2!, {r5}
    cmp  r0, r9
    bne  1b
9:
    mov  r1, r11
    subs r0, r0, r1
    lsrs r0, r0, #2
    pop  {r4, r5, r6, r7}
    mov  r8, r4
    mov  r9, r5
    mov  r10, r6
    mov  r11, r7
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_scores16_m0, . - atm_ek_scores16_m0

/* ---- LayerNorm's loops on the Cortex-M0 (the quantisers' extremes and
 * stores are in core/engine_arm.S: both boards run them) --------------------
 * (twins in core/engine_ref.c; tests/mcu/kernels.c compares on QEMU.) */

/* void atm_ek_ln_stats_m0(const int32_t *x, int d, int64_t *sum, int32_t *lo, int32_t *hi);
 * atm_ek_ln_stats_ref for d >= 1: the 64-bit sum by ADDS / ADCS of the
 * sign word, the extremes with branches around the rare moves. */
    .align 2
    .global atm_ek_ln_stats_m0
    .type atm_ek_ln_stats_m0, %function
    .thumb_func
atm_ek_ln_stats_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    mov  r5, r9
    push {r4, r5}
    mov  r8, r2                      /* sum */
    mov  r9, r3                      /* lo */
    lsls r1, r1, #2
    adds r1, r0, r1                  /* the end */
    ldr  r5, [r0]                    /* min */
    movs r6, r5                      /* max */
    movs r2, #0                      /* the sum's low word */
    movs r3, #0                      /* its high word */
1:
    ldm  r0!, {r4}
    asrs r7, r4, #31                 /* (before ADDS: ASRS sets the carry) */
    adds r2, r2, r4
    adcs r3, r7
    cmp  r4, r5
    bge  2f
    movs r5, r4
2:
    cmp  r4, r6
    ble  3f
    movs r6, r4
3:
    cmp  r0, r1
    bne  1b
    mov  r4, r8
    str  r2, [r4]
    str  r3, [r4, #4]
    mov  r4, r9
    str  r5, [r4]
    ldr  r4, [sp, #28]               /* hi */
    str  r6, [r4]
    pop  {r4, r5}
    mov  r8, r4
    mov  r9, r5
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_ln_stats_m0, . - atm_ek_ln_stats_m0

/* int64_t atm_ek_ln_center_m0(const int32_t *x, int d, int32_t mean, int k, int16_t *u);
 * atm_ek_ln_center_ref for k >= 1 and d >= 1: u = (x - mean) >> k and the
 * sum of u^2 (each below 2^30) in two words. */
    .align 2
    .global atm_ek_ln_center_m0
    .type atm_ek_ln_center_m0, %function
    .thumb_func
atm_ek_ln_center_m0:
    push {r4, r5, r6, r7, lr}
    mov  r4, r8
    push {r4}
    ldr  r7, [sp, #24]               /* u */
    lsls r1, r1, #2
    adds r1, r0, r1
    mov  r8, r1                      /* the end */
    movs r1, #0                      /* the sum's low word */
    movs r6, #0                      /* its high word */
    movs r5, #0                      /* 0, for ADCS */
1:
    ldm  r0!, {r4}
    subs r4, r4, r2
    asrs r4, r3
    strh r4, [r7, #0]
    adds r7, #2
    muls r4, r4
    adds r1, r1, r4
    adcs r6, r5
    cmp  r0, r8
    bne  1b
    movs r0, r1
    movs r1, r6
    pop  {r4}
    mov  r8, r4
    pop  {r4, r5, r6, r7, pc}
    .size atm_ek_ln_center_m0, . - atm_ek_ln_center_m0

/* void atm_ek_mix4w_m0(const int32_t *w, const int32_t *idx, const int8_t *base,
 *                      int n, int d, int32_t *out, int32_t *pairs);
 * atm_ek_mix4_m0 with the (weight, row) pairs of all n positions in the
 * caller's words pairs[0, 2 n) (the engine's wide, after the mixed row),
 * not 8 at a time on the stack: each group of four output columns is one
 * walk over the pairs, with no second pass adding to out. n >= 1, d >= 4 a
 * multiple of 4, base word aligned.
 *   r0 four values   r1 a value   r2 weight   r3 row   r4 pair walker
 *   r5 column offset   r6-r9 the sums   r10 the pairs' end   r11 out walker
 *   r12 the pairs   [sp] d */
    .align 2
    .global atm_ek_mix4w_m0
    .type atm_ek_mix4w_m0, %function
    .thumb_func
atm_ek_mix4w_m0:
    MS_PUSH
    sub  sp, #4
    /* 10 words pushed + 4: d at [sp, #44], out at [sp, #48], pairs at [sp, #52] */
    ldr  r5, [sp, #44]
    str  r5, [sp]
    ldr  r4, [sp, #48]
    mov  r11, r4
    ldr  r4, [sp, #52]
    mov  r12, r4
1:                                /* pairs: (w[i], base + idx[i] d) */
    ldm  r0!, {r6}
    ldm  r1!, {r7}
    muls r7, r5
    adds r7, r7, r2
    stm  r4!, {r6, r7}
    subs r3, #1
    bne  1b
    mov  r10, r4
    movs r5, #0
2:                                /* four columns */
    movs r6, #0
    movs r7, #0
    mov  r8, r6
    mov  r9, r6
    mov  r4, r12
3:
    MIXPAIR
    cmp  r4, r10
    bne  3b
    MIXSTORE
    ldr  r0, [sp]
    cmp  r5, r0
    bne  2b
    add  sp, #4
    MS_POP
    .size atm_ek_mix4w_m0, . - atm_ek_mix4w_m0
