// tests/browser/worker.mjs — module Web Worker: the same generation cases as
// the main thread, then a few training steps; posts { gen, train, scope }
// or { error }.
import { generateCases, train } from './run.mjs';

self.onmessage = async ({ data: spec }) => {
  try {
    const gen = await generateCases(spec.cases);
    const tr = await train(spec.train);
    self.postMessage({ gen, train: tr, scope: self.constructor.name });
  } catch (e) {
    self.postMessage({ error: String(e?.stack ?? e) });
  }
};
