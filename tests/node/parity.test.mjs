// tests/node/parity.test.mjs — the byte-for-byte parity harness: one `.atome`
// model, one prompt, one set of sampling settings, one seed, one window give
// the same bytes on every target:
//   native   build/native/atome generate (x86 engine kernels)
//   wasm     wasm/atome.mjs PackedModel in this process (bytes read out of
//            the module's memory)
//   M3       the mps2-an385 firmware under QEMU (Cortex-M3, -O2 core)
//   M0       the microbit firmware under QEMU (Cortex-M0, -Os core, 16 KiB RAM)
// The firmware images are made by `atome firmware` from the mcu preset's
// templates, so the patch path users take is the one tested.
//
// Models: the shipped atome-60k (models/atome-60k.ckpt, exported here by the
// native CLI as ATOME01 and ATOME02) and six random-init shapes (`atome init`
// with shape overrides: d_model 32/40/48, 1-3 layers, d_head 8, kernel 3/5,
// attn-top-k 2/4, pathway subsets; bounds-only, text-calibrated and
// default-window exports). Each model is run on five prompts (ASCII,
// multi-byte UTF-8, empty, 100 bytes = longer than every window, raw bytes
// with NUL/CR/0xFF) x windows 32 and 64 x greedy and two sampled settings
// (rotating through temperature / top-k / top-p combinations and seeds), plus
// one extra window per random model (1, 3, 5 or the export's default).
//
// Where the M0 has no room (atome-60k at window 64: docs/mcu.md) the case is
// still run there and must be refused with exit 5, exactly when the engine's
// arena need (read from the wasm engine) plus the command-line tail exceeds
// the board's arena; the other three targets must still agree.
//
// A mismatch names the case (model, prompt, flags, window, n), the target,
// the first differing byte offset and the native command that reproduces it.
// Missing builds or QEMU FAIL the suite; nothing is skipped. QEMU and the
// native CLI run two processes at a time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, nativeDir, nativeCli, load, run, firstDiff } from './artifacts.mjs';

const MCU = process.env.ATOME_MCU_BUILD ?? path.join(repo, 'build/mcu');
const BOARDS = { m3: 'mps2-an385', m0: 'microbit' };
const template = (board) => path.join(MCU, 'mcu', `atome-fw-${board}.elf`);
const MIN_TAIL = 256;   // the firmware's tail: at least the sampler's scratch (mcu/main.c)

const enc = new TextEncoder();
const hex = (b) => Buffer.from(b).toString('hex');

// Random-init shapes: [name, init overrides, export flags, extra window, seed].
const RANDOM = [
  ['r1-d32-all', ['--d-model', '32', '--layers', '1', '--d-head', '8', '--kernel', '3', '--attn-top-k', '2'],
    ['--format', 'atome02'], 3, 3],
  ['r2-d48-conv-attn', ['--d-model', '48', '--layers', '3', '--d-head', '8', '--kernel', '5', '--attn-top-k', '4',
    '--pathways', 'conv,attn'], ['--format', 'atome01'], 'default', 4],
  ['r3-d32-conv-ssm', ['--d-model', '32', '--layers', '2', '--kernel', '5', '--pathways', 'conv,ssm'],
    ['--format', 'atome02', '--window', '24'], 'default', 5],
  ['r4-d48-ssm-attn-calib', ['--d-model', '48', '--layers', '2', '--d-head', '8', '--attn-top-k', '4',
    '--pathways', 'ssm,attn'], ['--format', 'atome01', '--calib', 'CALIB'], 5, 6],
  ['r5-d32-attn', ['--d-model', '32', '--layers', '3', '--d-head', '8', '--attn-top-k', '2', '--pathways', 'attn'],
    ['--format', 'atome02'], 1, 8],
  ['r6-d40-conv-ssm-attn-k3', ['--d-model', '40', '--layers', '2', '--d-head', '8', '--kernel', '3', '--attn-top-k', '4'],
    ['--format', 'atome01', '--window', '40'], 'default', 9],
];

