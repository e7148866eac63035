// tests/browser/worker.mjs — module Web Worker: the same generation cases as
// the main thread, then a few training steps, then the same run on one
// thread and on the threaded module; posts { gen, train, threads, scope }
// or { error }.
import { generateCases, train, trainThreads } from './run.mjs';

self.onmessage = async ({ data: spec }) => {
  try {
    const gen = await generateCases(spec.cases);
    const tr = await train(spec.train);
    const threads = await trainThreads(spec.threads);
    self.postMessage({ gen, train: tr, threads, scope: self.constructor.name });
  } catch (e) {
    self.postMessage({ error: String(e?.stack ?? e) });
  }
};
