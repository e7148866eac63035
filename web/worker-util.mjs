// web/worker-util.mjs — what both workers of the page need: a zero-delay
// yield to the event loop and the wasm SIMD feature test.

// Yields to the worker's event loop so that queued messages (stop, pause) are
// handled between slices of work. A MessageChannel message, not setTimeout:
// nested timers are clamped to >= 4 ms, and a hidden page's are throttled.
export function yieldNow() {
  return new Promise((resolve) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => { ch.port1.close(); resolve(); };
    ch.port2.postMessage(null);
  });
}

// True where the engine validates a module with one SIMD instruction
// (i32.const 0; i8x16.splat; drop): the SIMD build can be loaded.
export function simdSupported() {
  const bytes = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 96, 0, 0, 3, 2, 1, 0, 10, 9, 1, 7, 0,
    65, 0, 253, 15, 26, 11]);
  try { return WebAssembly.validate(bytes); } catch { return false; }
}
