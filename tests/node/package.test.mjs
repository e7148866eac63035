// tests/node/package.test.mjs — the JS API as an npm package (packages/atome,
// tools/pack-js; issue 42): the tarball `npm pack` makes holds only its
// `files` list; installed (offline) into an empty folder outside the tree,
// the README's first ```js block prints the native CLI's bytes for its
// settings, the Node command works from the package, and `tsc --strict`
// passes on packages/atome/test/all-exports.ts against the installed
// declarations, which cover every export and every class member of the
// module, and fails on a wrong use of them; the README's browser example,
// served from the install folder by a plain static server, shows the same
// bytes in Chromium.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync, realpathSync, existsSync, statSync,
  createReadStream } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { execFile } from 'node:child_process';
import { repo, run, native, wasmFile, nativeCli } from './artifacts.mjs';
import { launchChromium } from '../../tools/web/chromium.mjs';

const pkgJson = JSON.parse(readFileSync(path.join(repo, 'packages/atome/package.json'), 'utf8'));
const readme = readFileSync(path.join(repo, 'packages/atome/README.md'), 'utf8');
const tsc = path.join(repo, 'node_modules/typescript/bin/tsc');
const TSC_FLAGS = ['--strict', '--noEmit', '--noUnusedLocals', '--target', 'es2022', '--module', 'nodenext',
  '--moduleResolution', 'nodenext', '--lib', 'es2022,dom'];
let tmp, tarball, app, installed;

// Runs file with args in cwd; ATOME_WASM is left out, so the module uses its own default.
function inDir(cwd, file, args, timeout = 240000) {
  const env = { ...process.env, npm_config_update_notifier: 'false' };
  delete env.ATOME_WASM;
  return new Promise((resolve) => execFile(file, args, { cwd, encoding: 'buffer', timeout, maxBuffer: 64 << 20, env },
    (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr: stderr.toString() })));
}

before(async () => {
  wasmFile('simd'); wasmFile('threads'); nativeCli();
  tmp = realpathSync(mkdtempSync(path.join(tmpdir(), 'atome-pkg-')));
  const r = await run(path.join(repo, 'tools/pack-js'), ['--out', path.join(tmp, 'pack')], { timeout: 240000 });
  assert.equal(r.code, 0, `tools/pack-js failed: ${r.stderr}`);
  tarball = r.stdout.toString().trim();
  app = path.join(tmp, 'app');
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  // a local tarball with no dependencies: no network (--offline)
  const i = await inDir(app, 'npm', ['install', '--offline', '--no-audit', '--no-fund', tarball]);
  assert.equal(i.code, 0, `npm install of the tarball failed: ${i.stderr}`);
  installed = path.join(app, 'node_modules/atome');
});
after(() => { if (tmp) rmSync(tmp, { recursive: true, force: true }); });

// Whether `file` is covered by an entry of a package.json "files" list (a file or a folder).
const covered = (file, files) => file === 'package.json' || files.some((f) => file === f || file.startsWith(f.replace(/\/$/, '') + '/'));