const LONG = 'Once upon a time, there was a little girl named Lily. She loved to play outside — ' +
  'in the sun, with her dog.';
const PROMPTS = [
  ['ascii', enc.encode('Once upon a time')],
  ['utf8', enc.encode('Él vio un pingüino ☃ 日本 🐧.')],
  ['empty', new Uint8Array(0)],
  ['long', enc.encode(LONG)],
  ['bytes', Uint8Array.from([0x00, 0x0a, 0x0d, 0xff, 0x80, 0x7f, 0x20, 0x2c, 0x00, 0xc3])],
];

// Sampling settings as the decimal text every front end parses (null = default).
const GREEDY = { name: 'greedy' };
const SAMPLED = [
  { name: 'T0.8', t: '0.8' },
  { name: 'T1,K40', t: '1', k: '40' },
  { name: 'T0.9,P0.9', t: '0.9', p: '0.9' },
  { name: 'T1.3,K20,P0.75', t: '1.3', k: '20', p: '0.75' },
  { name: 'T0.5,K2', t: '0.5', k: '2' },
  { name: 'T2,P0', t: '2', p: '0' },
  { name: 'T100,K3', t: '100', k: '3' },
  { name: 'T0.000015', t: '0.000015' },
];
const SEEDS = [1, 7, 4294967295, 0, 123456789];
const NS = [24, 32, 40, 48, 64];

let tmp, atome;
const models = [];    // { name, file, bytes, packed (wasm PackedModel), elf: { m3, m0 }, rot, extraWindow }
let m0Arena = 0;
const cases = [];
const results = { fourWay: 0, m0Refused: 0, ms: 0 };

function ok(r, what) {
  assert.equal(r.code, 0, `${what}: exit ${r.code}: ${r.stderr}`);
  return r;
}

// A pool: at most `limit` of the scheduled async jobs run at once.
function pool(limit) {
  let active = 0;
  const queue = [];
  const next = () => {
    if (active >= limit || queue.length === 0) return;
    active++;
    const { fn, resolve, reject } = queue.shift();
    fn().then(resolve, reject).finally(() => { active--; next(); });
  };
  return (fn) => new Promise((resolve, reject) => { queue.push({ fn, resolve, reject }); next(); });
}
const schedule = pool(2);

async function addModel(name, ckptArgs, exportArgs, rot, extraWindow) {
  const file = path.join(tmp, `${name}.atome`);
  let ckpt = ckptArgs;
  if (Array.isArray(ckptArgs)) {
    ckpt = path.join(tmp, `${name}.ckpt`);
    await ok(await run(nativeCli(), ['init', '--config', 'atome-60k', '--out', ckpt, ...ckptArgs]), `atome init ${name}`);
  }
  const ex = exportArgs.map((a) => (a === 'CALIB' ? path.join(tmp, 'calib.txt') : a));
  await ok(await run(nativeCli(), ['export', '--quiet', '--model', ckpt, ...ex, '--out', file]), `atome export ${name}`);
  const bytes = readFileSync(file);
  const elf = {};
  for (const [k, board] of Object.entries(BOARDS)) {
    elf[k] = path.join(tmp, `${name}-${board}.elf`);
    // --encoding keep: each encoding runs on the boards as exported (the default would give them ATOME01)
    const r = await ok(await run(nativeCli(), ['firmware', '--model', file, '--board', board, '--encoding', 'keep', '--out', elf[k]],
      { env: { ATOME_MCU_BUILD: MCU } }), `atome firmware ${name} ${board}`);
    const j = JSON.parse(r.stdout.toString());
    assert.equal(j.template, template(board));
    assert.equal(j.model_bytes, bytes.length);
    if (k === 'm0') m0Arena = j.arena_bytes;
  }
  models.push({ name, file, bytes, packed: atome.loadModel(bytes), elf, rot, extraWindow });
}

