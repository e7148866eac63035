#!/usr/bin/env node
// tools/web/make-icons.mjs — renders the page's app icons (web/icons/*.png, used
// by the web app manifest tools/web/site.mjs writes and by index.html) from their
// SVGs in Debian's Chromium. Run it after changing web/icons/*.svg; the PNGs
// are committed.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from './chromium.mjs';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../web/icons');
const OUT = [['atome.svg', 'atome-192.png', 192], ['atome.svg', 'atome-512.png', 512], ['atome.svg', 'atome-180.png', 180],
  ['atome-maskable.svg', 'atome-maskable-512.png', 512]];

const browser = await launchChromium();
try {
  for (const [svg, png, size] of OUT) {
    const page = await browser.newPage({ viewport: { width: size, height: size } });
    const src = `data:image/svg+xml;base64,${readFileSync(path.join(dir, svg)).toString('base64')}`;
    await page.setContent(`<style>html,body{margin:0;background:transparent}img{display:block}</style><img src="${src}" width="${size}" height="${size}">`);
    await page.waitForFunction(() => document.images[0].complete);
    await page.screenshot({ path: path.join(dir, png), omitBackground: true });
    await page.close();
    process.stdout.write(`web/icons/${png}: ${size}x${size}\n`);
  }
} finally { await browser.close(); }
