#!/usr/bin/env bash
# tests/cli/behaviour.sh — what `atome` does on good input: help, params
# JSON, init, train (summary, log, checkpoint), eval JSON keys and agreement
# with the training summary, generate writing exactly N bytes, seeded
# determinism, bit-identical resume through the CLI (train 2N vs N + resume
# to 2N; and from a --ckpt-every checkpoint with schedules and two-stage),
# the two-stage switch in the log, --valid mode.
# Usage: bash tests/cli/behaviour.sh /path/to/atome
set -u
ATOME=${1:?usage: behaviour.sh /path/to/atome}
SHARED=${ATOME_SHARED_DIR:-}
DATA="$SHARED/data/tinystories-train.txt"
VALID="$SHARED/data/tinystories-valid.txt"
W=$(mktemp -d /tmp/atome-cli-ok.XXXXXX)
trap 'rm -rf "$W"' EXIT
fails=0; checks=0
ok() { checks=$((checks + 1)); if ! eval "$1"; then fails=$((fails + 1)); echo "FAIL: $2"; fi; }
# json_key FILE KEY: the value of a numeric or string key on the first line.
json_key() { head -n 1 "$1" | grep -o "\"$2\":[^,}]*" | head -n 1 | cut -d: -f2- | tr -d '"'; }
# weights FILE: the checkpoint's WGHT and ADAM sections (everything from the
# WGHT tag to the CRC), which excludes the informative elapsed time.
weights() { local off; off=$(grep -obUaF WGHT "$1" | head -n 1 | cut -d: -f1); tail -c +$((off + 1)) "$1" | head -c -4; }

# json_ok FILE: every line is one JSON object (checked by python3's parser
# when python3 exists, else structurally: braces, no nan/inf tokens).
json_ok() {
    if command -v python3 > /dev/null; then
        python3 -c 'import json,sys
for l in open(sys.argv[1]):
    assert isinstance(json.loads(l), dict)' "$1" 2> /dev/null
    else
        ! grep -Evq '^\{.*\}$' "$1" && ! grep -Eiq '(:|,)(nan|-?inf)' "$1"
    fi
}

if [ ! -s "$DATA" ]; then echo "FAIL: shared corpus missing at $DATA (set ATOME_SHARED_DIR)"; exit 1; fi
cd "$W" || exit 1

# --- help ---
ok '"$ATOME" --help > h.txt && grep -q "usage: atome <command>" h.txt' "atome --help"
for c in train eval generate params init; do
    ok '"$ATOME" $c --help > h.txt && grep -q "usage: atome $c" h.txt' "atome $c --help"
done

# --- params ---
"$ATOME" params --config atome-60k > p.json
ok 'json_ok p.json' "params prints valid JSON"
ok '[ "$(json_key p.json params)" = 60800 ]' "atome-60k has 60,800 params"
ok '[ "$(json_key p.json quant_params)" = 59392 ] && [ "$(json_key p.json fp32_params)" = 1408 ]' "atome-60k quant/fp32 split"
"$ATOME" params --config vanilla-60k > p.json
ok '[ "$(json_key p.json params)" = 60808 ]' "vanilla-60k has 60,808 params"
"$ATOME" params --config vanilla-6k > p.json
ok '[ "$(json_key p.json params)" = 5968 ]' "vanilla-6k has 5,968 params"
"$ATOME" params --config atome-60k --pathways conv,ssm > p.json
ok '[ "$(json_key p.json params)" = 35968 ]' "atome-60k without attention has 35,968 live params"
"$ATOME" params --config vanilla-60k --d-model 48 --heads 4 > p.json
ok '[ "$(json_key p.json d_head)" = 12 ]' "vanilla --d-model 48 --heads 4 gives d_head 12"

