// tests/node/artifacts.mjs — where the Node tests find what the builds made
// (not a test file: `node --test tests/node/` runs only *.test.mjs).
//
// The tests build nothing. They expect
//   cmake --preset native && cmake --build --preset native   -> build/native/atome
//   cmake --preset wasm && cmake --build --preset wasm       -> build/wasm/atome.wasm,
//                                                              build/wasm/atome-scalar.wasm,
//                                                              build/wasm/atome-threads.wasm
// ATOME_WASM_BUILD / ATOME_NATIVE_BUILD point at other build directories.
// A missing artifact fails the test with the command that makes it; nothing
// is ever skipped.
import { existsSync, readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { loadAtome } from '../../wasm/atome.mjs';

export const repo = fileURLToPath(new URL('../..', import.meta.url));
export const wasmDir = process.env.ATOME_WASM_BUILD ?? path.join(repo, 'build/wasm');
export const nativeDir = process.env.ATOME_NATIVE_BUILD ?? path.join(repo, 'build/native');
export const cliScript = path.join(repo, 'wasm/atome.mjs');
export const sharedDir = process.env.ATOME_SHARED_DIR ?? path.join(repo, '../shared');

function need(file, how) {
  if (!existsSync(file)) throw new Error(`missing ${file}: build it first with '${how}' (run from ${repo})`);
  return file;
}

const WASM_FILES = { simd: 'atome.wasm', scalar: 'atome-scalar.wasm', threads: 'atome-threads.wasm' };
export const wasmFile = (variant = 'simd') =>
  need(path.join(wasmDir, WASM_FILES[variant] ?? 'atome-scalar.wasm'),
    'cmake --preset wasm && cmake --build --preset wasm');
export const nativeCli = () => need(path.join(nativeDir, 'atome'), 'cmake --preset native && cmake --build --preset native');

// A fresh module instance (each test file gets its own memory).
export async function load(variant = 'simd', options = {}) {
  return loadAtome(readFileSync(wasmFile(variant)), options);
}

// The first bytes of the TinyStories training text (read-only shared data).
export function corpus(n) {
  const f = need(path.join(sharedDir, 'data/tinystories-train.txt'), 'set ATOME_SHARED_DIR to the directory holding data/');
  return new Uint8Array(readFileSync(f).subarray(0, n));
}
export const corpusPath = () => path.join(sharedDir, 'data/tinystories-train.txt');

// Runs a program; resolves { code, stdout (Buffer), stderr (string) }.
export function run(file, args, { env = {}, timeout = 60000 } = {}) {
  return new Promise((resolve) => {
    execFile(file, args, { encoding: 'buffer', timeout, maxBuffer: 64 << 20, env: { ...process.env, ...env } },
      (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr: stderr.toString() }));
  });
}
export const native = (args, opts) => run(nativeCli(), args, opts);

// The `atome generate` flags of a case { promptHex, n, temperature, topK,
// topP, seed, window } (settings left undefined are left to their defaults).
export function generateArgs(model, c) {
  const a = ['generate', '--model', model, '--prompt-hex', c.promptHex, '--n', String(c.n)];
  if (c.temperature !== undefined) a.push('--temperature', c.temperature);
  if (c.topK !== undefined) a.push('--top-k', String(c.topK));
  if (c.topP !== undefined) a.push('--top-p', c.topP);
  if (c.seed !== undefined) a.push('--seed', String(c.seed));
  if (c.window !== undefined) a.push('--window', String(c.window));
  return a;
}
export const nodeCli = (args, opts) => run(process.execPath, [cliScript, ...args],
  { ...opts, env: { ATOME_WASM: wasmFile('simd'), ...(opts?.env ?? {}) } });

// Index of the first differing byte of two byte arrays, or -1.
// mulberry32: a small seeded generator, so every run of a test uses the
// same inputs. mulberry32(seed)() is a u32; rng01(seed)() a float in [0, 1).
export function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}
export const rng01 = (seed) => { const u = mulberry32(seed); return () => u() / 4294967296; };

export function firstDiff(a, b) {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : n;
}

// The sections of a checkpoint image (docs/checkpoint.md): tag -> payload.
export function ckptSections(img) {
  const dv = new DataView(img.buffer, img.byteOffset, img.byteLength);
  const nsec = dv.getUint32(12, true);
  const out = new Map();
  let o = 24;
  for (let s = 0; s < nsec; s++) {
    const tag = String.fromCharCode(...img.subarray(o, o + 4));
    const len = Number(dv.getBigUint64(o + 8, true));
    out.set(tag, img.slice(o + 16, o + 16 + len));
    o += 16 + len;
  }
  return out;
}

// The fp32 weights of a checkpoint image (its WGHT section).
export function ckptWeights(img) {
  const w = ckptSections(img).get('WGHT');
  if (!w) throw new Error('checkpoint has no WGHT section');
  return new Float32Array(w.slice(8).buffer);
}

// The settings flags of `atome firmware` for a test case { prompt, n,
// temperature, topK, topP, seed, window, loop, interactive } (absent: the default).
export function firmwareFlags(c) {
  const f = ['--prompt-hex', Buffer.from(c.prompt).toString('hex'), '--n', String(c.n)];
  if (c.temperature) f.push('--temperature', c.temperature);
  if (c.topK) f.push('--top-k', String(c.topK));
  if (c.topP) f.push('--top-p', c.topP);
  if (c.seed !== undefined) f.push('--seed', String(c.seed));
  if (c.window) f.push('--window', String(c.window));
  if (c.loop) f.push('--loop');
  if (c.interactive) f.push('--interactive');
  return f;
}

// Story k of a standalone image with settings c (firmwareFlags' case): the
// bytes `atome generate` prints with seed S + k (wrapped as a uint32) at the
// image's window, from `prompt` (default c.prompt).
export async function storyBytes(model, c, k, window, prompt = c.prompt) {
  const r = await native(generateArgs(model, { promptHex: Buffer.from(prompt).toString('hex'), n: c.n,
    temperature: c.temperature, topK: c.topK, topP: c.topP, seed: ((c.seed ?? 1) + k) % 2 ** 32, window }));
  if (r.code !== 0) throw new Error(`atome generate: ${r.stderr}`);
  return r.stdout;
}
