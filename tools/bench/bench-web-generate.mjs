#!/usr/bin/env node
// tools/bench/bench-web-generate.mjs — generation speed of every shipped model in
// the page, in headless Chromium (not a test: tools/test does not run it),
// next to Node's wasm figure for the same model and settings in the same run.
//
//   node tools/bench/bench-web-generate.mjs [--n 3000] [--rounds 3]
//
// For each models/*.atome: the page (tools/serve on 127.0.0.1) generates n
// bytes from "Once upon a time" with the page's default sampling settings
// (temperature 0.8, top-k 40, top-p 0.95, seed 1), "why this byte" off and
// on; the figure is what #speed shows (bytes / seconds from the worker's
// start of the generation to its last byte, streaming to the page
// included). Node: wasm/atome.mjs PackedModel.generateBytes with the same
// settings in this process, timed around the call. Each way reports its best
// of --rounds. Output: a table, then one line "JSON: {...}".
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { loadAtome } from '../../wasm/atome.mjs';
import { startServer } from '../web/serve.mjs';
import { launchChromium } from '../web/chromium.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const args = { n: 3000, rounds: 3 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, '');
  if (!(k in args)) { console.error(`bench-web-generate: unknown flag ${process.argv[i]}`); process.exit(2); }
  args[k] = Number(process.argv[i + 1]);
}
const SET = { temperature: '0.8', topK: '40', topP: '0.95', seed: 1 };
const models = readdirSync(path.join(repo, 'models')).filter((f) => f.endsWith('.atome')).sort();

const server = await startServer({ port: 0 });
const browser = await launchChromium();
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/?n=${args.n}`);
await page.waitForFunction(() => !document.getElementById('generate').disabled, null, { timeout: 30000 });
const atome = await loadAtome(readFileSync(path.join(repo, 'build/wasm/atome.wasm')));

const rows = [];
for (const m of models) {
  await page.selectOption('#model-select', m);
  await page.waitForFunction((v) => document.getElementById('model-select').value === v &&
    !document.getElementById('generate').disabled && /parameters/.test(document.getElementById('model-info').textContent), m);
  const row = { model: m };
  for (const explain of [false, true]) {
    let best = 0;
    for (let r = 0; r < args.rounds; r++) {
      await page.fill('#prompt', 'Once upon a time');
      await page.fill('#temperature', SET.temperature);
      await page.fill('#top-k', SET.topK);
      await page.fill('#top-p', SET.topP);
      await page.fill('#seed', String(SET.seed));
      await page.setChecked('#explain', explain);
      await page.click('#generate');
      await page.waitForFunction(() => document.getElementById('output').dataset.done === '1', null, { timeout: 120000 });
      const speed = await page.textContent('#speed');
      const bps = Number(speed.match(/·\s*([\d,]+) bytes\/s/)[1].replace(/,/g, ''));
      best = Math.max(best, bps);
    }
    row[explain ? 'chromium_explain_bytes_per_s' : 'chromium_bytes_per_s'] = best;
  }
  const pm = atome.loadModel(readFileSync(path.join(repo, 'models', m)));
  let nodeBest = 0;
  for (let r = 0; r < args.rounds; r++) {
    const t0 = performance.now();
    pm.generateBytes('Once upon a time', { n: args.n, ...SET, chunk: 4096 });
    nodeBest = Math.max(nodeBest, args.n / ((performance.now() - t0) / 1000));
  }
  pm.free();
  row.node_bytes_per_s = nodeBest;
  rows.push(row);
}
await browser.close();
server.close();

console.log(`generation of ${args.n} bytes, page defaults (T 0.8, top-k 40, top-p 0.95, seed 1), best of ${args.rounds}`);
console.log('| model | Chromium page bytes/s | with "why this byte" | Node wasm bytes/s |');
console.log('|---|---:|---:|---:|');
for (const r of rows)
  console.log(`| ${r.model} | ${Math.round(r.chromium_bytes_per_s).toLocaleString('en-US')} | ` +
    `${Math.round(r.chromium_explain_bytes_per_s).toLocaleString('en-US')} | ${Math.round(r.node_bytes_per_s).toLocaleString('en-US')} |`);
console.log(`JSON: ${JSON.stringify({ n: args.n, rounds: args.rounds, models: rows })}`);
