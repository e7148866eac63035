#!/usr/bin/env bash
# tests/cli/firmware.sh — `atome firmware` and `atome header`: firmware for
# the QEMU boards from exported models (the shipped atome-60k and a random
# small shape), run under QEMU with the issue's own command line
# (qemu-system-arm -nographic -semihosting-config ...,arg=--prompt,arg=TEXT),
# equal to native `atome generate` byte for byte; the image differs from the
# template only inside the model slot and equals tools/mcu/elfpatch's; the header
# compiles (gcc and arm-none-eabi-gcc, -Werror) and holds exactly the model
# bytes; the pico's .uf2 parses and holds its .bin, which holds its ELF's
# flash bytes; every error is one line with its exit status and leaves no file.
# Needs the mcu preset's templates ($ATOME_MCU_BUILD, default
# $ATOME_SOURCE_DIR/build/mcu) and qemu-system-arm: missing ones FAIL.
# Usage: bash tests/cli/firmware.sh /path/to/atome
set -u
ATOME=${1:?usage: firmware.sh /path/to/atome}
SRC=${ATOME_SOURCE_DIR:?ATOME_SOURCE_DIR must point at the source tree}
MCU=${ATOME_MCU_BUILD:-$SRC/build/mcu}
export ATOME_MCU_BUILD=$MCU
W=$(mktemp -d /tmp/atome-cli-firmware.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0; checks=0
ok() { checks=$((checks + 1)); if ! eval "$1"; then fails=$((fails + 1)); echo "FAIL: $2"; fi; }
# jv FILE KEY: a top-level value of the one-line JSON object in FILE.
jv() { python3 -c 'import json,sys; v=json.loads(open(sys.argv[1]).read())[sys.argv[2]]; print(v)' "$1" "$2" 2> /dev/null; }
# one_line CODE FILE: exit status CODE and exactly one "atome: " line in FILE.
one_line() { [ "$1" -eq "$2" ] && [ "$(wc -l < "$3")" -eq 1 ] && grep -q '^atome: ' "$3"; }
# (each command's status is saved in rc first: ok's own bookkeeping resets $?)

for b in mps2-an385 microbit pico; do
    [ -f "$MCU/mcu/atome-fw-$b.elf" ] || { echo "FAIL: no firmware template $MCU/mcu/atome-fw-$b.elf (cmake --preset mcu && cmake --build --preset mcu)"; exit 1; }
done
command -v qemu-system-arm > /dev/null || { echo "FAIL: qemu-system-arm is not installed (tools/setup installs it)"; exit 1; }
command -v python3 > /dev/null || { echo "FAIL: python3 is needed to check the JSON"; exit 1; }
cd "$W" || exit 1

"$ATOME" export --quiet --model "$SRC/models/atome-60k.ckpt" --format atome02 --out a60k.atome > /dev/null \
    || { echo "FAIL: export atome-60k"; exit 1; }
"$ATOME" init --config atome-60k --seed 11 --d-model 32 --layers 2 --d-head 8 --kernel 3 --attn-top-k 2 --out small.ckpt \
    && "$ATOME" export --quiet --model small.ckpt --format atome01 --window 24 --out small.atome > /dev/null \
    || { echo "FAIL: init/export of the small model"; exit 1; }

# --- images for every board; the issue's QEMU command line equals native generate (QEMU's boards) ---
# run_fw BOARD ELF ARG...: the image under QEMU with the semihosting command
# line "atome ARG..." (no argument may hold a space or a comma).
run_fw() {
    local board=$1 elf=$2 semi="enable=on,target=native,arg=atome"; shift 2
    for a in "$@"; do semi="$semi,arg=$a"; done
    timeout 60 qemu-system-arm -M "$board" -nographic -semihosting-config "$semi" -kernel "$elf" < /dev/null
}
for m in a60k small; do
    for b in mps2-an385 microbit pico; do
        "$ATOME" firmware --model $m.atome --board $b --out $m-$b.elf > $m-$b.json 2> $m-$b.err; rc=$?
        ok '[ $rc -eq 0 ] && [ -s $m-$b.elf ]' "firmware $m $b: $(cat $m-$b.err)"
        # --encoding auto (the default): the board gets ATOME01, the faster encoding on every board
        "$ATOME" convert --model $m.atome --format atome01 --out $m-01.atome > /dev/null
        ok '[ "$(jv $m-$b.json board)" = $b ] && [ "$(jv $m-$b.json model_bytes)" -eq "$(wc -c < $m-01.atome)" ] && [ "$(jv $m-$b.json encoding)" = ATOME01 ]' "firmware $m $b: JSON board, model_bytes and encoding"
        ok '[ "$(jv $m-$b.json template)" = "$MCU/mcu/atome-fw-$b.elf" ]' "firmware $m $b: the template comes from ATOME_MCU_BUILD"
        # every differing byte lies inside the model slot (offset from the section table)
        ok 'python3 - $m-$b.elf "$MCU/mcu/atome-fw-$b.elf" <<'"'"'EOF'"'"'
import struct, sys
a, t = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
assert len(a) == len(t)
shoff, = struct.unpack_from("<I", t, 32); ent, num, sx = struct.unpack_from("<HHH", t, 46)
stro = struct.unpack_from("<I", t, shoff + sx * ent + 16)[0]
for i in range(num):
    h = shoff + i * ent; nm = struct.unpack_from("<I", t, h)[0]
    if t[stro + nm:stro + nm + 13] == b".atome_model\0":
        off, size = struct.unpack_from("<II", t, h + 16)
diff = [i for i in range(len(a)) if a[i] != t[i]]
assert diff and off <= diff[0] and diff[-1] < off + size, (diff[:3], off, size)
EOF' "firmware $m $b: only the model slot changed"
    done
done
ok '[ "$(jv a60k-microbit.json max_window)" -eq 32 ] && grep -q "default window 64 does not fit the microbit" a60k-microbit.err' "atome-60k on the microbit: max_window 32 and a note about window 64"
ok '[ "$(jv a60k-mps2-an385.json max_window)" -gt 64 ] && [ ! -s a60k-mps2-an385.err ]' "atome-60k on the mps2-an385: window 64 fits, no note"
ok '[ "$(jv a60k-microbit.json engine_bytes)" -eq "$("$ATOME" inspect a60k.atome | python3 -c "import json,sys; print(json.load(sys.stdin)[\"arena_bytes\"])")" ]' "engine_bytes = inspect's arena_bytes"
if [ -x "$(dirname "$ATOME")/elfpatch" ]; then
    "$(dirname "$ATOME")/elfpatch" --template "$MCU/mcu/atome-fw-microbit.elf" --board microbit --model a60k.atome --out ep.elf
    "$ATOME" firmware --model a60k.atome --board microbit --encoding keep --out keep.elf > /dev/null 2>&1
    ok 'cmp -s ep.elf keep.elf' "atome firmware --encoding keep = elfpatch, byte for byte"
    "$(dirname "$ATOME")/elfpatch" --template "$MCU/mcu/atome-fw-microbit.elf" --board microbit --model a60k-01.atome --out ep01.elf
    ok 'cmp -s ep01.elf a60k-microbit.elf' "atome firmware (auto) = elfpatch of the ATOME01 model, byte for byte"
fi

PROMPT=Once
for case in "a60k microbit 48 32" "a60k mps2-an385 48 64" "small microbit 40 24" "small mps2-an385 40 24"; do
    set -- $case
    m=$1 b=$2 n=$3 win=$4
    run_fw $b $m-$b.elf --prompt $PROMPT --n $n --window $win > q.out 2> q.err; rc=$?
    ok '[ $rc -eq 0 ] && [ "$(wc -c < q.out)" -eq $n ]' "qemu $m $b greedy: exit 0 and $n bytes ($(head -c 200 q.err))"
    "$ATOME" generate --model $m.atome --prompt $PROMPT --n $n --window $win > n.out
    ok 'cmp -s q.out n.out' "qemu $m $b greedy window $win = atome generate"
    HEX=$(printf 'Il \xc3\xa9tait une fois \xe2\x98\x83' | od -An -v -tx1 | tr -d ' \n')
    run_fw $b $m-$b.elf --prompt-hex $HEX --n $n --temperature 0.8 --top-k 40 --top-p 0.9 --seed 9 --window $win > q.out 2> q.err
    "$ATOME" generate --model $m.atome --prompt-hex $HEX --n $n --temperature 0.8 --top-k 40 --top-p 0.9 --seed 9 --window $win > n.out
    ok 'cmp -s q.out n.out && [ "$(wc -c < n.out)" -eq $n ]' "qemu $m $b sampled UTF-8 = atome generate"
done
# the small model's default window (24, stored by export) is the firmware's too
run_fw microbit small-microbit.elf --prompt $PROMPT --n 30 --temperature 1 > q.out
"$ATOME" generate --model small.atome --prompt $PROMPT --n 30 --temperature 1 > n.out
ok 'cmp -s q.out n.out' "default window: qemu = atome generate"
# atome-60k at window 64 does not fit the microbit: the firmware says so (exit 5)
run_fw microbit a60k-microbit.elf --prompt $PROMPT --n 4 --window 64 > q.out 2> q.err; rc=$?
ok '[ $rc -eq 5 ] && [ ! -s q.out ]' "atome-60k at window 64 on the microbit: exit 5, no output"

# --- the pico: elf, bin and uf2 (QEMU has no RP2040: tests/node/ boots its
# images in rp2040js). The UF2 is what the bootrom's RPI-RP2 drive takes:
# 512-byte blocks of 256-byte payloads at 0x10000000 on, the RP2040 family;
# its payloads are the bin file, and the bin file is the ELF's loaded bytes.
"$ATOME" firmware --model a60k.atome --board pico --out p.elf > p-elf.json 2> p.err; rc=$?
ok '[ $rc -eq 0 ] && [ "$(jv p-elf.json board)" = pico ] && [ "$(jv p-elf.json encoding)" = ATOME01 ]' "firmware a60k pico: $(cat p.err)"
ok '[ "$(wc -l < p.err)" -eq 1 ] && grep -q "^firmware: note: the pico runs standalone images only (no semihosting)" p.err' "pico without settings: one note (standalone only): $(cat p.err)"
ok '[ "$(jv p-elf.json max_window)" -ge 64 ] && [ "$(jv p-elf.json template)" = "$MCU/mcu/atome-fw-pico.elf" ]' "atome-60k on the pico: window 64 fits; the template comes from ATOME_MCU_BUILD"
SET=(--prompt "Once upon a time" --n 120 --temperature 0.8 --top-k 40 --seed 3)
for f in elf bin uf2; do
    "$ATOME" firmware --model a60k.atome --board pico --format $f --out ps.$f "${SET[@]}" > ps-$f.json 2> ps.err; rc=$?
    ok '[ $rc -eq 0 ] && [ -s ps.$f ] && [ "$(jv ps-$f.json format)" = $f ]' "firmware pico --format $f: $(cat ps.err)"
done
ok '[ "$(jv ps-uf2.json flash_base)" = 0x10000000 ] && [ "$(jv ps-uf2.json flash_bytes)" -eq "$(wc -c < ps.bin)" ]' "pico uf2 JSON: flash_base 0x10000000, flash_bytes = the bin file's size"
ok '[ "$(jv ps-uf2.json uf2_blocks)" -eq $(( ($(wc -c < ps.bin) + 255) / 256 )) ] && [ "$(jv ps-uf2.json uf2_family)" = 0xE48BFF56 ] && [ "$(wc -c < ps.uf2)" -eq $(( 512 * $(jv ps-uf2.json uf2_blocks) )) ]' "pico uf2 JSON: uf2_blocks, uf2_family; 512 bytes a block"
ok '[ "$(jv ps-uf2.json expect_hex)" = "$(jv ps-bin.json expect_hex)" ] && [ -n "$(jv ps-uf2.json expect_hex)" ]' "pico uf2 and bin: the same known answer"
ok 'python3 - ps.uf2 ps.bin ps.elf <<'"'"'EOF'"'"'
import struct, sys
u, b, e = (open(f, "rb").read() for f in sys.argv[1:4])
n = len(u) // 512
assert n and len(u) == 512 * n, len(u)
pay = b""
for i in range(n):
    k = u[512 * i:512 * (i + 1)]
    m0, m1, flags, addr, size, no, cnt, fam = struct.unpack_from("<8I", k)
    assert (m0, m1, struct.unpack_from("<I", k, 508)[0]) == (0x0A324655, 0x9E5D5157, 0x0AB16F30), i
    assert flags == 0x2000 and fam == 0xE48BFF56 and size == 256, (i, hex(flags), hex(fam), size)
    assert addr == 0x10000000 + 256 * i and no == i and cnt == n, (i, hex(addr), no, cnt)
    assert k[32 + 256:508] == bytes(476 - 256), i
    pay += k[32:32 + 256]
assert pay[:len(b)] == b and pay[len(b):] == b"\xff" * (len(pay) - len(b)), "payloads != the bin file"
# the bin file is the ELF: every PT_LOAD with file bytes at its load address
phoff, = struct.unpack_from("<I", e, 28); phent, phnum = struct.unpack_from("<HH", e, 42)
img = bytearray(b"\xff" * len(b))
for i in range(phnum):
    t, off, va, pa, fsz = struct.unpack_from("<5I", e, phoff + i * phent)
    if t == 1 and fsz:
        assert 0x10000000 <= pa and pa + fsz <= 0x10000000 + len(b), hex(pa)
        img[pa - 0x10000000:pa - 0x10000000 + fsz] = e[off:off + fsz]
assert bytes(img) == b, "the bin file is not the loaded bytes of the ELF"
# what the bootrom checks: the last word of boot2 is the CRC-32/MPEG-2 of its first 252 bytes
c = 0xFFFFFFFF
for x in b[:252]:
    c ^= x << 24
    for _ in range(8): c = ((c << 1) ^ 0x04C11DB7 if c & 0x80000000 else c << 1) & 0xFFFFFFFF
assert struct.unpack_from("<I", b, 252)[0] == c, "boot2 CRC"
# boot2 vectors into the image at 0x10000100: a stack in SRAM, a Thumb reset handler in flash
sp, reset = struct.unpack_from("<II", b, 256)
assert 0x20000000 < sp <= 0x20042000 and reset & 1 and 0x10000100 < reset < 0x10000000 + len(b), (hex(sp), hex(reset))
EOF' "pico uf2: every block's fields, the payloads = the bin file = the ELF's flash bytes, boot2's CRC and the vector table"
"$ATOME" firmware --model a60k.atome --board pico --format uf2 --out pk.uf2 > pk.json 2> pk.err; rc=$?
ok '[ $rc -eq 0 ] && [ "$(jv pk.json standalone)" = False ] && [ "$(jv pk.json uf2_blocks)" -gt 0 ]' "pico uf2 without settings (semihosting image): $(cat pk.err)"
for b in microbit mps2-an385; do
    "$ATOME" firmware --model a60k.atome --board $b --format uf2 --out e.uf2 "${SET[@]}" 2> e.err > e.out; rc=$?
    ok 'one_line $rc 2 e.err && grep -q "format uf2 is for the pico .*the $b takes elf, hex or bin" e.err && [ ! -e e.uf2 ] && [ ! -s e.out ]' "uf2 for the $b is refused: $(cat e.err)"
done
"$ATOME" firmware --model a60k.atome --board pico --format ihex --out e.uf2 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && grep -q "must be elf, hex, bin or uf2 (got .ihex.)" e.err && [ ! -e e.uf2 ]' "unknown format: $(cat e.err)"
"$ATOME" firmware --model a60k.atome --board microbit --out e.elf --template "$MCU/mcu/atome-fw-pico.elf" 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && grep -q "built for board .pico., not .microbit." e.err && [ ! -e e.elf ]' "the pico template is the pico's: $(cat e.err)"

# --- errors: one line, exit status, no output file ---
"$ATOME" init --config atome-60k --seed 1 --d-model 256 --out big.ckpt && "$ATOME" export --quiet --model big.ckpt --format atome01 --out big.atome > /dev/null
"$ATOME" firmware --model big.atome --board microbit --out e.elf 2> e.err > e.out; rc=$?
ok 'one_line $rc 1 e.err && grep -q "too big for the microbit model slot of 65504 bytes" e.err && [ ! -e e.elf ] && [ ! -s e.out ]' "model too big for the slot: $(cat e.err)"
"$ATOME" firmware --model big.atome --board mps2-an385 --out e3.elf > /dev/null 2>&1; rc=$?
ok '[ $rc -eq 0 ] && [ -s e3.elf ]' "the same model fits the mps2-an385 slot"
"$ATOME" init --config atome-60k --seed 1 --d-model 96 --layers 12 --pathways conv --kernel 64 --out deep.ckpt \
    && "$ATOME" export --quiet --model deep.ckpt --format atome02 --out deep.atome > /dev/null
"$ATOME" firmware --model deep.atome --board microbit --out e.elf 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && grep -q "bytes of RAM at window 1" e.err && [ ! -e e.elf ]' "fits the slot but no window fits the RAM: $(cat e.err)"
"$ATOME" firmware --model a60k.atome --board stm32 --out e.elf 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && grep -q "unknown board .stm32. (mps2-an385, microbit, microbit-v1, microbit-v2 or pico)" e.err && [ ! -e e.elf ]' "bad board: $(cat e.err)"
"$ATOME" firmware --model a60k.atome --board microbit --out e.elf --template "$MCU/mcu/atome-fw-mps2-an385.elf" 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && grep -q "built for board .mps2-an385." e.err && [ ! -e e.elf ]' "template of another board: $(cat e.err)"
"$ATOME" firmware --model a60k.atome --board microbit --out e.elf --template "$W/no-such.elf" 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && grep -q "cmake --build --preset mcu" e.err && [ ! -e e.elf ]' "missing template: $(cat e.err)"
"$ATOME" firmware --model a60k.atome --board microbit --out e.elf --template a60k.atome 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && grep -q "not a 32-bit little-endian ELF" e.err && [ ! -e e.elf ]' "template not an ELF: $(cat e.err)"
"$ATOME" firmware --model a60k.atome --board microbit --out e.elf --template big.atome 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && [ ! -e e.elf ]' "template not an ELF (2)"
head -c 1000 a60k.atome > trunc.atome
"$ATOME" firmware --model trunc.atome --board microbit --out e.elf 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && grep -q "truncated: 1000 of the" e.err && [ ! -e e.elf ]' "truncated model: $(cat e.err)"
"$ATOME" firmware --model small.ckpt --board microbit --out e.elf 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && [ ! -e e.elf ]' "a checkpoint is not a .atome model: $(cat e.err)"
"$ATOME" firmware --model no-such.atome --board microbit --out e.elf 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && [ ! -e e.elf ]' "missing model"
"$ATOME" firmware --board microbit --out e.elf 2> e.err; rc=$?
ok 'one_line $rc 2 e.err' "--model missing"
"$ATOME" firmware --model a60k.atome --out e.elf 2> e.err; rc=$?
ok 'one_line $rc 2 e.err' "--board missing"
"$ATOME" firmware --model a60k.atome --board microbit 2> e.err; rc=$?
ok 'one_line $rc 2 e.err' "--out missing"
"$ATOME" firmware --model a60k.atome --board microbit --out e.elf --bogus 1 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && [ ! -e e.elf ]' "unknown flag"
"$ATOME" firmware --model a60k.atome --board microbit --out "$W/no-dir/e.elf" 2> e.err; rc=$?
ok 'one_line $rc 1 e.err' "unwritable output: $(cat e.err)"
ok '[ -z "$(ls "$W" | grep -E "\.tmp-")" ]' "no temporary files left behind"

# --- header ---
"$ATOME" header --model a60k.atome --out model.h > h.json 2> h.err; rc=$?
ok '[ $rc -eq 0 ] && [ ! -s h.err ] && [ "$(jv h.json model_bytes)" -eq "$(wc -c < a60k.atome)" ]' "header: exit 0, JSON"
ok 'grep -q "d_model 64, layers 4" model.h && grep -q "pathways conv,ssm,attn" model.h && grep -q "encoding ATOME02" model.h' "header: config comment"
ok 'grep -q "#define ATOME_MODEL_BYTES $(wc -c < a60k.atome)u" model.h' "header: size macro"
# the comment names the file written and counts the parameters as inspect does (not the stored values)
ok 'grep -q "^/\* model.h — generated from a60k.atome" model.h' "header: the comment names the file written"
ok 'grep -q " $("$ATOME" inspect a60k.atome | python3 -c "import json,sys; print(json.load(sys.stdin)[\"params\"])") parameters ($("$ATOME" inspect a60k.atome | python3 -c "import json,sys; print(json.load(sys.stdin)[\"stored_values\"])") values stored)" model.h' "header: inspect's parameter count"
python3 - model.h > back.bin <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
body = t[t.index("] = {"):t.index("};")]
sys.stdout.buffer.write(bytes(int(x, 16) for x in re.findall(r"0x([0-9A-F]{2})", body)))
EOF
ok 'cmp -s back.bin a60k.atome' "header: the array holds exactly the model bytes"
cat > use.c <<'EOF'
#include "model.h"
#include "named.h"
unsigned byte_at(unsigned i);
unsigned byte_at(unsigned i) {   /* a run-time index keeps both arrays in the object */
    return i < ATOME_MODEL_BYTES ? atome_model[i] : (unsigned)tiny[(i - ATOME_MODEL_BYTES) % TINY_BYTES] + (ATOME_MODEL_CRC32 & 1u);
}
EOF
"$ATOME" header --model small.atome --out named.h --name tiny > /dev/null
ok 'grep -q "static const uint8_t tiny\[$(wc -c < small.atome)\]" named.h && grep -q "TINY_BYTES" named.h' "header --name"
ok 'gcc -std=c99 -Wall -Wextra -Werror -pedantic -c use.c -o use.o' "header compiles with gcc -std=c99 -Wall -Wextra -Werror -pedantic"
if command -v arm-none-eabi-gcc > /dev/null; then
    ok 'arm-none-eabi-gcc -mcpu=cortex-m0 -mthumb -std=c99 -Os -Wall -Wextra -Werror -c use.c -o use-m0.o' "header compiles with arm-none-eabi-gcc"
    ok '[ "$(arm-none-eabi-size -A use-m0.o | awk "\$1 ~ /^\.rodata/ { s += \$2 } END { print s + 0 }")" -ge "$(( $(wc -c < a60k.atome) + $(wc -c < small.atome) ))" ]' "the arrays are read-only data (flash)"
else
    ok 'false' "arm-none-eabi-gcc is not installed (tools/setup installs it)"
fi
"$ATOME" header --model a60k.atome --out e.h --name 9bad 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && [ ! -e e.h ]' "header: bad --name: $(cat e.err)"
"$ATOME" header --model trunc.atome --out e.h 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && grep -q truncated e.err && [ ! -e e.h ]' "header: invalid model"
"$ATOME" header --model a60k.atome 2> e.err; rc=$?
ok 'one_line $rc 2 e.err' "header: --out missing"
"$ATOME" header --out e.h 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && [ ! -e e.h ]' "header: --model missing"

# header --board: the board's RAM (its template's arena) bounds the settings' window, as for firmware
"$ATOME" firmware --model a60k.atome --board microbit --out hb-fw.elf > hb-fw.json 2> /dev/null
"$ATOME" header --model a60k.atome --board microbit --out hb.h --prompt Once --n 8 > hb.json 2> hb.err; rc=$?
ok '[ $rc -eq 0 ] && [ "$(jv hb.json board)" = microbit ] && [ "$(jv hb.json max_window)" = "$(jv hb-fw.json max_window)" ] && [ "$(jv hb.json arena_bytes)" = "$(jv hb-fw.json arena_bytes)" ]' "header --board microbit: the firmware's max_window and arena"
ok '[ "$(python3 -c "import json; print(json.load(open(\"hb.json\"))[\"settings\"][\"window\"])")" -le "$(jv hb.json max_window)" ]' "header --board: the settings' window fits the board"
"$ATOME" header --model a60k.atome --board microbit --out hb2.h --prompt Once --n 8 --window 4000 2> e.err; rc=$?
ok 'one_line $rc 1 e.err && grep -q "does not fit the microbit" e.err && [ ! -e hb2.h ]' "header --board: a window beyond the board's RAM: $(cat e.err)"
"$ATOME" header --model a60k.atome --board pico --out hb3.h > hb3.json; rc=$?
ok '[ $rc -eq 0 ] && [ "$(jv hb3.json board)" = pico ] && [ "$(jv hb3.json max_window)" -gt "$(jv hb.json max_window)" ]' "header --board pico"
"$ATOME" header --model a60k.atome --board nrf52 --out hb4.h 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && grep -q "unknown board" e.err && [ ! -e hb4.h ]' "header: unknown --board"

# header with generation settings: the settings block in the header and a
# one-file atome_model.c example that, built with the core, prints the
# prompt and atome generate's bytes (natively here; it also compiles for the M0)
mkdir -p ex
"$ATOME" header --model a60k.atome --out ex/model.h --prompt "Once upon a time" --n 90 --temperature 0.8 --top-k 40 --seed 9 --window 32 > ex.json
ok '[ -s ex/atome_model.c ] && grep -q "\"example\":\"ex/atome_model.c\"" ex.json && grep -q "\"expect_hex\":\"" ex.json' "header --prompt ...: writes atome_model.c beside it"
ok 'grep -q "static const uint8_t atome_model_settings\[512\]" ex/model.h && grep -q "#define ATOME_MODEL_ARENA_BYTES $("$ATOME" inspect a60k.atome | python3 -c "import json,sys; print(json.load(sys.stdin)[\"arena_bytes_by_window\"][\"32\"])")u" ex/model.h && tail -n 1 ex/model.h | grep -q "^#endif$"' "the header holds the settings block and the arena size"
cat > ex/host.c <<'EOF2'
#include <stdio.h>
int atome_model_main(void);
void atome_putc(unsigned char c) { putchar(c); }
void atome_idle(void) { fflush(stdout); }
int main(void) { return atome_model_main(); }
EOF2
C="$SRC/core"
if cc -std=c99 -O1 -I"$C" ex/host.c ex/atome_model.c "$C/engine.c" "$C/engine_ref.c" "$C/engine_m0.c" "$C/engine_x86.c" "$C/engine_wasm.c" "$C/container.c" \
      "$C/fixmath.c" "$C/format.c" "$C/sampler.c" "$C/fwsettings.c" -o ex/run 2> ex/cc.err; then
    ./ex/run > ex/run.out; rc=$?
    "$ATOME" generate --model a60k.atome --prompt "Once upon a time" --n 90 --temperature 0.8 --top-k 40 --seed 9 --window 32 > ex/gen.out
    ok '[ $rc -eq 0 ] && printf "Once upon a time" | cat - ex/gen.out | cmp -s - ex/run.out' "atome_model.c prints the prompt and atome generate's bytes"
else
    ok 'false' "atome_model.c does not build natively: $(head -c 300 ex/cc.err)"
fi
if command -v arm-none-eabi-gcc > /dev/null; then
    ok 'arm-none-eabi-gcc -std=c99 -mcpu=cortex-m0 -mthumb -Os -ffreestanding -Wall -Wextra -Werror -I"$C" -c ex/atome_model.c -o ex/m0.o' "atome_model.c compiles for the Cortex-M0 without warnings"
fi
"$ATOME" header --model a60k.atome --out ex/x.h --prompt "x" 2> e.err; rc=$?
ok '[ $rc = 0 ] && grep -q "256" ex/x.h' "header: settings without --n take the default length 256"

"$ATOME" header --model a60k.atome --out ex/atome_model.c --prompt "x" --n 5 2> e.err; rc=$?
ok 'one_line $rc 2 e.err && grep -q "where the example atome_model.c goes" e.err' "header: --out atome_model.c with settings is refused"

echo "firmware.sh: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
