// tests/node/get-tinystories.test.mjs — tools/models/get-tinystories offline: a
// server on 127.0.0.1 (started here) serves small generated stand-ins for
// TinyStoriesV2-GPT4-train.txt / -valid.txt, with Range support and ways to
// misbehave. Checked: the prepared text (split on <|endoftext|>, cleaned,
// deduplicated, split by story hash, deterministic); no network, a download
// cut short (then resumed with a Range request), a size that does not match
// the server's Content-Length and a full disk (a 256 KiB tmpfs) each give one
// line on stderr, exit 1 and no output file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repo, mulberry32 } from './artifacts.mjs';
import { cleanStory, storyKey } from '../../tools/models/get-tinystories.mjs';

const TOOL = path.join(repo, 'tools/models/get-tinystories');
const MARK = '<|endoftext|>';
const NAMES = ['Lily', 'Ben', 'Tom', 'Sue', 'Max', 'Mia', 'Sam', 'Anna'];
const THINGS = ['ball', 'kite', 'cat', 'tree', 'boat', 'cake', 'box', 'star'];

// Generated stories with every case the preparation handles.
function makeFiles() {
  const r = mulberry32(7);
  const pick = (a) => a[r() % a.length];
  const story = (i) => `Once upon a time, there was a little ${pick(THINGS)} named ${pick(NAMES)}. ` +
    `${pick(NAMES)} liked to play with the ${pick(THINGS)} every day, story ${i}.\n` +
    `One day, ${pick(NAMES)} found a big ${pick(THINGS)} in the park. They were very happy.`;
  const train = [], valid = [];
  for (let i = 0; i < 300; i++) train.push(story(i));
  train.push(train[3]);                                                   // exact duplicate
  train.push(train[5].replace(/ /g, '  ').replace(/\n/g, '\r\n'));        // duplicate up to whitespace / CRLF
  train.push('too short.');                                               // under 80 characters
  train.push('and then they went home and had a nice dinner with mom and dad, the end of the day was fine.');  // lower case
  train.push(`Tim said, \u00e2\u20ac\u0153Hello!\u00e2\u20ac\u009d and it\u00e2\u20ac\u2122s fine.\u0007 He smiled at the big red ball in the yard.   \n\n\nThe end.`);
  for (let i = 300; i < 340; i++) valid.push(story(i));
  valid.push(train[10]);                                                  // also in train: dropped here
  const join = (a) => Buffer.from(a.map((s) => `${s}\n${MARK}\n`).join(''));
  // big enough to overflow the 256 KiB tmpfs of the full-disk test
  const filler = [];
  for (let i = 0; i < 1400; i++) filler.push(story(1000 + i));
  return { 'TinyStoriesV2-GPT4-train.txt': Buffer.concat([join(train), join(filler)]), 'TinyStoriesV2-GPT4-valid.txt': join(valid) };
}

let server, base, files, tmp;
const mode = { truncate: null, lieHead: null };
const ranges = [];