before(async () => {
  for (const b of Object.values(BOARDS))
    assert.ok(existsSync(template(b)), `missing ${template(b)}: cmake --preset mcu && cmake --build --preset mcu`);
  const q = await run('qemu-system-arm', ['--version']);
  assert.equal(q.code, 0, 'qemu-system-arm is not installed (tools/setup installs it)');
  nativeCli();
  atome = await load('simd');
  tmp = mkdtempSync(path.join(tmpdir(), 'atome-parity-'));
  writeFileSync(path.join(tmp, 'calib.txt'), LONG.repeat(40));

  const ckpt60k = path.join(repo, 'models/atome-60k.ckpt');
  await addModel('atome-60k-ATOME01', ckpt60k, ['--format', 'atome01'], 0, null);
  await addModel('atome-60k-ATOME02', ckpt60k, ['--format', 'atome02'], 0, null);
  for (const [i, [name, shape, ex, extra, seed]] of RANDOM.entries())
    await addModel(name, ['--seed', String(seed), ...shape], ex, i + 1, extra);
  assert.ok(m0Arena > 0);

  // The cases: every model x prompt x window {32, 64} x {greedy + two sampled
  // settings}, plus each random model's extra window x prompt x one setting.
  for (const m of models) {
    PROMPTS.forEach(([pname, prompt], pi) => {
      const windows = [32, 64, ...(m.extraWindow !== null ? [m.extraWindow] : [])];
      windows.forEach((window, wi) => {
        const c = m.rot + pi * 3 + wi * 7;
        const picks = wi < 2
          ? [[GREEDY, 1], [SAMPLED[c % 8], SEEDS[c % 5]], [SAMPLED[(c + 3) % 8], SEEDS[(c + 2) % 5]]]
          : [[SAMPLED[(c + 5) % 8], SEEDS[(c + 4) % 5]]];
        picks.forEach(([s, seed], k) => cases.push({ model: m, pname, prompt, window, s, seed, n: NS[(c + k) % 5] }));
      });
    });
  }
});

