#!/usr/bin/env bash
# tests/fuzz/run-fuzz.sh — runs the libFuzzer target for a bounded time.
# Seeds are exported at run time from random-init checkpoints (several shapes,
# pathway subsets, both encodings), plus damaged copies, so the corpus always
# matches the current container format. FUZZ_SECONDS (default 20) bounds the run.
# Usage: bash tests/fuzz/run-fuzz.sh /path/to/fuzz_container /path/to/atome
set -u
FUZZ=${1:?usage: run-fuzz.sh FUZZ_BINARY ATOME}
ATOME=${2:?usage: run-fuzz.sh FUZZ_BINARY ATOME}
SECONDS_MAX=${FUZZ_SECONDS:-20}
W=$(mktemp -d /tmp/atome-fuzz.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/seeds" "$W/corpus"
i=0
seed() {   # seed NAME init-flags...: random-init checkpoint -> ATOME01 and ATOME02 seeds
    local name=$1; shift
    "$ATOME" init --config atome-tiny --seed $((i + 1)) --seq 16 --out "$W/$name.ckpt" "$@" || { echo "FAIL: init $name"; exit 1; }
    for f in atome01 atome02; do
        "$ATOME" export --model "$W/$name.ckpt" --format $f --out "$W/seeds/$name-$f.atome" --quiet > /dev/null \
            || { echo "FAIL: export $name $f"; exit 1; }
    done
    i=$((i + 1))
}
seed tiny
seed narrow --d-model 5 --layers 1 --d-head 3 --kernel 2 --attn-top-k 2
seed convssm --pathways conv,ssm --d-model 8
seed attn --pathways attn --d-model 6 --d-head 4 --attn-top-k 3
seed ssm --pathways ssm --d-model 7 --layers 3
seed conv --pathways conv --d-model 9 --kernel 7
base="$W/seeds/narrow-atome01.atome"
size=$(wc -c < "$base")
head -c $((size / 2)) "$base" > "$W/seeds/trunc.atome"
cat "$base" > "$W/seeds/over.atome"; printf 'xx' >> "$W/seeds/over.atome"
n=$(ls "$W/seeds" | wc -l)
echo "fuzz: $n seeds, ${SECONDS_MAX}s"
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$FUZZ" -max_total_time="$SECONDS_MAX" -timeout=10 -rss_limit_mb=2048 -max_len=8192 -print_final_stats=1 \
    -artifact_prefix="$W/" "$W/corpus" "$W/seeds" > "$W/log" 2>&1
rc=$?
tail -n 25 "$W/log"
if [ $rc -ne 0 ]; then
    for a in "$W"/crash-* "$W"/leak-* "$W"/timeout-* "$W"/oom-*; do
        [ -e "$a" ] || continue
        mkdir -p /tmp/atome-fuzz-artifacts && cp "$a" /tmp/atome-fuzz-artifacts/
        echo "fuzz: artifact kept in /tmp/atome-fuzz-artifacts/$(basename "$a")"
    done
    echo "FAIL: fuzz_container exited $rc"
    exit 1
fi
grep -q "Done [0-9]* runs" "$W/log" || { echo "FAIL: the fuzzer did not report its runs"; exit 1; }
echo "fuzz: ok"
