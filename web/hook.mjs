// web/hook.mjs — the page's test hook, window.__atome, and the only module
// that writes it (the others call these functions). Its fields, as the tests
// read them (tests/node/web-*.test.mjs):
//   saves       saves of the training run that landed in IndexedDB
//   savedStep   the step of the latest of them (-1: none yet)
//   saving      true while a save is in flight
//   runId       the id of the run this tab trains (or trained last)
//   events      ['error', line], ['generated', n], ['copied', bytes], ['download', name, bytes],
//               ['standalone', board, expect_hex], ['train', type, step], ['val', step, bpb],
//               ['minute', measure]: a minute run's measure (web/train-worker.mjs), the thread count the run takes, the cores, the budget left after it, the steps chosen
//   whyLines()  the parsed "why this byte" lines of the latest generation
//   saveNow()   saves the training run at once

const hook = (window.__atome = { saves: 0, savedStep: -1, runId: null, events: [] });

export function testEvent(...event) { hook.events.push(event); }
export function testRunId(id) { hook.runId = id; }
export function testSaving() { hook.saving = true; }
export function testSaved(step) {
  hook.saves++;
  hook.savedStep = step;
  hook.saving = false;
}
export function testSaveFailed() { hook.saving = false; }
// whyLines, saveNow: functions the tests call
export function testExpose(name, fn) { hook[name] = fn; }
