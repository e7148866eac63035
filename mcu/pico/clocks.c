/* mcu/pico/clocks.c — the RP2040's clock tree and resets (contract in
 * mcu/pico/pico.h; register addresses and sequences from the RP2040
 * datasheet, chapter 2.15-2.18). */
#include <stdint.h>
#include "pico.h"

#define XOSC 0x40024000u
#define CLOCKS 0x40008000u
#define PLL_SYS 0x40028000u
#define PLL_USB 0x4002C000u
#define WATCHDOG 0x40058000u
#define TIMER 0x40054000u

/* clock n's registers: CTRL, DIV, SELECTED, 12 bytes apart */
#define CLK_REF 0x30u
#define CLK_SYS 0x3Cu
#define CLK_PERI 0x48u
#define CLK_USB 0x54u
#define CLK_SYS_RESUS_CTRL 0x78u
#define CTRL_ENABLE (1u << 11)

#define SPIN_MAX 1000000u

void pico_unreset(uint32_t mask) {
    PICO_REG(PICO_RESETS + PICO_CLR) = mask;
    for (uint32_t i = 0; i < SPIN_MAX && (PICO_REG(PICO_RESETS + 0x8u) & mask) != mask; i++) { }
}

/* refdiv 1 from the 12 MHz crystal: VCO = 12 MHz x fbdiv, out = VCO / pd1 / pd2 */
static void pll_start(uint32_t base, uint32_t reset_bit, uint32_t fbdiv, uint32_t pd1, uint32_t pd2) {
    PICO_REG(PICO_RESETS + PICO_SET) = reset_bit;
    pico_unreset(reset_bit);
    PICO_REG(base + 0x0u) = 1u;                          /* CS: REFDIV */
    PICO_REG(base + 0x8u) = fbdiv;                       /* FBDIV_INT */
    PICO_REG(base + 0x4u + PICO_CLR) = (1u << 0) | (1u << 5);   /* PWR: PD, VCOPD off */
    for (uint32_t i = 0; i < SPIN_MAX && !(PICO_REG(base + 0x0u) & (1u << 31)); i++) { }   /* LOCK */
    PICO_REG(base + 0xCu) = (pd1 << 16) | (pd2 << 12);   /* PRIM: POSTDIV1, POSTDIV2 */
    PICO_REG(base + 0x4u + PICO_CLR) = 1u << 3;          /* PWR: POSTDIVPD off */
}

static void wait_selected(uint32_t clk, uint32_t bit) {
    for (uint32_t i = 0; i < SPIN_MAX && !(PICO_REG(CLOCKS + clk + 8u) & bit); i++) { }
}

void pico_clocks_init(void) {
    PICO_REG(CLOCKS + CLK_SYS_RESUS_CTRL) = 0u;
    /* the crystal: 1-15 MHz range, start-up delay ~1 ms in 256-cycle units */
    PICO_REG(XOSC + 0x0u) = 0xAA0u;                      /* CTRL: FREQ_RANGE 1_15MHZ */
    PICO_REG(XOSC + 0xCu) = (12000u + 128u) / 256u;      /* STARTUP */
    PICO_REG(XOSC + 0x0u + PICO_SET) = 0xFABu << 12;     /* CTRL: ENABLE */
    for (uint32_t i = 0; i < SPIN_MAX && !(PICO_REG(XOSC + 0x4u) & (1u << 31)); i++) { }   /* STABLE */

    /* clk_sys and clk_ref off the PLLs (glitchless sources) before changing them */
    PICO_REG(CLOCKS + CLK_SYS + PICO_CLR) = 3u;          /* SRC = clk_ref */
    wait_selected(CLK_SYS, 1u);
    PICO_REG(CLOCKS + CLK_REF + PICO_CLR) = 3u;          /* SRC = rosc */
    wait_selected(CLK_REF, 1u);

    pll_start(PLL_SYS, PICO_RESET_PLL_SYS, 125u, 6u, 2u);   /* 1500 MHz / 12 = 125 MHz */
    pll_start(PLL_USB, PICO_RESET_PLL_USB, 100u, 5u, 5u);   /* 1200 MHz / 25 = 48 MHz */

    PICO_REG(CLOCKS + CLK_REF + 4u) = 1u << 8;           /* DIV 1 */
    PICO_REG(CLOCKS + CLK_REF) = 2u;                     /* SRC = xosc */
    wait_selected(CLK_REF, 1u << 2);
    PICO_REG(CLOCKS + CLK_SYS + 4u) = 1u << 8;
    PICO_REG(CLOCKS + CLK_SYS) = 0u;                     /* AUXSRC = pll_sys, SRC = clk_ref */
    PICO_REG(CLOCKS + CLK_SYS + PICO_SET) = 1u;          /* SRC = aux (glitchless switch) */
    wait_selected(CLK_SYS, 1u << 1);
    PICO_REG(CLOCKS + CLK_PERI) = CTRL_ENABLE;           /* AUXSRC = clk_sys: 125 MHz */
    PICO_REG(CLOCKS + CLK_USB + 4u) = 1u << 8;
    PICO_REG(CLOCKS + CLK_USB) = CTRL_ENABLE;            /* AUXSRC = pll_usb: 48 MHz */

    PICO_REG(WATCHDOG + 0x2Cu) = (1u << 9) | 12u;        /* TICK: ENABLE, 12 cycles of clk_ref = 1 us */
    pico_unreset(PICO_RESET_TIMER | PICO_RESET_IO_BANK0 | PICO_RESET_PADS_BANK0 | PICO_RESET_UART0);
}

uint32_t pico_us(void) { return PICO_REG(TIMER + 0x28u); }   /* TIMERAWL */