# --- init + generate ---
ok '"$ATOME" init --config atome-tiny --seed 5 --out i.ckpt && [ -s i.ckpt ]' "init writes a checkpoint"
ok '"$ATOME" init --config atome-tiny --seed 5 --out i2.ckpt && cmp -s i.ckpt i2.ckpt' "init is deterministic"
ok '"$ATOME" init --config atome-tiny --seed 6 --out i3.ckpt && ! cmp -s i.ckpt i3.ckpt' "init depends on the seed"
for n in 0 1 37; do
    ok '[ "$("$ATOME" generate --model i.ckpt --prompt "Once" --n $n | wc -c)" -eq $n ]' "generate --n $n writes $n bytes"
done
ok '[ "$("$ATOME" generate --model i.ckpt --prompt "" --n 12 | wc -c)" -eq 12 ]' "empty prompt"
ok '[ "$("$ATOME" generate --model i.ckpt --prompt-hex 00ff0a41 --n 12 --temperature 1.3 --top-k 50 --top-p 0.9 --seed 77 | wc -c)" -eq 12 ]' "hex prompt, sampling"
"$ATOME" generate --model i.ckpt --prompt "The cat" --n 64 --temperature 1 --seed 9 > g1.bin
"$ATOME" generate --model i.ckpt --prompt "The cat" --n 64 --temperature 1 --seed 9 > g2.bin
ok 'cmp -s g1.bin g2.bin' "generate with the same seed is deterministic"
"$ATOME" generate --model i.ckpt --prompt "" --n 20 > e1.bin
"$ATOME" generate --model i.ckpt --prompt-hex 0a --n 20 > e2.bin
ok 'cmp -s e1.bin e2.bin' "empty prompt = a single newline byte"
"$ATOME" generate --model i.ckpt --prompt "abc" --n 20 > h1.bin
"$ATOME" generate --model i.ckpt --prompt-hex 616263 --n 20 > h2.bin
ok 'cmp -s h1.bin h2.bin' "--prompt abc = --prompt-hex 616263"

# --- train ---
head -c 60000 "$DATA" > small.txt
TR=(--config atome-tiny --quant ternary --data small.txt --steps 30 --batch 4 --seq 32 --lr 3e-3 --seed 1)
"$ATOME" train "${TR[@]}" --out a.ckpt 2> a.err > a.json
ok '[ $? -eq 0 ] || true; [ -s a.ckpt ] && [ -s a.json ]' "train writes a checkpoint and a summary"
ok '[ "$(wc -l < a.json)" -eq 1 ] && json_ok a.json' "train prints one JSON summary line"
ok 'json_ok a.ckpt.log.jsonl' "the log is JSON lines"
for k in steps train_loss nats_per_byte bpb ppl bytes params seconds; do
    ok 'grep -q "\"$k\":" a.json' "train summary has key $k"
done
ok '[ "$(json_key a.json steps)" = 30 ] && [ "$(json_key a.json bytes)" = $(( (60000 / 32 - 60000 / 32 * 9 / 10) * 31 )) ]' "summary steps and eval bytes"
ok 'grep -q "^step 30/30 .*loss .*bytes/s .*ETA" a.err' "progress on stderr"
ok '[ -s a.ckpt.log.jsonl ] && [ "$(grep -c "\"loss\":" a.ckpt.log.jsonl)" -eq 3 ]' "default log: one object per 10 steps"
ok 'grep "\"step\":10," a.ckpt.log.jsonl | grep -q "\"lr\":0.003,\"bytes_per_s\":.*\"elapsed_s\":"' "log object keys"
ok 'tail -n 1 a.ckpt.log.jsonl | grep -q "\"eval_nats_per_byte\":"' "log ends with the eval object"
ok '! ls | grep -q "tmp-"' "no temporary files left"

