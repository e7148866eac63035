// tests/node/mcu-firmware.test.mjs — the firmware plumbing under QEMU
// (docs/mcu.md): byte-exact semihosting output, exit codes through
// SYS_EXIT_EXTENDED, argument parsing, the model slot and its checks, the
// patch tool on the real images, fault handling, the RAM report and the
// instruction-count plugin, on every board of the table of boards that runs
// under QEMU with semihosting (mps2-an385, microbit, microbit-v2 today).
//
// Needs: the `mcu` preset built (firmware images; ATOME_MCU_BUILD, default
// build/mcu) and the `native` preset built (atome, elfpatch,
// libinsncount.so; ATOME_NATIVE_BUILD, default build/native), and
// qemu-system-arm. Anything missing FAILS the suite; nothing is skipped.
// Byte-for-byte agreement of generated text with the native and wasm
// builds is the parity harness's job; here the boards must agree with
// each other and with themselves.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, mkdirSync, copyFileSync, chmodSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pexec = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MCU = process.env.ATOME_MCU_BUILD || join(ROOT, 'build/mcu');
const NATIVE = process.env.ATOME_NATIVE_BUILD || join(ROOT, 'build/native');
const RUN_QEMU = join(ROOT, 'tools/mcu/run-qemu');
const ELFPATCH = join(NATIVE, 'elfpatch');
const ATOME = join(NATIVE, 'atome');
const PLUGIN = join(NATIVE, 'libinsncount.so');
// the boards whose images run under QEMU with semihosting: those rows of the
// table of boards (atome boards --json; the micro:bit v2's on mps2-an386)
// (a missing atome leaves the list empty: before() names what is missing)
const BOARDS = !existsSync(ATOME) ? [] : JSON.parse((await promisify(execFile)(ATOME, ['boards', '--json'])).stdout).boards
  .filter((b) => b.emulator === 'qemu' && b.semihosting).map((b) => b.name);
const template = (board) => join(MCU, 'mcu', `atome-fw-${board}.elf`);

let tmp;
const models = {};   // name -> path of an .atome file

// Runs a program; resolves to { code, stdout (Buffer), stderr (string) } whatever the exit status.
async function run(file, args, opts = {}) {
  try {
    const r = await pexec(file, args, { encoding: 'buffer', maxBuffer: 1 << 26, timeout: 120000, ...opts });
    return { code: 0, stdout: r.stdout, stderr: r.stderr.toString() };
  } catch (e) {
    if (typeof e.code !== 'number') throw e;   // spawn failure, not an exit status
    return { code: e.code, stdout: e.stdout, stderr: e.stderr.toString() };
  }
}
const qemu = (elf, board, args, extra = []) => run(RUN_QEMU, ['--board', board, '--timeout', '60', ...extra, elf, ...args]);

// CRC-32 (IEEE, as core/format.h) for editing slot headers directly.
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xFFFFFFFF;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xFF] ^ (c >>> 8);
  return (c ^ 0xFFFFFFFF) >>> 0;
}

// Section headers of an ELF32 LE file: name -> { addr, offset, size }.
function sections(elf) {
  const shoff = elf.readUInt32LE(32), ent = elf.readUInt16LE(46), num = elf.readUInt16LE(48);
  const strndx = elf.readUInt16LE(50), stroff = elf.readUInt32LE(shoff + strndx * ent + 16);
  const out = {};
  for (let i = 0; i < num; i++) {
    const h = shoff + i * ent, n = stroff + elf.readUInt32LE(h);
    out[elf.toString('latin1', n, elf.indexOf(0, n))] = {
      addr: elf.readUInt32LE(h + 12), offset: elf.readUInt32LE(h + 16), size: elf.readUInt32LE(h + 20),
    };
  }
  return out;
}

async function slotInfo(elf) {
  const r = await run(ELFPATCH, ['--info', elf]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout.toString());
}

