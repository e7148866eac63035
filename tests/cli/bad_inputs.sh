#!/usr/bin/env bash
# tests/cli/bad_inputs.sh — every bad input to `atome` gives a non-zero exit
# (2 usage, 1 runtime), exactly ONE stderr line starting "atome: ", nothing on
# stdout, and no file left in the output directory.
# Usage: bash tests/cli/bad_inputs.sh /path/to/atome
set -u
ATOME=${1:?usage: bad_inputs.sh /path/to/atome}
SHARED=${ATOME_SHARED_DIR:-}
DATA="$SHARED/data/tinystories-train.txt"
W=$(mktemp -d /tmp/atome-cli-bad.XXXXXX)
trap 'rm -rf "$W"' EXIT
IN="$W/in"; OUT="$W/out"
mkdir -p "$IN" "$OUT"
fails=0; cases=0

if [ ! -s "$DATA" ]; then echo "FAIL: shared corpus missing at $DATA (set ATOME_SHARED_DIR)"; exit 1; fi

# Inputs: a small corpus, an empty and a short file, a good checkpoint and damaged copies.
head -c 20000 "$DATA" > "$IN/small.txt"
: > "$IN/empty.txt"
printf 'tiny' > "$IN/short.txt"
head -c 100 "$DATA" > "$IN/hundred.txt"
"$ATOME" init --config atome-tiny --seed 3 --out "$IN/good.ckpt" || { echo "FAIL: init"; exit 1; }
"$ATOME" train --config atome-tiny --data "$IN/small.txt" --steps 4 --batch 2 --seq 16 --out "$IN/run.ckpt" --quiet >/dev/null \
    || { echo "FAIL: train"; exit 1; }
rm -f "$IN/run.ckpt.log.jsonl"
size=$(wc -c < "$IN/good.ckpt")
head -c $((size / 2)) "$IN/good.ckpt" > "$IN/trunc.ckpt"
head -c 10 "$IN/good.ckpt" > "$IN/trunc10.ckpt"
cp "$IN/good.ckpt" "$IN/crc.ckpt"
printf '\x55' | dd of="$IN/crc.ckpt" bs=1 seek=$((size - 100)) conv=notrunc status=none
printf 'this is not a checkpoint at all, just text\n' > "$IN/text.ckpt"
cp "$IN/good.ckpt" "$IN/version.ckpt"
printf '\x09' | dd of="$IN/version.ckpt" bs=1 seek=8 conv=notrunc status=none

