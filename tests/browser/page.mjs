// tests/browser/page.mjs — main-thread driver of index.html. The test's
// parameters come as JSON in the query string (?spec=…): { cases, train }.
// window.__result = { main, worker, isWorkerScope } or { error }.
import { generateCases } from './run.mjs';

const spec = JSON.parse(new URLSearchParams(location.search).get('spec'));

function inWorker() {
  return new Promise((resolve, reject) => {
    const w = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });
    w.onmessage = (e) => { w.terminate(); e.data.error ? reject(new Error(`worker: ${e.data.error}`)) : resolve(e.data); };
    w.onerror = (e) => { w.terminate(); reject(new Error(`worker failed to load or threw: ${e.message}`)); };
    w.postMessage(spec);
  });
}

try {
  const [main, worker] = await Promise.all([generateCases(spec.cases), inWorker()]);
  window.__result = { main, worker };
} catch (e) {
  window.__result = { error: String(e?.stack ?? e) };
}