async function makeModel(name, config, format, extra = []) {
  const ckpt = join(tmp, `${name}.ckpt`), out = join(tmp, `${name}.atome`);
  let r = await run(ATOME, ['init', '--config', config, '--seed', '7', '--out', ckpt, ...extra]);
  assert.equal(r.code, 0, `atome init: ${r.stderr}`);
  r = await run(ATOME, ['export', '--model', ckpt, '--format', format, '--out', out]);
  assert.equal(r.code, 0, `atome export: ${r.stderr}`);
  models[name] = out;
  return out;
}

async function patched(board, model, name) {
  const out = join(tmp, `${name}-${board}.elf`);
  const r = await run(ELFPATCH, ['--template', template(board), '--board', board, '--model', model, '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}

before(async () => {
  for (const f of [RUN_QEMU, ELFPATCH, ATOME, PLUGIN, ...BOARDS.map(template)])
    assert.ok(existsSync(f), `missing ${f}: build the mcu and native presets (docs/mcu.md)`);
  const q = await run('qemu-system-arm', ['--version']);
  assert.equal(q.code, 0, 'qemu-system-arm is not installed (tools/setup installs it)');
  tmp = mkdtempSync(join(tmpdir(), 'atome-mcu-'));
  await makeModel('tiny', 'atome-tiny', 'atome02');
  await makeModel('a60k', 'atome-60k', 'atome02');
});
after(() => { if (tmp) rmSync(tmp, { recursive: true, force: true }); });

const hex = (buf) => Buffer.from(buf).toString('hex');

test('echo: every byte value, NUL, CR/LF come out byte-exact on every QEMU board', async () => {
  const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)),
    Buffer.from('\r\n\0\0\n\r\n', 'latin1'), Buffer.from('h\u00e9llo \u2603', 'utf8')]);
  await Promise.all(BOARDS.map(async (b) => {
    const r = await qemu(template(b), b, ['--echo', '--n', '0', '--prompt-hex', hex(bytes)]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    assert.deepEqual(r.stdout, bytes);
  }));
});

test('echo: flag forms of `atome generate`', async () => {
  const cases = [
    [['--n=0', '--prompt-hex='], Buffer.alloc(0)],                        // empty prompt, = form
    [['--n', '0', '--prompt', 'hello'], Buffer.from('hello')],
    [['--n', '0', '--prompt=--x'], Buffer.from('--x')],                   // value starting with --
    [['--prompt-hex', '4142', '--n', '0', '--prompt-hex', '4344'], Buffer.from('CD')],   // last wins
    [['--n', '+3', '--prompt-hex', 'aBcD'], Buffer.from([0xab, 0xcd])],   // --n: strtoll rules; mixed-case hex
    [['--n', '0', '--prompt-hex', '00', '--temperature', '0.8', '--top-k', '40', '--top-p', '.95',
      '--seed', '4294967295', '--window', '65535'], Buffer.from([0])],
    [['--n', '0', '--prompt-hex', '00', '--temperature', '100', '--top-k', '2147483647', '--top-p', '0',
      '--seed', '0', '--window', '1'], Buffer.from([0])],
  ];
  for (const b of BOARDS) {
    const rs = await Promise.all(cases.map(([args]) => qemu(template(b), b, ['--echo', ...args])));
    rs.forEach((r, i) => {
      assert.equal(r.code, 0, `${b} ${cases[i][0].join(' ')}: ${r.stderr}`);
      assert.deepEqual(r.stdout, cases[i][1], cases[i][0].join(' '));
    });
  }
});

