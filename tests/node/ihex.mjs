// tests/node/ihex.mjs — Intel HEX helpers of the micro:bit tests (not a test
// file: `node --test tests/node/` runs only *.test.mjs).
import assert from 'node:assert/strict';

// Intel HEX of bin at base: type-04 records at each 64 KiB, `rec` bytes a record.
export function ihex(bin, base, { eol = '\r\n', rec = 16 } = {}) {
  const h = (b) => b.toString(16).toUpperCase().padStart(2, '0');
  const line = (r) => ':' + r.map(h).join('') + h(-r.reduce((x, y) => x + y, 0) & 255);
  const lines = [];
  let upper = -1;
  for (let i = 0; i < bin.length; i += rec) {
    const a = base + i;
    if (a >>> 16 !== upper) { upper = a >>> 16; lines.push(line([2, 0, 0, 4, upper >> 8, upper & 255])); }
    lines.push(line([Math.min(rec, bin.length - i), (a >> 8) & 255, a & 255, 0, ...bin.subarray(i, i + rec)]));
  }
  lines.push(':00000001FF');
  return lines.join(eol) + eol;
}

// The memory image of an Intel HEX text: { base, bytes (gaps 0xFF), count of bytes given }.
export function hexImage(text) {
  const recs = [];
  let upper = 0, lo = Infinity, hi = 0, count = 0;
  for (const l of text.split(/\r?\n/).filter(Boolean)) {
    const b = Buffer.from(l.slice(1), 'hex');
    const n = b[0], addr = (b[1] << 8) | b[2], type = b[3];
    assert.equal(b.reduce((x, y) => x + y, 0) & 255, 0, `checksum of ${l}`);
    if (type === 4) upper = ((b[4] << 8) | b[5]) * 65536;
    if (type !== 0) continue;
    recs.push([upper + addr, b.subarray(4, 4 + n)]);
    lo = Math.min(lo, upper + addr);
    hi = Math.max(hi, upper + addr + n);
    count += n;
  }
  const bytes = Buffer.alloc(Math.max(0, hi - lo), 0xFF);
  for (const [a, d] of recs) d.copy(bytes, a - lo);
  return { base: lo, bytes, count };
}

