// tests/node/shape.test.mjs — the tree's shape rule (tools/check-shape.mjs):
// no C function over 60 lines and no JS function over 50 in the product's
// code but for the checker's allowlist (each entry with its reason, none
// stale); and the checker itself finds long functions, honours and audits
// the allowlist, and is not fooled by braces inside strings, comments,
// template literals or regular expressions.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { functions, check, audit, productFiles, ALLOW, C_LIMIT, JS_LIMIT } from '../../tools/check-shape.mjs';

const lines = (n, s) => Array.from({ length: n }, () => s).join('\n');

test('no C function over 60 lines, no JS function over 50 in core/ cli/ wasm/ mcu/ fwimage/ tools/ web/ but the allowed', () => {
  assert.equal(C_LIMIT, 60);
  assert.equal(JS_LIMIT, 50);
  const files = productFiles();
  assert.ok(files.some((f) => f.endsWith('core/engine.c')) && files.some((f) => f.endsWith('wasm/atome.mjs')));
  const { over, stale } = audit(files);
  assert.deepEqual(over.map((o) => `${o.file}:${o.line} ${o.name} (${o.lines} lines)`), []);
  assert.deepEqual(stale, [], 'allowlist entries whose function is within the limit now, or gone');
  for (const a of ALLOW) {
    assert.ok(a.file && a.function, `allowlist entry ${JSON.stringify(a)} names a file and a function`);
    assert.ok(typeof a.reason === 'string' && a.reason.length >= 20, `${a.file} ${a.function}: the allowlist entry says why`);
  }
});

test('the allowlist: a listed long function passes, an unlisted one fails, a stale entry is reported', (t) => {
  // the checker names files from the repository root: the temporary files live in build/
  const dir = mkdtempSync(path.join(path.resolve(import.meta.dirname, '../../build'), 'shape-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const long = (name) => [`int ${name}(int a) {`, lines(C_LIMIT, '    a++;'), '    return a;', '}'].join('\n');
  const short = (name) => `int ${name}(int a) {\n    return a;\n}`;
  const f = path.join(dir, 'x.c');
  writeFileSync(f, [long('listed'), long('unlisted'), short('now_short')].join('\n'));
  const rel = path.relative(path.resolve(import.meta.dirname, '../..'), f);
  const allow = [
    { file: rel, function: 'listed', reason: 'a test entry' },
    { file: rel, function: 'now_short', reason: 'was long once' },
    { file: rel, function: 'gone', reason: 'no longer in the file' },
    { file: 'core/elsewhere.c', function: 'other', reason: 'a file not checked here is not judged' },
  ];
  assert.deepEqual(check([f], {}, allow).map((o) => o.name), ['unlisted']);
  const r = audit([f], {}, allow);
  assert.deepEqual(r.over.map((o) => [o.name, o.lines, o.limit]), [['unlisted', C_LIMIT + 3, C_LIMIT]]);
  assert.deepEqual(r.allowed.map((o) => [o.name, o.reason]), [['listed', 'a test entry']]);
  assert.deepEqual(r.stale.map((a) => a.function), ['now_short', 'gone']);
  // with every long one listed and nothing stale, the file passes
  const clean = audit([f], {}, [allow[0], { file: rel, function: 'unlisted', reason: 'a test entry' }]);
  assert.deepEqual([clean.over, clean.stale], [[], []]);
  // a listed function within a looser limit is stale at that limit
  assert.deepEqual(audit([f], { c: 80 }, [allow[0]]).stale.map((a) => a.function), ['listed']);
});

test('check-shape measures C functions, skipping comments, strings and the preprocessor', () => {
  const src = [
    '#include <stdio.h>',
    '#define BRACE {',
    'struct s { int a; };',
    'static const int tab[] = { 1, 2, 3 };',
    'static int short_one(int x) {',
    '    const char *s = "}}}"; char c = \'{\'; /* } */',
    '    return x;',
    '}',
    'int long_one(int a,',
    '             int b)',
    '{',
    lines(78, '    if (a) { a--; } // }'),
    '}',
    'void NAME(f)(void) {',
    '}',
  ].join('\n');
  const fns = functions(src, false);
  assert.deepEqual(fns.map((f) => [f.name, f.line, f.lines]), [['short_one', 5, 4], ['long_one', 9, 82], ['NAME(…)', 91, 2]]);
});

test('check-shape measures JS functions, arrows and methods, skipping templates and regular expressions', () => {
  const src = [
    'function a(x) {',
    '  const t = `${x ? `{${"}"}` : \'}\'}`;',
    '  const r = /[{]}/g, q = x / 2 / 3;',
    '  return t + r + q;',
    '}',
    'const b = (y) => {',
    lines(60, '  if (y) { y++; }'),
    '};',
    'class K { m(z) { return { z }; } }',
    'if (a) { b(); }',
  ].join('\n');
  const fns = functions(src, true);
  assert.deepEqual(fns.map((f) => [f.name, f.line, f.lines]), [['a', 1, 5], ['(arrow)', 6, 62], ['m', 68, 1]]);
});
