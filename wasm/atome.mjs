// wasm/atome.mjs — loader and JS API of atome.wasm (float trainer, float and
// integer generation), usable unchanged in a page, a Web Worker and Node; run
// as a script it is the Node CLI `node wasm/atome.mjs generate ...`.
//
// Contract. loadAtome(source) instantiates the standalone module (no
// Emscripten glue): source is a URL or URL string (fetched; browsers), or the
// module's bytes (Node: readFile). It returns an Atome object whose methods
// create/load models; each Model owns one session in wasm memory (free() it
// when done; memory is fixed, so sessions are the only thing that fills it).
// Every failure throws an Error carrying the C side's one-line reason.
// Bytes always cross the boundary as Uint8Array copies, never views into wasm
// memory, so results stay valid after later calls. docs/wasm.md has the API
// with examples; the C side is wasm/atome_wasm.c.
//
// The module's few imports are WASI stubs: the environment (empty unless
// options.env is given; ATOME_KERNELS=ref|wasm-simd picks the matmul
// kernels, as natively) and fd_write for the one diagnostic the kernel
// dispatcher can print (to options.onStderr, default console.error).

const enc = new TextEncoder();
const dec = new TextDecoder();

const FAMILIES = ['atome', 'vanilla', 'gssm'];
const SHAPE_KEYS = ['d-model', 'layers', 'd-head', 'heads', 'kernel', 'attn-top-k', 'pathways',
  'd-ff', 'd-inner', 'max-seq'];
const PATHWAY_BITS = { conv: 1, ssm: 2, attn: 4 };

// camelCase / snake_case / CLI names all map to the CLI name ("dModel" -> "d-model").
function cliKey(k) {
  if (k === 'topK' || k === 'top_k' || k === 'attnTopK') return 'attn-top-k';
  return k.replace(/_/g, '-').replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}

// ---- the training option table (core/train/options.h) ----
// atome.trainOptions() gives its rows as the module exports them: { name,
// key, kind (int | number | flag | enum), default, default_note?, min, max,
// min_open, max_open, values? (enum), want, scope (model | run), stored,
// help }. The page and this file check values with them; the words of a
// refusal are the CLI's: "<label> must be <want> (got '<text>')".

// The row named name (its CLI name or its camelCase key), or undefined.
export function findOption(options, name) {
  return options.find((o) => o.name === name || o.key === name);
}

// A JS value as the text the table's grammar reads (numbers in JS's own
// shortest form, which reads back as the same double; true/false as 1/0).
export function optionText(x) {
  if (typeof x === 'boolean') return x ? '1' : '0';
  return String(x);
}

// Per module (its exports object): the option rows and the stat indexes.
const optionRows = new WeakMap();
const statIndexes = new WeakMap();

const INT_RE = /^[+-]?\d+$/;
const NUM_RE = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

// The value of text for row opt, as the C parser reads it (atm_topt_parse:
// the same grammar and range), or throws error.usage with the CLI's words
// after `label` (default: the option's name).
export function checkOption(opt, text, label = opt.name) {
  const t = String(text);
  let v;
  if (opt.kind === 'enum') v = opt.values.includes(t) ? t : undefined;
  else if (opt.kind === 'flag') v = t === '0' || t === '1' ? t === '1' : undefined;
  else if ((opt.kind === 'int' ? INT_RE : NUM_RE).test(t)) {
    const x = Number(t);
    const ok = Number.isFinite(x) && x >= opt.min && x <= opt.max && !(opt.min_open && x === opt.min) &&
      !(opt.max_open && x === opt.max);
    v = ok ? x : undefined;
  }
  if (v === undefined) throw Object.assign(new Error(`${label} must be ${opt.want} (got '${t}')`), { usage: true, option: opt.name });
  return v;
}

function isNode() {
  return typeof process !== 'undefined' && process.versions != null && process.versions.node != null;
}

function wasiImports(state) {
  const view = () => new DataView(state.memory.buffer);
  const envBytes = () => Object.entries(state.env).map(([k, v]) => enc.encode(`${k}=${v}\0`));
  return {
    environ_sizes_get(countPtr, sizePtr) {
      const e = envBytes();
      view().setUint32(countPtr, e.length, true);
      view().setUint32(sizePtr, e.reduce((n, b) => n + b.length, 0), true);
      return 0;
    },
    environ_get(ptrs, buf) {
      const mem = new Uint8Array(state.memory.buffer);
      let p = buf;
      envBytes().forEach((b, i) => { view().setUint32(ptrs + 4 * i, p, true); mem.set(b, p); p += b.length; });
      return 0;
    },
    fd_write(fd, iovs, n, nwritten) {
      let total = 0;
      const parts = [];
      for (let i = 0; i < n; i++) {
        const p = view().getUint32(iovs + 8 * i, true), len = view().getUint32(iovs + 8 * i + 4, true);
        parts.push(new Uint8Array(state.memory.buffer, p, len).slice());
        total += len;
      }
      const text = parts.map((b) => dec.decode(b)).join('');
      if (text) state.onStderr(text);
      view().setUint32(nwritten, total, true);
      return 0;
    },
    fd_close() { return 0; },
    fd_seek() { return 70; }, // ESPIPE: there are no files
    proc_exit(code) { throw new Error(`atome.wasm exited (${code})`); },
  };
}

async function instantiate(source, imports) {
  if (source instanceof WebAssembly.Module) return WebAssembly.instantiate(source, imports);
  if (source instanceof URL || typeof source === 'string') {
    const url = source instanceof URL ? source : new URL(source, globalThis.location?.href);
    if (url.protocol === 'file:' && isNode()) {
      const { readFile } = await import('node:fs/promises');
      return (await WebAssembly.instantiate(await readFile(url), imports)).instance;
    }
    const resp = await fetch(url);
    if (!resp.ok) throw new Error(`cannot fetch ${url}: HTTP ${resp.status}`);
    if (WebAssembly.instantiateStreaming && resp.headers.get('content-type') === 'application/wasm')
      return (await WebAssembly.instantiateStreaming(resp, imports)).instance;
    return (await WebAssembly.instantiate(await resp.arrayBuffer(), imports)).instance;
  }
  return (await WebAssembly.instantiate(source, imports)).instance;
}

