// tests/node/mcu-standalone.test.mjs — standalone firmware (docs/mcu.md,
// "standalone mode"): images made by `atome firmware ... --prompt --n ...`
// carry their settings and run under QEMU the way a board runs them: no
// semihosting (QEMU is started without -semihosting-config, so a
// semihosting call would fault), output on the board's UART (-serial
// file:OUT or stdio). For both boards the UART bytes must be exactly: the
// status line (with the known answer = the native CLI's first bytes), then
// per story the prompt and `atome generate`'s bytes raw and the count line.
// Also: --loop (story k = seed S+k), an empty prompt, --interactive (a
// prompt typed on the UART), the Intel HEX file (parsed, the ELF's flash
// bytes, booted with -device loader) and the raw binary (-kernel), a damaged
// slot and a damaged settings block (one line, then silence), and the CLI's
// refusals. Needs the mcu and native builds and qemu-system-arm.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, native, firmwareFlags as flags, storyBytes } from './artifacts.mjs';

const MODEL = path.join(repo, 'models/atome-60k.atome');
const MCU = process.env.ATOME_MCU_BUILD ?? path.join(repo, 'build/mcu');
// The window a standalone image runs at: the model's stored window, or the
// largest that fits the board's RAM if that is smaller (micro:bit: 32).
const BOARDS = { 'mps2-an385': { maxWindow: Infinity }, microbit: { maxWindow: 32 } };
const hex = (b) => Buffer.from(b).toString('hex');
let tmp;

before(async () => {
  for (const b of Object.keys(BOARDS))
    assert.ok(existsSync(path.join(MCU, 'mcu', `atome-fw-${b}.elf`)), `missing the ${b} template: run tools/setup`);
  const ins = await native(['inspect', MODEL]);
  assert.equal(ins.code, 0, ins.stderr);
  const stored = JSON.parse(ins.stdout.toString()).window;
  for (const b of Object.keys(BOARDS)) BOARDS[b].window = Math.min(stored, BOARDS[b].maxWindow);
  tmp = mkdtempSync(path.join(tmpdir(), 'atome-sa-'));
});
after(() => rmSync(tmp, { recursive: true, force: true }));