before(async () => {
  files = makeFiles();
  tmp = mkdtempSync(path.join(tmpdir(), 'atome-ts-'));
  server = createServer((req, res) => {
    const name = decodeURIComponent(req.url.slice(1));
    const body = files[name];
    if (!body) { res.writeHead(404).end(); return; }
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'Content-Length': body.length + (mode.lieHead === name ? 10 : 0), 'Accept-Ranges': 'bytes' }).end();
      return;
    }
    let start = 0;
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (m) { start = Number(m[1]); ranges.push([name, start]); }
    const part = body.subarray(start);
    res.writeHead(m ? 206 : 200, { 'Content-Length': part.length, 'Accept-Ranges': 'bytes',
      ...(m ? { 'Content-Range': `bytes ${start}-${body.length - 1}/${body.length}` } : {}) });
    if (mode.truncate === name) {
      mode.truncate = null;
      res.write(part.subarray(0, part.length >> 1), () => res.destroy());
      return;
    }
    res.end(part);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${server.address().port}/`;
});
after(() => { server.close(); rmSync(tmp, { recursive: true, force: true }); });

function tool(args) {
  return new Promise((resolve) => execFile(TOOL, args, { timeout: 60000 }, (err, stdout, stderr) =>
    resolve({ code: err ? err.code : 0, stdout, stderr })));
}
const outputs = (dir) => (existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('tinystories-') || f.includes('.tmp-')) : []);
const stories = (file) => readFileSync(file, 'utf8').split(`\n${MARK}\n`).slice(0, -1);

let reference;

test('downloads and prepares train / valid text the way ../shared/data/README.md describes', async () => {
  const out = path.join(tmp, 'ok');
  const r = await tool(['--out', out, '--url-base', base]);
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  const train = stories(path.join(out, 'tinystories-train.txt')), valid = stories(path.join(out, 'tinystories-valid.txt'));
  assert.equal(j.train_stories, train.length);
  assert.equal(j.valid_stories, valid.length);
  assert.equal(j.dropped_short, 2);
  assert.equal(j.dropped_duplicates, 3);
  assert.ok(readFileSync(path.join(out, 'tinystories-train.txt'), 'utf8').endsWith(`${MARK}\n`));
  const all = [...train, ...valid];
  assert.equal(all.length, j.pieces - 5);
  const keys = all.map((s) => storyKey(s).toString('hex'));
  assert.equal(new Set(keys).size, keys.length, 'no story twice');
  for (const s of all) {
    assert.ok(s.length >= 80 && !/^[a-z]/.test(s), `kept a piece it should drop: ${s.slice(0, 40)}`);
    assert.ok(!/\r|\n\n|[ \t]\n|[\u0000-\u0008\u000b-\u001f]/.test(s), `not cleaned: ${JSON.stringify(s.slice(0, 60))}`);
    assert.equal(cleanStory(s), s);
  }
  const tim = all.find((s) => s.startsWith('Tim said'));
  assert.equal(tim, 'Tim said, “Hello!” and it’s fine. He smiled at the big red ball in the yard.\nThe end.');
  // the split follows the key: about 10% to valid, and every story where its hash says
  for (const s of train) assert.ok(storyKey(s).readUInt32BE(0) >= 0.1 * 2 ** 32);
  for (const s of valid) assert.ok(storyKey(s).readUInt32BE(0) < 0.1 * 2 ** 32);
  assert.ok(valid.length > 0.04 * all.length && valid.length < 0.2 * all.length, `${valid.length} of ${all.length} in valid`);
  assert.deepEqual(outputs(out).sort(), ['tinystories-train.txt', 'tinystories-valid.txt']);
  assert.ok(!existsSync(path.join(out, '.partial')), 'the downloads are removed once prepared');
  reference = { train: readFileSync(path.join(out, 'tinystories-train.txt')), valid: readFileSync(path.join(out, 'tinystories-valid.txt')) };
});

test('no network: one clear line, no output', async () => {
  const dead = createServer();
  await new Promise((r) => dead.listen(0, '127.0.0.1', r));
  const port = dead.address().port;
  await new Promise((r) => dead.close(r));     // a port nobody listens on
  const out = path.join(tmp, 'nonet');
  const r = await tool(['--out', out, '--url-base', `http://127.0.0.1:${port}/`]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`^get-tinystories: cannot reach 127\\.0\\.0\\.1:${port}: the connection was refused\\n$`));
  assert.deepEqual(outputs(out), []);
});

test('a download cut short: one line, no output; the next run resumes it with a Range request', async () => {
  assert.ok(reference, 'needs the first test');
  const out = path.join(tmp, 'cut');
  mode.truncate = 'TinyStoriesV2-GPT4-train.txt';
  const r = await tool(['--out', out, '--url-base', base]);
  assert.equal(r.code, 1);
  assert.match(r.stderr.trim().split('\n').at(-1),
    /^get-tinystories: TinyStoriesV2-GPT4-train\.txt: the download stopped at \d+ of \d+ bytes; run the command again to resume it$/);
  assert.deepEqual(outputs(out), []);
  ranges.length = 0;
  const r2 = await tool(['--out', out, '--url-base', base]);
  assert.equal(r2.code, 0, r2.stderr);
  assert.ok(ranges.some(([n, s]) => n === 'TinyStoriesV2-GPT4-train.txt' && s > 0), 'resumed with a Range request');
  assert.ok(readFileSync(path.join(out, 'tinystories-train.txt')).equals(reference.train));
  assert.ok(readFileSync(path.join(out, 'tinystories-valid.txt')).equals(reference.valid));
});

test('a size that does not match the server\'s Content-Length: one line, no output, no part kept', async () => {
  const out = path.join(tmp, 'lie');
  mode.lieHead = 'TinyStoriesV2-GPT4-valid.txt';
  const r = await tool(['--out', out, '--url-base', base]);
  mode.lieHead = null;
  assert.equal(r.code, 1);
  assert.match(r.stderr.trim().split('\n').at(-1), /^get-tinystories: TinyStoriesV2-GPT4-valid\.txt: size mismatch: /);
  assert.deepEqual(outputs(out), []);
  assert.ok(!existsSync(path.join(out, '.partial', 'TinyStoriesV2-GPT4-valid.txt.part')));
});

test('a full disk: one line, no output', async () => {
  const out = path.join(tmp, 'full');
  mkdirSync(out);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k', 'tmpfs', out]);
  } catch (e) {
    assert.fail(`cannot mount a small tmpfs for the full-disk case (needs root, as in CI): ${e.message}`);
  }
  try {
    const r = await tool(['--out', out, '--url-base', base]);
    assert.equal(r.code, 1);
    assert.match(r.stderr.trim().split('\n').at(-1), /^get-tinystories: .*the disk is full/);
    assert.deepEqual(outputs(out), []);
  } finally { execFileSync('umount', [out]); }
});
