#!/usr/bin/env node
// tools/web/build-site.mjs (run as tools/build-site) — writes the page as one
// folder that any static server can serve, at a site root or under a
// sub-path, with no special headers: the layout of tools/web/site.mjs (the same
// one tools/serve serves). The folder is replaced atomically: written beside
// it, then renamed over it.
//
//   tools/build-site --out DIR [--wasm-dir build/wasm] [--mcu-dir build/mcu/mcu]
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { missingNeeds, planSite } from './site.mjs';

const USAGE = `usage: tools/build-site --out DIR [--wasm-dir DIR] [--mcu-dir DIR]

Writes the Atome page, with everything it needs, to DIR (replaced if it
exists): index.html, sw.js, manifest.webmanifest and app-<version>/. Serve
DIR from any static host (e.g. python3 -m http.server -d DIR, or GitHub
Pages). --wasm-dir and --mcu-dir take the wasm modules and the firmware
templates from elsewhere than build/wasm and build/mcu/mcu.
`;

function fail(code, msg) {
  process.stderr.write(`build-site: ${msg}\n`);
  process.exit(code);
}

function parseArgs(argv) {
  const o = { out: null, wasmDir: 'build/wasm', mcuDir: 'build/mcu/mcu' };
  const keys = { out: 'out', 'wasm-dir': 'wasmDir', 'mcu-dir': 'mcuDir' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--help' || a === '-h') { process.stdout.write(USAGE); process.exit(0); }
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(a);
    if (!m || !keys[m[1]]) fail(2, `unknown argument '${a}' (see --help)`);
    let v = m[2];
    if (v === undefined) {
      if (i + 1 >= argv.length || argv[i + 1].startsWith('--')) fail(2, `--${m[1]} needs a value (see --help)`);
      v = argv[++i];
    }
    if (!v) fail(2, `--${m[1]} needs a value`);
    o[keys[m[1]]] = v;
  }
  if (!o.out) fail(2, '--out DIR is required (see --help)');
  return o;
}

// The file that marks a folder as written by this tool (it holds the version):
// only such a folder is replaced.
export const MARK = '.atome-site';
// ours: the mark, or (a site written before the mark existed) sw.js, index.html and an app-<version>/ folder
const ours = (dir) => existsSync(path.join(dir, MARK)) || (existsSync(path.join(dir, 'sw.js')) &&
  existsSync(path.join(dir, 'index.html')) && readdirSync(dir).some((f) => /^app-[0-9a-f]{12}$/.test(f)));

export function buildSite(out, opts = {}) {
  const plan = planSite(opts);
  const dest = path.resolve(out);
  if (existsSync(dest) && readdirSync(dest).length && !ours(dest))
    throw new Error(`${out} exists and is not a site this tool wrote (no ${MARK} in it): refusing to replace it`);
  const tmp = `${dest}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  for (const [p, f] of plan.files) {
    const file = path.join(tmp, p);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, f.body);
  }
  writeFileSync(path.join(tmp, '.nojekyll'), '');   // GitHub Pages: serve the folder as it is
  writeFileSync(path.join(tmp, MARK), `${plan.version}\n`);
  // the old site moves aside, the new one takes its name, then the old goes;
  // if the second rename fails the old site is put back
  const old = `${dest}.old-${process.pid}`;
  const had = existsSync(dest);
  if (had) renameSync(dest, old);
  try { renameSync(tmp, dest); } catch (e) {
    if (had) renameSync(old, dest);
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  rmSync(old, { recursive: true, force: true });
  return plan;
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const gone = (await missingNeeds(o)).map(([f]) => f);
  if (gone.length) fail(1, `missing ${gone.join(', ')}: build ${gone.length > 1 ? 'them' : 'it'} with tools/setup`);
  let plan;
  try { plan = buildSite(o.out, { wasmDir: o.wasmDir, mcuDir: o.mcuDir }); } catch (e) { fail(1, e.message.startsWith(o.out) ? e.message : `cannot write ${o.out}: ${e.message}`); }
  let bytes = 0;
  for (const f of plan.files.values()) bytes += f.body.length;
  process.stdout.write(`${o.out}: ${plan.files.size} files, ${bytes} bytes, version ${plan.version}\n`);
}

const self = process.argv[1] && realpathSync(process.argv[1]);
if (self === fileURLToPath(import.meta.url)) await main();
