/* mcu/model_slot.c — the reserved flash section that holds the packed model.
 *
 * Contract (byte layout in docs/mcu.md, "model slot"): section .atome_model,
 * MCU_SLOT_BYTES long, 4-byte aligned, starting with a 32-byte header
 *   0  "ATMSLOT1"          8 bytes
 *   8  capacity            u32 LE = MCU_SLOT_BYTES - 32
 *   12 model length        u32 LE (0 = empty slot)
 *   16 CRC-32 of the model u32 LE (core/format.h CRC; 0 for an empty slot)
 *   20 board               12 bytes, the QEMU machine name, NUL padded
 * followed by the model bytes and zeros up to the end. The build leaves the
 * slot empty; tools/mcu/elfpatch (fwimage/fwimage.c) rewrites it in the ELF file,
 * so no cross compiler is needed to put another model in.
 *
 * This is the only translation unit that sees the initialiser: main.c reads
 * the slot through the linker symbols __model_slot_start/__model_slot_end,
 * so the compiler cannot fold the empty template's values into the code. */
#include <stdint.h>

#if !defined(MCU_SLOT_BYTES) || !defined(MCU_BOARD)
#error "MCU_SLOT_BYTES and MCU_BOARD must be defined by the build"
#endif

#define CAP ((uint32_t)(MCU_SLOT_BYTES) - 32u)

typedef struct {
    char    magic[8];
    uint8_t capacity[4];
    uint8_t length[4];
    uint8_t crc[4];
    char    board[12];
    uint8_t data[CAP];
} model_slot;

/* The header is 32 bytes of byte arrays: no padding anywhere. */
typedef char model_slot_size_check[sizeof(model_slot) == (MCU_SLOT_BYTES) ? 1 : -1];

__attribute__((section(".atome_model"), used, aligned(4)))
const model_slot atm_model_slot = {
    "ATMSLOT1",
    { (uint8_t)CAP, (uint8_t)(CAP >> 8), (uint8_t)(CAP >> 16), (uint8_t)(CAP >> 24) },
    { 0, 0, 0, 0 },
    { 0, 0, 0, 0 },
    MCU_BOARD,
    { 0 }
};
