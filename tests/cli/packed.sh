#!/usr/bin/env bash
# tests/cli/packed.sh — packed `.atome` models through the CLI: train stores
# calibration statistics; export (deterministic, each calibration source),
# inspect JSON, convert ATOME01 -> ATOME02 -> ATOME01 byte-identical (the
# writer is canonical, so equal files mean equal trits), generate on the
# integer engine writing exactly N bytes deterministically, eval keys and
# agreement with the float model; truncated, bit-flipped, oversized and
# wrong-version files each refused with their own one-line error by
# generate, eval, inspect and convert; bad flags and inputs.
# Usage: bash tests/cli/packed.sh /path/to/atome
set -u
ATOME=${1:?usage: packed.sh /path/to/atome}
SHARED=${ATOME_SHARED_DIR:-}
SRC=${ATOME_SOURCE_DIR:-}
DATA="$SHARED/data/tinystories-train.txt"
W=$(mktemp -d /tmp/atome-cli-packed.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0; checks=0
ok() { checks=$((checks + 1)); if ! eval "$1"; then fails=$((fails + 1)); echo "FAIL: $2"; fi; }
# jv FILE KEY: the value of KEY (dotted for nested objects, e.g. bytes.total)
# in the JSON object on the first line of FILE; lists print as JSON. The file
# is parsed once (python3's json) into FILE.kv; a file that is not one JSON
# object gives no values, so every check on it fails.
jv() {
    [ -f "$1.kv" ] && [ "$1.kv" -nt "$1" ] || python3 -c 'import json,sys
def walk(p, v):
    if isinstance(v, dict):
        for k, x in v.items(): walk(p + [k], x)
    else:
        print(".".join(p) + "\t" + (v if isinstance(v, str) else json.dumps(v, separators=(",", ":"))))
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1
j = json.loads(lines[0])
assert isinstance(j, dict)
walk([], j)' "$1" > "$1.kv" 2> /dev/null || : > "$1.kv"
    awk -F'\t' -v k="$2" '$1 == k { print $2; f = 1 } END { exit !f }' "$1.kv"
}
# jhas FILE KEY: KEY is present (a value or an object).
jhas() { jv "$1" "$2" > /dev/null || awk -F'\t' -v k="$2." 'index($1, k) == 1 { f = 1 } END { exit !f }' "$1.kv"; }
# jsum FILE PREFIX EXCLUDE...: sum of the numeric values directly under PREFIX except the named keys
jsum() {
    local f=$1 pre=$2; shift 2
    jv "$f" "$pre.total" > /dev/null
    awk -F'\t' -v pre="$pre." -v ex=" $* " 'index($1, pre) == 1 { k = substr($1, length(pre) + 1); if (index(ex, " " k " ") == 0) s += $2 } END { print s + 0 }' "$f.kv"
}

if [ ! -s "$DATA" ]; then echo "FAIL: shared corpus missing at $DATA (set ATOME_SHARED_DIR)"; exit 1; fi
command -v python3 > /dev/null || { echo "FAIL: python3 is needed to check the JSON"; exit 1; }
cd "$W" || exit 1

head -c 40000 "$DATA" > small.txt
"$ATOME" train --config atome-tiny --data small.txt --steps 60 --batch 8 --seq 32 --lr 3e-3 --out t.ckpt --quiet > train.json \
    || { echo "FAIL: train"; exit 1; }

# --- train stores calibration statistics; strip keeps them ---
"$ATOME" inspect t.ckpt > ic.json
ok '[ "$(jv ic.json format)" = checkpoint ] && [ "$(jv ic.json calib)" = true ]' "train writes calibration statistics"
ok '[ "$(jv ic.json calib_positions)" -eq 16384 ]' "calibration sample: 8 x 2048 positions of the training chunks"
ok '[ "$(jv ic.json bytes.total)" -eq "$(wc -c < t.ckpt)" ] && [ "$(jsum ic.json bytes total)" -eq "$(wc -c < t.ckpt)" ]' "checkpoint sections add up to the file"
"$ATOME" strip --model t.ckpt --out s.ckpt
"$ATOME" inspect s.ckpt > is.json
ok '[ "$(jv is.json calib)" = true ] && [ "$(jv is.json moments)" = false ]' "strip keeps the statistics"

# --- export: deterministic, calibration from the checkpoint ---
"$ATOME" export --model t.ckpt --format atome01 --out a1.atome > e1.json 2> e1.err; rc=$?
ok '[ $rc -eq 0 ] && [ ! -s e1.err ]' "export from a trained checkpoint is quiet"
ok '[ "$(jv e1.json calibration)" = checkpoint ] && [ "$(jv e1.json bytes)" -eq "$(wc -c < a1.atome)" ]' "export JSON: calibration source and size"
"$ATOME" export --model t.ckpt --format atome01 --out a1b.atome > /dev/null
ok 'cmp -s a1.atome a1b.atome' "export is deterministic (same input, same bytes)"
"$ATOME" export --model s.ckpt --format atome01 --out a1s.atome > /dev/null
ok 'cmp -s a1.atome a1s.atome' "a stripped checkpoint exports the same bytes"
"$ATOME" export --model t.ckpt --format ATOME02 --out a2.atome > /dev/null
ok '[ "$(wc -c < a2.atome)" -lt "$(wc -c < a1.atome)" ]' "ATOME02 is smaller than ATOME01"

# --- calibration sources ---
"$ATOME" init --config atome-tiny --seed 4 --seq 32 --out i.ckpt
"$ATOME" export --model i.ckpt --format atome01 --out b.atome > eb.json 2> eb.err
ok '[ "$(jv eb.json calibration)" = bounds ] && grep -q "provable bounds" eb.err && [ "$(wc -l < eb.err)" -eq 1 ]' "no statistics, no data: provable bounds, said on stderr"
"$ATOME" export --model i.ckpt --format atome01 --out bq.atome --quiet > /dev/null 2> bq.err
ok '[ ! -s bq.err ] && cmp -s b.atome bq.atome' "--quiet silences the note, same bytes"
"$ATOME" export --model i.ckpt --format atome01 --calib small.txt --out c.atome > ec.json
ok '[ "$(jv ec.json calibration)" = calib-file ] && ! cmp -s b.atome c.atome' "--calib FILE calibrates (formats differ from bounds only)"
"$ATOME" export --model t.ckpt --format atome01 --calib small.txt --out c2.atome > ec2.json
ok '[ "$(jv ec2.json calibration)" = calib-file ]' "--calib overrides the checkpoint's statistics"
# A checkpoint from before the statistics section (as older builds and the
# page's quick saves write it) is calibrated on the training data it records.
if [ -n "$SRC" ] && node "$SRC/tests/cli/ckpt-drop-section.mjs" t.ckpt old.ckpt ACAL; then
    "$ATOME" inspect old.ckpt > iold.json
    ok '[ "$(jv iold.json valid)" = true ] && [ "$(jv iold.json calib)" = false ]' "a checkpoint without ACAL reads (test fixture)"
    "$ATOME" export --model old.ckpt --format atome01 --out old.atome > eo.json 2> eo.err
    ok '[ "$(jv eo.json calibration)" = training-data ] && grep -q "calibrated on its training data" eo.err' "old checkpoint: calibrated on its recorded training data"
else
    echo "FAIL: cannot make a checkpoint without ACAL (node, ATOME_SOURCE_DIR)"; fails=$((fails + 1))
fi
if [ -n "$SRC" ] && [ -s "$SRC/models/atome-60k.ckpt" ]; then
    "$ATOME" export --model "$SRC/models/atome-60k.ckpt" --format atome02 --out m.atome --quiet > em.json
    ok '[ "$(wc -c < m.atome)" -le 15360 ]' "atome-60k ATOME02 container <= 15,360 bytes"
    "$ATOME" inspect m.atome > im.json
    ok '[ "$(jv im.json arena_bytes_by_window.64)" -le 24576 ] && [ "$(jv im.json arena_bytes_by_window.32)" -le 14336 ]' "atome-60k arena <= 24 KiB at W=64, <= 14 KiB at W=32"
else
    echo "FAIL: models/atome-60k.ckpt not found (set ATOME_SOURCE_DIR)"; fails=$((fails + 1))
fi
"$ATOME" export --model t.ckpt --format atome01 --window 48 --out w.atome > /dev/null
"$ATOME" inspect w.atome > iw.json
ok '[ "$(jv iw.json window)" -eq 48 ] && [ "$(jv iw.json train_seq)" -eq 32 ]' "--window sets the stored default window"

# --- inspect ---
"$ATOME" inspect a1.atome > i1.json; rc=$?
ok '[ $rc -eq 0 ] && [ "$(wc -l < i1.json)" -eq 1 ]' "inspect prints one line"
for k in format version config params bytes arena_bytes crc_ok encoding window; do
    ok 'jhas i1.json $k' "inspect has key $k"
done
ok '[ "$(jv i1.json format)" = atome ] && [ "$(jv i1.json encoding)" = ATOME01 ] && [ "$(jv i1.json crc_ok)" = true ] && [ "$(jv i1.json version)" -eq 1 ]' "inspect: format, encoding, CRC, version"
ok '[ "$(jv i1.json bytes.total)" -eq "$(wc -c < a1.atome)" ] && [ "$(jsum i1.json bytes total file)" -eq "$(wc -c < a1.atome)" ]' "inspect: sections add up to the file size"
ok '[ "$(jv i1.json config.d_model)" -eq 16 ] && [ "$(jv i1.json config.layers)" -eq 2 ] && [ "$(jv i1.json window)" -eq 32 ]' "inspect: config and default window (training seq)"
# params: the model's parameter count (as for the float checkpoint);
# stored_values: the float count minus L*d (the SSM's b and c are folded into one vector)
ok '[ "$(jv i1.json params)" -eq "$(jv ic.json params)" ]' "inspect: params = the float model's count"
ok '[ "$(jv i1.json stored_values)" -eq $(( $(jv ic.json params) - 2 * 16 )) ]' "inspect: stored_values = float params - L*d"
ok '[ "$(jv i1.json arena_bytes)" -eq "$(jv i1.json arena_bytes_by_window.32)" ] && [ "$(jv i1.json arena_bytes_by_window.64)" -gt "$(jv i1.json arena_bytes)" ]' "inspect: arena bytes by window"
"$ATOME" inspect --window 100 a2.atome > i2.json
ok '[ "$(jv i2.json encoding)" = ATOME02 ] && [ "$(jv i2.json arena_window)" -eq 100 ]' "inspect --window"
if [ -s "$SHARED/interop/atome_944k.bin" ]; then
    "$ATOME" inspect "$SHARED/interop/atome_944k.bin" > il.json
    ok '[ "$(jv il.json format)" = legacy ] && [ "$(jv il.json configs)" = "[\"atome-944k\"]" ]' "inspect recognises the reference legacy blob and its shape"
fi

# --- convert: ATOME01 -> ATOME02 -> ATOME01 is lossless ---
"$ATOME" convert --model a1.atome --format atome02 --out r2.atome > /dev/null
"$ATOME" convert --model r2.atome --format atome01 --out r1.atome > /dev/null
ok 'cmp -s r2.atome a2.atome' "float -> ATOME01 -> ATOME02 equals float -> ATOME02 byte for byte"
ok 'cmp -s r1.atome a1.atome' "ATOME01 -> ATOME02 -> ATOME01 is byte-identical (trits lossless)"

# --- generate on the integer engine ---
for n in 0 1 37 300; do
    ok '[ "$("$ATOME" generate --model a1.atome --prompt "Once" --n $n | wc -c)" -eq $n ]' "generate .atome --n $n writes $n bytes"
done
"$ATOME" generate --model a2.atome --prompt "The cat" --n 200 --temperature 0.9 --top-k 40 --top-p 0.95 --seed 7 > g1.bin
"$ATOME" generate --model a2.atome --prompt "The cat" --n 200 --temperature 0.9 --top-k 40 --top-p 0.95 --seed 7 > g2.bin
"$ATOME" generate --model a1.atome --prompt "The cat" --n 200 --temperature 0.9 --top-k 40 --top-p 0.95 --seed 7 > g3.bin
"$ATOME" generate --model a2.atome --prompt "The cat" --n 200 --temperature 0.9 --top-k 40 --top-p 0.95 --seed 8 > g4.bin
ok 'cmp -s g1.bin g2.bin' "generate .atome is deterministic"
ok 'cmp -s g1.bin g3.bin' "ATOME01 and ATOME02 generate the same bytes"
ok '! cmp -s g1.bin g4.bin' "another seed, other bytes"
"$ATOME" generate --model a1.atome --prompt-hex 546865 --n 50 > h1.bin
"$ATOME" generate --model a1.atome --prompt The --n 50 > h2.bin
ok 'cmp -s h1.bin h2.bin' "--prompt-hex equals --prompt"
"$ATOME" generate --model a1.atome --prompt "The cat" --n 100 --window 8 > wa.bin
ok '[ "$(wc -c < wa.bin)" -eq 100 ]' "generate --window 8 (sliding past the window)"
"$ATOME" generate --model a1.atome --prompt "The cat" --n 100 --temperature 0.50000000001 > /dev/null 2> tp.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q -- "--temperature must be" tp.err' "temperature with ten decimals is refused by the shared parser"
# Settings are rounded to Q16 from their text by the core parser on both
# paths: 0.8 and 0.80001 are both 52429/65536, so they sample alike.
"$ATOME" generate --model t.ckpt --prompt "The cat" --n 120 --temperature 0.8 --seed 3 > fa.bin
"$ATOME" generate --model t.ckpt --prompt "The cat" --n 120 --temperature 0.80001 --seed 3 > fb.bin
"$ATOME" generate --model a1.atome --prompt "The cat" --n 120 --temperature 0.8 --seed 3 > pa.bin
"$ATOME" generate --model a1.atome --prompt "The cat" --n 120 --temperature 0.80001 --seed 3 > pb.bin
ok 'cmp -s fa.bin fb.bin && cmp -s pa.bin pb.bin' "temperature text that rounds to the same Q16 samples the same bytes (float and packed)"
"$ATOME" generate --model a1.atome --prompt "The cat" --n 120 --temperature 0.81 --seed 3 > pc.bin
ok '! cmp -s pa.bin pc.bin' "a different Q16 temperature samples differently"

# --- eval on the integer engine ---
"$ATOME" eval --model t.ckpt --data small.txt --split 0.9 > ef.json
"$ATOME" eval --model a1.atome --data small.txt --split 0.9 > ee.json
"$ATOME" eval --model a2.atome --data small.txt --split 0.9 > ee2.json
for k in nats_per_byte bpb ppl bytes chunks seq; do
    ok 'jhas ee.json $k' "eval .atome has key $k"
done
ok '[ "$(jv ee.json bytes)" = "$(jv ef.json bytes)" ] && [ "$(jv ee.json seq)" -eq 32 ]' "eval .atome: same chunks, seq from the container"
ok 'awk -v a="$(jv ee.json bpb)" -v b="$(jv ef.json bpb)" "BEGIN { r = a / b - 1; exit !(r < 0.01 && r > -0.01) }"' "engine bpb within 1% of the float model"
ok 'cmp -s ee.json ee2.json' "ATOME01 and ATOME02 evaluate identically"
ok '[ "$(jv ee.json window)" -eq 31 ]' "eval .atome: a default export (window = training seq) sees the whole chunk (window seq - 1)"
# a container whose stored window is below seq - 1 is scored at that window
"$ATOME" export --quiet --model t.ckpt --format atome02 --window 8 --out w8.atome > /dev/null
"$ATOME" eval --model w8.atome --data small.txt --split 0.9 > ew8.json
"$ATOME" eval --model w8.atome --data small.txt --split 0.9 --window 8 > ew8b.json
"$ATOME" eval --model w8.atome --data small.txt --split 0.9 --window 31 > ew31.json
ok 'cmp -s ew8.json ew8b.json && [ "$(jv ew8.json window)" -eq 8 ]' "eval .atome: the default window is the stored one when it is smaller than seq - 1"
ok '[ "$(jv ew31.json bpb)" = "$(jv ee2.json bpb)" ] && [ "$(jv ew8.json bpb)" != "$(jv ee2.json bpb)" ]' "eval .atome: --window overrides the stored window (31 = the default export's score)"

# --- malformed containers: each class has its own clear error ---
size=$(wc -c < a1.atome)
head -c $((size / 2)) a1.atome > trunc.atome
head -c 10 a1.atome > trunc10.atome
cp a1.atome flip.atome
b=$(od -An -tu1 -j $((size / 2)) -N1 flip.atome | tr -d ' ')
printf "$(printf '\\%03o' $((b ^ 16)))" | dd of=flip.atome bs=1 seek=$((size / 2)) conv=notrunc status=none
cp a1.atome over.atome; printf 'extra' >> over.atome
cp a1.atome ver.atome; printf '\x02' | dd of=ver.atome bs=1 seek=8 conv=notrunc status=none
printf 'hello, not a model at all\n' > text.bin
# expect CODE PATTERN -- args: exit code, exactly one "atome: " line matching, empty stdout
expect() {
    local code=$1 pat=$2; shift 3
    checks=$((checks + 1))
    rm -f out.txt.kv
    "$ATOME" "$@" > out.txt 2> err.txt
    local rc=$? why=""
    [ "$rc" -eq "$code" ] || why="exit $rc, want $code"
    [ "$(wc -l < err.txt)" -eq 1 ] || why="$why; $(wc -l < err.txt) stderr lines"
    grep -q '^atome: ' err.txt || why="$why; no 'atome: ' prefix"
    grep -Eq -- "$pat" err.txt || why="$why; message does not match /$pat/"
    [ -n "${KEEP_STDOUT:-}" ] || [ ! -s out.txt ] || why="$why; stdout not empty"
    if [ -n "$why" ]; then fails=$((fails + 1)); echo "FAIL: atome $*: $why"; sed 's/^/    stderr: /' err.txt; fi
}
M_TRUNC="truncated: $((size / 2)) of the $size bytes"
M_FLIP="corrupt: CRC-32 mismatch"
M_OVER="oversized: $((size + 5)) bytes, 5 more than the $size"
M_VER="unsupported container version 2 \(this build reads version 1\)"
for f in trunc flip over ver; do
    case $f in trunc) m=$M_TRUNC ;; flip) m=$M_FLIP ;; over) m=$M_OVER ;; ver) m=$M_VER ;; esac
    expect 1 "generate: '$f.atome': $m" -- generate --model $f.atome --prompt a --n 5
    expect 1 "eval: '$f.atome': $m" -- eval --model $f.atome --data small.txt
    expect 1 "convert: '$f.atome': $m" -- convert --model $f.atome --format atome02 --out x.atome
    ok '[ ! -e x.atome ]' "convert leaves no output for $f"
    KEEP_STDOUT=1 expect 1 "inspect: '$f.atome': $m" -- inspect $f.atome
    ok 'jv out.txt valid | grep -qx false' "inspect $f: valid false in the JSON"
    cp err.txt "msg_$f.txt"