// The default location of the module: the wasm preset's build directory.
export const defaultWasmUrl = new URL('../build/wasm/atome.wasm', import.meta.url);
// The shared-memory build (wasm/CMakeLists.txt): used when threads > 1.
export const threadsWasmUrl = new URL('../build/wasm/atome-threads.wasm', import.meta.url);
// The packed models shipped in models/ (in a checkout, and in the npm package,
// which keeps this layout: packages/atome/README.md).
export const modelUrls = Object.freeze({
  'atome-944k': new URL('../models/atome-944k.atome', import.meta.url),
  'atome-60k': new URL('../models/atome-60k.atome', import.meta.url),
});
// Its memory: the module imports a shared one of at least ATOME_WASM_MEMORY
// and at most ATOME_WASM_MAX_MEMORY bytes (wasm/CMakeLists.txt defaults).
const THREADS_MEMORY = { initial: 50331648 / 65536, maximum: 1073741824 / 65536 };
// A worker's stack: as large as the first instance's (ATOME_WASM_STACK; kernels keep
// row buffers there, and wasm has no guard page to stop an overflow).
const THREAD_STACK = 1024 * 1024;

// Whether this context can run the threaded module: shared memory, and in
// a browser a cross-origin isolated one (COOP + COEP headers).
export function threadsAvailable() {
  if (typeof SharedArrayBuffer === 'undefined' || typeof Atomics === 'undefined') return false;
  return isNode() || globalThis.crossOriginIsolated === true;
}

async function moduleOf(source) {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof URL || typeof source === 'string') {
    const url = source instanceof URL ? source : new URL(source, globalThis.location?.href);
    if (url.protocol === 'file:' && isNode()) {
      const { readFile } = await import('node:fs/promises');
      return WebAssembly.compile(await readFile(url));
    }
    const resp = await fetch(url);
    if (!resp.ok) throw new Error(`cannot fetch ${url}: HTTP ${resp.status}`);
    return WebAssembly.compile(await resp.arrayBuffer());
  }
  return WebAssembly.compile(source);
}

// options.threads > 1 (and threadsAvailable()): atome-threads.wasm
// (options.threadsSource, default threadsWasmUrl) on a shared memory, with
// threads - 1 worker instances (wasm/atome-thread.mjs) for the trainer's
// pool; the bits are those of one thread (core/train/pool.h). Otherwise the
// module at `source` on one thread. atome.threads says which; close() ends
// the workers. In a browser the threaded module blocks while it waits, so it
// runs in a Web Worker, never on the page's main thread.
export async function loadAtome(source = defaultWasmUrl, options = {}) {
  const want = Math.max(1, Math.floor(options.threads ?? 1));
  if (want > 1 && threadsAvailable()) return loadThreaded(options.threadsSource ?? threadsWasmUrl, want, options);
  const state = stateOf(options);
  // the memory grows on demand (views are always taken from memory.buffer afresh)
  const instance = await instantiate(source, { wasi_snapshot_preview1: wasiImports(state),
    env: { emscripten_notify_memory_growth() {} } });
  state.memory = instance.exports.memory;
  instance.exports._initialize?.();
  return new Atome(instance.exports);
}

function stateOf(options) {
  return {
    memory: null,
    env: options.env ?? {},
    onStderr: options.onStderr ?? ((t) => console.error(t.replace(/\n$/, ''))),
  };
}

async function loadThreaded(source, n, options) {
  const module = await moduleOf(source);
  const memory = new WebAssembly.Memory({ ...THREADS_MEMORY, shared: true });
  const state = stateOf(options);
  state.memory = memory;
  const instance = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasiImports(state),
    env: { memory, emscripten_notify_memory_growth() {} } });
  instance.exports._initialize?.();
  const ex = { ...instance.exports, memory };
  const workers = [];
  try {
    for (let id = 1; id < n; id++) {
      const stack = ex.atome_alloc(THREAD_STACK);
      if (!stack) throw new Error('out of wasm memory for a thread stack');
      workers.push(await startWorker(module, memory, id, (stack + THREAD_STACK) & ~15));
    }
  } catch (e) {
    for (const w of workers) w.terminate();
    throw new Error(`cannot start the trainer's threads: ${e.message ?? e}`);
  }
  ex.atome_threads_started(workers.length);
  ex.atome_threads_caller_naps?.(mayBlock() ? 1 : 0);
  const a = new Atome(ex);
  a.workers = workers;
  a.ex.atome_threads(n);
  return a;
}

// Whether the pool's caller may nap (timed memory.atomic.wait32) instead of
// spinning while it waits for the workers: only where this thread may block
// (a Web Worker, not a browser's main thread) and not in Node. Under Node
// 20's V8 a caller's wait32 (timed or not, main thread or worker_threads)
// came back with the module's __stack_pointer at 16 in about one stress run
// in three, and the next call trapped; Chromium 156 ran 40 of 40 clean
// (tests/node/wasm-threads.test.mjs, docs/kernels.md).
function mayBlock() {
  if (typeof process !== 'undefined' && process.versions?.node) return false;
  try {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 1, 0);
    return true;
  } catch {
    return false;
  }
}

// One worker instance, resolved when it runs (its thread then waits in
// wasm for work, for the life of the program).
async function startWorker(module, memory, id, stackTop) {
  const url = new URL('./atome-thread.mjs', import.meta.url);
  let w;
  if (isNode()) {
    const { Worker } = await import('node:worker_threads');
    w = new Worker(url);
    w.unref();
  } else {
    w = new Worker(url, { type: 'module' });
  }
  await new Promise((resolve, reject) => {
    const on = (msg) => {
      const m = msg?.data !== undefined && !isNode() ? msg.data : msg;
      if (m?.ready === id) resolve();
      else if (m?.error) reject(new Error(m.error));
    };
    if (isNode()) { w.on('message', on); w.on('error', reject); }
    else { w.onmessage = on; w.onerror = (e) => reject(new Error(e.message ?? 'worker failed')); }
    w.postMessage({ module, memory, id, stackTop });
  });
  return w;
}

