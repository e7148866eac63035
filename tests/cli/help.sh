#!/usr/bin/env bash
# tests/cli/help.sh — every subcommand that `atome --help` lists answers
# --help (and `atome help CMD`) with its own usage on stdout ("usage: atome
# CMD ..."), nothing on stderr, exit 0; `atome --version` prints one line,
# "atome X.Y.Z (commit C)", C a commit of this repository (", modified"
# after it when the tree differed at configure time; "unknown" outside one); `atome boards` lists the table of boards, as text and as
# JSON, and refuses bad flags with exit 2.
# Usage: bash tests/cli/help.sh /path/to/atome
set -u
ATOME=${1:?usage: help.sh /path/to/atome}
case "$ATOME" in /*) ;; *) ATOME="$PWD/$ATOME" ;; esac   # the checks run in a scratch directory
SRC=${ATOME_SOURCE_DIR:?help.sh: set ATOME_SOURCE_DIR to the source tree (ctest does)}
W=$(mktemp -d /tmp/atome-cli-help.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W" || exit 1
fails=0; checks=0
ok() { checks=$((checks + 1)); if ! eval "$1"; then fails=$((fails + 1)); echo "FAIL: $2"; fi; }

"$ATOME" --help > main.txt 2> main.err; rc=$?
ok '[ $rc -eq 0 ] && [ ! -s main.err ] && grep -q "^usage: atome <command>" main.txt' "atome --help"
# the commands: the indented lines between "commands:" and the next blank line
cmds=$(awk '/^commands:/ { on = 1; next } on && /^$/ { exit } on && /^  [a-z]/ { print $1 }' main.txt)
n=$(echo "$cmds" | wc -w)
ok '[ "$n" -ge 15 ]' "atome --help lists the commands ($n: $cmds)"
for c in $cmds; do
    for form in "$c --help" "$c -h" "help $c"; do
        # shellcheck disable=SC2086
        "$ATOME" $form > out.txt 2> err.txt; rc=$?
        ok '[ $rc -eq 0 ] && [ -s out.txt ] && [ ! -s err.txt ] && head -n 1 out.txt | grep -q "^usage: atome $c\( \|\$\)"' \
           "atome $form: exit $rc, first line '$(head -n 1 out.txt)', stderr '$(cat err.txt)'"
    done
    # --help wins over other flags, even bad ones
    "$ATOME" "$c" --no-such-flag --help > out.txt 2> err.txt; rc=$?
    ok '[ $rc -eq 0 ] && head -n 1 out.txt | grep -q "^usage: atome $c"' "atome $c --no-such-flag --help: exit $rc"
done
for c in train eval generate params match init import strip export convert inspect bench firmware header boards; do
    ok 'echo "$cmds" | grep -qx "$c"' "atome --help lists $c"
done

"$ATOME" --version > v.txt 2> v.err; rc=$?
ok '[ $rc -eq 0 ] && [ ! -s v.err ] && [ "$(wc -l < v.txt)" -eq 1 ] && grep -Eq "^atome [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(, modified)?|unknown)\)$" v.txt' \
   "atome --version: exit $rc, '$(cat v.txt)'"
commit=$(sed -nE 's/.*\(commit ([0-9a-f]{12}).*/\1/p' v.txt)
if git -C "$SRC" rev-parse --git-dir > /dev/null 2>&1; then
    ok '[ -n "$commit" ] && git -C "$SRC" cat-file -e "$commit^{commit}"' "the version's commit '$commit' is a commit of $SRC"
else
    ok '! grep -q "commit [0-9a-f]\{12\}" v.txt' "outside a git checkout the version names no commit: $(cat v.txt)"
fi
"$ATOME" --version --help > /dev/null 2>&1; rc=$?
ok '[ $rc -eq 0 ]' "atome --version ignores what follows"

"$ATOME" boards > b.txt; rc=$?
ok '[ $rc -eq 0 ] && grep -q "^mps2-an385 " b.txt && grep -q "^microbit " b.txt && grep -q "^pico " b.txt' "atome boards: the table"
"$ATOME" boards --json > b.json; rc=$?
ok '[ $rc -eq 0 ] && python3 -c "
import json, sys
j = json.load(open(\"b.json\"))
names = [b[\"name\"] for b in j[\"boards\"]]
assert names[:4] == [\"mps2-an385\", \"microbit\", \"microbit-v2\", \"pico\"], names
m = j[\"boards\"][1]
assert (m[\"alias\"], m[\"hex_with\"], m[\"uhex_board_id\"], j[\"boards\"][2][\"machine\"]) == (\"microbit-v1\", \"microbit-v2\", \"0x9900\", \"mps2-an386\"), m
for b in j[\"boards\"]:
    for k in (\"label\", \"cpu\", \"chip\", \"clock_hz\", \"flash_base\", \"flash_bytes\", \"ram_bytes\", \"slot_bytes\", \"formats\",
              \"drive\", \"faster_encoding\", \"uf2_family\", \"semihosting\", \"offset_stream\", \"tables\", \"emulator\", \"cost\",
              \"machine\", \"alias\", \"uhex_board_id\", \"hex_with\", \"card_label\", \"card_order\"):
        assert k in b, (b[\"name\"], k)
    assert b[\"drive\"] in b[\"formats\"] and \"elf\" in b[\"formats\"], b
    assert (b[\"uf2_family\"] is not None) == (\"uf2\" in b[\"formats\"]), b
    assert b[\"cost\"][\"count\"] in (\"insns_per_byte\", \"cycles_per_byte\") and b[\"cost\"][\"windows\"], b
p = {b[\"name\"]: b for b in j[\"boards\"]}
assert p[\"pico\"][\"uf2_family\"] == \"0xE48BFF56\" and not p[\"pico\"][\"semihosting\"]
assert p[\"microbit\"][\"clock_hz\"] == 16000000 and p[\"microbit\"][\"offset_stream\"] and p[\"mps2-an385\"][\"tables\"]
"' "atome boards --json: $(head -c 300 b.json)"
"$ATOME" boards --board pico > e.out 2> e.err; rc=$?
ok '[ $rc -eq 2 ] && [ "$(wc -l < e.err)" -eq 1 ] && [ ! -s e.out ]' "boards --board without --cost: exit 2"
"$ATOME" boards --cost --model x.atome --board stm32 > e.out 2> e.err; rc=$?
ok '[ $rc -eq 2 ] && grep -q "unknown board .stm32. (mps2-an385, microbit, microbit-v1, microbit-v2 or pico" e.err' "boards --cost with an unknown board: $(cat e.err)"
ok '[ -f "$SRC/models/atome-60k.atome" ]' "the shipped model $SRC/models/atome-60k.atome is there"
if [ -f "$SRC/models/atome-60k.atome" ]; then
    "$ATOME" boards --cost --model "$SRC/models/atome-60k.atome" --board microbit --window 32 > c.json; rc=$?
    ok '[ $rc -eq 0 ] && python3 -c "
import json
j = json.load(open(\"c.json\"))
assert j[\"board\"] == \"microbit\" and j[\"window\"] == 32 and len(j[\"features\"]) == 7 and j[\"features\"][0] == 1, j
assert j[\"estimate_insns_per_byte\"] > 0, j
"' "boards --cost: $(cat c.json)"
fi

echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ]
