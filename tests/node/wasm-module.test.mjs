// tests/node/wasm-module.test.mjs — the shipped modules load the ways the
// loader promises, import nothing but the WASI stubs it provides, keep a
// fixed memory, and honour ATOME_KERNELS like the native build.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { loadAtome, Atome } from '../../wasm/atome.mjs';
import { wasmFile } from './artifacts.mjs';

// What wasm/atome.mjs provides; anything else would fail to instantiate in a
// page. getenv and the dispatcher's one stderr line are the only users.
const ALLOWED_IMPORTS = ['environ_get', 'environ_sizes_get', 'fd_close', 'fd_seek', 'fd_write', 'proc_exit'];

for (const variant of ['simd', 'scalar']) {
  test(`${variant}: imports only WASI stubs the loader provides; exports the API`, () => {
    const mod = new WebAssembly.Module(readFileSync(wasmFile(variant)));
    for (const i of WebAssembly.Module.imports(mod)) {
      if (i.module === 'env' && i.name === 'emscripten_notify_memory_growth') continue;   // the loader's no-op
      assert.equal(i.module, 'wasi_snapshot_preview1', `unexpected import module ${i.module}.${i.name}`);
      assert.ok(ALLOWED_IMPORTS.includes(i.name), `unexpected import ${i.name}`);
    }
    const names = WebAssembly.Module.exports(mod).map((e) => e.name);
    for (const n of ['memory', 'atome_new', 'atome_train', 'atome_save', 'atome_load', 'atome_gen_next',
      'atome_export', 'atome_engine_open', 'atome_engine_next', 'atome_matmul_fwd'])
      assert.ok(names.includes(n), `missing export ${n}`);
  });
}

test('loads from bytes, from a file URL and from a compiled WebAssembly.Module', async () => {
  const bytes = readFileSync(wasmFile('simd'));
  const fromBytes = await loadAtome(bytes);
  const fromUrl = await loadAtome(pathToFileURL(wasmFile('simd')));
  const fromModule = await loadAtome(new WebAssembly.Module(bytes));
  for (const a of [fromBytes, fromUrl, fromModule]) {
    assert.ok(a instanceof Atome);
    assert.equal(a.kernels(), 'wasm-simd');
  }
});

test('memory starts at 48 MiB, grows on demand to 1 GiB and no further', async () => {
  const a = await loadAtome(readFileSync(wasmFile('simd')));
  const size = a.memory.buffer.byteLength;
  assert.equal(size, 48 << 20);
  // a block larger than the initial memory: the memory grows and JS views taken afterwards see it
  const p = a.ex.atome_alloc(64 << 20);
  assert.ok(p > 0);
  assert.ok(a.memory.buffer.byteLength > size && a.memory.buffer.byteLength >= 64 << 20);
  a.u8(p + (64 << 20) - 1, 1)[0] = 7;
  a.ex.atome_free(p);
  // beyond the 1 GiB maximum a request fails cleanly (NULL), and the module goes on working
  assert.equal(a.ex.atome_alloc(1100 << 20), 0);
  assert.ok(a.ex.atome_alloc(1 << 20) > 0);
});

test('ATOME_KERNELS in the environment picks the kernels; an unknown name warns and falls back', async () => {
  const bytes = readFileSync(wasmFile('simd'));
  const ref = await loadAtome(bytes, { env: { ATOME_KERNELS: 'ref' } });
  assert.equal(ref.kernels(), 'ref');
  const said = [];
  const bad = await loadAtome(bytes, { env: { ATOME_KERNELS: 'avx512' }, onStderr: (t) => said.push(t) });
  assert.equal(bad.kernels(), 'wasm-simd');
  assert.match(said.join(''), /ATOME_KERNELS=avx512 is not available here/);
  const simd = await loadAtome(bytes);
  simd.useKernels('ref');
  assert.equal(simd.kernels(), 'ref');
  assert.throws(() => simd.useKernels('avx2'), /not available/);
});

test('sessions are independent and freeing one releases its memory for reuse', async () => {
  const a = await loadAtome(readFileSync(wasmFile('simd')));
  const m1 = a.createModel('atome-tiny', { seed: 1 });
  const m2 = a.createModel('atome-tiny', { seed: 2 });
  assert.notDeepEqual(m1.saveCheckpoint(), m2.saveCheckpoint());
  a.createModel('atome-tiny', { seed: 3 }).free();
  const top = a.ex.atome_heap_top();   // the heap's high-water mark
  for (let i = 0; i < 20; i++) a.createModel('atome-tiny', { seed: 3 }).free();
  assert.equal(a.ex.atome_heap_top(), top, 'repeated create/free keeps growing the heap');
  m1.free(); m2.free();
});
