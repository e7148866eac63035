#!/usr/bin/env node
// tools/check-shape.mjs — the tree's shape rule: no C function over 60 lines
// and no JS function over 50 in the product's code (core/, cli/, wasm/, mcu/,
// fwimage/, tools/, web/; tests are not product code, and a file whose first
// lines say it is generated is skipped), but for the few in ALLOW below,
// each with the reason it cannot be split.
//
//   node tools/check-shape.mjs [--c N] [--js N] [--json] [FILE...]
//
// Prints each function over its limit as `file:line name (N lines)`, and
// each stale ALLOW entry (its function now within the limit, or gone) as
// `file name: stale allowlist entry (...)`, and exits 1 if there is either,
// 0 if not. A function's length is counted from the line that opens its
// parameter list to the line of its closing brace. Both scanners skip
// comments, strings, character literals and (JS) template literals and
// regular expressions, so braces inside them do not count.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ROOTS = ['core', 'cli', 'wasm', 'mcu', 'fwimage', 'tools', 'web'];
export const C_LIMIT = 60;
export const JS_LIMIT = 50;

// The functions allowed over the limit: { file (from the repository root),
// function (its name as reported), reason (why it cannot be split) }. An
// entry whose function is within the limit again, or gone, is stale and
// fails the check, so the list only ever shrinks to what is still true.
export const ALLOW = [];

const C_EXT = new Set(['.c', '.h']);
const JS_EXT = new Set(['.mjs', '.js']);

// ---- a small tokenizer: [{ t: text, line }], comments and literals collapsed

function skipQuoted(src, i, q) {
  for (i++; i < src.length && src[i] !== q; i++) if (src[i] === '\\') i++;
  return i + 1;
}

// Regex literal start: a `/` where an expression may begin.
const REGEX_AFTER = new Set(['(', ',', '=', ':', '[', '!', '&', '|', '?', '{', '}', ';', '+', '-', '*', '%', '<', '>',
  '~', '^', 'return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', '=>', '&&', '||', '??']);

function skipRegex(src, i) {
  let cls = false;
  for (i++; i < src.length; i++) {
    const ch = src[i];
    if (ch === '\\') { i++; continue; }
    if (ch === '[') cls = true;
    else if (ch === ']') cls = false;
    else if (ch === '/' && !cls) break;
    else if (ch === '\n') break;
  }
  for (i++; i < src.length && /[a-z]/i.test(src[i]);) i++;
  return i;
}

export function tokenize(src, js) {
  const out = [];
  const templ = [];          // brace depth at each open `${` of a template literal
  let depth = 0, line = 1;
  const push = (t) => out.push({ t, line });
  const count = (a, b) => { for (let k = a; k < b; k++) if (src[k] === '\n') line++; };
  let i = 0;
  const template = () => {   // from just after a backtick or a `}` closing `${`
    for (; i < src.length; i++) {
      if (src[i] === '\\') { i++; continue; }
      if (src[i] === '\n') line++;
      if (src[i] === '`') { i++; push('`str`'); return; }
      if (src[i] === '$' && src[i + 1] === '{') { i += 2; templ.push(depth); depth++; push('${'); return; }
    }
  };
  while (i < src.length) {
    const ch = src[i];
    if (ch === '\n') { line++; i++; continue; }
    if (/\s/.test(ch)) { i++; continue; }
    if (ch === '/' && src[i + 1] === '/') { while (i < src.length && src[i] !== '\n') i++; continue; }
    if (ch === '/' && src[i + 1] === '*') { const e = src.indexOf('*/', i + 2); const end = e < 0 ? src.length : e + 2; count(i, end); i = end; continue; }
    if (!js && ch === '#' ) {  // preprocessor line (with continuations)
      while (i < src.length && src[i] !== '\n') { if (src[i] === '\\' && src[i + 1] === '\n') { line++; i++; } i++; }
      continue;
    }
    if (ch === '"' || ch === "'") { const e = skipQuoted(src, i, ch); count(i, e); i = e; push('str'); continue; }
    if (js && ch === '`') { i++; template(); continue; }
    if (js && ch === '/' && (!out.length || REGEX_AFTER.has(out.at(-1).t))) { i = skipRegex(src, i); push('re'); continue; }
    if (js && ch === '}' && templ.length && templ.at(-1) === depth - 1) { templ.pop(); depth--; push('}$'); i++; template(); continue; }
    const m = /^(=>|[A-Za-z_$][\w$]*|\d[\w.]*|&&|\|\||\?\?|\S)/.exec(src.slice(i, i + 64));
    const t = m[0];
    if (t === '{') depth++;
    if (t === '}') depth--;
    push(t);
    i += t.length;
  }
  return out;
}

// ---- functions: [{ name, line, lines }]

const NOT_FN = new Set(['if', 'for', 'while', 'switch', 'catch', 'with', 'return', 'sizeof', 'function']);

function matchBack(tok, k, open, close) {   // index of the `open` matching tok[k] (a `close`)
  for (let d = 0; k >= 0; k--) {
    if (tok[k].t === close) d++;
    else if (tok[k].t === open && --d === 0) return k;
  }
  return -1;
}

