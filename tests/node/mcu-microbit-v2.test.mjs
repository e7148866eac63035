// tests/node/mcu-microbit-v2.test.mjs — the micro:bit v2 firmware
// (board microbit-v2, nRF52833; docs/mcu.md "BBC micro:bit v2").
//  - Emulated: QEMU has no nRF52, so the v2 image itself (the template with
//    a model patched in, the same ELF its .hex is made from) runs on QEMU's
//    Cortex-M4 machine mps2-an386 (tools/mcu/run-qemu --board microbit-v2) over
//    semihosting, where it touches no nRF52 register, and must print
//    exactly `atome generate`'s bytes: the board model (atome-60k) and the
//    web model (atome-944k at window 32), in the encodings the CLI may give.
//  - Not emulated: the clock and UART set-up. tests/mcu/nrf52_regs.c builds
//    it on the host with a recording register block; its writes, in order,
//    must be the rows of docs/mcu.md's register table (each value checked
//    against the nRF52833 Product Specification there).
// Needs the native and mcu builds and qemu-system-arm; nothing is skipped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, nativeDir, native, run, generateArgs } from './artifacts.mjs';
import { hexImage } from './ihex.mjs';

const MCU = process.env.ATOME_MCU_BUILD ?? path.join(repo, 'build/mcu');
const TEMPLATE = path.join(MCU, 'mcu', 'atome-fw-microbit-v2.elf');
const ELFPATCH = path.join(nativeDir, 'elfpatch');
const RUN_QEMU = path.join(repo, 'tools/mcu/run-qemu');
const M60 = path.join(repo, 'models/atome-60k.atome'), M944 = path.join(repo, 'models/atome-944k.atome');
const PROMPT = Buffer.from('Once upon a time').toString('hex');
let tmp;