// n bytes in pieces of at most chunk, each from next(ptr, count) into one
// scratch block (freed when the iterator ends): the float and the integer
// generators' loop.
function* pieces(model, n, chunk, next) {
  const out = model.ex.atome_alloc(Math.max(1, chunk));
  try {
    for (let done = 0; done < n;) {
      const c = Math.min(chunk, n - done);
      next(out, c);
      done += c;
      yield model.a.u8(out, c).slice();
    }
  } finally { model.ex.atome_free(out); }
}

export class Atome {
  constructor(ex) { this.ex = ex; this.workers = []; }

  // The trainer's threads: the count in effect (1 unless loaded with
  // options.threads on a context that has shared memory). setThreads(n)
  // changes it within 1..the workers started + 1 and returns the result.
  get threads() { return this.ex.atome_threads ? this.ex.atome_threads(0) : 1; }
  setThreads(n) { return this.ex.atome_threads ? this.ex.atome_threads(Math.max(1, n | 0)) : 1; }
  // Ends the worker instances (the module is unusable for threaded work after).
  close() {
    if (this.ex.atome_threads) this.ex.atome_threads(1);
    for (const w of this.workers) w.terminate();
    this.workers = [];
  }

  // The generation limits every front end shares (core/sampler.h): the
  // largest n, the n and the seed taken when none is given.
  genLimits() {
    return { nMax: this.ex.atome_gen_limit(0), nDefault: this.ex.atome_gen_limit(1), seedDefault: this.ex.atome_gen_limit(2),
      maxWindow: this.ex.atome_gen_limit(3) };
  }
  get memory() { return this.ex.memory; }
  u8(ptr, n) { return new Uint8Array(this.ex.memory.buffer, ptr, n); }
  f32(ptr, n) { return new Float32Array(this.ex.memory.buffer, ptr, n); }
  cstr(ptr) {
    const m = new Uint8Array(this.ex.memory.buffer);
    let e = ptr;
    while (m[e]) e++;
    return dec.decode(m.slice(ptr, e));   // a copy: TextDecoder refuses shared memory
  }

  // Copies bytes (Uint8Array or string) into a fresh block; NUL-terminated.
  alloc(bytes) {
    const b = typeof bytes === 'string' ? enc.encode(bytes) : bytes;
    const p = this.ex.atome_alloc(b.length + 1);
    if (!p) throw new Error(`out of wasm memory for ${b.length} bytes`);
    const m = this.u8(p, b.length + 1);
    m.set(b);
    m[b.length] = 0;
    return p;
  }
  // Runs fn(ptr) with a temporary copy of bytes.
  withBytes(bytes, fn) {
    const p = this.alloc(bytes);
    try { return fn(p); } finally { this.ex.atome_free(p); }
  }

  // Runs fn(t, k, p) with the settings as C strings (0 for a null setting).
  withSettings(temperature, topK, topP, fn) {
    const texts = [temperature, topK, topP].map(settingText);
    const ptrs = texts.map((t) => (t === null ? 0 : this.alloc(t)));
    try { return fn(...ptrs); } finally { for (const p of ptrs) if (p) this.ex.atome_free(p); }
  }

  // Throws (error.usage) if the settings text would be refused by generate.
  checkSettings(temperature, topK, topP) {
    if (this.withSettings(temperature, topK, topP, (t, k, p) => this.ex.atome_settings_check(t, k, p)) !== 0) {
      const e = new Error(this.cstr(this.ex.atome_settings_error()));
      e.usage = true;
      throw e;
    }
  }

  // The training option table (core/train/options.h), parsed once.
  trainOptions() {
    if (!optionRows.has(this.ex)) optionRows.set(this.ex, JSON.parse(this.cstr(this.ex.atome_options_json())).options);
    return optionRows.get(this.ex);
  }

  // The trainer's stats by name ({ step: 0, loss: 1, ... }: the module's list).
  statIndex() {
    if (!statIndexes.has(this.ex)) {
      const idx = {};
      for (let i = 0, p; (p = this.ex.atome_stat_name(i)); i++) idx[this.cstr(p)] = i;
      statIndexes.set(this.ex, idx);
    }
    return statIndexes.get(this.ex);
  }

  // Name of the matmul kernel set in use ("wasm-simd" or "ref").
  kernels() { return this.cstr(this.ex.atome_kernels()); }
  useKernels(name) {
    if (this.withBytes(name, (p) => this.ex.atome_kernels_use(p)) !== 0)
      throw new Error(`kernel set '${name}' is not available in this module`);
  }

  // A new model from a named config, shape overrides and training options
  // (CLI names or camelCase: { dModel: 32, layers: 2, lr: 1e-3, seed: 7, ... });
  // weights are initialised from options.seed exactly as `atome train` does.
  createModel(config, options = {}) {
    const m = new Model(this);
    try {
      m.configure(config, options);
      return m;
    } catch (e) { m.free(); throw e; }
  }

  // A model from checkpoint bytes (ATOMECKP, as written by `atome train`).
  loadCheckpoint(bytes) {
    const m = new Model(this);
    try { m.loadCheckpoint(bytes); return m; } catch (e) { m.free(); throw e; }
  }

  // A packed `.atome` model for the integer engine; window 0 = its default.
  loadModel(bytes, { window = 0 } = {}) {
    const m = new PackedModel(this);
    try { m.open(bytes, window); return m; } catch (e) { m.free(); throw e; }
  }

  // ---- board files (fwimage/fwimage.c compiled in; wasm/atome_wasm_fw.c) ----
  // Each takes Uint8Array copies and returns copies; a failure throws with
  // the CLI's reason (error.usage for a template built for another board,
  // error.fit when the model does not fit the board: its slot or its RAM).
  fwCall(rc) {
    if (rc < 0) {
      const e = new Error(this.cstr(this.ex.atome_fw_error()));
      e.usage = rc === -2;
      e.fit = rc === -3;
      throw e;
    }
    return rc;
  }
  fwOut() { return this.u8(this.ex.atome_fw_out(), this.ex.atome_fw_out_len()).slice(); }

  // The project version and the git commit this module was built from, as
  // `atome --version` prints it after "atome ": "0.1.0 (commit 0123abcd4567)".
  version() { return this.cstr(this.ex.atome_version()); }

  // The table of boards (core/boards.def), as `atome boards --json` prints it:
  // { boards: [{ name, label, cpu, chip, clock_hz, flash_bytes, ram_bytes,
  // slot_bytes, formats, drive, semihosting, emulator, cost, ... }] }.
  boards() { return JSON.parse(this.cstr(this.ex.atome_boards_json())); }
  fwInfo() { return JSON.parse(this.cstr(this.ex.atome_fw_info())); }

