#!/usr/bin/env node
// tools/web/pack-js.mjs — the JS API as an npm package: stages packages/atome/
// (package.json, README.md, LICENSE.md) with the files its `files` list names,
// taken from the tree (wasm/*.mjs, wasm/atome.d.mts, models/) and the wasm
// build (build/wasm/*.wasm), then runs `npm pack` on the staged folder.
//
//   tools/pack-js [--out DIR]      (default build/package; ATOME_WASM_BUILD: the wasm build)
//
// The package keeps the repository's layout (wasm/atome.mjs beside
// ../build/wasm/ and ../models/), so the module is the tree's file byte for
// byte and finds its .wasm files and models by the same relative URLs. Every
// `new URL('…', import.meta.url)` of a staged module must name a staged file,
// or this fails (a new asset the module loads must join the `files` list).
// The package's version must equal the project's (CMakeLists.txt), when it
// declares one. Prints the tarball's path on stdout; errors are one line on
// stderr, exit 1 (exit 2 for a bad argument).
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, renameSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkgDir = path.join(repo, 'packages/atome');
const wasmBuild = process.env.ATOME_WASM_BUILD ?? path.join(repo, 'build/wasm');

class Fail extends Error {
  constructor(msg, code = 1) { super(msg); this.code = code; }
}

function parseArgs(argv) {
  const o = { out: path.join(repo, 'build/package') };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') {
      const lines = readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1);
      const head = lines.slice(0, lines.findIndex((l) => !l.startsWith('//')));
      process.stdout.write(head.map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
      process.exit(0);
    }
    if (a === '--out' && i + 1 < argv.length) o.out = path.resolve(argv[++i]);
    else if (a.startsWith('--out=')) o.out = path.resolve(a.slice(6));
    else throw new Fail(`unexpected argument '${a}' (tools/pack-js [--out DIR])`, 2);
  }
  return o;
}

// Where a packaged file comes from: the package folder, the wasm build, or the tree.
function sourceOf(file) {
  if (existsSync(path.join(pkgDir, file))) return path.join(pkgDir, file);
  if (file.startsWith('build/wasm/')) {
    const f = path.join(wasmBuild, file.slice('build/wasm/'.length));
    if (!existsSync(f)) throw new Fail(`missing ${f}: build it first (cmake --preset wasm && cmake --build --preset wasm)`);
    return f;
  }
  const f = path.join(repo, file);
  if (!existsSync(f)) throw new Fail(`missing ${f}, named in packages/atome/package.json "files"`);
  return f;
}

// The relative URLs a staged module resolves against import.meta.url must exist in the package.
function checkAssets(stage, files) {
  for (const f of files.filter((x) => x.endsWith('.mjs'))) {
    const text = readFileSync(path.join(stage, f), 'utf8');
    for (const m of text.matchAll(/new URL\(\s*'([^']+)'\s*,\s*import\.meta\.url\s*\)/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(f), m[1]));
      if (!files.includes(target)) throw new Fail(`${f} loads '${m[1]}' (${target}), which the package's "files" list lacks`);
    }
  }
}

// The package's version must be the project's (CMakeLists.txt `project(atome VERSION x.y.z ...)`, when it names one).
function checkVersion(pkg) {
  const m = readFileSync(path.join(repo, 'CMakeLists.txt'), 'utf8').match(/project\(\s*atome\s+VERSION\s+([0-9.]+)/);
  if (m && m[1] !== pkg.version)
    throw new Fail(`packages/atome/package.json has version ${pkg.version}, the project (CMakeLists.txt) ${m[1]}`);
}

function stageAndPack(out) {
  const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  checkVersion(pkg);
  const files = pkg.files;
  const stage = path.join(out, 'atome');
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  cpSync(path.join(pkgDir, 'package.json'), path.join(stage, 'package.json'));
  for (const f of files) {
    mkdirSync(path.dirname(path.join(stage, f)), { recursive: true });
    cpSync(sourceOf(f), path.join(stage, f));
  }
  checkAssets(stage, files);
  const tmp = path.join(out, `.pack-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    const json = execFileSync('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: stage, encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_update_notifier: 'false' } });
    const name = JSON.parse(json)[0].filename;
    const dest = path.join(out, name);
    renameSync(path.join(tmp, name), dest);   // the tarball appears only when complete
    return dest;
  } catch (e) {
    if (e instanceof Fail) throw e;
    throw new Fail(`npm pack failed: ${(e.stderr || e.message || String(e)).trim().split('\n').pop()}`);
  } finally { rmSync(tmp, { recursive: true, force: true }); }
}

try {
  const { out } = parseArgs(process.argv.slice(2));
  process.stdout.write(stageAndPack(out) + '\n');
} catch (e) {
  process.stderr.write(`pack-js: ${e.message}\n`);
  process.exitCode = e.code === 2 ? 2 : 1;
}
