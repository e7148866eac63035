// tests/browser/run.mjs — the work the browser test does in each context
// (page main thread and module Web Worker), with nothing but fetch and the
// project's ES-module loader (wasm/atome.mjs), fetched over HTTP from the
// test's static server.
//
// generateCases(cases) loads build/wasm/atome.wasm and models/atome-60k.atome,
// runs the integer engine for each case ({ promptHex, n, temperature, topK,
// topP, seed, window }, the flags of `atome generate`) and returns the bytes of
// each case as hex. train(spec) creates a float model in the same module,
// trains it on the fetched bytes of spec.dataUrl (its first spec.dataBytes,
// when given) and returns the losses.
import { loadAtome } from '../../wasm/atome.mjs';

const root = new URL('../../', import.meta.url);
const hex = (u8) => Array.from(u8, (b) => b.toString(16).padStart(2, '0')).join('');
const unhex = (s) => new Uint8Array(s.match(/../g)?.map((h) => parseInt(h, 16)) ?? []);

// The bytes at rel, or its first `bytes` bytes.
async function fetchBytes(rel, bytes = 0) {
  const r = await fetch(new URL(rel, root));
  if (!r.ok) throw new Error(`fetch ${rel}: HTTP ${r.status}`);
  const u8 = new Uint8Array(await r.arrayBuffer());
  return bytes > 0 ? u8.subarray(0, bytes) : u8;
}

export async function generateCases(cases) {
  const atome = await loadAtome(new URL('build/wasm/atome.wasm', root));
  const model = atome.loadModel(await fetchBytes('models/atome-60k.atome'));
  try {
    return cases.map((c) => hex(model.generateBytes(unhex(c.promptHex), {
      n: c.n, temperature: c.temperature, topK: c.topK, topP: c.topP, seed: c.seed, window: c.window,
    })));
  } finally { model.free(); }
}

export async function train({ config, dataUrl, dataBytes, steps, options }) {
  const atome = await loadAtome(new URL('build/wasm/atome.wasm', root));
  const m = atome.createModel(config, { ...options, steps });
  try {
    m.setData(await fetchBytes(dataUrl, dataBytes));
    const losses = [];
    while (m.step < steps) losses.push(m.trainSteps(1).loss);
    return { losses, step: m.step };
  } finally { m.free(); }
}

// The trainer's threads in this context: the same run on atome.wasm (one
// thread) and on atome-threads.wasm with spec.threads threads; returns the
// hex of both exported models, the losses and the held-out loss of each, and
// whether the context is cross-origin isolated (no shared memory without).
export async function trainThreads({ config, dataUrl, dataBytes, steps, options, threads }) {
  const data = await fetchBytes(dataUrl, dataBytes);
  const runs = [];
  for (const t of [1, threads]) {
    const atome = await loadAtome(new URL('build/wasm/atome.wasm', root),
      { threads: t, threadsSource: new URL('build/wasm/atome-threads.wasm', root) });
    const m = atome.createModel(config, { ...options, steps });
    try {
      m.setData(data);
      const losses = [];
      while (m.step < steps) losses.push(m.trainSteps(2).loss);
      runs.push({ threads: atome.threads, losses, eval: m.evaluate({ maxChunks: 32 }).natsPerByte,
        model: hex(m.exportAtome({ encoding: 1 })) });
    } finally { m.free(); atome.close(); }
  }
  return { isolated: self.crossOriginIsolated === true, runs };
}