  // How `model` fits the board of `template` (a firmware template ELF), in
  // the encoding the board gets (encoding_choice says which): { board,
  // model_bytes, capacity, arena_bytes, window, engine_bytes, max_window,
  // fits_flash, estimate_insns_per_byte, estimate_bytes_per_s, clock_hz, ... },
  // the estimate at `window` (0 = the model's default; docs/mcu-cost.md).
  firmwareFit(template, model, window = 0) {
    return this.withBytes(template, (t) => this.withBytes(model, (m) => {
      this.fwCall(this.ex.atome_fw_fit(t, template.length, m, model.length, window));
      return this.fwInfo();
    }));
  }

  // RAM the board must give the engine for `model` at `window` (0 = the
  // model's default): engine arena + the firmware's 256-byte tail.
  firmwareRam(model, window = 0) {
    return this.withBytes(model, (m) => this.ex.atome_fw_ram(m, model.length, window));
  }

  // `atome firmware --model M --board B`: { image: Uint8Array (ELF), info }.
  firmware(template, board, model) {
    return this.withBytes(template, (t) => this.withBytes(board, (b) => this.withBytes(model, (m) => {
      this.fwCall(this.ex.atome_fw_patch(t, template.length, b, m, model.length));
      return { image: this.fwOut(), info: this.fwInfo() };
    })));
  }

  // `atome firmware ... --prompt ... --n ... --format F`: a standalone image
  // whose settings block holds the generation settings; settings = { prompt
  // (string or bytes), n, temperature, topK, topP (decimal text or numbers,
  // null = default), seed (null = 1), window (0 = the CLI's choice), loop,
  // interactive }; format 'elf' | 'hex' | 'bin' | 'uf2' (the pico's). Returns { bytes, info }
  // (info.expect_hex: the first bytes the board will print).
  firmwareStandalone(template, board, model, settings, format = 'elf') {
    const s = settings;
    const pb = typeof s.prompt === 'string' ? enc.encode(s.prompt) : (s.prompt ?? new Uint8Array(0));
    const fmt = { elf: 0, hex: 1, bin: 2, uf2: 3 }[format];
    if (fmt === undefined) throw Object.assign(new Error(`--format must be elf, hex, bin or uf2 (got '${format}')`), { usage: true });
    const texts = [s.temperature, s.topK, s.topP, s.seed].map(settingText);
    const ptrs = texts.map((t) => (t === null ? 0 : this.alloc(t)));
    try {
      return this.withBytes(template, (t) => this.withBytes(board, (b) => this.withBytes(model, (m) => this.withBytes(pb, (p) => {
        this.fwCall(this.ex.atome_fw_standalone(t, template.length, b, m, model.length, p, pb.length, Number(s.n ?? 0),
          ptrs[0], ptrs[1], ptrs[2], ptrs[3], s.window ?? 0, (s.loop ? 1 : 0) | (s.interactive ? 2 : 0), fmt));
        return { bytes: this.fwOut(), info: this.fwInfo() };
      }))));
    } finally { for (const p of ptrs) if (p) this.ex.atome_free(p); }
  }

  // The micro:bit Universal Hex (`atome firmware --board microbit --format
  // hex`) of the v1 and v2 single-board .hex files (v1 null: the v2 only):
  // Uint8Array, the bytes createUniversalHex of @microbit/microbit-universal-hex makes.
  universalHex(v1, v2) {
    const a = v1 ?? new Uint8Array(1);
    return this.withBytes(a, (p1) => this.withBytes(v2, (p2) => {
      this.fwCall(this.ex.atome_fw_universal_hex(p1, v1 ? v1.length : 0, p2, v2.length));
      return this.fwOut();
    }));
  }

  // `atome header --model M [--name N] --out FILE`: { text: Uint8Array, info };
  // source is the model's file name written in the header's comment (the CLI
  // writes the model path's base name), file the name the header is saved
  // as ('' = "<name>.h"), named at the top of the comment.
  header(model, { name = '', source = 'model.atome', file = '' } = {}) {
    return this.withBytes(model, (m) => this.withBytes(name, (n) => this.withBytes(source, (s) => this.withBytes(file, (f) => {
      this.fwCall(this.ex.atome_fw_header(m, model.length, n, s, f));
      return { text: this.fwOut(), info: this.fwInfo() };
    }))));
  }

  // `atome convert`: the .atome container re-encoded (encoding 1 = ATOME01,
  // 2 = ATOME02); Uint8Array.
  convert(model, encoding) {
    return this.withBytes(model, (m) => { this.fwCall(this.ex.atome_fw_convert(m, model.length, encoding)); return this.fwOut(); });
  }

  // Either kind, by the file's magic.
  open(bytes, options = {}) {
    const kind = fileKind(bytes);
    if (kind === 'checkpoint') return this.loadCheckpoint(bytes);
    if (kind === 'atome') return this.loadModel(bytes, options);
    throw new Error('not an atome checkpoint (ATOMECKP) or packed model (.atome)');
  }
}

const CKPT_MAGIC = [0x41, 0x54, 0x4f, 0x4d, 0x45, 0x43, 0x4b, 0x50];   // "ATOMECKP"
const ATOME_MAGIC = [0x41, 0x54, 0x4d, 0x43, 0x0d, 0x0a, 0x1a, 0x0a];  // "ATMC\r\n\x1a\n"
export function fileKind(bytes) {
  const is = (m) => bytes.length >= 8 && m.every((b, i) => bytes[i] === b);
  return is(CKPT_MAGIC) ? 'checkpoint' : is(ATOME_MAGIC) ? 'atome' : 'unknown';
}

// A sampling setting as the decimal text the shared parser takes (strings
// pass unchanged; numbers are written without an exponent).
function settingText(x) {
  if (x === undefined || x === null) return null;
  if (typeof x === 'string') return x;
  if (Number.isInteger(x)) return String(x);
  return x.toFixed(9).replace(/0+$/, '').replace(/\.$/, '');
}

