// Times the triage queue in headless Chromium, for make bench: from the
// start of a navigation to the queue page until its first page of tickets
// is shown and usable (the page's own 'queue-interactive' mark, in the
// browser's clock). Prints one JSON line: {"runs", "p50_ms", "max_ms"}.
// Usage: VOICEAI_BASE_URL=… VOICEAI_API_KEY=<admin key> ./run.sh queuebench.mjs [runs]
import {base, key, launch} from './helpers.mjs';

const runs = Number(process.argv[2] || 15);
const browser = await launch();
try {
  const context = await browser.newContext({baseURL: base, viewport: {width: 1440, height: 900}});
  const signIn = await context.request.post('/console/session', {data: {api_key: key}});
  if (!signIn.ok()) throw new Error(`sign in: ${signIn.status()} ${await signIn.text()}`);
  const page = await context.newPage();
  const took = [];
  for (let i = 0; i <= runs; i++) {
    await page.goto('/console/');
    const ms = await page.waitForFunction(() => {
      const [m] = performance.getEntriesByName('queue-interactive');
      return m ? m.startTime : false; // milliseconds since the navigation started
    }, null, {timeout: 30_000}).then((h) => h.jsonValue());
    if (i > 0) took.push(ms); // the first warms the browser's cache, as a person's second visit would
  }
  took.sort((a, b) => a - b);
  console.log(JSON.stringify({runs, p50_ms: Math.round(took[Math.floor(took.length / 2)]), max_ms: Math.round(took.at(-1))}));
} finally {
  await browser.close();
}
