// The load test page, driven as a person reads it: the chart of latency
// against concurrent callers is the page's own SVG (four lines, a point
// per step, at the heights the API's figures give), the budget's broken
// step is marked and named, the table holds the same figures, and the
// form starts another load test. axe-core checks the page; no third-party
// request, CSP breach or script error.
import {test, before, after} from 'node:test';
import assert from 'node:assert/strict';
import {api, base, key, launch, watch, accessible, shoot} from './helpers.mjs';

const loadTestID = process.env.VOICEAI_E2E_LOAD_TEST_ID;
const agentID = process.env.VOICEAI_E2E_AGENT_ID;
const testID = process.env.VOICEAI_E2E_TEST_ID;

let browser, page, problems;

before(async () => {
  assert.ok(base && key && loadTestID && agentID && testID, 'the Go test passes the stack and a finished load test');
  browser = await launch();
  const context = await browser.newContext({baseURL: base, viewport: {width: 1440, height: 900}});
  context.setDefaultTimeout(10000);
  page = await context.newPage();
  problems = watch(page);
  await page.goto('/console');
  await page.getByLabel('API key').fill(key);
  await page.keyboard.press('Enter');
  await page.getByRole('heading', {name: 'Triage queue'}).waitFor();
});

after(async () => {
  await browser?.close();
});

test('the chart and the table show the load test', async () => {
  const lt = await api('GET', '/v1/convai/load-tests/' + loadTestID);
  assert.equal(lt.status, 'completed');
  await page.goto('/console/loadtest.html?id=' + encodeURIComponent(loadTestID));
  await page.getByRole('heading', {name: 'Latency against concurrent callers'}).waitFor();
  const chart = page.getByRole('img', {name: /Latency \(ms\) against concurrent callers/});
  await chart.waitFor();
  const drawn = await page.evaluate(() => {
    const svg = document.getElementById('latency-chart');
    const lines = [...svg.querySelectorAll('polyline')].map((p) => ({
      name: p.dataset.series, points: p.getAttribute('points').trim().split(' ').map((xy) => xy.split(',').map(Number)),
    }));
    return {ns: svg.namespaceURI, lines, broke: svg.querySelector('.broke')?.dataset.step, desc: svg.querySelector('desc').textContent};
  });
  assert.equal(drawn.ns, 'http://www.w3.org/2000/svg');
  assert.deepEqual(drawn.lines.map((l) => l.name), ['First token p50', 'First token p95', 'Turn p50', 'Turn p95']);
  for (const l of drawn.lines) assert.equal(l.points.length, lt.steps.length, l.name);
  // Heights follow the figures: a step's turn p95 is drawn no lower (a
  // smaller y) than its first-token p50, and the lines rise with the
  // callers as the fake endpoint slowed.
  const ftP50 = drawn.lines[0].points, turnP95 = drawn.lines[3].points;
  for (let i = 0; i < lt.steps.length; i++) assert.ok(turnP95[i][1] <= ftP50[i][1], `step ${i + 1}`);
  assert.ok(ftP50[2][1] < ftP50[0][1], 'the last step is drawn higher than the first');
  // x follows the steps, left to right.
  assert.ok(ftP50[0][0] < ftP50[1][0] && ftP50[1][0] < ftP50[2][0]);
  assert.equal(drawn.broke, String(lt.broke_budget_at_step));
  for (const s of lt.steps) assert.ok(drawn.desc.includes(`${s.callers} callers: first token p50 ${s.first_token_ms.p50} ms, p95 ${s.first_token_ms.p95} ms`), drawn.desc);

  const verdict = await page.locator('#verdict').textContent();
  const broken = lt.steps[lt.broke_budget_at_step];
  assert.match(verdict, new RegExp(`^The budget broke at step ${broken.step + 1} \\(${broken.callers} callers\\): first token p95 ${broken.first_token_ms.p95} ms over`));
  const rows = await page.locator('#steps tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.equal(rows.length, lt.steps.length);
  lt.steps.forEach((s, i) => {
    assert.equal(rows[i][1], String(s.callers));
    assert.equal(rows[i][5], `${s.first_token_ms.p50} / ${s.first_token_ms.p95}`);
    assert.equal(rows[i][6], `${s.turn_ms.p50} / ${s.turn_ms.p95}`);
    assert.equal(rows[i][8], s.met_budget ? 'met' : 'broken');
  });
  await accessible(page, 'load-test');
  await shoot(page, 'load-test');
  assert.deepEqual(problems, []);
});

test('the form starts a load test and the page follows it', async () => {
  await page.goto('/console/loadtest.html');
  await page.getByRole('heading', {name: 'Start a load test'}).waitFor();
  await accessible(page, 'load-test-start');
  await page.getByLabel('Agent').selectOption(agentID);
  await page.getByLabel('Test id').fill(testID);
  await page.getByLabel('Steps').fill('1,2');
  await page.getByRole('button', {name: 'Start'}).click();
  await page.waitForURL(/loadtest\.html\?id=/);
  await page.locator('#verdict', {hasText: 'Every step met the budget.'}).waitFor({timeout: 30000});
  const id = new URL(page.url()).searchParams.get('id');
  const lt = await api('GET', '/v1/convai/load-tests/' + id);
  assert.equal(lt.status, 'completed');
  assert.deepEqual(lt.steps.map((s) => s.callers), [1, 2]);
  assert.deepEqual(problems, []);
});