// What Model and PackedModel share: a C session in wasm memory, made by
// `${c}new`, freed by `${c}delete`, its last error in `${c}error` (c: the
// exports' prefix). C calls return -1 (runtime failure) or -2 (bad argument:
// error.usage); nanFails: NaN (from a double-valued call) fails too.
class Session {
  #c;
  #nanFails;

  constructor(atome, c, what, nanFails) {
    this.a = atome;
    this.ex = atome.ex;
    this.#c = c;
    this.#nanFails = nanFails;
    this.h = this.ex[`${c}new`]();
    if (!this.h) throw new Error(`out of wasm memory for ${what}`);
  }

  free() {
    if (this.h) this.ex[`${this.#c}delete`](this.h);
    this.h = 0;
  }

  check(rc) {
    if (rc < 0 || (this.#nanFails && Number.isNaN(rc))) {
      const e = new Error(this.a.cstr(this.ex[`${this.#c}error`](this.h)));
      e.usage = rc === -2;
      throw e;
    }
    return rc;
  }
}

export class Model extends Session {
  constructor(atome) {
    super(atome, 'atome_', 'a session', true);
  }

  // Shape overrides go to atome_set; training options (the table's model
  // rows) to atome_option as text, parsed and range-checked by the C table.
  configure(config, options) {
    this.check(this.a.withBytes(config, (p) => this.ex.atome_config(this.h, p)));
    const table = this.a.trainOptions();
    for (const [k0, v0] of Object.entries(options)) {
      const k = cliKey(k0);
      const opt = findOption(table, k0) ?? findOption(table, k);
      if (opt?.scope === 'model') {
        // quant as its code (0 fp32, 1 ternary), as before the table
        const v = opt.name === 'quant' && typeof v0 === 'number' ? ({ 0: 'fp32', 1: 'ternary' }[v0] ?? v0) : v0;
        this.a.withBytes(opt.name, (n) => this.a.withBytes(optionText(v), (t) => this.check(this.ex.atome_option(this.h, n, t))));
        continue;
      }
      if (!SHAPE_KEYS.includes(k)) throw new Error(`unknown model option '${k0}'`);
      let v = v0;
      if (k === 'pathways' && typeof v === 'string') {
        v = 0;
        for (const p of v0.split(',')) {
          if (!(p in PATHWAY_BITS)) throw new Error(`pathways takes a comma list of conv, ssm, attn (got '${v0}')`);
          v |= PATHWAY_BITS[p];
        }
      }
      this.check(this.a.withBytes(k, (p) => this.ex.atome_set(this.h, p, v)));
    }
    this.check(this.ex.atome_build(this.h));
  }

  // Training corpus (and optional validation corpus) as bytes. Without
  // `valid`, the first floor(split * chunks) chunks train and the rest
  // evaluate (split default 0.9). maxBytes (0 = all) keeps only the first
  // bytes of each corpus, as `atome train --max-bytes`. The names and
  // maxBytes go into saved checkpoints (so the native CLI can resume).
  setData(train, { valid = null, split = 0.9, maxBytes = 0, trainName = 'train', validName = 'valid' } = {}) {
    if (maxBytes > 0) {
      train = train.subarray(0, maxBytes);
      valid = valid && valid.subarray(0, maxBytes);
    }
    const put = (which, bytes) => {
      const n = bytes ? bytes.length : 0;
      const p = this.ex.atome_corpus(this.h, which, n);
      if (n && !p) this.check(-1);
      if (n) this.a.u8(p, n).set(bytes);
    };
    put(0, train);
    put(1, valid);
    this.a.withBytes(trainName, (tp) => this.a.withBytes(validName, (vp) =>
      this.check(this.ex.atome_data(this.h, split, maxBytes, tp, vp))));
    return { trainChunks: this.ex.atome_chunks(this.h, 0), evalChunks: this.ex.atome_chunks(this.h, 1) };
  }

  // A trainer stat by its name in the module's list (atome_stat_name):
  // step, steps, loss, lr, grad_norm, params, quant, stage, batch, seq,
  // vocab, family, elapsed_s.
  stat(name) {
    const i = this.a.statIndex()[name];
    if (i === undefined) throw new Error(`unknown trainer stat '${name}'`);
    return this.ex.atome_stat(this.h, i);
  }
  // All of them, by name (quant and family as their names).
  stats() {
    const o = Object.fromEntries(Object.keys(this.a.statIndex()).map((n) => [n, this.stat(n)]));
    return { ...o, quant: o.quant === 1 ? 'ternary' : 'fp32', family: FAMILIES[o.family] };
  }
  get step() { return this.stat('step'); }
  get steps() { return this.stat('steps'); }
  get loss() { return this.stat('loss'); }
  get lr() { return this.stat('lr'); }
  get gradNorm() { return this.stat('grad_norm'); }
  get nParams() { return this.stat('params'); }
  get quant() { return this.stat('quant') === 1 ? 'ternary' : 'fp32'; }
  get stage() { return this.stat('stage'); }
  get batch() { return this.stat('batch'); }
  get seq() { return this.stat('seq'); }
  get vocab() { return this.stat('vocab'); }
  get family() { return FAMILIES[this.stat('family')]; }
  get elapsed() { return this.stat('elapsed_s'); }

  // Up to n more optimiser steps (never past the run's total `steps`).
  // Returns the steps done; small n keeps a page responsive.
  trainSteps(n = 1) {
    const t0 = globalThis.performance ? performance.now() : Date.now();
    const done = this.check(this.ex.atome_train(this.h, n));
    const t1 = globalThis.performance ? performance.now() : Date.now();
    this.ex.atome_add_elapsed(this.h, (t1 - t0) / 1000);
    return { done, step: this.step, loss: this.loss, lr: this.lr };
  }

  // Mean held-out cross-entropy in nats per byte (bpb = nats / ln 2) over the
  // first maxChunks evaluation chunks (0 = all).
  evaluate({ maxChunks = 0, batch = 16 } = {}) {
    const nats = this.check(this.ex.atome_evaluate(this.h, maxChunks, batch));
    return { natsPerByte: nats, bpb: nats / Math.LN2, ppl: Math.exp(nats) };
  }

