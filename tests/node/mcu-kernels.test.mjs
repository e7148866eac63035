// tests/node/mcu-kernels.test.mjs — the engine's board kernels (assembly and
// board-only C) against their plain-C twins on the boards' own CPUs:
// tests/mcu/kernels.c built as atome-kt-<board>.elf (the `mcu` preset; ATOME_MCU_BUILD,
// default build/mcu) and run under QEMU by tools/mcu/run-qemu. A missing image or
// QEMU fails; nothing is skipped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const pexec = promisify(execFile);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MCU = process.env.ATOME_MCU_BUILD || join(ROOT, 'build/mcu');

// board -> the kernels its image must report (each line "name cases bad")
const EXPECT = {
  microbit: ['planes_rows_m0', 'planes_build_m0', 'smull_m0', 'addsc_i32', 'scale_i32', 'ln_out_ssm_i32', 'mix_dots_m0', 'elementwise_m3', 'conv_m0'],
  'microbit-v2': ['lut_rows4_m3', 'lut8_rows4_m3', 'lut8_build_m3', 'dots_m3', 'mix_m3', 'conv_m3', 'addsc_i32', 'scale_i32', 'ln_out_ssm_i32', 'mix_dots_m0', 'elementwise_m3', 'conv_m0'],
  'mps2-an385': ['lut_rows4_m3', 'lut8_rows4_m3', 'lut8_build_m3', 'dots_m3', 'mix_m3', 'addsc_i32', 'scale_i32', 'ln_out_ssm_i32', 'mix_dots_m0', 'elementwise_m3', 'conv_m0'],
};

for (const [board, kernels] of Object.entries(EXPECT)) {
  test(`board kernels equal their C twins on ${board}`, async () => {
    const elf = join(MCU, 'mcu', `atome-kt-${board}.elf`);
    let out, code = 0;
    try {
      ({ stdout: out } = await pexec(join(ROOT, 'tools/mcu/run-qemu'), ['--board', board, '--timeout', '120', elf]));
    } catch (e) { out = e.stdout || ''; code = e.code; }
    const lines = out.trim().split('\n');
    assert.equal(lines.at(-1), 'ok', `${board}: ${out}`);
    assert.equal(code, 0);
    const seen = new Map(lines.slice(0, -1).map((l) => { const [n, c, b] = l.split(' '); return [n, [+c, +b]]; }));
    for (const k of kernels) {
      assert.ok(seen.has(k), `${board}: ${k} not run`);
      const [cases, bad] = seen.get(k);
      assert.ok(cases > 0, `${board}: ${k} ran no case`);
      assert.equal(bad, 0, `${board}: ${k} differs in ${bad} of ${cases}`);
    }
  });
}