test('usage errors: exit 2, one line on stderr, nothing on stdout', async () => {
  const bad = [
    ['--n', '1'],                                             // no prompt
    ['--n', '1', '--prompt', 'a', '--prompt-hex', '41'],      // both prompts
    ['--n', '1', '--prompt-hex', '414'],                      // odd hex
    ['--n', '1', '--prompt-hex', '4g'],                       // non-hex digit
    ['--n', '1', '--prompt-hex', '41', '--model', 'x'],       // no --model on a board
    ['--n', '1', '--prompt-hex', '41', 'stray'],              // positional
    ['--n', 'abc', '--prompt-hex', '41'],
    ['--n', '-1', '--prompt-hex', '41'],
    ['--n', '1000000000001', '--prompt-hex', '41'],
    ['--n', '1', '--prompt-hex', '41', '--top-k', '+3'],       // settings: digits only
    ['--n', '1', '--prompt-hex', '41', '--top-k', '2147483648'],
    ['--n', '1', '--prompt-hex', '41', '--temperature', '100.5'],
    ['--n', '1', '--prompt-hex', '41', '--temperature', '1e3'],
    ['--n', '1', '--prompt-hex', '41', '--top-p', '0.1234567891'],   // 10 decimals
    ['--n', '1', '--prompt-hex', '41', '--top-p', '1.01'],
    ['--n', '1', '--prompt-hex', '41', '--seed', '4294967296'],
    ['--n', '1', '--prompt-hex', '41', '--seed', '-0'],
    ['--n', '1', '--prompt-hex', '41', '--window', '0'],
    ['--n', '1', '--prompt-hex', '41', '--window', '65536'],
    ['--n', '1', '--prompt-hex', '--seed', '3'],              // missing value
    ['--n', '1', '--prompt-hex', '41', '--echo=1'],           // switch with a value
  ];
  for (const b of BOARDS) {
    const rs = await Promise.all(bad.map((a) => qemu(template(b), b, a)));
    rs.forEach((r, i) => {
      const what = `${b}: ${bad[i].join(' ')}`;
      assert.equal(r.code, 2, `${what}: exit ${r.code} ${r.stderr}`);
      assert.equal(r.stdout.length, 0, what);
      assert.match(r.stderr, /^atome: generate: [^\n]+\n$/, what);
    });
  }
});

test('run-qemu refuses arguments the semihosting command line cannot carry', async () => {
  for (const a of ['a b', '', 'tab\there']) {
    const r = await qemu(template('microbit'), 'microbit', ['--n', '0', '--prompt', a]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^run-qemu: /);
  }
});