  // calibration: false leaves out the activation statistics (an atome
  // checkpoint to continue training from needs none; it saves ~40 steps'
  // time). The default writes them, as `atome train` does.
  saveCheckpoint({ calibration = true } = {}) {
    const n = this.check(this.ex.atome_save_opts(this.h, calibration ? 1 : 0));
    return this.a.u8(this.ex.atome_image(this.h), n).slice();
  }

  loadCheckpoint(bytes) {
    this.a.withBytes(bytes, (p) => this.check(this.ex.atome_load(this.h, p, bytes.length)));
  }

  // The weights as a packed `.atome` model (atome family): encoding 1 =
  // ATOME01, 2 = ATOME02; window 0 = training seq; calibration = text whose
  // activation statistics tighten the fixed-point formats (optional).
  exportAtome({ encoding = 1, window = 0, calibration = null } = {}) {
    const cal = calibration ?? new Uint8Array(0);
    const n = this.a.withBytes(cal, (p) => this.check(this.ex.atome_export(this.h, encoding, window, p, cal.length)));
    return this.a.u8(this.ex.atome_image(this.h), n).slice();
  }

  // Float generation, as `atome generate --model CKPT`: the float model's
  // logits go through the fixed-point sampler (Q16), as natively. Returns an
  // iterator of Uint8Array pieces of at most `chunk` bytes, n bytes in all.
  // prompt: string (UTF-8) or bytes; empty = one '\n'. window 0 = training
  // seq. Settings are decimal text (or numbers, written as text; null =
  // default). A bad setting, window or prompt byte throws here (error.usage).
  generate(prompt, { n = 64, temperature = null, topK = null, topP = null, seed = 1, window = 0, chunk = 16 } = {}) {
    const pb = typeof prompt === 'string' ? enc.encode(prompt) : prompt;
    this.a.withSettings(temperature, topK, topP, (t, k, p) =>
      this.check(this.ex.atome_gen_begin(this.h, window, t, k, p, seed >>> 0)));
    this.a.withBytes(pb, (p) => this.check(this.ex.atome_gen_feed(this.h, p, pb.length)));
    return pieces(this, n, chunk, (out, k) => this.check(this.ex.atome_gen_next(this.h, out, k)));
  }

  // All n bytes at once; onBytes (optional) sees each piece as it comes.
  generateBytes(prompt, options = {}, onBytes = null) {
    const parts = [];
    for (const piece of this.generate(prompt, options)) { parts.push(piece); if (onBytes) onBytes(piece); }
    const all = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
    let o = 0;
    for (const p of parts) { all.set(p, o); o += p.length; }
    return all;
  }
}

export class PackedModel extends Session {
  constructor(atome) {
    super(atome, 'atome_engine_', 'an engine session', false);
  }

  open(bytes, window = 0) {
    const p = this.ex.atome_engine_blob(this.h, bytes.length);
    if (!p) throw new Error(`out of wasm memory for a ${bytes.length}-byte model`);
    this.a.u8(p, bytes.length).set(bytes);
    this.check(this.ex.atome_engine_open(this.h, window));
  }

  stat(i) { return this.ex.atome_engine_stat(this.h, i); }
  get vocab() { return this.stat(0); }
  get window() { return this.stat(1); }
  get arenaBytes() { return this.stat(2); }
  get dModel() { return this.stat(3); }
  get layers() { return this.stat(4); }
  get bytes() { return this.stat(5); }
  /** the model's parameter count (as `atome params` and `atome inspect` "params" give it) */
  get nParams() { return this.stat(10); }
  /** values the file stores (fewer: the SSM output vector is folded at export; inspect's "stored_values") */
  get storedValues() { return this.stat(6); }
  get defaultWindow() { return this.stat(7); }
  get trainSeq() { return this.stat(8); }
  get encoding() { return this.stat(9); }

  // Integer generation, as `atome generate --model FILE.atome` and the
  // firmware: an iterator of Uint8Array pieces (n bytes in all). Settings are
  // decimal text or numbers; a window other than the open one re-opens the
  // engine. Bad settings, window or prompt throw here (error.usage = true).
  generate(prompt, options = {}) {
    const pb = this.begin(prompt, options);
    this.a.withBytes(pb, (q) => this.check(this.ex.atome_engine_feed(this.h, q, pb.length)));
    return this.pieces(options);
  }

  // generate() for a caller that interleaves other work (the page's worker):
  // the prompt is read in slices of promptSlice bytes, yielding
  // { fed, total } after each, then the same Uint8Array pieces.
  *generateSteps(prompt, options = {}) {
    const pb = this.begin(prompt, options);
    const slice = Math.max(1, options.promptSlice ?? 1024);
    const first = pb.subarray(0, Math.min(slice, pb.length));
    this.a.withBytes(first, (q) => this.check(this.ex.atome_engine_feed(this.h, q, first.length)));
    for (let fed = first.length; fed < pb.length;) {
      yield { fed, total: pb.length };
      const part = pb.subarray(fed, Math.min(fed + slice, pb.length));
      this.a.withBytes(part, (q) => this.check(this.ex.atome_engine_feed_more(this.h, q, part.length)));
      fed += part.length;
    }
    if (pb.length > slice) yield { fed: pb.length, total: pb.length };
    yield* this.pieces(options);
  }

  // the window and sampler settings of a generation; returns the prompt bytes
  begin(prompt, { temperature = null, topK = null, topP = null, seed = 1, window = 0 } = {}) {
    const pb = typeof prompt === 'string' ? enc.encode(prompt) : prompt;
    if (window && window !== this.window) this.check(this.ex.atome_engine_open(this.h, window));
    else if (!window && this.window !== this.defaultWindow) this.check(this.ex.atome_engine_open(this.h, 0));
    this.a.withSettings(temperature, topK, topP, (t, k, p) =>
      this.check(this.ex.atome_engine_settings(this.h, t, k, p, seed >>> 0)));
    return pb;
  }

  pieces({ n = 64, chunk = 16 } = {}) {
    return pieces(this, n, chunk, (out, c) => this.check(this.ex.atome_engine_next(this.h, out, c)));
  }

  generateBytes(prompt, options = {}, onBytes = null) { return Model.prototype.generateBytes.call(this, prompt, options, onBytes); }

