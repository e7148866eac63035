// tests/node/wasm-board.test.mjs — the board files made inside atome.wasm
// (wasm/atome_wasm_fw.c over fwimage/fwimage.c: what the page downloads)
// against the native CLI, byte for byte: `atome firmware` for every board,
// the standalone images in each format (the pico's .uf2 among them),
// `atome header`, `atome convert`, the fit report (slot, RAM, largest
// window), the refusals (another board's template, a model too big for the
// slot, a damaged model), and "why this byte" (generateExplained) against
// `atome generate --router-json`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, load, native } from './artifacts.mjs';

const MCU = process.env.ATOME_MCU_BUILD ?? path.join(repo, 'build/mcu');
const template = (b) => readFileSync(path.join(MCU, 'mcu', `atome-fw-${b}.elf`));
let atome, tmp, BOARDS;   // BOARDS: every row of the table of boards (atome boards --json)
const models = [];   // { name, file, bytes }

before(async () => {
  atome = await load('simd');
  const t = await native(['boards', '--json']);
  assert.equal(t.code, 0, t.stderr);
  BOARDS = JSON.parse(t.stdout.toString()).boards.map((b) => b.name);
  assert.ok(BOARDS.length >= 4 && BOARDS.includes('microbit-v2'), `the table's boards: ${BOARDS}`);
  tmp = mkdtempSync(path.join(tmpdir(), 'atome-board-'));
  const shipped = path.join(repo, 'models/atome-60k.atome');
  models.push({ name: 'atome-60k.atome', file: shipped });
  const a1 = path.join(tmp, 'shipped-01.atome');
  assert.equal((await native(['convert', '--model', shipped, '--format', 'atome01', '--out', a1])).code, 0);
  models.push({ name: 'shipped-01.atome', file: a1 });
  // a different shape: atome-tiny with two pathways, random weights
  const ck = path.join(tmp, 'tiny.ckpt'), ta = path.join(tmp, 'tiny-conv-attn.atome');
  assert.equal((await native(['init', '--config', 'atome-tiny', '--seed', '5', '--pathways', 'conv,attn', '--out', ck])).code, 0);
  assert.equal((await native(['export', '--model', ck, '--format', 'atome02', '--out', ta, '--quiet'])).code, 0);
  models.push({ name: 'tiny-conv-attn.atome', file: ta });
  for (const m of models) m.bytes = readFileSync(m.file);
});
after(() => rmSync(tmp, { recursive: true, force: true }));

test('firmware images, headers and conversions equal the CLI\'s', async () => {
  for (const m of models) {
    for (const b of BOARDS) {
      const out = path.join(tmp, `n-${b}.elf`);
      const r = await native(['firmware', '--model', m.file, '--board', b, '--out', out]);
      assert.equal(r.code, 0, r.stderr);
      const cli = JSON.parse(r.stdout.toString());
      const { image, info } = atome.firmware(template(b), b, m.bytes);
      assert.ok(Buffer.from(image).equals(readFileSync(out)), `${m.name} on ${b}: image differs from atome firmware`);
      for (const k of ['board', 'model_bytes', 'capacity', 'container_crc32', 'encoding', 'arena_bytes', 'window', 'engine_bytes', 'max_window'])
        assert.equal(info[k], cli[k], `${m.name} on ${b}: ${k}`);
      const fit = atome.firmwareFit(template(b), m.bytes);
      assert.equal(fit.max_window, cli.max_window);
      assert.equal(fit.fits_flash, true);
      // RAM at a window: engine arena + the firmware's 256-byte tail
      const p = atome.loadModel(m.bytes);
      assert.equal(atome.firmwareRam(m.bytes, 32), p.arenaFor(32) + 256);
      p.free();
    }
    const hn = path.join(tmp, 'n.h');
    const hr = await native(['header', '--model', m.file, '--out', hn]);
    assert.equal(hr.code, 0, hr.stderr);
    const h = atome.header(m.bytes, { source: path.basename(m.file), file: 'n.h' });   // the comment names the file written
    assert.ok(Buffer.from(h.text).equals(readFileSync(hn)), `${m.name}: header differs from atome header`);
    const hn2 = path.join(tmp, 'n2.h');
    assert.equal((await native(['header', '--model', m.file, '--out', hn2, '--name', 'story_model'])).code, 0);
    assert.ok(Buffer.from(atome.header(m.bytes, { source: path.basename(m.file), name: 'story_model', file: 'n2.h' }).text).equals(readFileSync(hn2)));
    for (const [enc, fmt] of [[1, 'atome01'], [2, 'atome02']]) {
      const cn = path.join(tmp, `c.${fmt}`);
      assert.equal((await native(['convert', '--model', m.file, '--format', fmt, '--out', cn])).code, 0);
      assert.ok(Buffer.from(atome.convert(m.bytes, enc)).equals(readFileSync(cn)), `${m.name}: convert to ${fmt}`);
    }
  }
});