# eval agrees with the training summary on the same held-out split
"$ATOME" eval --model a.ckpt --data small.txt --split 0.9 > ev.json
ok 'json_ok ev.json && [ "$(wc -l < ev.json)" -eq 1 ]' "eval prints one JSON line"
for k in nats_per_byte bpb ppl bytes; do ok 'grep -q "\"$k\":" ev.json' "eval has key $k"; done
ok '[ "$(json_key ev.json nats_per_byte)" = "$(json_key a.json nats_per_byte)" ]' "eval --split 0.9 = the training summary"
"$ATOME" eval --model a.ckpt --data small.txt > all.json
ok '[ "$(json_key all.json bytes)" = $(( 60000 / 32 * 31 )) ]' "eval without --split scores every chunk"
"$ATOME" eval --model a.ckpt --data small.txt --seq 17 --max-bytes 1000 > s.json
ok '[ "$(json_key s.json bytes)" = $(( 1000 / 17 * 16 )) ] && [ "$(json_key s.json seq)" = 17 ]' "eval --seq --max-bytes"
ok '[ "$("$ATOME" generate --model a.ckpt --prompt "Once upon" --n 100 | wc -c)" -eq 100 ]' "generate from a trained model"

# determinism: the same command gives the same weights and losses
"$ATOME" train "${TR[@]}" --out b.ckpt --quiet > b.json
ok 'cmp -s <(weights a.ckpt) <(weights b.ckpt)' "same command, same weights"
ok 'diff <(grep -o "\"loss\":[^,]*" a.ckpt.log.jsonl) <(grep -o "\"loss\":[^,]*" b.ckpt.log.jsonl) > /dev/null' "same command, same loss curve"
ok '[ "$(weights a.ckpt | head -c 8 | wc -c)" -eq 8 ]' "weights() found the WGHT section"

# resume: 15 + 15 = 30, bit for bit
"$ATOME" train "${TR[@]}" --steps 15 --out r.ckpt --quiet > /dev/null
"$ATOME" train --resume r.ckpt --steps 30 --out r2.ckpt --quiet > r.json
ok 'cmp -s <(weights a.ckpt) <(weights r2.ckpt)' "train 30 = train 15 + resume to 30 (weights and moments)"
ok '[ "$(json_key r.json nats_per_byte)" = "$(json_key a.json nats_per_byte)" ]' "resumed summary = uninterrupted summary"
# repeating the original flags on resume is allowed when they agree
ok '"$ATOME" train "${TR[@]}" --resume r.ckpt --out r3.ckpt --quiet > /dev/null && cmp -s <(weights a.ckpt) <(weights r3.ckpt)' "resume with the same flags repeated"

# schedules + clipping + two-stage, resumed from a --ckpt-every checkpoint
TS=(--config atome-tiny --quant ternary --data small.txt --steps 24 --batch 4 --seq 32 --lr 1e-3 --seed 2
    --warmup 4 --cosine --lr-min 1e-4 --clip 1 --fp-fraction 0.5 --lr2 3e-3 --log-every 1)
"$ATOME" train "${TS[@]}" --out t.ckpt --quiet > /dev/null
"$ATOME" train "${TS[@]}" --out u.ckpt --stop-at 10 --quiet > /dev/null
"$ATOME" train --resume u.ckpt --out u2.ckpt --quiet > /dev/null
ok 'cmp -s <(weights t.ckpt) <(weights u2.ckpt)' "two-stage run stopped at step 10 and resumed is bit-identical"
"$ATOME" train "${TS[@]}" --out c.ckpt --ckpt-every 8 --stop-at 20 --quiet > /dev/null
"$ATOME" train --resume c.ckpt --out c2.ckpt --quiet > /dev/null
ok 'cmp -s <(weights t.ckpt) <(weights c2.ckpt)' "periodic saves (--ckpt-every) do not perturb the run"
# an interrupted run's log: lines past its last checkpoint and a line cut short are dropped on resume
"$ATOME" train "${TS[@]}" --out k.ckpt --stop-at 16 --quiet > /dev/null
{ grep -E '^\{"step":(17|18|19),"loss"' t.ckpt.log.jsonl; printf '{"step":20,"loss":1.2'; } >> k.ckpt.log.jsonl
"$ATOME" train --resume k.ckpt --out k.ckpt --log-every 1 --quiet > /dev/null
curve() { grep -o '"step":[0-9]*,"loss":[^,]*,"lr":[^,]*' "$1"; }
ok 'diff <(curve t.ckpt.log.jsonl) <(curve k.ckpt.log.jsonl) > /dev/null && [ "$(grep -c . k.ckpt.log.jsonl)" -eq "$(grep -c "\"step\":" k.ckpt.log.jsonl)" ]' "a resumed log reads as the uninterrupted run's (no repeats, no cut line)"
ok 'grep "\"step\":12," t.ckpt.log.jsonl | grep -q "\"stage\":0,\"quant\":\"fp32\""' "steps 1..12 are fp32"
ok 'grep "\"step\":13," t.ckpt.log.jsonl | grep -q "\"lr\":0.003,.*\"stage\":1,\"quant\":\"ternary\""' "step 13 is ternary at lr2"
ok 'grep "\"step\":1," t.ckpt.log.jsonl | grep -q "\"lr\":0.00025,"' "warmup: step 1 at lr/4"