  // As generate(), with "why this byte": yields { bytes, lines } where
  // lines[i] is the JSON line of bytes[i] (core/explain.h; the lines `atome
  // generate --router-json` writes: router weights and entropy per layer,
  // top 5 next bytes). The bytes are those generate() gives.
  // (options.steps: as generateSteps, its { fed, total } markers pass through)
  *generateExplained(prompt, options = {}) {
    this.ex.atome_engine_explain(this.h, 1);
    try {
      for (const piece of options.steps ? this.generateSteps(prompt, options) : this.generate(prompt, options)) {
        if (!(piece instanceof Uint8Array)) { yield piece; continue; }
        const text = this.a.cstr(this.ex.atome_engine_explain_text(this.h));
        yield { bytes: piece, lines: text.split('\n').filter((l) => l) };
      }
    } finally { this.ex.atome_engine_explain(this.h, 0); }
  }

  // "Score your own text": the bytes scored as `atome eval --model M --data
  // FILE` scores that file (cli/cmd_eval.c): chunks of eval's seq bytes, each
  // from a reset engine at eval's window; byte 0 of a chunk is not scored.
  // A generator for a caller that interleaves other work: yields { done,
  // total } after each slice of `slice` bytes and returns { seq, window,
  // layers, stride, nats (Float64Array [n], NaN where not scored), recs
  // (Int32Array [n x stride]: rank, n_top, top bytes, top p Q16, router Q15
  // and entropy Q16 per layer; null with records: false), chunks,
  // scoredBytes, sumNats, bpb }: sumNats and bpb over the whole chunks only,
  // summed in eval's order, as eval reports them (bpb null below one chunk;
  // the bytes after the last whole chunk are scored but not counted).
  *scoreSteps(text, { slice = 1024, records = true } = {}) {
    const tb = typeof text === 'string' ? enc.encode(text) : text;
    const seq = this.check(this.ex.atome_engine_score_shape(this.h));
    const stride = this.ex.atome_engine_score_stride(this.h), n = tb.length;
    const nats = new Float64Array(n), recs = records ? new Int32Array(n * stride) : null;
    const step = Math.max(1, slice);
    const tp = this.a.alloc(tb);
    const np = this.ex.atome_alloc(8 * step), rp = records ? this.ex.atome_alloc(4 * step * stride) : 0;
    try {
      if (!np || records && !rp) throw new Error(`out of wasm memory to score ${n} bytes`);
      for (let from = 0; from < n;) {
        const to = Math.min(n, from + step);
        this.check(this.ex.atome_engine_score(this.h, tp, n, seq, from, to, np, rp));
        nats.set(new Float64Array(this.ex.memory.buffer, np, to - from), from);
        if (records) recs.set(new Int32Array(this.ex.memory.buffer, rp, (to - from) * stride), from * stride);
        from = to;
        if (from < n) yield { done: from, total: n };
      }
    } finally { this.ex.atome_free(tp); this.ex.atome_free(np); if (rp) this.ex.atome_free(rp); }
    const chunks = Math.floor(n / seq), scoredBytes = chunks * (seq - 1);
    let sumNats = 0;
    for (let i = 0; i < chunks * seq; i++) if (i % seq) sumNats += nats[i];
    return { seq, window: this.window, layers: this.layers, stride, nats, recs, chunks, scoredBytes, sumNats,
      bpb: chunks ? sumNats / scoredBytes / Math.log(2) : null };
  }

  // scoreSteps run to its end: its result.
  score(text, options = {}) {
    const it = this.scoreSteps(text, options);
    for (;;) { const r = it.next(); if (r.done) return r.value; }
  }

  // Engine RAM at window w (0 = default), bytes.
  arenaFor(w = 0) { return this.ex.atome_engine_arena_for(this.h, w); }

  // Feeds one byte and returns a copy of the Q16 logits (value / 65536).
  step(byte) {
    const p = this.ex.atome_engine_step(this.h, byte);
    if (!p) throw new Error(this.a.cstr(this.ex.atome_engine_error(this.h)));
    return new Int32Array(this.ex.memory.buffer, p, this.vocab).slice();
  }
}

// ---------------------------------------------------------------- Node CLI
// `node wasm/atome.mjs generate --model FILE ...`: the flags, defaults, order
// of checks, messages and exit codes of the native `atome generate`
// (cli/cmd_eval.c, docs/cli.md); the bytes go to stdout raw. Sampling
// settings are decimal text for the shared fixed-point parser on both paths.

class Usage extends Error {}

const FLAGS = ['model', 'prompt', 'prompt-hex', 'n', 'temperature', 'top-k', 'top-p', 'seed', 'window'];
const INT_FLAGS = { n: [0, 1e12], window: [1, 1048576] };

// cli/args.c: "--name value" / "--name=value", the last of a repeated flag
// wins, integers as strtoll reads them (optional sign, digits) in range.
function parseFlags(argv) {
  const vals = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--') || a.length === 2)
      throw new Usage(`generate: unexpected argument '${a}' (flags start with --; see 'atome generate --help')`);
    const eq = a.indexOf('=');
    const name = eq >= 0 ? a.slice(2, eq) : a.slice(2);
    if (!FLAGS.includes(name)) throw new Usage(`generate: unknown flag '--${name}' (see 'atome generate --help')`);
    let v;
    if (eq >= 0) v = a.slice(eq + 1);
    else {
      if (i + 1 >= argv.length || argv[i + 1].startsWith('--')) throw new Usage(`generate: --${name} needs a value`);
      v = argv[++i];
    }
    if (name in INT_FLAGS) {
      const [lo, hi] = INT_FLAGS[name];
      const x = /^[+-]?\d+$/.test(v) ? Number(v) : NaN;
      if (!(x >= lo && x <= hi)) throw new Usage(`generate: --${name} must be an integer in ${lo}..${hi} (got '${v}')`);
      vals[name] = x;
    } else {
      vals[name] = v;
    }
  }
  return vals;
}