# expect CODE PATTERN -- args...: runs atome in $OUT, checks exit code, one
# "atome: " line matching PATTERN (grep -E), empty stdout, empty $OUT.
expect() {
    local code=$1 pat=$2; shift 3
    cases=$((cases + 1))
    (cd "$OUT" && "$ATOME" "$@" > "$W/stdout" 2> "$W/stderr")
    local rc=$? lines; lines=$(wc -l < "$W/stderr")
    local why=""
    [ "$rc" -eq "$code" ] || why="exit $rc, want $code"
    [ "$lines" -eq 1 ] || why="$why; $lines stderr lines"
    head -n 1 "$W/stderr" | grep -q '^atome: ' || why="$why; no 'atome: ' prefix"
    grep -Eq -- "$pat" "$W/stderr" || why="$why; message does not match /$pat/"
    [ ! -s "$W/stdout" ] || why="$why; stdout not empty"
    [ -z "$(ls -A "$OUT")" ] || why="$why; left files: $(ls -A "$OUT" | tr '\n' ' ')"
    if [ -n "$why" ]; then
        fails=$((fails + 1))
        echo "FAIL: atome $*: $why"; sed 's/^/    stderr: /' "$W/stderr"
    fi
    rm -rf "${OUT:?}"/* "$OUT"/.[!.]* 2>/dev/null
}

T=(--config atome-tiny --data "$IN/small.txt" --steps 3 --batch 2 --seq 16 --out "$OUT/m.ckpt")

# --- top level ---
expect 2 'missing command' --
expect 2 "unknown command 'trian'" -- trian
# --- train: flags and numbers ---
expect 2 "unknown flag '--stesp'" -- train "${T[@]}" --stesp 4
expect 2 "unexpected argument 'extra'" -- train "${T[@]}" extra
expect 2 '--config is required' -- train --data "$IN/small.txt" --steps 3 --out "$OUT/m.ckpt"
expect 2 '--data is required' -- train --config atome-tiny --steps 3 --out "$OUT/m.ckpt"
# no --steps: the documented recipe's 3,000 steps (a test of the default, not a refusal; stopped after 2)
"$ATOME" train --config atome-tiny --data "$IN/small.txt" --batch 2 --seq 16 --out "$W/dflt.ckpt" --stop-at 2 > /dev/null 2> "$W/dflt.err"
cases=$((cases + 1)); grep -q "steps 0\.\.3000" "$W/dflt.err" || { fails=$((fails + 1)); echo "FAIL: train without --steps runs 3000 steps: $(head -c 300 "$W/dflt.err")"; }
expect 2 '--out is required' -- train --config atome-tiny --data "$IN/small.txt" --steps 3
expect 2 "unknown config 'atome-7'" -- train --config atome-7 --data "$IN/small.txt" --steps 3 --out "$OUT/m.ckpt"
expect 2 "--steps must be an integer.*'abc'" -- train --steps abc --config atome-tiny --data "$IN/small.txt" --out "$OUT/m.ckpt"
expect 2 "--steps must be an integer.*'-5'" -- train --steps -5 --config atome-tiny --data "$IN/small.txt" --out "$OUT/m.ckpt"
expect 2 "--steps must be an integer.*'0'" -- train --steps 0 --config atome-tiny --data "$IN/small.txt" --out "$OUT/m.ckpt"
expect 2 "--steps must be an integer.*'99999999999999999999'" -- train --steps 99999999999999999999 --config atome-tiny --data "$IN/small.txt" --out "$OUT/m.ckpt"
expect 2 "--steps must be an integer.*'3.5'" -- train --steps 3.5 --config atome-tiny --data "$IN/small.txt" --out "$OUT/m.ckpt"
expect 2 "--batch must be" -- train --config atome-tiny --data "$IN/small.txt" --steps 3 --batch=0 --out "$OUT/m.ckpt"
expect 2 "--seq must be" -- train --config atome-tiny --data "$IN/small.txt" --steps 3 --seq 1 --out "$OUT/m.ckpt"
expect 2 "--lr must be a number" -- train "${T[@]}" --lr abc
expect 2 "--lr must be a number" -- train "${T[@]}" --lr 0
expect 2 "--lr must be a number" -- train "${T[@]}" --lr nan
expect 2 "--lr must be a number" -- train "${T[@]}" --lr 1e999
expect 2 "--seed must be an integer" -- train "${T[@]}" --seed -1
expect 2 "--seed must be an integer" -- train "${T[@]}" --seed 4294967296
expect 2 "--split must be" -- train "${T[@]}" --split 1.5
expect 2 "--split must be" -- train "${T[@]}" --split 0
expect 2 "--split must be" -- train "${T[@]}" --split 1
expect 2 "--split or --valid" -- train "${T[@]}" --split 0.5 --valid "$IN/small.txt"
expect 2 "--max-bytes must be" -- train "${T[@]}" --max-bytes 0
expect 2 "--quant must be ternary or fp32" -- train "${T[@]}" --quant int8
expect 2 "--pathways takes" -- train "${T[@]}" --pathways conv,mlp
expect 2 "--pathways needs|--pathways takes" -- train "${T[@]}" --pathways ,
expect 2 "does not apply to the vanilla family" -- train --config vanilla-tiny --data "$IN/small.txt" --steps 3 --out "$OUT/m.ckpt" --kernel 3
expect 2 "invalid shape" -- train "${T[@]}" --d-model 3000 --layers 64
expect 2 "needs quant ternary" -- train "${T[@]}" --quant fp32 --fp-fraction 0.5
expect 2 "--lr2 only applies" -- train "${T[@]}" --lr2 0.003
expect 2 "--fp-fraction must be" -- train "${T[@]}" --fp-fraction 1.5
expect 2 "--data needs a value" -- train --config atome-tiny --data --steps 3 --out "$OUT/m.ckpt"
expect 2 "--cosine takes no value" -- train "${T[@]}" --cosine=1
expect 2 "warmup" -- train "${T[@]}" --warmup 10
expect 2 "max-seq" -- train --config vanilla-tiny --data "$IN/small.txt" --steps 3 --seq 100 --out "$OUT/m.ckpt"
# --- train: data and outputs ---
expect 1 "cannot open data file .*missing.txt" -- train --config atome-tiny --data "$IN/missing.txt" --steps 3 --out "$OUT/m.ckpt"
expect 1 "is empty" -- train --config atome-tiny --data "$IN/empty.txt" --steps 3 --out "$OUT/m.ckpt"
expect 1 "fewer than one 64-byte chunk" -- train --config atome-tiny --data "$IN/short.txt" --steps 3 --out "$OUT/m.ckpt"
expect 1 "split 0.9 of 1 chunks of 64 bytes leaves no training chunk" -- train --config atome-tiny --data "$IN/hundred.txt" --steps 3 --seq 64 --out "$OUT/m.ckpt"
expect 1 "split 0.3 of 3 chunks of 32 bytes leaves no training chunk" -- train --config atome-tiny --data "$IN/hundred.txt" --steps 3 --seq 32 --split 0.3 --out "$OUT/m.ckpt"
expect 1 "cannot open data file .*nothere.txt" -- train "${T[@]}" --valid "$IN/nothere.txt"
expect 1 "is empty" -- train "${T[@]}" --valid "$IN/empty.txt"
expect 1 "cannot create" -- train --config atome-tiny --data "$IN/small.txt" --steps 3 --out "$OUT/no/such/dir/m.ckpt"
expect 1 "cannot (open|read) data file" -- train --config atome-tiny --data "$IN" --steps 3 --out "$OUT/m.ckpt" --max-bytes 10
# --- train: resume ---
expect 1 "truncated" -- train --resume "$IN/trunc.ckpt" --steps 10 --out "$OUT/m.ckpt"
expect 2 "--lr 0.001 differs" -- train --resume "$IN/run.ckpt" --steps 10 --lr 0.001 --out "$OUT/m.ckpt"
expect 2 "differs from the checkpoint's model" -- train --resume "$IN/run.ckpt" --steps 10 --config vanilla-tiny --out "$OUT/m.ckpt"
expect 2 "beyond --steps 2" -- train --resume "$IN/run.ckpt" --steps 2 --out "$OUT/m.ckpt"
# --- eval ---
expect 2 "--model is required" -- eval --data "$IN/small.txt"
expect 2 "--data is required" -- eval --model "$IN/good.ckpt"
expect 1 "cannot open checkpoint" -- eval --model "$IN/nope.ckpt" --data "$IN/small.txt"
expect 1 "truncated" -- eval --model "$IN/trunc.ckpt" --data "$IN/small.txt"
expect 1 "truncated" -- eval --model "$IN/trunc10.ckpt" --data "$IN/small.txt"
expect 1 "truncated" -- eval --model "$IN/empty.txt" --data "$IN/small.txt"
expect 1 "CRC-32 mismatch" -- eval --model "$IN/crc.ckpt" --data "$IN/small.txt"
expect 1 "bad magic" -- eval --model "$IN/text.ckpt" --data "$IN/small.txt"
expect 1 "format version 9" -- eval --model "$IN/version.ckpt" --data "$IN/small.txt"
expect 1 "cannot open data file" -- eval --model "$IN/good.ckpt" --data "$IN/missing.txt"
expect 1 "is empty" -- eval --model "$IN/good.ckpt" --data "$IN/empty.txt"
expect 1 "fewer than one" -- eval --model "$IN/good.ckpt" --data "$IN/short.txt"
expect 2 "--seq must be" -- eval --model "$IN/good.ckpt" --data "$IN/small.txt" --seq abc
expect 2 "--split must be" -- eval --model "$IN/good.ckpt" --data "$IN/small.txt" --split 1
# --- generate ---
G=(--model "$IN/good.ckpt")
# no --n: the default length, 256 bytes (a test of the default, not a refusal)
"$ATOME" generate "${G[@]}" --prompt hi > "$W/dflt.out" 2> /dev/null
cases=$((cases + 1)); [ "$(wc -c < "$W/dflt.out")" = 256 ] || { fails=$((fails + 1)); echo "FAIL: generate without --n writes 256 bytes"; }
expect 2 "--n must be" -- generate "${G[@]}" --prompt hi --n 1000000000001
expect 2 "--n must be" -- generate "${G[@]}" --prompt hi --n -1
expect 2 "--n must be" -- generate "${G[@]}" --prompt hi --n ten
expect 2 "--prompt or --prompt-hex is required" -- generate "${G[@]}" --n 5
expect 2 "not both" -- generate "${G[@]}" --prompt a --prompt-hex 61 --n 5
expect 2 "non-hex" -- generate "${G[@]}" --prompt-hex zz --n 5
expect 2 "even number" -- generate "${G[@]}" --prompt-hex 616 --n 5
expect 2 "--top-p must be" -- generate "${G[@]}" --prompt a --n 5 --top-p -0.5
expect 2 "--top-p must be" -- generate "${G[@]}" --prompt a --n 5 --top-p 1.5
expect 2 "--temperature must be" -- generate "${G[@]}" --prompt a --n 5 --temperature -1
expect 2 "--top-k must be" -- generate "${G[@]}" --prompt a --n 5 --top-k -2
expect 2 "--window must be" -- generate "${G[@]}" --prompt a --n 5 --window 0
expect 2 "--seed must be" -- generate "${G[@]}" --prompt a --n 5 --seed 5000000000
expect 1 "CRC-32 mismatch" -- generate --model "$IN/crc.ckpt" --prompt a --n 5
expect 1 "truncated" -- generate --model "$IN/trunc.ckpt" --prompt a --n 5
# --- params / init ---
expect 2 "--config is required" -- params
expect 2 "unknown config 'nope'" -- params --config nope
expect 2 "--d-model must be" -- params --config atome-60k --d-model 0
expect 2 "does not apply to the atome family" -- params --config atome-60k --d-ff 10
expect 2 "--d-head 5 does not divide" -- params --config vanilla-60k --d-head 5
expect 2 "--out is required" -- init --config atome-tiny --seed 1
expect 2 "--seed is required" -- init --config atome-tiny --out "$OUT/i.ckpt"
expect 2 "unknown config" -- init --config vanilla-9 --seed 1 --out "$OUT/i.ckpt"
expect 1 "cannot create|cannot write" -- init --config atome-tiny --seed 1 --out "$OUT/missing-dir/i.ckpt"

echo "$cases cases, $fails failed"
[ "$fails" -eq 0 ]