before(() => {
  assert.ok(existsSync(TEMPLATE), `missing ${TEMPLATE}: run tools/setup`);
  tmp = mkdtempSync(path.join(tmpdir(), 'atome-v2-'));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

// The rows of docs/mcu.md's register table: [[address, value], ...].
function docRows() {
  const doc = readFileSync(path.join(repo, 'docs/mcu.md'), 'utf8');
  const a = doc.indexOf('<!-- nrf52-registers'), b = doc.indexOf('<!-- /nrf52-registers -->');
  assert.ok(a >= 0 && b > a, 'docs/mcu.md has no register table');
  return doc.slice(a, b).split('\n').filter((l) => /^\| \d+ \|/.test(l))
    .map((l) => { const c = l.split('|').map((x) => x.trim()); return [c[4], c[5]]; });
}

test('the v2 clock and UART set-up writes exactly the registers docs/mcu.md lists, in order', async () => {
  const rows = docRows();
  assert.equal(rows.length, 17);
  const r = await run(path.join(nativeDir, 'tests/nrf52_regs'), []);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '', 'the set-up read a register the stand-in does not know');
  const lines = r.stdout.toString().split('\n');
  const init = lines.slice(lines.indexOf('# init') + 1, lines.indexOf('# putc'));
  const writes = init.filter((l) => l.startsWith('W ')).map((l) => l.split(' ').slice(1));
  assert.deepEqual(writes, rows);
  // the one poll of the set-up: EVENTS_HFCLKSTARTED, after TASKS_HFCLKSTART
  assert.deepEqual(init.filter((l) => l.startsWith('R ')), ['R 0x40000100']);
  assert.ok(init.indexOf('R 0x40000100') > init.indexOf('W 0x40000000 0x00000001'));
  // a byte out: TXD, poll TXDRDY, clear it; a byte in: poll RXDRDY, clear, read RXD
  const seg = (from, to) => lines.slice(lines.indexOf(from) + 1, lines.indexOf(to));
  assert.deepEqual(seg('# putc', '# getc'), ['W 0x4000251C 0x00000041', 'R 0x4000211C', 'W 0x4000211C 0x00000000']);
  assert.deepEqual(seg('# getc', '# got 120'), ['R 0x40002108', 'W 0x40002108 0x00000000', 'R 0x40002518']);
});

async function patched(model, name) {
  const out = path.join(tmp, `${name}.elf`);
  const r = await run(ELFPATCH, ['--template', TEMPLATE, '--board', 'microbit-v2', '--model', model, '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}
async function atome01(model, name) {
  const out = path.join(tmp, `${name}.atome`);
  const r = await native(['convert', '--model', model, '--format', 'atome01', '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}

// [model file, label, case]
const CASES = [
  ['60k', { promptHex: PROMPT, n: 48, window: 64 }],
  ['60k', { promptHex: PROMPT, n: 48, window: 32, temperature: '0.8', topK: 40, topP: '0.95', seed: 7 }],
  ['944k', { promptHex: PROMPT, n: 24, window: 32 }],
  ['944k', { promptHex: PROMPT, n: 24, window: 32, temperature: '0.7', topK: 20, seed: 3 }],
];

test('the v2 image on QEMU mps2-an386 prints atome generate\'s bytes: board model and web model, both encodings', { timeout: 900000 }, async () => {
  const src = { '60k': M60, '944k': M944 };
  const files = {};
  for (const k of Object.keys(src)) {
    files[`${k}-02`] = src[k];
    files[`${k}-01`] = await atome01(src[k], `${k}-01`);
  }
  for (const [name, file] of Object.entries(files)) {
    const elf = await patched(file, name);
    for (const [m, c] of CASES.filter(([m]) => name.startsWith(m))) {
      const want = await native(generateArgs(src[m], c));
      assert.equal(want.code, 0, want.stderr);
      const args = generateArgs('', c).slice(3);   // the flags after --model
      const got = await run(RUN_QEMU, ['--board', 'microbit-v2', '--timeout', '600', elf, ...args, '--report'], { timeout: 620000 });
      assert.equal(got.code, 0, `${name} ${JSON.stringify(c)}: ${got.stderr}`);
      assert.equal(got.stdout.length, c.n);
      assert.ok(got.stdout.equals(want.stdout), `${name} ${JSON.stringify(c)}: differs from atome generate`);
      const rep = JSON.parse(got.stderr.trim().split('\n').at(-1));
      assert.equal(rep.board, 'microbit-v2');
      assert.equal(rep.window, c.window);
      assert.ok(rep.stack_used < rep.stack_bytes, `stack ${rep.stack_used} of ${rep.stack_bytes}`);
    }
  }
});

// ---- the micro:bit files of `atome firmware` ----

const SET = ['--prompt', 'Once upon a time', '--n', '120', '--temperature', '0.8', '--top-k', '40', '--seed', '5'];
async function firmware(model, board, format, name, extra = SET) {
  const out = path.join(tmp, `${name}.${format}`);
  const r = await native(['firmware', '--model', model, '--board', board, '--format', format, '--out', out, ...extra]);
  assert.equal(r.code, 0, r.stderr);
  return { file: out, text: readFileSync(out, 'latin1'), info: JSON.parse(r.stdout.toString()), stderr: r.stderr };
}

test('--board microbit --format hex: the Universal Hex of the v1 and v2 files, as createUniversalHex makes it', { timeout: 300000 }, async () => {
  const { createUniversalHex, separateUniversalHex, microbitBoardId } = await import('@microbit/microbit-universal-hex');
  const u = await firmware(M60, 'microbit', 'hex', 'u60');
  const v1 = await firmware(M60, 'microbit-v1', 'hex', 'v1-60');
  const v2 = await firmware(M60, 'microbit-v2', 'hex', 'v2-60');
  assert.equal(u.info.universal_hex, true);
  assert.deepEqual(u.info.boards, ['microbit-v1', 'microbit-v2']);
  assert.equal(u.info.file_bytes, Buffer.byteLength(u.text, 'latin1'));
  const want = createUniversalHex([{ hex: v1.text, boardId: microbitBoardId.V1 }, { hex: v2.text, boardId: microbitBoardId.V2 }]);
  assert.ok(u.text === want, 'atome firmware --board microbit --format hex differs from createUniversalHex of the single-board files');
  const parts = separateUniversalHex(u.text);
  assert.deepEqual(parts.map((p) => p.boardId), [0x9900, 0x9903]);
  assert.deepEqual(hexImage(parts[0].hex), hexImage(v1.text));
  assert.deepEqual(hexImage(parts[1].hex), hexImage(v2.text));
  // each part as its single-board file says, and the v1's is today's micro:bit file (board name aside)
  for (const [k, single] of [['v1', v1], ['v2', v2]])
    for (const key of ['model_bytes', 'capacity', 'window', 'max_window', 'flash_bytes', 'expect_hex', 'encoding_choice'])
      assert.deepEqual(u.info[k][key], single.info[key], `${k}.${key}`);
  assert.equal(u.info.v2.clock_hz, 64e6);
  // the v2 part, booted: its flash bytes are the ELF the emulated tests run
  assert.equal(v2.info.flash_base, '0x00000000');
});

test('a model only the v2 holds (the web model): a v2-only Universal Hex, and the CLI says so', { timeout: 300000 }, async () => {
  const { createUniversalHex, separateUniversalHex, microbitBoardId } = await import('@microbit/microbit-universal-hex');
  const u = await firmware(M944, 'microbit', 'hex', 'u944', ['--prompt', 'Once upon a time', '--n', '40']);
  const v2 = await firmware(M944, 'microbit-v2', 'hex', 'v2-944', ['--prompt', 'Once upon a time', '--n', '40']);
  assert.deepEqual(u.info.boards, ['microbit-v2']);
  assert.equal(u.info.v1, undefined);
  assert.match(u.info.v1_refused, /too big for the microbit model slot/);
  assert.match(u.stderr, /note: the model does not fit the micro:bit v1 \(.*\): the file is for the micro:bit v2 only/);
  assert.ok(u.text === createUniversalHex([{ hex: v2.text, boardId: microbitBoardId.V2 }]));
  assert.deepEqual(separateUniversalHex(u.text).map((p) => p.boardId), [0x9903]);
  assert.ok(u.info.v2.window >= 32, `the web model runs at window ${u.info.v2.window} on the v2`);
  // elf and bin with --board microbit stay the v1's: the 944K model is refused there
  const r = await native(['firmware', '--model', M944, '--board', 'microbit', '--format', 'elf', '--out', path.join(tmp, 'no.elf')]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /too big for the microbit model slot/);
});

test('--board microbit --format hex: a v1 part that fails for any reason but the fit fails the command (no v2-only file)', { timeout: 120000 }, async () => {
  const bad = path.join(tmp, 'not-a-template.elf');
  writeFileSync(bad, Buffer.from('not an ELF file at all'));
  const out = path.join(tmp, 'bad-v1.hex');
  const r = await native(['firmware', '--model', M60, '--board', 'microbit', '--format', 'hex', '--template', bad, '--out', out, ...SET]);
  assert.equal(r.code, 1, r.stderr.toString());
  assert.match(r.stderr.toString(), /^atome: firmware: template '.*not-a-template\.elf': /);
  assert.doesNotMatch(r.stderr.toString(), /does not fit/);
  assert.equal(r.stdout.length, 0);
  assert.equal(existsSync(out), false, 'a file was written');
});