// run-qemu finds a row's QEMU machine by field name (ATM_BOARD's parameters in
// core/boards.c), in a copy of the tree whose boards.c is edited: a row whose
// fields move with their names still runs; a renamed field or a row of another
// length is refused, never read from the wrong column.
test('run-qemu reads the table of boards by field name', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'atome-boards-'));
  try {
    mkdirSync(join(dir, 'tools/mcu'), { recursive: true });
    mkdirSync(join(dir, 'core'));
    copyFileSync(RUN_QEMU, join(dir, 'tools/mcu/run-qemu'));
    chmodSync(join(dir, 'tools/mcu/run-qemu'), 0o755);
    const c = readFileSync(join(ROOT, 'core/boards.c'), 'utf8'), def = readFileSync(join(ROOT, 'core/boards.def'), 'utf8');
    const params = c.match(/#define ATM_BOARD\(([^)]*)\)/)[1].replace(/[\s\\]/g, '').split(',');
    const at = params.indexOf('machine');
    assert.ok(at > 0 && params.includes('alias'), `ATM_BOARD's fields: ${params}`);
    // every row and the parameter list with the machine field moved to the front
    const rows = def.replace(/\/\*[\s\S]*?\*\//g, '').match(/ATM_BOARD\(([^)"]|"[^"]*")*\)/g);
    const moved = rows.map((r) => {
      const f = r.slice(10, -1).split(',');
      return `ATM_BOARD(${[f[at], ...f.filter((_, i) => i !== at)].join(',')})`;
    }).join('\n');
    const movedC = c.replace(/#define ATM_BOARD\(([^)]*)\)/, `#define ATM_BOARD(${['machine', ...params.filter((p) => p !== 'machine')].join(', ')})`);
    const tryWith = async (boardsC, boardsDef) => {
      writeFileSync(join(dir, 'core/boards.c'), boardsC);
      writeFileSync(join(dir, 'core/boards.def'), boardsDef);
      return run(join(dir, 'tools/mcu/run-qemu'), ['--board', 'microbit', '--timeout', '60', template('microbit'), '--echo', '--n', '0', '--prompt', 'hi']);
    };
    const ok = await tryWith(movedC, moved);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(ok.stdout.toString(), 'hi');
    const renamed = await tryWith(movedC.replace('(machine,', '(qemu_machine,'), moved);
    assert.equal(renamed.code, 2);
    assert.match(renamed.stderr, /^run-qemu: core\/boards\.c: ATM_BOARD names no name, alias or machine field/);
    const longer = await tryWith(movedC.replace('(machine,', '(machine, extra,'), moved);
    assert.equal(longer.code, 2);
    assert.match(longer.stderr, /^run-qemu: core\/boards\.def: a row's field count is not ATM_BOARD's/);
  } finally { rmSync(dir, { recursive: true, force: true }); }
});

test('empty template: generate exits 3, echo still works', async () => {
  for (const b of BOARDS) {
    const info = await slotInfo(template(b));
    assert.equal(info.board, b);
    assert.equal(info.model_bytes, 0);
    assert.equal(info.capacity, info.size - 32);
    const r = await qemu(template(b), b, ['--n', '4', '--prompt-hex', '41']);
    assert.equal(r.code, 3, r.stderr);
    assert.equal(r.stdout.length, 0);
  }
});

test('slot header checks (slot edited directly in the ELF file)', async () => {
  const b = 'microbit', src = readFileSync(template(b)), info = await slotInfo(template(b));
  const edit = (fn) => {
    const e = Buffer.from(src), s = e.subarray(info.file_offset, info.file_offset + info.size);
    fn(s);
    const p = join(tmp, `slot-${Math.random().toString(36).slice(2)}.elf`);
    writeFileSync(p, e);
    return p;
  };
  const junk = Buffer.from('not a model at all');
  const put = (s, data, crc = crc32(data), len = data.length) => {
    s.writeUInt32LE(len, 12); s.writeUInt32LE(crc, 16); data.copy(s, 32);
  };
  const cases = [
    // [name, editor, exit code in echo mode, exit code generating]
    ['junk with a valid CRC', (s) => put(s, junk), 0, 1],
    ['CRC mismatch', (s) => put(s, junk, crc32(junk) ^ 1), 4, 4],
    ['length beyond capacity', (s) => put(s, junk, 0, info.capacity + 1), 4, 4],
    ['board field', (s) => s.write('mps2-an385\0\0', 20, 'latin1'), 4, 4],
    ['slot magic', (s) => { s[0] ^= 0x20; }, 4, 4],
    ['capacity field', (s) => s.writeUInt32LE(info.capacity - 4, 8), 4, 4],
  ];
  for (const [name, fn, echoCode, genCode] of cases) {
    const elf = edit(fn);
    const [e, g] = await Promise.all([
      qemu(elf, b, ['--echo', '--n', '0', '--prompt-hex', '41']),
      qemu(elf, b, ['--n', '2', '--prompt-hex', '41'])]);
    assert.equal(e.code, echoCode, `${name} (echo): ${e.stderr}`);
    assert.equal(g.code, genCode, `${name} (generate): ${g.stderr}`);
    if (genCode) assert.match(g.stderr, /^atome: generate: [^\n]+\n$/);
  }
});

test('a fault ends the run with 100 + the exception number (103 = HardFault)', async () => {
  for (const b of BOARDS) {
    const e = readFileSync(template(b)), s = sections(e);
    const reset = e.readUInt32LE(s['.isr_vector'].offset + 4) & ~1;
    e.writeUInt16LE(0xDE00, s['.text'].offset + (reset - s['.text'].addr));   // udf #0 at Reset_Handler
    const p = join(tmp, `fault-${b}.elf`);
    writeFileSync(p, e);
    const r = await qemu(p, b, ['--n', '0', '--prompt-hex', '41']);
    assert.equal(r.code, 103, `${b}: ${r.stderr}`);
  }
});

test('patched models: every QEMU board generates the same bytes, deterministically', async () => {
  const elf = {};
  for (const b of BOARDS) elf[b] = await patched(b, models.tiny, 'tiny');
  const settings = [
    ['--n', '64', '--prompt-hex', hex(Buffer.from('Once upon a time'))],
    ['--n', '64', '--prompt-hex', hex(Buffer.from('Once upon a time')), '--temperature', '0.8',
      '--top-k', '40', '--top-p', '0.9', '--seed', '5'],
    ['--n', '40', '--prompt-hex=', '--temperature', '1', '--window', '8'],
    ['--n', '0', '--prompt-hex', '41'],
  ];
  for (const args of settings) {
    const [m3, m0, again] = await Promise.all([qemu(elf['mps2-an385'], 'mps2-an385', args),
      qemu(elf.microbit, 'microbit', args), qemu(elf.microbit, 'microbit', args)]);
    for (const r of [m3, m0, again]) assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    const n = Number(args[1]);
    assert.equal(m3.stdout.length, n);
    assert.deepEqual(m0.stdout, m3.stdout, args.join(' '));
    assert.deepEqual(again.stdout, m0.stdout);
  }
});

test('micro:bit images of ATOME01 models hold the offset stream; the same story from it, a damaged one, none', async () => {
  const a01 = join(tmp, 'a60k-01.atome');
  const c = await run(ATOME, ['convert', '--model', models.a60k, '--format', 'atome01', '--out', a01]);
  assert.equal(c.code, 0, c.stderr);
  const elf = await patched('microbit', a01, 'a60k-01'), info = await slotInfo(elf);
  const src = readFileSync(elf), model = readFileSync(a01);
  const at = info.file_offset + 32 + ((model.length + 3) & ~3);
  assert.equal(src.toString('latin1', at, at + 8), 'ATMOFS01');
  // every model byte v at offset i: the table offsets of its even and odd bits, plus 64 (i % 4)
  const nib = (v) => (v & 1) | ((v >> 1) & 2) | ((v >> 2) & 4) | ((v >> 3) & 8);
  let bad = 0;
  for (let i = 0; i < model.length; i++) {
    const g = 64 * (i % 4);
    bad += src[at + 8 + 2 * i] !== 4 * nib(model[i]) + g || src[at + 9 + 2 * i] !== 4 * nib(model[i] >> 1) + g;
  }
  assert.equal(bad, 0);
  const variant = (name, fn) => { const e = Buffer.from(src); fn(e); const p = join(tmp, `ox-${name}.elf`); writeFileSync(p, e); return p; };
  const damaged = variant('damaged', (e) => { e[at + 8 + 2 * 5000] ^= 4; });
  const nomagic = variant('nomagic', (e) => { e[at] ^= 1; });
  const a02 = await patched('microbit', models.a60k, 'a60k-02');   // ATOME02: no stream
  const args = ['--n', '48', '--prompt-hex', hex(Buffer.from('Once upon a time')), '--window', '32', '--report'];
  const runs = await Promise.all([elf, damaged, nomagic, a02].map((f) => qemu(f, 'microbit', args)));
  for (const r of runs) assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(runs.map((r) => JSON.parse(r.stderr).offsets), [1, 0, 0, 0]);
  assert.equal(runs[0].stdout.length, 48);
  for (const r of runs.slice(1)) assert.deepEqual(r.stdout, runs[0].stdout);
  assert.equal(a02.length > 0 && (await slotInfo(a02)).model_bytes, readFileSync(models.a60k).length);
});

test('atome-60k on the micro:bit: window 32 fits in 16 KiB, window 64 does not', async () => {
  const elf = await patched('microbit', models.a60k, 'a60k');
  const prompt = hex(Buffer.from('Once upon a time'));
  const r = await qemu(elf, 'microbit', ['--n', '32', '--prompt-hex', prompt, '--window', '32', '--report']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.length, 32);
  const rep = JSON.parse(r.stderr);
  assert.equal(rep.board, 'microbit');
  assert.equal(rep.window, 32);
  assert.ok(rep.engine_bytes + rep.copy_bytes + rep.tail_bytes <= rep.arena_bytes, r.stderr);
  assert.ok(rep.stack_used > 0 && rep.stack_used < rep.stack_bytes, r.stderr);
  // stack reservation + .data/.bss + arena are the whole 16 KiB RAM (link/common.ld)
  assert.equal(rep.stack_bytes + rep.static_bytes + rep.arena_bytes, 16384, r.stderr);
  const w64 = await qemu(elf, 'microbit', ['--n', '4', '--prompt-hex', prompt, '--window', '64']);
  assert.equal(w64.code, 5, w64.stderr);
  assert.match(w64.stderr, /needs \d+ bytes of arena/);
  assert.equal(w64.stdout.length, 0);
});

test('elfpatch: board check, slot capacity, invalid models, C header', async () => {
  const out = join(tmp, 'never.elf');
  let r = await run(ELFPATCH, ['--template', template('microbit'), '--board', 'mps2-an385',
    '--model', models.tiny, '--out', out]);
  assert.equal(r.code, 2, r.stderr);
  assert.ok(!existsSync(out));
  const big = await makeModel('big', 'atome-60k', 'atome01', ['--d-model', '256']);
  assert.ok(readFileSync(big).length > (await slotInfo(template('microbit'))).capacity);
  r = await run(ELFPATCH, ['--template', template('microbit'), '--board', 'microbit', '--model', big, '--out', out]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /does not fit/);
  assert.ok(!existsSync(out));
  const m3 = await patched('mps2-an385', big, 'big');   // the M3 slot takes it
  assert.equal((await slotInfo(m3)).model_bytes, readFileSync(big).length);
  const junk = join(tmp, 'junk.atome');
  writeFileSync(junk, Buffer.from('ATOME01 is the legacy format, not a container'));
  r = await run(ELFPATCH, ['--template', template('microbit'), '--board', 'microbit', '--model', junk, '--out', out]);
  assert.equal(r.code, 1);
  assert.ok(!existsSync(out));

  const h = join(tmp, 'model.h');
  r = await run(ELFPATCH, ['--header', '--model', models.tiny, '--out', h]);
  assert.equal(r.code, 0, r.stderr);
  const text = readFileSync(h, 'latin1'), body = text.slice(text.indexOf('] = {'));
  const back = Buffer.from((body.match(/0x[0-9A-F]{2}/g) || []).map((x) => parseInt(x, 16)));
  assert.deepEqual(back, readFileSync(models.tiny));
  assert.match(text, /static const uint8_t atome_model\[\d+\]/);
});

test('instruction-count plugin: exact, repeatable, grows with the output', async () => {
  const elf = await patched('mps2-an385', models.tiny, 'count');
  const count = async (n, tag) => {
    const f = join(tmp, `count-${tag}.txt`);
    const r = await qemu(elf, 'mps2-an385', ['--n', String(n), '--prompt-hex', '41'], ['--count', f, '--plugin', PLUGIN]);
    assert.equal(r.code, 0, r.stderr);
    return BigInt(readFileSync(f, 'latin1').trim());
  };
  const [c0, c8, c8b] = [await count(0, 'a'), await count(8, 'b'), await count(8, 'c')];
  assert.ok(c0 > 0n);
  assert.ok(c8 > c0);
  assert.equal(c8, c8b);
});

test('atome firmware picks the faster encoding (ATOME01) that fits, says so, and the board writes the same story', async () => {
  const prompt = hex(Buffer.from('Once upon a time'));
  const args = ['--n', '48', '--prompt-hex', prompt, '--temperature', '0.8', '--top-k', '40', '--seed', '3', '--window', '32'];
  for (const board of BOARDS) {
    const made = {};
    for (const enc of ['auto', 'keep']) {
      const out = join(tmp, `enc-${enc}-${board}.elf`);
      const r = await run(ATOME, ['firmware', '--model', models.a60k, '--board', board, '--out', out,
        ...(enc === 'keep' ? ['--encoding', 'keep'] : [])]);
      assert.equal(r.code, 0, r.stderr);
      made[enc] = { json: JSON.parse(r.stdout.toString()), elf: out };
    }
    assert.equal(made.auto.json.encoding, 'ATOME01', board);
    assert.match(made.auto.json.encoding_choice, /^ATOME01 \(re-encoded from ATOME02: faster on this board\)$/);
    assert.equal(made.keep.json.encoding, 'ATOME02');
    assert.ok(!('encoding_choice' in made.keep.json));
    assert.ok(made.auto.json.model_bytes > made.keep.json.model_bytes);
    const [a, k] = await Promise.all([qemu(made.auto.elf, board, args), qemu(made.keep.elf, board, args)]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(k.code, 0, k.stderr);
    assert.equal(a.stdout.length, 48);
    assert.deepEqual(a.stdout, k.stdout, `${board}: the same story from either encoding`);
  }
  const bad = await run(ATOME, ['firmware', '--model', models.a60k, '--board', 'microbit', '--out', join(tmp, 'x.elf'), '--encoding', 'fast']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr.toString(), /--encoding must be auto or keep/);
});

// The cost model (docs/mcu-cost.md) against the counts themselves, on the
// shipped models in both encodings: atome firmware's estimate within 10 %
// of tools/bench-mcu's instructions per byte; the page's (the same C in
// wasm) equal to the CLI's.
test('speed estimate: within 10 % of tools/bench-mcu on the shipped models; the page says the same', { timeout: 600000 }, async () => {
  const { loadAtome } = await import('../../wasm/atome.mjs');
  const atome = await loadAtome(readFileSync(join(ROOT, 'build/wasm/atome.wasm')));
  const cases = [['atome-60k', 'microbit', 32], ['atome-60k', 'mps2-an385', 64], ['atome-944k', 'mps2-an385', 64]];
  for (const [name, board, w] of cases) {
    for (const enc of ['atome01', 'atome02']) {
      const file = join(tmp, `${name}-${enc}.atome`);
      const c = await run(ATOME, ['convert', '--model', join(ROOT, 'models', `${name}.atome`), '--format', enc, '--out', file]);
      assert.equal(c.code, 0, c.stderr);
      const b = await run(join(ROOT, 'tools/bench-mcu'), ['--model', file, '--board', board, '--window', String(w)]);
      assert.equal(b.code, 0, b.stderr);
      const counted = JSON.parse(b.stdout.toString()).insns_per_byte;
      const f = await run(ATOME, ['firmware', '--model', file, '--board', board, '--encoding', 'keep', '--window', String(w),
        '--prompt', 'Once', '--n', '8', '--out', join(tmp, 'est.elf')]);
      assert.equal(f.code, 0, f.stderr);
      const j = JSON.parse(f.stdout.toString());
      const err = (j.estimate_insns_per_byte - counted) / counted;
      assert.ok(Math.abs(err) <= 0.10, `${name} ${enc} on ${board} at window ${w}: estimate ${j.estimate_insns_per_byte}, counted ${counted}`);
      assert.equal(j.clock_hz, board === 'microbit' ? 16e6 : 25e6);
      assert.equal(j.estimate_bytes_per_s, Math.round(10 * j.clock_hz / j.estimate_insns_per_byte) / 10);
      if (enc === 'atome01') {   // the page gets ATOME01 for either file (the faster encoding fits both boards)
        const fit = atome.firmwareFit(readFileSync(template(board)), readFileSync(file), w);
        assert.equal(fit.estimate_insns_per_byte, j.estimate_insns_per_byte, `${name} on ${board}: page and CLI`);
      }
    }
  }
});