test('standalone images equal atome firmware\'s in every format; uf2 is the pico\'s only', async () => {
  const m = models[0];
  const s = { prompt: 'Once upon a time', n: 100, temperature: '0.8', topK: '40', topP: '0.95', seed: '3' };
  const flags = ['--prompt', s.prompt, '--n', '100', '--temperature', '0.8', '--top-k', '40', '--top-p', '0.95', '--seed', '3'];
  // the CLI's micro:bit v1 .hex is --board microbit-v1 (--board microbit --format hex is the Universal Hex, below)
  const cliBoard = (b, f) => (b === 'microbit' && f === 'hex' ? 'microbit-v1' : b);
  for (const [b, formats] of [['pico', ['uf2', 'bin', 'hex', 'elf']], ['microbit', ['hex']], ['microbit-v2', ['hex', 'bin']], ['mps2-an385', ['bin']]]) {
    for (const f of formats) {
      const out = path.join(tmp, `s-${b}.${f}`);
      const r = await native(['firmware', '--model', m.file, '--board', cliBoard(b, f), '--format', f, '--out', out, ...flags]);
      assert.equal(r.code, 0, r.stderr);
      const cli = JSON.parse(r.stdout.toString());
      const { bytes, info } = atome.firmwareStandalone(template(b), b, m.bytes, s, f);
      assert.ok(Buffer.from(bytes).equals(readFileSync(out)), `${b} .${f}: differs from atome firmware --format ${f}`);
      const keys = ['model_bytes', 'capacity', 'window', 'max_window', 'format', 'expect_hex', 'encoding_choice'];
      assert.equal(info.board, cli.board === 'microbit-v1' ? 'microbit' : cli.board);
      if (f !== 'elf') keys.push('flash_base', 'flash_bytes');
      if (f === 'uf2') keys.push('uf2_blocks', 'uf2_family');
      for (const k of keys) assert.equal(info[k], cli[k], `${b} .${f}: ${k}`);
      assert.deepEqual(info.settings, cli.settings, `${b} .${f}: settings`);
      if (f === 'uf2') assert.equal(bytes.length, 512 * cli.uf2_blocks);
    }
  }
  // uf2 for a board whose drive takes no UF2, and an unknown format: refused as usage errors, in the CLI's words
  for (const b of ['microbit', 'mps2-an385']) {
    const r = await native(['firmware', '--model', m.file, '--board', b, '--format', 'uf2', '--out', path.join(tmp, 'no.uf2'), ...flags]);
    assert.equal(r.code, 2);
    assert.throws(() => atome.firmwareStandalone(template(b), b, m.bytes, s, 'uf2'),
      (e) => e.usage && e.message === r.stderr.trim().replace(/^atome: firmware: /, ''));
  }
  assert.throws(() => atome.firmwareStandalone(template('pico'), 'pico', m.bytes, s, 'ihex'),
    (e) => e.usage && /--format must be elf, hex, bin or uf2 \(got 'ihex'\)/.test(e.message));
});