# --valid mode: eval bytes come from the valid file
head -c 6400 "$VALID" > v.txt
"$ATOME" train --config vanilla-tiny --data small.txt --valid v.txt --steps 5 --batch 2 --seq 32 --out v.ckpt --quiet > v.json
ok '[ "$(json_key v.json bytes)" = $(( 6400 / 32 * 31 )) ]' "--valid: eval on every chunk of the valid file"
"$ATOME" eval --model v.ckpt --data v.txt > ve.json
ok '[ "$(json_key ve.json nats_per_byte)" = "$(json_key v.json nats_per_byte)" ]' "--valid summary = eval on the valid file"
"$ATOME" train --config gssm-tiny --data small.txt --steps 5 --batch 2 --seq 32 --out gs.ckpt --quiet > gs.json
ok '[ "$(json_key gs.json quant)" = fp32 ]' "gssm trains, fp32 by default"
ok '[ "$("$ATOME" generate --model gs.ckpt --prompt hi --n 9 | wc -c)" -eq 9 ]' "gssm generates"
ok '[ "$("$ATOME" generate --model v.ckpt --prompt hi --n 70 | wc -c)" -eq 70 ]' "vanilla generates past its window"

# --- distillation: --teacher / --distill-weight, recorded and resumed bit-identically ---
"$ATOME" init --config vanilla-tiny --seed 3 --out teach.ckpt > /dev/null
DS=(--config atome-tiny --data small.txt --steps 12 --batch 2 --seq 32 --seed 2 --quiet)
"$ATOME" train "${DS[@]}" --out d0.ckpt > d0.json
"$ATOME" train "${DS[@]}" --teacher teach.ckpt --distill-weight 0.7 --out d1.ckpt > d1.json
ok '! cmp -s <(weights d0.ckpt) <(weights d1.ckpt)' "--teacher changes the run"
ok 'grep -q "\"teacher\":\"teach.ckpt\",\"distill_weight\":0.7" d1.json' "summary names the teacher and weight"
"$ATOME" train "${DS[@]}" --teacher teach.ckpt --distill-weight 0.7 --out d2.ckpt --stop-at 5 > /dev/null
"$ATOME" train --resume d2.ckpt --quiet > /dev/null
ok 'cmp -s <(weights d1.ckpt) <(weights d2.ckpt)' "a distilled run resumes bit-identically (teacher reloaded from the checkpoint)"
"$ATOME" train --resume d2.ckpt --distill-weight 0.5 --quiet > /dev/null 2> dw.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "differs from the checkpoint" dw.err' "resume with another --distill-weight: usage error"
"$ATOME" init --config vanilla-tiny --seed 4 --out teach2.ckpt > /dev/null
"$ATOME" train "${DS[@]}" --teacher teach.ckpt --out d3.ckpt --stop-at 5 > /dev/null
"$ATOME" train --resume d3.ckpt --teacher teach2.ckpt --quiet > /dev/null 2> dt.err; rc=$?
ok '[ $rc -eq 1 ] && grep -q "not the file the run was trained with" dt.err' "resume with another teacher file: refused"
"$ATOME" train "${DS[@]}" --distill-weight 0.5 --out d4.ckpt > /dev/null 2> dn.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "needs --teacher" dn.err' "--distill-weight without --teacher: usage error"
"$ATOME" train --config vanilla-tiny --data small.txt --steps 3 --batch 2 --seq 32 --teacher teach.ckpt --out d5.ckpt --quiet > /dev/null 2> dv.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "does not train on soft targets" dv.err' "a vanilla student is refused"
"$ATOME" train "${DS[@]}" --teacher no-such.ckpt --out d6.ckpt > /dev/null 2> dm.err; rc=$?
ok '[ $rc -eq 1 ] && grep -q "teacher" dm.err && [ ! -e d6.ckpt ]' "a missing teacher: runtime error, nothing written"

