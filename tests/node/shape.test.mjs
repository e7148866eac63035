// tests/node/shape.test.mjs — the tree's shape rule (tools/check-shape.mjs):
// no C function over 80 lines and no JS function over 60 in the product's
// code; and the checker itself finds long functions and is not fooled by
// braces inside strings, comments, template literals or regular expressions.
import test from 'node:test';
import assert from 'node:assert/strict';
import { functions, check, productFiles } from '../../tools/check-shape.mjs';

const lines = (n, s) => Array.from({ length: n }, () => s).join('\n');

test('no C function over 80 lines, no JS function over 60 in core/ cli/ wasm/ mcu/ fwimage/ tools/ web/', () => {
  const files = productFiles();
  assert.ok(files.some((f) => f.endsWith('core/engine.c')) && files.some((f) => f.endsWith('wasm/atome.mjs')));
  const over = check(files);
  assert.deepEqual(over.map((o) => `${o.file}:${o.line} ${o.name} (${o.lines} lines)`), []);
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
