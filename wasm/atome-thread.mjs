// wasm/atome-thread.mjs — one worker instance of atome-threads.wasm for the
// trainer's thread pool (core/train/pool.c), started by wasm/atome.mjs
// (loadAtome with options.threads > 1) in a Web Worker or a Node
// worker_threads Worker. It receives { module, memory, id, stackTop }:
// instantiates the module on the shared memory (no _initialize: the first
// instance did it, and libc's allocator belongs to it), moves its stack
// pointer to the stack the first instance allocated for it, says
// { ready: id } and enters atome_thread_main(id), which waits in wasm for
// work and never returns.
const isNode = typeof process !== 'undefined' && process.versions?.node != null;
const port = isNode ? (await import('node:worker_threads')).parentPort : self;

function stubs(memory) {
  const dec = new TextDecoder();
  return {
    environ_sizes_get(c, s) { const v = new DataView(memory.buffer); v.setUint32(c, 0, true); v.setUint32(s, 0, true); return 0; },
    environ_get() { return 0; },
    fd_write(fd, iovs, n, nw) {
      const v = new DataView(memory.buffer);
      let total = 0, text = '';
      for (let i = 0; i < n; i++) {
        const p = v.getUint32(iovs + 8 * i, true), len = v.getUint32(iovs + 8 * i + 4, true);
        text += dec.decode(new Uint8Array(memory.buffer, p, len).slice());
        total += len;
      }
      if (text) console.error(text.replace(/\n$/, ''));
      v.setUint32(nw, total, true);
      return 0;
    },
    fd_close() { return 0; },
    fd_seek() { return 70; },
    proc_exit(code) { throw new Error(`atome-threads.wasm exited (${code})`); },
  };
}

function onMessage(msg) {
  const { module, memory, id, stackTop } = isNode ? msg : msg.data;
  let ex;
  try {
    ex = new WebAssembly.Instance(module, { wasi_snapshot_preview1: stubs(memory),
      env: { memory, emscripten_notify_memory_growth() {} } }).exports;
    ex.stackRestore(stackTop);
  } catch (e) {
    port.postMessage({ error: String(e?.message ?? e) });
    return;
  }
  port.postMessage({ ready: id });
  // Let the message go out before this thread blocks in wasm for good.
  setTimeout(() => ex.atome_thread_main(id), 0);
}

if (isNode) port.once('message', onMessage);
else self.onmessage = onMessage;
