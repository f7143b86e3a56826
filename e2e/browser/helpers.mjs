// Shared by the browser tests: the API as a client with the key (to seed
// and to check each step), the browser, accessibility checks and
// screenshots.
import assert from 'node:assert/strict';
import {mkdirSync, readFileSync} from 'node:fs';
import {createRequire} from 'node:module';
import {join} from 'node:path';
import {chromium} from 'playwright-core';

export const base = (process.env.VOICEAI_BASE_URL || '').replace(/\/$/, '');
export const key = process.env.VOICEAI_API_KEY || '';
export const artifacts = process.env.VOICEAI_ARTIFACTS || join(process.cwd(), 'artifacts');
mkdirSync(artifacts, {recursive: true});

// api calls the platform with the key, as a script would.
export async function api(method, path, body) {
  const res = await fetch(base + path, {
    method, headers: {'x-api-key': key, ...(body === undefined ? {} : {'content-type': 'application/json'})},
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let data = text;
  try { data = JSON.parse(text); } catch { /* not JSON */ }
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 300)}`);
  return data;
}

// eventually polls an API check until it holds (the platform's read
// models follow their streams within milliseconds).
export async function eventually(what, check, ms = 10000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (e) { last = e; }
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}${last ? ' (' + last.message + ')' : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function launch() {
  return chromium.launch({
    executablePath: process.env.VOICEAI_CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
}

// watch records what a page must never do: open a dialog (an injected
// script), break its CSP, fail a script, ask anything of another origin,
// or send a write to the API without an Idempotency-Key.
export function watch(page) {
  const problems = [];
  page.on('dialog', async (d) => { problems.push('dialog: ' + d.message()); await d.dismiss(); });
  page.on('pageerror', (e) => problems.push('page error: ' + e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) problems.push('CSP: ' + m.text());
  });
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(base + '/') && !u.startsWith('data:') && !u.startsWith('blob:')) problems.push('third-party request: ' + u);
    if (r.method() !== 'GET' && u.startsWith(base + '/v1/') && !r.headers()['idempotency-key']) {
      problems.push('a write without an Idempotency-Key: ' + r.method() + ' ' + u);
    }
  });
  return problems;
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

// accessible runs axe-core on the page as it is and fails on serious or
// critical violations. axe is evaluated through the DevTools protocol,
// which the page's CSP does not govern (an injected <script> it would refuse).
export async function accessible(page, name) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => window.axe.run(document, {resultTypes: ['violations']}));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`), [],
    `${name}: serious or critical accessibility violations`);
}

// shoot saves the page at a phone's and a desktop's width, and checks
// that nothing is wider than the phone's screen.
export async function shoot(page, name) {
  for (const width of [390, 1440]) {
    await page.setViewportSize({width, height: 900});
    if (width === 390) {
      const [overflow, culprits] = await page.evaluate(() => {
        const w = document.documentElement.clientWidth;
        const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > w + 1)
          .slice(-3).map((e) => `${e.tagName.toLowerCase()}.${e.className} "${(e.textContent || '').slice(0, 40)}"`);
        return [document.documentElement.scrollWidth - w, wide];
      });
      assert.ok(overflow <= 1, `${name}: ${overflow}px wider than a 390px screen: ${culprits.join('; ')}`);
    }
    await page.screenshot({path: join(artifacts, `${name}-${width}.png`), fullPage: true});
  }
  await page.setViewportSize({width: 1440, height: 900});
}
