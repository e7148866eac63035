#!/usr/bin/env bash
# tests/cli/import.sh — `atome import` of the reference's published 944K blob
# ($ATOME_SHARED_DIR/interop/atome_944k.bin) and `atome strip`.
#  - the imported model, evaluated with our float forward on the first 204,800
#    bytes of tinystories-valid.txt in 256-byte chunks, must score within 2 % of
#    the 1.193 nats/byte the reference's own PyTorch forward reports there
#    (issue #3; a wrong pathway, tap order or scale moves it far more);
#  - it generates bytes; a truncated or oversized blob gives one error line and
#    no output file; strip keeps the weights (same eval) and drops the moments.
# Usage: bash tests/cli/import.sh /path/to/atome
set -u
ATOME=${1:?usage: import.sh /path/to/atome}
SHARED=${ATOME_SHARED_DIR:-}
BLOB="$SHARED/interop/atome_944k.bin"
VALID="$SHARED/data/tinystories-valid.txt"
W=$(mktemp -d /tmp/atome-cli-import.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0; checks=0
ok() { checks=$((checks + 1)); if ! eval "$1"; then fails=$((fails + 1)); echo "FAIL: $2"; fi; }
json_key() { head -n 1 "$1" | grep -o "\"$2\":[^,}]*" | head -n 1 | cut -d: -f2- | tr -d '"'; }
if [ ! -s "$BLOB" ] || [ ! -s "$VALID" ]; then echo "FAIL: $BLOB or $VALID missing (set ATOME_SHARED_DIR)"; exit 1; fi
cd "$W" || exit 1

ok '"$ATOME" import --legacy "$BLOB" --config atome-944k --out m.ckpt 2> err.txt && [ ! -s err.txt ]' "import succeeds silently"
ok '"$ATOME" eval --model m.ckpt --data "$VALID" --max-bytes 204800 --seq 256 > ev.json' "eval of the imported model"
nats=$(json_key ev.json nats_per_byte)
echo "944K imported: nats_per_byte=$nats bytes=$(json_key ev.json bytes) (reference forward: 1.193)"
ok 'awk -v x="$nats" "BEGIN { exit !(x > 1.193 * 0.98 && x < 1.193 * 1.02) }"' "nats $nats within 2% of 1.193"
ok '[ "$(json_key ev.json bytes)" = 204000 ]' "800 chunks x 255 predictions"
ok '"$ATOME" generate --model m.ckpt --prompt "Once upon a time" --n 64 > g.bin && [ "$(wc -c < g.bin)" = 64 ]' "generate 64 bytes"

head -c 276654 "$BLOB" > short.bin
ok '! "$ATOME" import --legacy short.bin --config atome-944k --out bad.ckpt 2> e1.txt && [ "$(wc -l < e1.txt)" = 1 ] && grep -q "^atome: import: .*trunc" e1.txt && [ ! -e bad.ckpt ]' "truncated blob: one error line, no output"
{ cat "$BLOB"; printf 'x'; } > long.bin
ok '! "$ATOME" import --legacy long.bin --config atome-944k --out bad.ckpt 2> e2.txt && [ "$(wc -l < e2.txt)" = 1 ] && [ ! -e bad.ckpt ]' "oversized blob: one error line, no output"
ok '! "$ATOME" import --legacy "$BLOB" --config atome-60k --out bad.ckpt 2> e3.txt && [ "$(wc -l < e3.txt)" = 1 ] && [ ! -e bad.ckpt ]' "wrong config: one error line, no output"
ok '! "$ATOME" import --legacy "$BLOB" --config vanilla-60k --out bad.ckpt 2> e4.txt && grep -q "^atome: import:" e4.txt' "non-atome config refused"

# strip: a trained tiny checkpoint (with moments) keeps its eval, shrinks.
DATA="$SHARED/data/tinystories-train.txt"
ok '"$ATOME" train --config atome-tiny --data "$DATA" --max-bytes 20000 --steps 5 --batch 2 --seq 32 --out t.ckpt --quiet > /dev/null' "tiny train"
ok '"$ATOME" strip --model t.ckpt --out s.ckpt' "strip"
ok '[ "$(wc -c < s.ckpt)" -lt "$(wc -c < t.ckpt)" ]' "stripped checkpoint is smaller"
ok '"$ATOME" eval --model t.ckpt --data "$DATA" --max-bytes 20000 --split 0.9 > e_t.json && "$ATOME" eval --model s.ckpt --data "$DATA" --max-bytes 20000 --split 0.9 > e_s.json && cmp -s e_t.json e_s.json' "stripped checkpoint evaluates identically"
ok '! "$ATOME" strip --model missing.ckpt --out x.ckpt 2> e5.txt && [ "$(wc -l < e5.txt)" = 1 ] && [ ! -e x.ckpt ]' "strip of a missing file"

echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ]