// Runs QEMU on an image until `done(output)` holds (or 60 s), then stops it;
// resolves the UART bytes. kernel: '-kernel' or '-device loader'.
function qemu(board, file, done, { load = 'kernel', input = null } = {}) {
  const out = path.join(tmp, `uart-${Math.random().toString(36).slice(2)}.bin`);
  const serial = input === null ? ['-serial', `file:${out}`] : ['-serial', 'stdio'];
  const image = load === 'kernel' ? ['-kernel', file] : ['-device', `loader,file=${file}`];
  const p = spawn('qemu-system-arm', ['-M', board, '-display', 'none', '-monitor', 'none', ...serial, ...image],
    { stdio: [input === null ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  let stdout = Buffer.alloc(0), stderr = '';
  p.stdout.on('data', (b) => { stdout = Buffer.concat([stdout, b]); });
  p.stderr.on('data', (b) => { stderr += b; });
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const read = () => (input === null ? (existsSync(out) ? readFileSync(out) : Buffer.alloc(0)) : stdout);
    let fed = false;
    const tick = setInterval(() => {
      const got = read();
      if (input !== null && !fed && got.includes(Buffer.from('\n> '))) { fed = true; p.stdin.write(input); }
      if (done(got) || Date.now() - t0 > 60000) {
        clearInterval(tick);
        setTimeout(() => { p.kill('SIGTERM'); }, 300);   // let a wrongly chatty image show itself
      }
    }, 50);
    p.on('error', reject);
    p.on('close', () => { clearInterval(tick); resolve({ out: read(), stderr, ms: Date.now() - t0 }); });
  });
}

const countLines = (b) => (b.toString('latin1').match(/\natome: \d+ bytes[^\n]*\n/g) ?? []).length;

async function image(board, args, format = 'elf') {
  const file = path.join(tmp, `${board}-${Math.random().toString(36).slice(2)}.${format}`);
  const r = await native(['firmware', '--model', MODEL, '--board', board, '--out', file, '--format', format, ...args]);
  assert.equal(r.code, 0, `atome firmware ${args.join(' ')}: ${r.stderr}`);
  return { file, info: JSON.parse(r.stdout.toString()) };
}

// The native bytes of story k: `atome generate` with seed S+k at the image's window.
const story = (c, k, window, prompt = c.prompt) => storyBytes(MODEL, c, k, window, prompt);


const CASES = [
  { name: 'greedy', prompt: 'Once upon a time', n: 80 },
  { name: 'sampled, UTF-8 prompt', prompt: 'Lily saw a café — “hi”', n: 120, temperature: '0.8', topK: 40, topP: '0.95', seed: 7 },
  { name: 'empty prompt', prompt: '', n: 60, temperature: '1', topP: '0.9', seed: 5 },
  { name: 'loop', prompt: 'The dog', n: 40, temperature: '0.9', seed: 4294967294, loop: 3 },
];

// Checks one run's UART bytes against the CLI: the status line, then `stories` stories.
async function check(board, c, info, got, stories) {
  const w = BOARDS[board].window;
  const text = got.toString('latin1');
  const nl = text.indexOf('\n');
  const status = text.slice(0, nl);
  const first = await story(c, 0, w);
  assert.equal(info.expect_hex, hex(first.subarray(0, 64)), `${board} ${c.name}: expect_hex`);
  assert.equal(status, `atome ${board}: model 0x${info.container_crc32.slice(2).toLowerCase()} window ${w} n ${c.n} ` +
    `temperature ${c.temperature ?? '0'} top-k ${c.topK ?? '0'} top-p ${c.topP ?? '1'} seed ${c.seed ?? 1} ` +
    `loop ${c.loop ? 'on' : 'off'}${c.interactive ? ' interactive' : ''} expect ${info.expect_hex}`, `${board} ${c.name}: status line`);
  let rest = got.subarray(nl + 1);
  for (let k = 0; k < stories; k++) {
    const want = Buffer.concat([Buffer.from(c.prompt), k === 0 ? first : await story(c, k, w), Buffer.from('\n')]);
    assert.ok(rest.subarray(0, want.length).equals(want), `${board} ${c.name}: story ${k} differs from atome generate --seed ${(c.seed ?? 1) + k}`);
    rest = rest.subarray(want.length);
    const line = rest.toString('latin1').slice(0, rest.indexOf(0x0a) + 1);
    // QEMU's DWT reads 0: no bytes/s there
    assert.match(line, new RegExp(`^atome: ${c.n} bytes, estimate \\d+\\.\\d bytes/s at (16|25) MHz \\(stack \\d+ of \\d+ bytes\\)\\n$`),
      `${board} ${c.name}: count line '${line}'`);
    // the board's estimate is the figure atome firmware reported (core/cost.c on both)
    assert.equal(line.match(/estimate ([\d.]+) bytes/)[1], info.estimate_bytes_per_s.toFixed(1), `${board} ${c.name}: estimate`);
    const m = line.match(/stack (\d+) of (\d+)/);
    assert.ok(Number(m[1]) < Number(m[2]), 'the stack stays inside its reservation');
    rest = rest.subarray(line.length);
  }
  return rest;
}

for (const board of Object.keys(BOARDS)) {
  test(`standalone on ${board}: the UART carries the status line and atome generate's bytes`, async () => {
    await Promise.all(CASES.map(async (c) => {
      const { file, info } = await image(board, flags(c));
      assert.equal(info.standalone, true);
      const stories = c.loop ?? 1;
      const r = await qemu(board, file, (b) => countLines(b) >= stories);
      assert.equal(r.stderr.replace(/qemu-system-arm: terminating on signal 15.*\n?/, ''), '');
      const rest = await check(board, c, info, r.out, stories);
      if (!c.loop) assert.equal(rest.length, 0, `${board} ${c.name}: nothing after the count line (then WFI)`);
    }));
  });
}

function parseIhex(text) {
  const mem = new Map();
  let upper = 0, ended = false;
  for (const line of text.split('\r\n').filter((l) => l)) {
    assert.match(line, /^:[0-9A-F]+$/);
    const b = Buffer.from(line.slice(1), 'hex');
    assert.equal(b.reduce((s, x) => (s + x) & 255, 0), 0, `checksum of ${line}`);
    const [n, type] = [b[0], b[3]];
    assert.equal(b.length, n + 5);
    const addr = (b[1] << 8) | b[2];
    if (type === 0) for (let i = 0; i < n; i++) mem.set(upper + addr + i, b[4 + i]);
    else if (type === 4) upper = b.readUInt16BE(4) * 65536;
    else if (type === 1) ended = true;
    else assert.fail(`unexpected record type ${type}`);
  }
  assert.ok(ended, 'no end record');
  return mem;
}

// The flash bytes of an ELF: PT_LOAD segments with file bytes at their physical addresses.
function elfFlash(elf) {
  const phoff = elf.readUInt32LE(28), phent = elf.readUInt16LE(42), phnum = elf.readUInt16LE(44);
  const mem = new Map();
  for (let i = 0; i < phnum; i++) {
    const h = phoff + i * phent;
    if (elf.readUInt32LE(h) !== 1) continue;
    const off = elf.readUInt32LE(h + 4), paddr = elf.readUInt32LE(h + 12), fsz = elf.readUInt32LE(h + 16);
    for (let k = 0; k < fsz; k++) mem.set(paddr + k, elf[off + k]);
  }
  return mem;
}

test('Intel HEX for the micro:bit and raw binary for the MPS2: the ELF\'s flash bytes, and they boot', async () => {
  const c = CASES[1];
  const elf = await image('microbit', flags(c));
  const hx = await image('microbit-v1', flags(c), 'hex');
  const mem = parseIhex(readFileSync(hx.file, 'latin1'));
  const want = elfFlash(readFileSync(elf.file));
  for (const [a, v] of want) assert.equal(mem.get(a), v, `HEX byte at 0x${a.toString(16)}`);
  for (const [a, v] of mem) if (!want.has(a)) assert.equal(v, 0xff, `HEX fills the gap at 0x${a.toString(16)} with 0xFF`);
  const rh = await qemu('microbit', hx.file, (b) => countLines(b) >= 1, { load: 'loader' });
  await check('microbit', c, hx.info, rh.out, 1);

  const bin = await image('mps2-an385', flags(c), 'bin');
  const elf3 = await image('mps2-an385', flags(c));
  const b = readFileSync(bin.file);
  const w3 = elfFlash(readFileSync(elf3.file));
  for (const [a, v] of w3) assert.equal(b[a], v, `bin byte at 0x${a.toString(16)}`);
  assert.equal(bin.info.flash_base, '0x00000000');
  const rb = await qemu('mps2-an385', bin.file, (x) => countLines(x) >= 1);
  await check('mps2-an385', c, bin.info, rb.out, 1);
});

test('--interactive: after a story the board reads the next prompt from its UART', async () => {
  const c = { name: 'interactive', prompt: 'Once', n: 48, temperature: '0.8', topK: 40, seed: 11, interactive: true };
  const { file, info } = await image('mps2-an385', [...flags(c), '--interactive']);
  assert.equal(info.settings.interactive, true);
  // CRLF, as many terminals send it: one line, not a line and an empty one
  const r = await qemu('mps2-an385', file, (b) => countLines(b) >= 2, { input: 'The cat\r\n' });
  const text = r.out.toString('latin1');
  const a = text.indexOf('\n> ');
  assert.ok(a > 0, `no prompt marker in ${JSON.stringify(text.slice(0, 300))}`);
  await check('mps2-an385', c, info, r.out.subarray(0, a + 1), 1);
  const second = Buffer.concat([Buffer.from('> The cat\n'), Buffer.from('The cat'), await story(c, 1, BOARDS['mps2-an385'].window, 'The cat'), Buffer.from('\n')]);
  const tail = r.out.subarray(a + 1);
  assert.ok(tail.subarray(0, second.length).equals(second), `the typed prompt's story: ${JSON.stringify(tail.toString('latin1').slice(0, 200))}`);
  assert.equal(tail.subarray(second.length).toString('latin1').replace(/^atome: 48 bytes, estimate [\d.]+ bytes\/s at \d+ MHz \(stack \d+ of \d+ bytes\)\n/, ''), '> ',
    'after the count line the board waits for the next prompt (the LF of the CRLF did not start a story)');
});

test('a damaged slot or settings block: one line on the UART, then nothing', async () => {
  const { file } = await image('microbit', flags(CASES[0]));
  const elf = readFileSync(file);
  // the slot: the .atome_model section (found through the section headers)
  const shoff = elf.readUInt32LE(32), ent = elf.readUInt16LE(46), num = elf.readUInt16LE(48), strndx = elf.readUInt16LE(50);
  const stroff = elf.readUInt32LE(shoff + strndx * ent + 16);
  let slot = null;
  for (let i = 0; i < num; i++) {
    const h = shoff + i * ent;
    const nameAt = stroff + elf.readUInt32LE(h);
    if (elf.toString('latin1', nameAt, elf.indexOf(0, nameAt)) === '.atome_model') slot = { off: elf.readUInt32LE(h + 16), size: elf.readUInt32LE(h + 20) };
  }
  assert.ok(slot);
  for (const [what, at, line] of [['model', slot.off + 32 + 4000, 'atome: model slot: CRC-32 mismatch\n'],
    ['settings', slot.off + slot.size - 512 + 40, 'atome: settings block: CRC-32 mismatch\n'],
    ['settings flags', slot.off + slot.size - 512 + 12, 'atome: settings block: CRC-32 mismatch\n']]) {
    const bad = Buffer.from(elf);
    bad[at] ^= 0x20;
    const f = path.join(tmp, `bad-${what}.elf`);
    writeFileSync(f, bad);
    const r = await qemu('microbit', f, (b) => b.length >= line.length);
    await new Promise((res) => setTimeout(res, 0));
    assert.equal(r.out.toString('latin1'), line, `damaged ${what}`);
  }
});

test('atome firmware refuses what a standalone image cannot hold', async () => {
  const long = Buffer.alloc(365, 0x61).toString('hex');
  const cases = [
    [['--prompt-hex', long, '--n', '10'], 2, /the prompt is 365 bytes; the settings block holds 364/],
    [['--prompt', 'x', '--n', '10', '--window', '64'], 1, /--window 64 does not fit the microbit's RAM \(the largest that fits is 32\)/],
    [['--n', '5'], 2, /--prompt or --prompt-hex is required/],
    [['--prompt', 'x', '--n', '5', '--temperature', '1e3'], 2, /--temperature must be a decimal number/],
    [['--format', 'uf2'], 2, /--format uf2 is for the pico \(the RP2040 bootrom's drive\); the microbit takes elf, hex or bin/],
    [['--format', 'ihex'], 2, /--format must be elf, hex, bin or uf2 \(got 'ihex'\)/],
  ];
  for (const [args, code, msg] of cases) {
    const out = path.join(tmp, 'refused.hex');
    const r = await native(['firmware', '--model', MODEL, '--board', 'microbit', '--out', out, ...args]);
    assert.equal(r.code, code, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, msg);
    assert.ok(!existsSync(out), 'nothing written');
  }
  // 364 bytes is the limit, and it works
  const ok = Buffer.alloc(364, 0x61).toString('hex');
  const r = await native(['firmware', '--model', MODEL, '--board', 'microbit', '--out', path.join(tmp, 'long.elf'), '--prompt-hex', ok, '--n', '4']);
  assert.equal(r.code, 0, r.stderr);
  // no --n: the shared default length, as atome generate
  const d = await native(['firmware', '--model', MODEL, '--board', 'microbit', '--out', path.join(tmp, 'dflt.elf'), '--prompt', 'x']);
  assert.equal(d.code, 0, d.stderr);
  assert.equal(JSON.parse(d.stdout.toString()).settings.n, 256);
});