# --- generate --router-json (the integer engine's "why this byte") ---
MODEL="${ATOME_SOURCE_DIR:-.}/models/atome-60k.atome"
"$ATOME" generate --model "$MODEL" --prompt "Once upon a time" --n 50 --temperature 0.8 --top-k 40 --seed 4 > r0.bin
"$ATOME" generate --model "$MODEL" --prompt "Once upon a time" --n 50 --temperature 0.8 --top-k 40 --seed 4 --router-json r.jsonl > r1.bin
ok 'cmp -s r0.bin r1.bin' "--router-json leaves the generated bytes as they are"
ok '[ "$(wc -l < r.jsonl)" -eq 50 ] && json_ok r.jsonl' "--router-json: one JSON object per generated byte"
ok 'head -n 1 r.jsonl | grep -Eq "^\{\"i\":0,\"byte\":$(head -c 1 r1.bin | od -An -tu1 | tr -d " "),\"router\":\[(\[[0-9.]+,[0-9.]+,[0-9.]+\],?){4}\],\"entropy\":\[([0-9.]+,?){4}\],\"top\":\[(\[[0-9]+,[0-9.]+\],?){5}\]\}$"' "--router-json line shape (4 layers, top 5)"
ok 'tail -n 1 r.jsonl | grep -q "^{\"i\":49,\"byte\":$(tail -c 1 r1.bin | od -An -tu1 | tr -d " "),"' "--router-json: i and byte of the last line"
"$ATOME" generate --model "$MODEL" --prompt "" --n 0 --router-json r0.jsonl > /dev/null
ok '[ -f r0.jsonl ] && [ ! -s r0.jsonl ]' "--router-json with --n 0 writes an empty file"
"$ATOME" generate --model i.ckpt --prompt x --n 3 --router-json rc.jsonl > /dev/null 2> rc.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "router-json reports the integer engine" rc.err && [ ! -e rc.jsonl ]' "--router-json on a checkpoint: usage error, nothing written"
"$ATOME" generate --model "$MODEL" --prompt x --n 3 --router-json "$W/no/such/dir/r.jsonl" > /dev/null 2> rd.err; rc=$?
ok '[ $rc -eq 1 ] && grep -q "router-json" rd.err' "--router-json into a missing directory: runtime error"

