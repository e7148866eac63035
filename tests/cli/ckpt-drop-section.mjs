// tests/cli/ckpt-drop-section.mjs IN OUT TAG — copies a checkpoint without
// its TAG section (docs/checkpoint.md: the section count, the file size and
// the CRC-32 are rewritten), to make the checkpoints older builds wrote
// (e.g. without ACAL) for the CLI tests.
import { readFileSync, writeFileSync } from 'node:fs';

const [inp, out, tag] = process.argv.slice(2);
const b = readFileSync(inp);
if (b.toString('latin1', 0, 8) !== 'ATOMECKP') throw new Error(`${inp}: not a checkpoint`);
const count = b.readUInt32LE(12), size = Number(b.readBigUInt64LE(16));
if (size !== b.length) throw new Error(`${inp}: size field ${size}, file ${b.length}`);
const keep = [b.subarray(0, 24)];
let o = 24, n = 0, dropped = 0;
for (let i = 0; i < count; i++) {
  const len = Number(b.readBigUInt64LE(o + 8)), end = o + 16 + len;
  if (end > b.length - 4) throw new Error(`${inp}: section ${i} runs past the end`);
  if (b.toString('latin1', o, o + 4) === tag) dropped++;
  else { keep.push(b.subarray(o, end)); n++; }
  o = end;
}
if (!dropped) throw new Error(`${inp}: no ${tag} section`);
const body = Buffer.concat(keep);
body.writeUInt32LE(n, 12);
body.writeBigUInt64LE(BigInt(body.length + 4), 16);
let crc = 0xffffffff;
for (const x of body) {
  crc ^= x;
  for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
}
const tail = Buffer.alloc(4);
tail.writeUInt32LE((crc ^ 0xffffffff) >>> 0, 0);
writeFileSync(out, Buffer.concat([body, tail]));
