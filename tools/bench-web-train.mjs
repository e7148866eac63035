// tools/bench-web-train.mjs — the old spelling of the page's training
// benchmark, kept working (`node tools/bench-web-train.mjs ...`): the
// benchmark is tools/bench/bench-web-train.mjs. Importing it runs it on this
// process's arguments.
import './bench/bench-web-train.mjs';
