// tests/node/uhex.test.mjs — the micro:bit Universal Hex writer in C
// (fwimage/uhex.c, atm_fw_universal_hex; command line `elfpatch
// --universal-hex`) against the micro:bit Foundation's own library,
// @microbit/microbit-universal-hex (pinned in package.json): byte for byte
// equal to its createUniversalHex of the same single-board files, in both
// layouts ("sections", the default, and 512-character "blocks"), and its
// separateUniversalHex gives back each board's image. Cases: Intel HEX
// files of several sizes (one record; across 64 KiB boundaries; 16-, 20- and
// 32-byte records; CRLF and LF), v1 only, v2 only, v2 first. The files the
// CLI and the page write are compared in mcu-microbit-v2.test.mjs. Needs the
// native build (build/native/elfpatch).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createUniversalHex, separateUniversalHex, microbitBoardId } from '@microbit/microbit-universal-hex';
import { nativeDir, run } from './artifacts.mjs';
import { ihex, hexImage } from './ihex.mjs';

const ELFPATCH = path.join(nativeDir, 'elfpatch');
let tmp;
before(() => { tmp = mkdtempSync(path.join(tmpdir(), 'atome-uhex-')); });
after(() => rmSync(tmp, { recursive: true, force: true }));

let seed = 12345;
const bytes = (n) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; b[i] = seed >>> 24; }
  return b;
};

// The C writer through elfpatch: parts [{ file, board: 'v1'|'v2' }] in order.
async function cWriter(parts, blocks) {
  const out = path.join(tmp, `u-${Math.random().toString(36).slice(2)}.hex`);
  const args = ['--universal-hex', ...(blocks ? ['--blocks'] : [])];
  for (const p of parts) args.push(`--${p.board}`, p.file);
  const r = await run(ELFPATCH, [...args, '--out', out]);
  assert.equal(r.code, 0, r.stderr);
  return readFileSync(out, 'latin1');
}

const CASES = [
  { name: 'firmware-sized v1 and v2', v1: [40000, 0, {}], v2: [120000, 0, { eol: '\n' }] },
  { name: 'one record each', v1: [16, 0, {}], v2: [16, 0, {}] },
  { name: '32-byte records across 64 KiB', v1: [70000, 0xF000, { rec: 32 }], v2: [1000, 0x1000, { rec: 32 }] },
  { name: '20-byte records, odd sizes', v1: [999, 0, { rec: 20 }], v2: [12345, 0x2000, { rec: 20 }] },
];

for (const c of CASES) {
  for (const blocks of [false, true]) {
    test(`Universal Hex equals createUniversalHex: ${c.name}, ${blocks ? 'blocks' : 'sections'}`, async () => {
      const h1 = ihex(bytes(c.v1[0]), c.v1[1], c.v1[2]), h2 = ihex(bytes(c.v2[0]), c.v2[1], c.v2[2]);
      const f1 = path.join(tmp, 'v1.hex'), f2 = path.join(tmp, 'v2.hex');
      writeFileSync(f1, h1);
      writeFileSync(f2, h2);
      const got = await cWriter([{ file: f1, board: 'v1' }, { file: f2, board: 'v2' }], blocks);
      const want = createUniversalHex([{ hex: h1, boardId: microbitBoardId.V1 }, { hex: h2, boardId: microbitBoardId.V2 }], blocks);
      assert.equal(got.length, want.length);
      assert.ok(got === want, 'the C writer differs from createUniversalHex');
      const parts = separateUniversalHex(got);
      assert.deepEqual(parts.map((p) => p.boardId), [0x9900, 0x9903]);
      assert.deepEqual(hexImage(parts[0].hex), hexImage(h1));
      assert.deepEqual(hexImage(parts[1].hex), hexImage(h2));
    });
  }
}

test('Universal Hex of one board, and of v2 before v1, equals the library', async () => {
  const h1 = ihex(bytes(5000), 0), h2 = ihex(bytes(9000), 0);
  const f1 = path.join(tmp, 'a.hex'), f2 = path.join(tmp, 'b.hex');
  writeFileSync(f1, h1);
  writeFileSync(f2, h2);
  for (const blocks of [false, true]) {
    assert.equal(await cWriter([{ file: f2, board: 'v2' }], blocks),
      createUniversalHex([{ hex: h2, boardId: microbitBoardId.V2 }], blocks));
    assert.equal(await cWriter([{ file: f1, board: 'v1' }], blocks),
      createUniversalHex([{ hex: h1, boardId: microbitBoardId.V1 }], blocks));
  }
  const only = separateUniversalHex(await cWriter([{ file: f2, board: 'v2' }], false));
  assert.deepEqual(only.map((p) => p.boardId), [0x9903]);
  assert.deepEqual(hexImage(only[0].hex), hexImage(h2));
});

test('the C writer refuses what is not Intel HEX, an early End Of File and a Universal Hex', async () => {
  const bad = path.join(tmp, 'bad.hex'), early = path.join(tmp, 'early.hex'), uni = path.join(tmp, 'uni.hex');
  writeFileSync(bad, ':10000000zz\n');
  writeFileSync(early, ':00000001FF\n' + ihex(bytes(16), 0));
  writeFileSync(uni, createUniversalHex([{ hex: ihex(bytes(64), 0), boardId: microbitBoardId.V1 }]));
  for (const [f, why] of [[bad, /not an Intel HEX record/], [early, /End Of File record before the end/], [uni, /already a Universal Hex/]]) {
    const out = path.join(tmp, 'never.hex');
    const r = await run(ELFPATCH, ['--universal-hex', '--v1', f, '--out', out]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, why);
    assert.equal(r.stderr.trim().split('\n').length, 1);
  }
});
