// tools/research.mjs — the old spelling of the research harness, kept working
// (`node tools/research.mjs ...`): the harness is tools/harness/research.mjs
// and tools/research is its command. Importing it runs it on this process's
// arguments.
export * from './harness/research.mjs';