# --attn-window: training sees the engine's window; the checkpoint keeps it,
# export stores it as the default window, eval and generate default to it
TW=(--config atome-tiny --data small.txt --steps 12 --batch 4 --seq 32 --lr 1e-3 --seed 3)
"$ATOME" train "${TW[@]}" --attn-window 8 --out aw.ckpt --quiet > aw.json
"$ATOME" train "${TW[@]}" --out nw.ckpt --quiet > nw.json
"$ATOME" inspect aw.ckpt > awi.json
ok '[ "$(json_key awi.json attn_window)" = 8 ] && [ "$("$ATOME" inspect nw.ckpt | grep -o "\"attn_window\":[0-9]*")" = "\"attn_window\":0" ]' "inspect shows the checkpoint's attn_window (8; 0 without the flag)"
ok '[ "$(json_key aw.json nats_per_byte)" != "$(json_key nw.json nats_per_byte)" ]' "a window of 8 in 32-byte chunks trains a different model"
"$ATOME" export --model aw.ckpt --format atome02 --out aw.atome > awe.json
ok '[ "$(json_key awe.json window)" = 8 ]' "export stores the training attn window as the default window"
"$ATOME" eval --model aw.atome --data small.txt --split 0.9 > awv.json
ok '[ "$(json_key awv.json window)" = 8 ]' "eval scores it at that window"
"$ATOME" train --resume aw.ckpt --steps 14 --attn-window 8 --out aw2.ckpt --quiet > /dev/null
ok '[ "$(json_key <("$ATOME" inspect aw2.ckpt) attn_window)" = 8 ]' "a resumed run keeps its attn window"
"$ATOME" train --resume aw.ckpt --steps 14 --attn-window 9 --out aw3.ckpt --quiet > /dev/null 2> aw3.err; rc=$?
ok '[ $rc -eq 2 ] && [ ! -e aw3.ckpt ]' "resume with another --attn-window: usage error, nothing written"
"$ATOME" train "${TW[@]}" --attn-window 3 --out bad.ckpt --quiet > /dev/null 2> awb.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "attn window must be" awb.err && [ ! -e bad.ckpt ]' "--attn-window below top-k: usage error"
"$ATOME" train --config vanilla-tiny --data small.txt --steps 2 --attn-window 8 --out bad.ckpt --quiet > /dev/null 2> awv.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "does not apply to the vanilla family" awv.err' "--attn-window on a vanilla model: usage error"

# --init: a new run from a checkpoint's weights (fine-tuning)
TI=(--config atome-tiny --quant ternary --data small.txt --steps 4 --batch 4 --seq 32 --lr 1e-4 --seed 5 --log-every 1)
"$ATOME" train "${TI[@]}" --init a.ckpt --out fi.ckpt --quiet > fi.json
"$ATOME" train "${TI[@]}" --out fr.ckpt --quiet > fr.json
first_loss() { head -n 1 "$1" | grep -o '"loss":[^,]*' | cut -d: -f2; }
ok 'awk -v i="$(first_loss fi.ckpt.log.jsonl)" -v r="$(first_loss fr.ckpt.log.jsonl)" -v t="$(json_key a.json train_loss)" "BEGIN { exit !(i < r - 1 && i < t + 0.5) }"' "--init starts from the checkpoint's weights (first loss near its last, far below a fresh init's)"
ok '[ "$(json_key <("$ATOME" inspect fi.ckpt) step)" = 4 ]' "--init is a new run: steps count from 0"
"$ATOME" train "${TI[@]}" --init a.ckpt --attn-window 8 --out fiw.ckpt --quiet > /dev/null
ok '[ "$(json_key <("$ATOME" inspect fiw.ckpt) attn_window)" = 8 ]' "--init with --attn-window: same weights' shape, the new window"
"$ATOME" train "${TI[@]}" --init a.ckpt --d-model 24 --out bad.ckpt --quiet > /dev/null 2> ib.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "another shape" ib.err && [ ! -e bad.ckpt ]' "--init of another shape: usage error"
"$ATOME" train --resume a.ckpt --init a.ckpt --out bad.ckpt --quiet > /dev/null 2> ir.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "not both" ir.err' "--init with --resume: usage error"
"$ATOME" train "${TI[@]}" --init no-such.ckpt --out bad.ckpt --quiet > /dev/null 2> in.err; rc=$?
ok '[ $rc -eq 1 ] && grep -q -- "--init" in.err && [ ! -e bad.ckpt ]' "--init of a missing file: runtime error"

echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ]