function functionHead(tok, k, js) {   // tok[k] is `{`: the function it opens, or null
  const prev = tok[k - 1];
  if (!prev) return null;
  if (js && prev.t === '=>') {
    const p = tok[k - 2];
    const open = p && p.t === ')' ? matchBack(tok, k - 2, '(', ')') : k - 2;
    return open < 0 ? null : { name: '(arrow)', line: tok[open].line };
  }
  if (prev.t !== ')') return null;
  const open = matchBack(tok, k - 1, '(', ')');
  if (open < 1) return null;
  const before = tok[open - 1];
  if (js && before.t === 'function') return { name: '(function)', line: before.line };
  if (!/^[A-Za-z_$][\w$]*$/.test(before.t) || NOT_FN.has(before.t)) {
    // C macro-made names: NAME(a)(b) {
    if (!js && before.t === ')') {
      const o2 = matchBack(tok, open - 1, '(', ')');
      if (o2 > 0 && /^[A-Za-z_]\w*$/.test(tok[o2 - 1].t)) return { name: tok[o2 - 1].t + '(…)', line: tok[o2 - 1].line };
    }
    return null;
  }
  return { name: before.t, line: before.line };
}

export function functions(src, js) {
  const tok = tokenize(src, js);
  const found = [];
  const stack = [];   // per open brace: the function it opens, or null
  for (let k = 0; k < tok.length; k++) {
    const t = tok[k].t;
    if (t === '{' || t === '${') {
      // C: only braces at file level open functions.
      const head = t === '{' && (js || stack.length === 0) ? functionHead(tok, k, js) : null;
      stack.push(head);
    } else if ((t === '}' || t === '}$') && stack.length) {
      const head = stack.pop();
      if (head) found.push({ ...head, lines: tok[k].line - head.line + 1 });
    }
  }
  return found;
}

// ---- the tree

function* files(dir) {
  for (const e of readdirSync(dir).sort()) {
    const f = path.join(dir, e);
    if (statSync(f).isDirectory()) yield* files(f);
    else yield f;
  }
}

export const generated = (src) => /\bgenerated\b/i.test(src.split('\n').slice(0, 3).join('\n'));

// Every function over its limit in the files of list: { file, line, name,
// lines, limit }, the allowed ones (in allow) marked allowed: true.
function measure(list, { c = C_LIMIT, js = JS_LIMIT } = {}, allow = ALLOW) {
  const over = [];
  for (const f of list) {
    const ext = path.extname(f);
    const isJs = JS_EXT.has(ext);
    if (!isJs && !C_EXT.has(ext)) continue;
    const src = readFileSync(f, 'utf8');
    if (generated(src)) continue;
    const limit = isJs ? js : c;
    const file = path.relative(repo, f);
    for (const fn of functions(src, isJs)) {
      if (fn.lines <= limit) continue;
      const allowed = allow.some((a) => a.file === file && a.function === fn.name);
      over.push({ file, line: fn.line, name: fn.name, lines: fn.lines, limit, ...(allowed ? { allowed } : {}) });
    }
  }
  return over;
}

// The functions over their limit in the files of list and not allowed.
export function check(list, opts = {}, allow = ALLOW) {
  return measure(list, opts, allow).filter((o) => !o.allowed);
}

// The whole verdict: over (not allowed), allowed (over but listed, with the
// entry's reason) and stale (entries of a file in list whose function is
// not over its limit there: { file, function, reason }).
export function audit(list, opts = {}, allow = ALLOW) {
  const all = measure(list, opts, allow);
  const files = new Set(list.map((f) => path.relative(repo, path.resolve(f))));
  const isOver = (a) => all.some((o) => o.allowed && o.file === a.file && o.name === a.function);
  return {
    over: all.filter((o) => !o.allowed),
    allowed: all.filter((o) => o.allowed).map((o) => ({ ...o, reason: allow.find((a) => a.file === o.file && a.function === o.name).reason })),
    stale: allow.filter((a) => files.has(a.file) && !isOver(a)),
  };
}

export function productFiles() {
  const list = [];
  for (const r of ROOTS) {
    const d = path.join(repo, r);
    try { statSync(d); } catch { continue; }
    for (const f of files(d)) if (!f.includes(`${path.sep}node_modules${path.sep}`)) list.push(f);
  }
  return list;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const argv = process.argv.slice(2);
  const opt = { c: C_LIMIT, js: JS_LIMIT };
  let json = false;
  const list = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--c' || argv[i] === '--js') {
      const v = Number(argv[++i]);
      if (!Number.isInteger(v) || v < 1) { console.error(`check-shape: ${argv[i - 1]} wants a positive whole number`); process.exit(2); }
      opt[argv[i - 1].slice(2)] = v;
    } else if (argv[i] === '--json') json = true;
    else if (argv[i].startsWith('--')) { console.error(`check-shape: unknown flag ${argv[i]}`); process.exit(2); }
    else list.push(path.resolve(argv[i]));
  }
  const { over, allowed, stale } = audit(list.length ? list : productFiles(), opt);
  for (const o of over) console.log(`${o.file}:${o.line} ${o.name} (${o.lines} lines, limit ${o.limit})`);
  for (const a of stale) console.log(`${a.file} ${a.function}: stale allowlist entry (within the limit now, or gone): remove it from ALLOW`);
  if (json) console.log(JSON.stringify({ over: over.length, stale: stale.length, allowed: allowed.length, c_limit: opt.c, js_limit: opt.js }));
  else if (!over.length && !stale.length) {
    console.log(`check-shape: no C function over ${opt.c} lines, no JS function over ${opt.js}` +
      (allowed.length ? ` (but ${allowed.length} allowed: ${allowed.map((a) => `${a.file} ${a.name}`).join(', ')})` : ''));
  }
  process.exit(over.length || stale.length ? 1 : 0);
}