after(() => {
  for (const m of models) m.packed.free();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// Flags of `atome generate` for a case (prompt excluded); defaults omitted.
function flags(cs) {
  const f = ['--n', String(cs.n)];
  if (cs.s.t !== undefined) f.push('--temperature', cs.s.t);
  if (cs.s.k !== undefined) f.push('--top-k', cs.s.k);
  if (cs.s.p !== undefined) f.push('--top-p', cs.s.p);
  if (cs.seed !== 1) f.push('--seed', String(cs.seed));
  if (cs.window !== 'default') f.push('--window', String(cs.window));
  return f;
}

// qemu-system-arm as tools/mcu/run-qemu runs it (docs/mcu.md), without the
// wrapper's shell processes: the semihosting command line is "atome ARG...",
// commas doubled for QEMU's option parser; killed after 60 s.
function runQemu(board, elf, args) {
  const semi = ['enable=on', 'target=native', 'arg=atome', ...args.map((a) => `arg=${a.replace(/,/g, ',,')}`)].join(',');
  return run('qemu-system-arm', ['-M', board, '-display', 'none', '-monitor', 'none', '-serial', 'none',
    '-semihosting-config', semi, '-kernel', elf], { timeout: 60000 });
}

const describe = (cs, i) =>
  `case ${i} [${cs.model.name} prompt=${cs.pname} window=${cs.window} ${cs.s.name} seed=${cs.seed} n=${cs.n}]`;
const reproduce = (cs) =>
  `atome generate --model ${path.basename(cs.model.file)} --prompt-hex '${hex(cs.prompt)}' ${flags(cs).join(' ')}`;

function compare(what, got, want) {
  const at = firstDiff(got, want);
  if (at < 0) return null;
  const b = (x) => (at < x.length ? `0x${x[at].toString(16).padStart(2, '0')}` : 'end');
  return `${what} differs from native at byte ${at} (${what} ${b(got)}, native ${b(want)}; lengths ${got.length}/${want.length})`;
}

async function runCase(cs, i) {
  const problems = [];
  const h = hex(cs.prompt);
  // Natively the ASCII/UTF-8 prompts alternate between --prompt TEXT and
  // --prompt-hex; the firmware always takes hex (docs/mcu.md).
  const text = (cs.pname === 'ascii' || cs.pname === 'utf8' || cs.pname === 'long') && i % 2 === 0;
  const nativeArgs = ['generate', '--model', cs.model.file,
    ...(text ? ['--prompt', Buffer.from(cs.prompt).toString('utf8')] : ['--prompt-hex', h]), ...flags(cs)];
  const fwArgs = [h ? '--prompt-hex' : '--prompt-hex=', ...(h ? [h] : []), ...flags(cs)];

  let wasm, need;
  try {
    wasm = cs.model.packed.generateBytes(cs.prompt, {
      n: cs.n, temperature: cs.s.t ?? null, topK: cs.s.k ?? null, topP: cs.s.p ?? null, seed: cs.seed,
      window: cs.window === 'default' ? 0 : cs.window, chunk: 16,
    });
    need = cs.model.packed.arenaBytes;
  } catch (e) {
    problems.push(`wasm threw: ${e.message}`);
  }
  // The M0's tail holds the command line "atome ARG..." and its NUL while
  // the prompt is fed, at least MIN_TAIL bytes (mcu/main.c run()).
  const cmdline = ['atome', ...fwArgs].join(' ').length + 1;
  const m0Fits = need !== undefined && need + Math.max(cmdline, MIN_TAIL) <= m0Arena;

  const qemu = (k) => schedule(() => runQemu(BOARDS[k], cs.model.elf[k], fwArgs));
  const [nat, m3, m0] = await Promise.all([schedule(() => run(nativeCli(), nativeArgs)), qemu('m3'), qemu('m0')]);

  if (nat.code !== 0 || nat.stderr !== '' || nat.stdout.length !== cs.n)
    problems.push(`native: exit ${nat.code}, ${nat.stdout.length} bytes, stderr '${nat.stderr.trim()}'`);
  if (wasm) { const d = compare('wasm', wasm, nat.stdout); if (d) problems.push(d); }
  if (m3.code !== 0 || m3.stderr !== '') problems.push(`M3: exit ${m3.code}, stderr '${m3.stderr.trim()}'`);
  else { const d = compare('M3', m3.stdout, nat.stdout); if (d) problems.push(d); }
  if (m0Fits) {
    if (m0.code !== 0 || m0.stderr !== '') problems.push(`M0: exit ${m0.code}, stderr '${m0.stderr.trim()}'`);
    else { const d = compare('M0', m0.stdout, nat.stdout); if (d) problems.push(d); }
  } else if (need !== undefined) {
    // predicted not to fit: refused with exit 5, nothing on stdout
    if (m0.code !== 5 || m0.stdout.length !== 0 || !/needs \d+ bytes of arena/.test(m0.stderr))
      problems.push(`M0: predicted not to fit (engine ${need} + tail ${Math.max(cmdline, MIN_TAIL)} > ${m0Arena}) ` +
        `but exit ${m0.code}, ${m0.stdout.length} bytes, stderr '${m0.stderr.trim()}'`);
  }
  return { problems, out: nat.stdout, m0Fits };
}

test('parity: native = wasm = QEMU Cortex-M3 = QEMU Cortex-M0, byte for byte', async (t) => {
  const keys = new Set(cases.map((cs) =>
    [cs.model.name, hex(cs.prompt), cs.s.name, cs.s === GREEDY ? '' : cs.seed, cs.window, cs.n].join('|')));
  assert.equal(keys.size, cases.length, 'every case is distinct');
  assert.ok(cases.length >= 200, `${cases.length} cases, at least 200 wanted`);

  const t0 = Date.now();
  const outcomes = await Promise.all(cases.map((cs, i) => runCase(cs, i)));
  results.ms = Date.now() - t0;
  const failures = [];
  outcomes.forEach((o, i) => {
    if (o.problems.length)
      failures.push(`${describe(cases[i], i)}\n    ${o.problems.join('\n    ')}\n    reproduce: ${reproduce(cases[i])}`);
    if (o.m0Fits) results.fourWay++; else results.m0Refused++;
  });

  // ATOME01 and ATOME02 of one model hold the same trits: same bytes.
  const byKey = new Map();
  outcomes.forEach((o, i) => {
    const cs = cases[i];
    if (!cs.model.name.startsWith('atome-60k-')) return;
    const key = [cs.pname, cs.s.name, cs.seed, cs.window, cs.n].join('|');
    if (!byKey.has(key)) { byKey.set(key, [i, o.out]); return; }
    const [j, other] = byKey.get(key);
    const at = firstDiff(o.out, other);
    if (at >= 0) failures.push(`${describe(cs, i)} vs ${describe(cases[j], j)}: ATOME01 and ATOME02 differ at byte ${at}`);
  });

  t.diagnostic(`${cases.length} cases (${results.fourWay} on all four targets, ${results.m0Refused} refused by the ` +
    `M0 for lack of RAM, as predicted) over ${models.length} models in ${(results.ms / 1000).toFixed(1)} s`);
  if (failures.length)
    assert.fail(`${failures.length} of ${cases.length} cases differ:\n${failures.slice(0, 25).join('\n')}` +
      (failures.length > 25 ? `\n... and ${failures.length - 25} more` : ''));
  assert.ok(results.fourWay >= 200, `only ${results.fourWay} cases ran on all four targets`);
  assert.ok(results.m0Refused > 0, 'the M0 refusal path (window 64 for atome-60k) was not exercised');
});

// The shipped web model (the largest models/*.atome not named atome-60k): it
// does not fit the micro:bit, so native = wasm = QEMU Cortex-M3, on fewer
// and shorter cases (the M3 runs it ~15x slower per byte than atome-60k).
test('parity, web model: native = wasm = QEMU Cortex-M3, byte for byte', async (t) => {
  const dir = path.join(repo, 'models');
  const web = readdirSync(dir).filter((f) => f.endsWith('.atome') && !f.includes('atome-60k'))
    .sort((a, b) => statSync(path.join(dir, b)).size - statSync(path.join(dir, a)).size)[0];
  assert.ok(web, 'no web model in models/ (issue #9 ships one)');
  const file = path.join(dir, web);
  const elf = path.join(tmp, `web-${BOARDS.m3}.elf`);
  await ok(await run(nativeCli(), ['firmware', '--model', file, '--board', BOARDS.m3, '--encoding', 'keep', '--out', elf],
    { env: { ATOME_MCU_BUILD: MCU } }), `atome firmware ${web}`);
  const m0 = await run(nativeCli(), ['firmware', '--model', file, '--board', BOARDS.m0, '--out', path.join(tmp, 'web-m0.elf')],
    { env: { ATOME_MCU_BUILD: MCU } });
  assert.equal(m0.code, 1, 'the web model is refused for the micro:bit');
  assert.match(m0.stderr, /too big for the microbit model slot/);
  const packed = atome.loadModel(readFileSync(file));
  const settings = [[GREEDY, 1, 'default'], [SAMPLED[0], 7, 32], [SAMPLED[3], 4294967295, 'default'], [SAMPLED[1], 0, 64]];
  const webCases = [];
  PROMPTS.slice(0, 4).forEach(([pname, prompt], pi) => settings.forEach(([st, seed, window], si) => {
    if ((pi + si) % 2 === 0) webCases.push({ pname, prompt, s: st, seed, window, n: 24 + 8 * ((pi + si) % 3) });
  }));
  const failures = [];
  try {
    await Promise.all(webCases.map(async (cs) => {
      const h = hex(cs.prompt);
      const fw = [h ? '--prompt-hex' : '--prompt-hex=', ...(h ? [h] : []), ...flags(cs)];
      const [nat, m3] = await Promise.all([schedule(() => run(nativeCli(), ['generate', '--model', file, '--prompt-hex', h, ...flags(cs)])),
        schedule(() => runQemu(BOARDS.m3, elf, fw))]);
      const wasm = packed.generateBytes(cs.prompt, { n: cs.n, temperature: cs.s.t ?? null, topK: cs.s.k ?? null,
        topP: cs.s.p ?? null, seed: cs.seed, window: cs.window === 'default' ? 0 : cs.window });
      const what = `[${web} prompt=${cs.pname} window=${cs.window} ${cs.s.name} seed=${cs.seed} n=${cs.n}]`;
      if (nat.code !== 0 || nat.stdout.length !== cs.n) { failures.push(`${what} native: exit ${nat.code} ${nat.stderr}`); return; }
      const dw = compare('wasm', wasm, nat.stdout);
      if (dw) failures.push(`${what} ${dw}`);
      if (m3.code !== 0) failures.push(`${what} M3: exit ${m3.code}, stderr '${m3.stderr.trim()}'`);
      else { const d = compare('M3', m3.stdout, nat.stdout); if (d) failures.push(`${what} ${d}`); }
    }));
  } finally { packed.free(); }
  t.diagnostic(`${webCases.length} cases of ${web} on native, wasm and the M3`);
  assert.ok(webCases.length >= 8);
  assert.deepEqual(failures, []);
});

test('firmware from `atome firmware`: equals elfpatch, and runs with the documented qemu-system-arm command line', async () => {
  const m = models.find((x) => x.name === 'atome-60k-ATOME02');
  const r1 = models.find((x) => x.name.startsWith('r1-'));
  const elfpatch = path.join(nativeDir, 'elfpatch');
  assert.ok(existsSync(elfpatch), `missing ${elfpatch}: cmake --build --preset native`);
  for (const [k, board] of Object.entries(BOARDS)) {
    const out = path.join(tmp, `elfpatch-${board}.elf`);
    await ok(await run(elfpatch, ['--template', template(board), '--board', board, '--model', m.file, '--out', out]), 'elfpatch');
    assert.ok(readFileSync(out).equals(readFileSync(m.elf[k])), `${board}: atome firmware != elfpatch`);
  }
  // The command: -nographic, arg=--prompt,arg=TEXT (no hex), stdin closed.
  const direct = (elf, board, args) => {
    const semi = ['enable=on', 'target=native', 'arg=atome', ...args.map((a) => `arg=${a}`)].join(',');
    return spawnClosed('qemu-system-arm', ['-M', board, '-nographic', '-semihosting-config', semi, '-kernel', elf]);
  };
  const runs = [
    [m, 'm3', ['--prompt', 'Once', '--n', '48', '--window', '64']],
    [m, 'm0', ['--prompt', 'Once', '--n', '48', '--window', '32']],
    [r1, 'm3', ['--prompt', 'Lily', '--n', '40', '--temperature', '0.7', '--top-k', '12', '--top-p', '0.95', '--seed', '99']],
    [r1, 'm0', ['--prompt', 'Lily', '--n', '40', '--temperature', '0.7', '--top-k', '12', '--top-p', '0.95', '--seed', '99']],
  ];
  for (const [model, k, args] of runs) {
    const q = await direct(model.elf[k], BOARDS[k], args);
    const nat = await ok(await run(nativeCli(), ['generate', '--model', model.file, ...args]), 'native');
    assert.equal(q.code, 0, `${model.name} ${BOARDS[k]}: exit ${q.code} ${q.stderr}`);
    const at = firstDiff(q.stdout, nat.stdout);
    assert.equal(at, -1, `${model.name} ${BOARDS[k]} ${args.join(' ')}: first difference at byte ${at}`);
  }
});

// A program with stdin closed (-nographic would otherwise read the terminal);
// resolves { code, stdout (Buffer), stderr }, killed after 60 s.
function spawnClosed(file, args) {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [], err = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => err.push(d));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString() });
    });
  });
}
