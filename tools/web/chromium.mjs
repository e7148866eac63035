// tools/web/chromium.mjs — the one way the project starts a browser: Debian's
// Chromium (never a downloaded one) driven by playwright-core, headless, with
// the flags that keep it quiet and off the network. The page tests and the
// web benchmarks all launch through here.
import { existsSync } from 'node:fs';

export const CHROMIUM = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find((f) => existsSync(f));
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// playwright-core's `chromium`, or an Error that says how to get it.
export async function playwrightChromium() {
  if (!CHROMIUM) throw new Error('Chromium not found (/usr/lib/chromium/chromium, /usr/bin/chromium): run tools/setup');
  try {
    return (await import('playwright-core')).chromium;
  } catch (e) {
    throw new Error(`playwright-core cannot be imported (${e.message}): run tools/setup (npm ci)`);
  }
}

// A headless browser, or with `profile` a persistent context in that folder.
export async function launchChromium({ profile = null } = {}) {
  const chromium = await playwrightChromium();
  const opts = { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS };
  return profile ? chromium.launchPersistentContext(profile, opts) : chromium.launch(opts);
}