test('the same refusals as the CLI', async () => {
  const good = models[0].bytes;
  assert.throws(() => atome.firmware(template('microbit'), 'mps2-an385', good),
    (e) => e.usage && /built for board 'microbit', not 'mps2-an385'/.test(e.message));
  const bad = Buffer.from(good);
  bad[100] ^= 1;
  for (const [bytes, why] of [[good.subarray(0, 500), /truncated/], [bad, /CRC/i], [Buffer.from('hello'), /truncated|magic/]]) {
    const f = path.join(tmp, 'bad.atome');
    writeFileSync(f, bytes);
    const r = await native(['firmware', '--model', f, '--board', 'microbit', '--out', path.join(tmp, 'x.elf')]);
    assert.equal(r.code, 1);
    let msg = null;
    try { atome.firmware(template('microbit'), 'microbit', bytes); } catch (e) { msg = e.message; }
    assert.match(msg, why);
    // the CLI says "firmware: 'FILE': <reason>"; the module "'model': <reason>"
    assert.equal(msg.replace(/^'model': /, ''), r.stderr.trim().replace(/^atome: firmware: '[^']*': /, ''));
    assert.throws(() => atome.header(bytes, { source: 'bad.atome' }), why);
  }
  // too big for the micro:bit slot: a random atome-944k
  const ck = path.join(tmp, 'big.ckpt'), big = path.join(tmp, 'big.atome');
  assert.equal((await native(['init', '--config', 'atome-944k', '--seed', '2', '--out', ck])).code, 0);
  assert.equal((await native(['export', '--model', ck, '--format', 'atome02', '--out', big, '--quiet'])).code, 0);
  const bb = readFileSync(big);
  const r = await native(['firmware', '--model', big, '--board', 'microbit', '--out', path.join(tmp, 'y.elf')]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /too big for the microbit model slot of 65504 bytes/);
  assert.throws(() => atome.firmware(template('microbit'), 'microbit', bb),
    (e) => e.fit === true && !e.usage && /too big for the microbit model slot of 65504 bytes/.test(e.message), 'a fit refusal says so (error.fit)');
  // a template that is not one is not a fit refusal
  assert.throws(() => atome.firmwareStandalone(Buffer.from('not an ELF'), 'microbit', good, { prompt: 'Once', n: 10 }, 'hex'), (e) => e.fit === false);
  const fit = atome.firmwareFit(template('microbit'), bb);
  assert.equal(fit.fits_flash, false);
  assert.equal(fit.max_window, 0);
  const ok = atome.firmware(template('mps2-an385'), 'mps2-an385', bb);
  const out = path.join(tmp, 'big-m3.elf');
  assert.equal((await native(['firmware', '--model', big, '--board', 'mps2-an385', '--out', out])).code, 0);
  assert.ok(Buffer.from(ok.image).equals(readFileSync(out)));
});

test('why this byte: generateExplained gives the bytes of generate and the lines of --router-json', async () => {
  const cases = [
    { prompt: 'Once upon a time', n: 120, temperature: '0.8', topK: 40, seed: 7 },
    { prompt: '', n: 90, temperature: '1.1', topP: '0.9', seed: 3, window: 16 },
    { prompt: 'Ben', n: 70 },
  ];
  for (const m of [models[0], models[2]]) {
    const p = atome.loadModel(m.bytes);
    try {
      for (const c of cases) {
        const args = ['generate', '--model', m.file, '--prompt', c.prompt, '--n', String(c.n)];
        if (c.temperature) args.push('--temperature', c.temperature);
        if (c.topK) args.push('--top-k', String(c.topK));
        if (c.topP) args.push('--top-p', c.topP);
        if (c.seed) args.push('--seed', String(c.seed));
        if (c.window) args.push('--window', String(c.window));
        const jf = path.join(tmp, 'r.jsonl');
        const r = await native([...args, '--router-json', jf]);
        assert.equal(r.code, 0, r.stderr);
        const bytes = [], lines = [];
        for (const piece of p.generateExplained(c.prompt, { ...c, chunk: 13 })) { bytes.push(...piece.bytes); lines.push(...piece.lines); }
        assert.ok(Buffer.from(bytes).equals(r.stdout), `${m.name} ${JSON.stringify(c)}: bytes`);
        assert.equal(lines.join('\n') + '\n', readFileSync(jf, 'utf8'), `${m.name} ${JSON.stringify(c)}: lines`);
        const plain = p.generateBytes(c.prompt, c);
        assert.ok(Buffer.from(plain).equals(r.stdout), 'generate without explain');
      }
    } finally { p.free(); }
  }
});

test('the table of boards and the version: the module says what the CLI says, the templates what the table says', async () => {
  const r = await native(['boards', '--json']);
  assert.equal(r.code, 0, r.stderr);
  const table = JSON.parse(r.stdout.toString());
  assert.deepEqual(atome.boards(), table, 'boards() = atome boards --json');
  // the micro:bit v2 is a row; `--board microbit --format hex` joins it to the v1's (hex_with); microbit-v1 is the v1's alias
  const mb = table.boards.find((b) => b.name === 'microbit'), v2row = table.boards.find((b) => b.name === 'microbit-v2');
  assert.deepEqual([mb.hex_with, mb.alias, mb.machine, mb.card_label], ['microbit-v2', 'microbit-v1', 'microbit', 'BBC micro:bit (v1 and v2)']);
  assert.deepEqual([v2row.hex_with, v2row.alias, v2row.machine, v2row.clock_hz], [null, null, 'mps2-an386', 64000000]);
  const v = await native(['--version']);
  assert.equal(v.code, 0, v.stderr);
  assert.equal(`atome ${atome.version()}\n`, v.stdout.toString(), 'version() = atome --version');
  assert.match(atome.version(), /^\d+\.\d+\.\d+ \(commit ([0-9a-f]{12}(, modified)?|unknown)\)$/);
  // each board's template: its model slot and flash base as its row says
  for (const b of table.boards) {
    const fit = atome.firmwareFit(template(b.name), models[0].bytes);
    assert.equal(fit.board, b.name);
    assert.equal(fit.capacity + 32, b.slot_bytes, `${b.name}: slot`);
    const out = path.join(tmp, `fb-${b.name}.bin`);
    const fr = await native(['firmware', '--model', models[0].file, '--board', b.name, '--format', 'bin', '--out', out,
      '--prompt', 'Once', '--n', '8']);
    assert.equal(fr.code, 0, fr.stderr);
    const j = JSON.parse(fr.stdout.toString());
    assert.equal(j.flash_base, b.flash_base, `${b.name}: flash base`);
    assert.ok(j.flash_bytes <= b.flash_bytes, `${b.name}: the image fits its flash`);
    assert.ok(j.arena_bytes < b.ram_bytes, `${b.name}: the arena fits its RAM`);
    assert.equal(!!j.estimate_insns_per_byte, true, `${b.name}: a cost model row`);
    assert.equal(j.clock_hz, b.clock_hz, `${b.name}: clock`);
  }
});

test('the page\'s micro:bit file: the Universal Hex of the v1 and v2 files, equal to the CLI\'s and to createUniversalHex', { timeout: 300000 }, async () => {
  const { createUniversalHex, microbitBoardId } = await import('@microbit/microbit-universal-hex');
  const s = { prompt: 'Once upon a time', n: 60, temperature: '0.8', topK: '40', seed: '3' };
  const flags = ['--prompt', s.prompt, '--n', '60', '--temperature', '0.8', '--top-k', '40', '--seed', '3'];
  // the table's Universal Hex board IDs are the Foundation's
  const rows = atome.boards().boards;
  assert.equal(Number(rows.find((b) => b.name === 'microbit').uhex_board_id), microbitBoardId.V1);
  assert.equal(Number(rows.find((b) => b.name === 'microbit-v2').uhex_board_id), microbitBoardId.V2);
  for (const [file, both] of [[path.join(repo, 'models/atome-60k.atome'), true], [path.join(repo, 'models/atome-944k.atome'), false]]) {
    const bytes = readFileSync(file);
    const v2 = atome.firmwareStandalone(template('microbit-v2'), 'microbit-v2', bytes, s, 'hex').bytes;
    let v1 = null;
    try { v1 = atome.firmwareStandalone(template('microbit'), 'microbit', bytes, s, 'hex').bytes; } catch (e) { assert.ok(!both, e.message); }
    assert.equal(v1 !== null, both);
    const page = atome.universalHex(v1, v2);
    const out = path.join(tmp, 'u.hex');
    const r = await native(['firmware', '--model', file, '--board', 'microbit', '--format', 'hex', '--out', out, ...flags]);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Buffer.from(page).equals(readFileSync(out)), `${path.basename(file)}: the page's Universal Hex differs from the CLI's`);
    const dec = (b) => Buffer.from(b).toString('latin1');
    const parts = [...(v1 ? [{ hex: dec(v1), boardId: microbitBoardId.V1 }] : []), { hex: dec(v2), boardId: microbitBoardId.V2 }];
    assert.ok(dec(page) === createUniversalHex(parts), `${path.basename(file)}: differs from createUniversalHex`);
  }
});
