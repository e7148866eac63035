/* mcu/pico/boot2.c — the RP2040's second-stage boot loader (docs/mcu.md,
 * "Raspberry Pi Pico").
 *
 * Contract.
 *  - The RP2040 bootrom reads the first 256 bytes of flash through the SSI,
 *    checks that their last word is the CRC-32/MPEG-2 of the first 252
 *    (mcu/pico/boot2.cmake writes it), copies them to SRAM at 0x20041f00
 *    and enters at 0x20041f00 (Thumb) with LR = 0. This code is linked at
 *    that address (mcu/pico/boot2.ld) and is position independent anyway:
 *    only BL and PC-relative literal loads.
 *  - It sets the SSI up for execute-in-place with the plain serial read
 *    command 03h (24-bit address, one 32-bit frame per access): slow, but
 *    every SPI NOR flash answers it, so no chip-specific quad set-up is
 *    needed. SCK = clk_sys / 4 (about 1.6 MHz on the ring oscillator at
 *    boot; 31.25 MHz once the firmware runs clk_sys at 125 MHz, within
 *    the 50 MHz limit of 03h on the Pico's W25Q16JV).
 *  - Entered with LR = 0 (from the bootrom): points VTOR at the image's
 *    vector table (0x10000100, right after these 256 bytes), loads SP from
 *    its first word and jumps to its reset handler. Called with any other
 *    LR: returns there (the convention that lets firmware re-run it).
 *  - No RAM beyond the bootrom's stack, no data, no calls out. */
#include <stdint.h>

#define SSI_BASE 0x18000000u
#define SSI(off) (*(volatile uint32_t *)(SSI_BASE + (off)))
#define SSI_CTRLR0     0x00u
#define SSI_CTRLR1     0x04u
#define SSI_SSIENR     0x08u
#define SSI_BAUDR      0x14u
#define SSI_SPI_CTRLR0 0xF4u

/* CTRLR0: DFS_32 (bits 20:16) = 31 (32-bit frames), TMOD (9:8) = 3 (EEPROM
 * read: send the command and address, then receive), SPI_FRF = 0 (one data
 * line). SPI_CTRLR0: XIP_CMD (31:24) = 03h, INST_L (9:8) = 2 (8-bit
 * command), ADDR_L (5:2) = 6 (24 bits), TRANS_TYPE (1:0) = 0 (command and
 * address on one line). CTRLR1: NDF = 0, one frame per XIP access. */
__attribute__((used)) void boot2_setup(void) {
    SSI(SSI_SSIENR) = 0u;
    SSI(SSI_BAUDR) = 4u;
    SSI(SSI_CTRLR0) = (31u << 16) | (3u << 8);
    SSI(SSI_CTRLR1) = 0u;
    SSI(SSI_SPI_CTRLR0) = (0x03u << 24) | (2u << 8) | (6u << 2);
    SSI(SSI_SSIENR) = 1u;
}

/* The entry: first in .boot2_entry, so at 0x20041f00. */
__attribute__((section(".boot2_entry"), naked, used, noreturn)) void boot2_entry(void) {
    __asm__ volatile(
        "push {lr}\n"
        "bl boot2_setup\n"
        "pop {r0}\n"
        "cmp r0, #0\n"
        "beq 1f\n"
        "bx r0\n"                  /* called by firmware: return */
        "1:\n"
        "ldr r0, =0x10000100\n"    /* the image's vector table */
        "ldr r1, =0xE000ED08\n"    /* VTOR */
        "str r0, [r1]\n"
        "ldmia r0, {r0, r1}\n"     /* initial SP, reset handler */
        "msr msp, r0\n"
        "bx r1\n"
        ".ltorg\n");
}
