# cmake/arm-none-eabi.cmake — CMake toolchain file for the bare-metal
# Cortex-M firmware (preset `mcu`; docs/mcu.md).
#
# Contract: selects Debian's arm-none-eabi-gcc for C and ASM and sets only
# what every ARM target shares (Thumb, soft-float ABI). The CPU (-mcpu) is
# NOT chosen here: mcu/CMakeLists.txt builds one image per board and gives
# each target its own -mcpu for compiling AND linking (the link flag picks
# the matching libgcc multilib). No newlib, no crt0: the firmware brings its
# own startup and links with -nostdlib (mcu/CMakeLists.txt).
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
set(CMAKE_OBJCOPY arm-none-eabi-objcopy CACHE FILEPATH "objcopy for the firmware")
set(CMAKE_SIZE arm-none-eabi-size CACHE FILEPATH "size report for the firmware")

# The compiler check cannot link an executable without our startup and
# linker script, so it only builds a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(CMAKE_C_FLAGS_INIT "-mthumb -mfloat-abi=soft")
set(CMAKE_ASM_FLAGS_INIT "-mthumb -mfloat-abi=soft")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