done
ok '[ "$(cat msg_trunc.txt msg_flip.txt msg_over.txt msg_ver.txt | sed "s/^[^:]*: [^:]*: //" | sort -u | wc -l)" -eq 4 ]' "the four damage classes give four different messages"
KEEP_STDOUT=1 expect 1 "CRC-32 mismatch" -- inspect flip.atome
ok '[ "$(jv out.txt crc_ok)" = false ] && [ "$(jv out.txt config.d_model)" -eq 16 ]' "inspect bit-flipped: crc_ok false, header still described"
KEEP_STDOUT=1 expect 1 "oversized" -- inspect over.atome
ok '[ "$(jv out.txt crc_ok)" = true ] && [ "$(jv out.txt status)" = oversized ]' "inspect oversized: the declared bytes check out, the tail is extra"
KEEP_STDOUT=1 expect 1 "truncated: 10 bytes, shorter than the 48-byte container header" -- inspect trunc10.atome
expect 1 "truncated: 10 bytes, shorter than the 48-byte" -- generate --model trunc10.atome --prompt a --n 5

# --- bad flags and inputs ---
expect 2 "--format must be atome01 or atome02" -- export --model t.ckpt --format atome03 --out x.atome
expect 2 "--format is required" -- export --model t.ckpt --out x.atome
expect 2 "--out is required" -- export --model t.ckpt --format atome01
expect 2 "already a packed .atome" -- export --model a1.atome --format atome01 --out x.atome
expect 2 "--window must be" -- export --model t.ckpt --format atome01 --window 70000 --out x.atome
expect 1 "cannot open checkpoint" -- export --model nope.ckpt --format atome01 --out x.atome
expect 1 "--calib: .*is empty" -- export --model t.ckpt --format atome01 --calib /dev/null --out x.atome
"$ATOME" init --config vanilla-tiny --seed 1 --out v.ckpt
expect 1 "only the atome family" -- export --model v.ckpt --format atome01 --out x.atome
expect 1 "cannot create|cannot write" -- export --model t.ckpt --format atome01 --out no/such/dir/x.atome
ok '[ ! -e x.atome ]' "failed exports leave no file"
expect 2 "float checkpoint" -- convert --model t.ckpt --format atome02 --out x.atome
expect 2 "--format must be" -- convert --model a1.atome --format 3 --out x.atome
expect 1 "not an .atome container, a checkpoint or a legacy" -- inspect text.bin
expect 1 "is empty" -- inspect /dev/null
expect 1 "cannot open" -- inspect nope.atome
expect 2 "a FILE is required" -- inspect
expect 2 "one file at a time" -- inspect a1.atome a2.atome
expect 2 "--window 70000 exceeds" -- generate --model a1.atome --prompt a --n 5 --window 70000
expect 2 "--top-p must be" -- generate --model a1.atome --prompt a --n 5 --top-p 0.5.5
expect 2 "--top-k must be" -- generate --model a1.atome --prompt a --n 5 --top-k -1
expect 2 "--temperature must be" -- generate --model a1.atome --prompt a --n 5 --temperature 1e3
expect 2 "--seed must be" -- generate --model a1.atome --prompt a --n 5 --seed +5
expect 2 "--window applies to packed" -- eval --model t.ckpt --data small.txt --window 8

echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ]
