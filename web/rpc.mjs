// web/rpc.mjs — the one protocol between the page and its two workers
// (web/gen-worker.mjs, web/train-worker.mjs); docs/web.md lists the requests.
//
//   page -> worker   { rid, type, args }                  a request
//   worker -> page   { rid, event, data }                 any number of events of that request (progress)
//                    { rid, ok: true, result }            then one reply
//                    { rid, ok: false, error, detail }    or a failure: detail holds the error's own
//                                                         primitive fields (usage, field, state, …)
//
// The page side is connect(); the worker side is serve().

// Page side: a module worker and its requests. request() returns { rid, done }
// (done: a promise of the reply; onEvent(event, data) sees the events before
// it); call() is request().done. A worker that crashes rejects every pending
// request with `<name> failed: <message>` (crashed: true) after onCrash.
export function connect(url, { name = 'worker', onCrash = null } = {}) {
  const worker = new Worker(url, { type: 'module' });
  const pending = new Map();
  let next = 1;
  worker.onmessage = (ev) => settle(pending, ev.data);
  worker.onerror = (e) => {
    e.preventDefault();
    onCrash?.(e.message);
    for (const p of pending.values()) p.reject(Object.assign(new Error(`${name} failed: ${e.message}`), { crashed: true }));
    pending.clear();
  };
  function request(type, args = {}, { transfer = [], onEvent = null } = {}) {
    const rid = next++;
    const done = new Promise((resolve, reject) => {
      pending.set(rid, { resolve, reject, onEvent });
      worker.postMessage({ rid, type, args }, transfer);
    });
    return { rid, done };
  }
  return { request, call: (type, args, transfer = []) => request(type, args, { transfer }).done };
}

function settle(pending, m) {
  const p = pending.get(m.rid);
  if (!p) return;
  if (m.event !== undefined) { p.onEvent?.(m.event, m.data); return; }
  pending.delete(m.rid);
  if (m.ok) p.resolve(m.result);
  else p.reject(Object.assign(new Error(m.error), m.detail));
}

// A result sent with a transfer list (its buffers move to the page).
export class Transfer {
  constructor(value, list) { this.value = value; this.list = list; }
}

// Worker side: handlers[type](args, { rid, emit }) answers a request (a value,
// a Transfer or a promise of one); emit(event, data, transfer) sends one of
// its events. Requests are handled as they come: a worker that needs an
// order keeps its own queue.
export function serve(handlers) {
  self.onmessage = async (ev) => {
    const { rid, type, args } = ev.data;
    const emit = (event, data = {}, transfer = []) => postMessage({ rid, event, data }, transfer);
    try {
      if (!Object.hasOwn(handlers, type)) throw new Error(`unknown request '${type}'`);
      const r = await handlers[type](args ?? {}, { rid, emit });
      if (r instanceof Transfer) postMessage({ rid, ok: true, result: r.value }, r.list);
      else postMessage({ rid, ok: true, result: r });
    } catch (e) {
      postMessage({ rid, ok: false, error: String(e?.message ?? e), detail: detailOf(e) });
    }
  };
}

// The fields an error carries for the page (usage, field, maxWindow, state,
// failed…): its own enumerable primitive properties, always cloneable.
function detailOf(e) {
  const d = { usage: !!e?.usage };
  if (e && typeof e === 'object')
    for (const [k, v] of Object.entries(e)) if (v === null || typeof v !== 'object' && typeof v !== 'function') d[k] = v;
  return d;
}