test('the tarball holds nothing outside its files list, and all of it', async () => {
  const dry = await inDir(path.join(path.dirname(tarball), 'atome'), 'npm', ['pack', '--dry-run', '--json']);
  assert.equal(dry.code, 0, dry.stderr);
  const listed = JSON.parse(dry.stdout.toString())[0].files.map((f) => f.path).sort();
  const tar = await inDir(tmp, 'tar', ['-tzf', tarball]);
  assert.equal(tar.code, 0, tar.stderr);
  const inTar = tar.stdout.toString().trim().split('\n').filter((l) => !l.endsWith('/')).map((l) => l.replace(/^package\//, '')).sort();
  assert.deepEqual(inTar, listed, 'npm pack --dry-run and the tarball disagree');
  for (const f of inTar) assert.ok(covered(f, pkgJson.files), `${f} is in the tarball but not in "files"`);
  for (const f of pkgJson.files) assert.ok(inTar.includes(f), `"files" names ${f}, which the tarball lacks`);
  // the module is the tree's file, byte for byte (the package keeps the tree's layout)
  assert.deepEqual(readFileSync(path.join(installed, 'wasm/atome.mjs')), readFileSync(path.join(repo, 'wasm/atome.mjs')));
  assert.deepEqual(readFileSync(path.join(installed, 'build/wasm/atome.wasm')), readFileSync(wasmFile('simd')));
});

// The README's first ```js block, and the settings of its generateBytes call.
function readmeExample() {
  const m = readme.match(/```js\n([\s\S]*?)```/);
  assert.ok(m, 'packages/atome/README.md has no ```js block');
  const code = m[1];
  assert.ok(code.split('\n').filter((l) => l.trim()).length <= 10, 'the Node example is longer than ten lines');
  const model = code.match(/modelUrls\['([^']+)'\]/);
  const call = code.match(/generateBytes\((.*)\);/);
  assert.ok(model && call, 'the Node example no longer opens modelUrls[...] and calls generateBytes(prompt, options)');
  const [prompt, opts] = new Function(`return [${call[1]}];`)();
  return { code, model: model[1], prompt, opts };
}

test("the README's Node example, run from the installed package, prints the CLI's bytes", async () => {
  const { code, model, prompt, opts } = readmeExample();
  writeFileSync(path.join(app, 'story.mjs'), code);
  const got = await inDir(app, process.execPath, ['story.mjs']);
  assert.equal(got.code, 0, got.stderr);
  const flags = ['generate', '--model', path.join(repo, 'models', `${model}.atome`),
    '--prompt-hex', Buffer.from(prompt).toString('hex'), '--n', String(opts.n)];
  const names = { temperature: '--temperature', topK: '--top-k', topP: '--top-p', seed: '--seed', window: '--window' };
  for (const [k, flag] of Object.entries(names)) if (opts[k] !== undefined) flags.push(flag, String(opts[k]));
  for (const k of Object.keys(opts)) assert.ok(k === 'n' || k in names, `no CLI flag for the example's option ${k}`);
  const want = await native(flags);
  assert.equal(want.code, 0, want.stderr);
  assert.equal(want.stdout.length, opts.n);
  assert.ok(got.stdout.equals(want.stdout),
    `the example printed ${JSON.stringify(got.stdout.toString())}, the CLI ${JSON.stringify(want.stdout.toString())}`);
  // the model file it opened is the installed package's, the tree's bytes
  assert.deepEqual(readFileSync(path.join(installed, 'models', `${model}.atome`)), readFileSync(path.join(repo, 'models', `${model}.atome`)));
});

test('the Node command runs from the installed package (its own atome.wasm and models)', async () => {
  const args = ['node_modules/atome/wasm/atome.mjs', 'generate', '--model', 'node_modules/atome/models/atome-60k.atome',
    '--prompt', 'Once upon a time', '--n', '64', '--temperature', '0.8', '--top-k', '40', '--seed', '7'];
  const got = await inDir(app, process.execPath, args);
  assert.equal(got.code, 0, got.stderr);
  const want = await native(['generate', '--model', path.join(repo, 'models/atome-60k.atome'), '--prompt', 'Once upon a time',
    '--n', '64', '--temperature', '0.8', '--top-k', '40', '--seed', '7']);
  assert.ok(got.stdout.equals(want.stdout));
});

test('the installed package trains on two threads (its atome-threads.wasm and worker) with the bits of one', async () => {
  writeFileSync(path.join(app, 'threads.mjs'), `import { loadAtome } from 'atome';
const losses = [];
for (const threads of [2, 1]) {
  const atome = await loadAtome(undefined, { threads });
  const m = atome.createModel('atome-60k', { seed: 3, lr: 3e-3, batch: 8, seq: 64, steps: 3 });
  m.setData(new TextEncoder().encode('Once upon a time there was a cat who liked the sun. '.repeat(400)));
  losses.push(atome.threads, m.trainSteps(3).loss);
  m.free(); atome.close();
}
console.log(JSON.stringify(losses));
`);
  const got = await inDir(app, process.execPath, ['threads.mjs']);
  assert.equal(got.code, 0, got.stderr);
  const [t2, loss2, t1, loss1] = JSON.parse(got.stdout.toString());
  assert.deepEqual([t2, t1], [2, 1]);
  assert.ok(Number.isFinite(loss1) && loss1 > 0);
  assert.equal(loss2, loss1);
});

test('tsc --strict passes on the all-exports example against the installed declarations', async () => {
  copyFileSync(path.join(repo, 'packages/atome/test/all-exports.ts'), path.join(app, 'all-exports.ts'));
  const ok = await inDir(app, process.execPath, [tsc, ...TSC_FLAGS, 'all-exports.ts']);
  assert.equal(ok.code, 0, `tsc: ${ok.stdout}${ok.stderr}`);
  // and the declarations are really checked: a wrong use fails
  writeFileSync(path.join(app, 'wrong.ts'), "import { loadAtome } from 'atome';\n" +
    "const a = await loadAtome();\nconst n: string = a.open(new Uint8Array(0)).vocab;\nconsole.log(n);\n");
  const bad = await inDir(app, process.execPath, [tsc, ...TSC_FLAGS, 'wrong.ts']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stdout.toString(), /wrong\.ts\(3,7\): error TS2322/);
});

// Declared names: the module's value exports and each exported class's members (TypeScript's checker).
function declared(ts, file) {
  const program = ts.createProgram([file], { strict: true, noEmit: true, target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'] });
  const checker = program.getTypeChecker();
  const mod = checker.getSymbolAtLocation(program.getSourceFile(file));
  const exports = checker.getExportsOfModule(mod).filter((s) => s.flags & ts.SymbolFlags.Value);
  const classes = {};
  for (const s of exports.filter((x) => x.flags & ts.SymbolFlags.Class)) {
    classes[s.name] = checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(s)).map((p) => p.name).sort();
  }
  return { names: exports.map((s) => s.name).sort(), classes };
}

// A class's prototype members, its own and inherited (Model and PackedModel
// share a base), as the declared type lists them.
function protoMembers(cls) {
  const names = [];
  for (let p = cls.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) names.push(...Object.getOwnPropertyNames(p));
  return names.filter((n) => n !== 'constructor');
}

// Runtime names: the module's exports and each class's prototype members plus a live instance's own fields.
async function runtime(mod) {
  const atome = await mod.loadAtome();
  const packed = atome.open(readFileSync(path.join(installed, 'models/atome-60k.atome')));
  const model = atome.createModel('atome-tiny', { seed: 1 });
  const live = { Atome: atome, Model: model, PackedModel: packed };
  const classes = {};
  for (const [name, obj] of Object.entries(live)) {
    const proto = protoMembers(mod[name]);
    classes[name] = [...new Set([...proto, ...Object.keys(obj)])].sort();
  }
  model.free(); packed.free();
  return { names: Object.keys(mod).sort(), classes };
}

test('the declarations cover every export and class member of the module, and nothing else', async () => {
  const ts = createRequire(import.meta.url)(path.join(repo, 'node_modules/typescript'));
  const d = declared(ts, path.join(installed, 'wasm/atome.d.mts'));
  const mod = await import(pathToFileURL(path.join(installed, 'wasm/atome.mjs')).href);
  const r = await runtime(mod);
  assert.deepEqual(d.names, r.names, 'exports: declared vs module');
  assert.deepEqual(Object.keys(d.classes).sort(), Object.keys(r.classes).sort(), 'exported classes');
  for (const c of Object.keys(r.classes)) assert.deepEqual(d.classes[c], r.classes[c], `members of ${c}: declared vs module`);
  // the all-exports example imports every export by name (and --noUnusedLocals makes it use each)
  const src = readFileSync(path.join(repo, 'packages/atome/test/all-exports.ts'), 'utf8');
  const imported = src.match(/import \{([^}]*)\} from 'atome'/)[1].split(',').map((s) => s.trim()).filter(Boolean).sort();
  assert.deepEqual(imported, r.names, 'packages/atome/test/all-exports.ts must import every export');
});

// A plain static server of root (no COOP/COEP headers), with the types module scripts and wasm need.
const TYPES = { '.wasm': 'application/wasm', '.mjs': 'text/javascript', '.html': 'text/html; charset=utf-8',
  '.atome': 'application/octet-stream' };
function serve(root) {
  const server = createServer((req, res) => {
    const file = path.resolve(root, '.' + decodeURIComponent(new URL(req.url, 'http://x').pathname));
    const type = TYPES[path.extname(file)];
    if (!file.startsWith(root + path.sep) || !type || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'Content-Type': type, 'Cache-Control': 'no-store' });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

test("the README's browser example, served from the install folder, shows the CLI's bytes", async (t) => {
  const m = readme.match(/```html\n([\s\S]*?)```/);
  assert.ok(m, 'packages/atome/README.md has no ```html block');
  const model = m[1].match(/modelUrls\['([^']+)'\]/);
  const call = m[1].match(/\.generate\((.*?)\)\) \{/);
  assert.ok(model && call, 'the browser example no longer opens modelUrls[...] and loops over generate(prompt, options)');
  const [prompt, opts] = new Function(`return [${call[1]}];`)();
  writeFileSync(path.join(app, 'index.html'), `<!doctype html><meta charset="utf-8">\n${m[1]}`);
  const want = await native(['generate', '--model', path.join(repo, 'models', `${model[1]}.atome`), '--prompt-hex',
    Buffer.from(prompt).toString('hex'), '--n', String(opts.n), '--temperature', String(opts.temperature),
    '--top-k', String(opts.topK), '--seed', String(opts.seed)]);
  assert.equal(want.code, 0, want.stderr);
  const server = await serve(app);
  const browser = await launchChromium();
  t.after(async () => { await browser.close(); server.close(); });
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`http://127.0.0.1:${server.address().port}/index.html`);
  const text = new TextDecoder().decode(want.stdout, { stream: true });
  await page.waitForFunction((n) => document.getElementById('out').textContent.length >= n, text.length, { timeout: 120000 })
    .catch(() => assert.fail(`the page did not finish: ${errors.join('; ')}`));
  assert.equal(await page.textContent('#out'), text);
  assert.deepEqual(errors, []);
});
