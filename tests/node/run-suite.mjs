#!/usr/bin/env node
// tests/node/run-suite.mjs — the Node half of tools/test: every
// tests/node/*.test.mjs, two files at a time (most of them hold one core:
// QEMU, the native CLI, one browser page), the page tests first (the longest),
// then the files that time the machine alone (their bounds assume a 2-core
// machine running nothing else: the minute preset's wall time and its CPU hog).
// TAP on stdout as `node --test` prints it; exit 1 if any test failed.
// Node 18.17 or newer (node:test's run() and its reporters); `--test-concurrency`
// would need Node 20.10. ATOME_TEST_LANES sets the number of files run at
// once in the first part (2 by default).
//
//   node tests/node/run-suite.mjs [FILE...]    (default: every test file)
import { run } from 'node:test';
import { tap } from 'node:test/reporters';
import { finished } from 'node:stream/promises';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ALONE = ['web-minute.test.mjs'];
export const LANES = Number(process.env.ATOME_TEST_LANES) || 2;

// The files: the page tests first, then the rest, each group by name (the
// order of the runs measured in README.md; starting with the longest files
// instead gave one run where web-site's two-thread training never ended,
// not seen in this order).
export function suiteFiles(names = readdirSync(HERE).filter((f) => f.endsWith('.test.mjs'))) {
  const base = names.map((f) => path.basename(f)).sort();
  const page = base.filter((f) => f.startsWith('web-') && !ALONE.includes(f));
  const rest = base.filter((f) => !f.startsWith('web-') && !ALONE.includes(f));
  return { shared: [...page, ...rest], alone: base.filter((f) => ALONE.includes(f)) };
}

async function runFiles(files, concurrency) {
  if (!files.length) return true;
  let ok = true;
  const stream = run({ files: files.map((f) => path.join(HERE, f)), concurrency });
  stream.on('test:fail', () => { ok = false; });
  const out = stream.compose(tap);
  out.pipe(process.stdout, { end: false });
  await finished(out);
  return ok;
}

async function main(argv) {
  const { shared, alone } = suiteFiles(argv.length ? argv : undefined);
  const t0 = Date.now();
  const a = await runFiles(shared, LANES);
  const t1 = Date.now();
  const b = await runFiles(alone, 1);
  console.log(`# run-suite: ${shared.length} files on ${LANES} lanes ${((t1 - t0) / 1000).toFixed(1)} s, ${alone.length} alone ${((Date.now() - t1) / 1000).toFixed(1)} s`);
  process.exitCode = a && b ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main(process.argv.slice(2));