const GENERATE_USAGE =
  'usage: node wasm/atome.mjs generate --model FILE (--prompt TEXT | --prompt-hex HEX) --n N [flags]\n' +
  '\n' +
  'FILE is a checkpoint (float model) or a packed .atome model (integer\n' +
  'engine). Writes exactly the N new bytes to stdout (no prompt echo, no newline).\n' +
  '  --prompt TEXT       prompt bytes (empty: a single newline byte)\n' +
  '  --prompt-hex HEX    prompt as hex digits, e.g. 4f6e6365\n' +
  '  --n N               bytes to generate (256)\n' +
  '  --temperature T     decimal, 0 = greedy argmax (default 0)\n' +
  '  --top-k K           keep the K most likely bytes (0 = off)\n' +
  '  --top-p P           decimal nucleus mass (1 = off)\n' +
  '  --seed S            uint32 sampler seed (1)\n' +
  '  --window W          attention window in positions (default: training seq;\n' +
  '                      .atome: the model\'s default window)\n' +
  'Environment: ATOME_WASM = path of atome.wasm (default build/wasm/atome.wasm);\n' +
  'ATOME_KERNELS = ref | wasm-simd picks the float matmul kernels, as natively.\n';

// atome.wasm (ATOME_WASM, else the build's) loaded for the CLI.
async function cliAtome(readFile) {
  const wasmPath = process.env.ATOME_WASM;
  let wasmBytes;
  try { wasmBytes = await readFile(wasmPath ?? defaultWasmUrl); } catch {
    throw new Error(`generate: cannot read ${wasmPath ?? decodeURIComponent(defaultWasmUrl.pathname)} (build it: cmake --preset wasm && cmake --build --preset wasm)`);
  }
  const env = process.env.ATOME_KERNELS ? { ATOME_KERNELS: process.env.ATOME_KERNELS } : {};
  return loadAtome(wasmBytes, { env, onStderr: (t) => process.stderr.write(t) });
}

// --model's file opened as natively: a container (recognised by its first
// four bytes, as cli/packed.c does) or a checkpoint.
async function cliModel(atome, readFile, f) {
  let file;
  try { file = await readFile(f.model); } catch (e) {   // worded as core/train/ckpt.c's fopen / fread failures
    if (e.code === 'EISDIR') throw new Error(`generate: checkpoint '${f.model}': read error: Is a directory`);
    const why = { ENOENT: 'No such file or directory', EACCES: 'Permission denied' }[e.code] ?? e.message;
    throw new Error(`generate: cannot open checkpoint '${f.model}': ${why}`);
  }
  const packed = file.length >= 4 && ATOME_MAGIC.slice(0, 4).every((b, i) => file[i] === b);
  try {
    return packed ? atome.loadModel(file, { window: f.window ?? 0 }) : atome.loadCheckpoint(file);
  } catch (e) {
    if (e.usage) throw new Usage(`generate: ${e.message}`);
    throw new Error(packed ? `generate: '${f.model}': ${e.message}` : `generate: checkpoint '${f.model}': ${e.message}`);
  }
}

// The prompt bytes of --prompt or --prompt-hex.
function cliPrompt(f) {
  if (f['prompt-hex'] === undefined) return enc.encode(f.prompt);   // the argument's bytes (Node decoded them as UTF-8)
  const h = f['prompt-hex'];
  if (h.length % 2) throw new Usage('generate: --prompt-hex needs an even number of hex digits');
  if (!/^[0-9a-fA-F]*$/.test(h)) throw new Usage('generate: --prompt-hex has a non-hex digit');
  return Uint8Array.from(h.match(/../g) ?? [], (x) => parseInt(x, 16));
}

async function cliGenerate(argv) {
  const f = parseFlags(argv);
  if (f.model === undefined) throw new Usage('generate: --model is required');
  const { readFile } = await import('node:fs/promises');
  const atome = await cliAtome(readFile);
  // the model is opened first: a bad model file is reported before a missing option, as natively
  const model = await cliModel(atome, readFile, f);
  if (f.n === undefined) f.n = '256';          // ATM_GEN_N_DEFAULT, as the native CLI
  if (f.prompt !== undefined && f['prompt-hex'] !== undefined) throw new Usage('generate: give --prompt or --prompt-hex, not both');
  if (f.prompt === undefined && f['prompt-hex'] === undefined) throw new Usage('generate: --prompt or --prompt-hex is required');
  const settings = [f.temperature ?? null, f['top-k'] ?? null, f['top-p'] ?? null];
  try { atome.checkSettings(...settings); } catch (e) { throw new Usage(`generate: ${e.message}`); }
  if (f.seed !== undefined && !(/^\d+$/.test(f.seed) && Number(f.seed) <= 4294967295))
    throw new Usage(`generate: --seed must be an integer in 0..4294967295 (got '${f.seed}')`);
  const prompt = cliPrompt(f);

  const opts = { n: f.n, temperature: settings[0], topK: settings[1], topP: settings[2],
    seed: f.seed === undefined ? 1 : Number(f.seed), window: f.window ?? 0, chunk: 4096 };
  const write = (b) => new Promise((res, rej) => process.stdout.write(b, (e) => (e ? rej(e) : res())));
  try {
    let pieces;
    try { pieces = model.generate(prompt, opts); } catch (e) {
      throw e.usage ? new Usage(`generate: ${e.message}`) : new Error(`generate: ${e.message}`);
    }
    for (const piece of pieces) await write(Buffer.from(piece.buffer, piece.byteOffset, piece.length));
  } finally { model.free(); }
}

export async function main(argv) {
  const err = (code, msg) => {
    process.stderr.write(`atome: ${msg.replace(/[\x00-\x1f\x7f]/g, '?')}\n`);
    return code;
  };
  if (argv.length < 1) return err(2, "missing command (try 'node wasm/atome.mjs --help')");
  const [cmd, ...rest] = argv;
  if (cmd === '--help' || cmd === '-h' || cmd === 'help' || (cmd === 'generate' && rest.some((a) => a === '--help' || a === '-h'))) {
    process.stdout.write(GENERATE_USAGE);
    return 0;
  }
  if (cmd !== 'generate') return err(2, `unknown command '${cmd}' (this Node front end has only 'generate')`);
  try {
    await cliGenerate(rest);
    return 0;
  } catch (e) {
    return err(e instanceof Usage ? 2 : 1, e.message);
  }
}

if (isNode() && process.argv[1]) {
  const { pathToFileURL } = await import('node:url');
  const { realpathSync } = await import('node:fs');
  let self = null;
  try { self = pathToFileURL(realpathSync(process.argv[1])).href; } catch { /* not a file */ }
  if (self === import.meta.url) process.exitCode = await main(process.argv.slice(2));
}
