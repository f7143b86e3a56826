// A load test: each step's time to first token and whole turn (p50 and
// p95) drawn against the step's simultaneous callers, as an SVG this
// module builds (no third-party script: the CSP allows none), with the
// same figures in a table, the failures by reason, and the step at which
// the budget broke. Without an id, a form starts one.
import {api, enc} from './api.js';
import {h, replace, say, when, pageParam, field, onSubmit} from './dom.js';
import {start, can} from './shell.js';
import {agentList, badge, showRunning} from './common.js';

const id = pageParam('id') || '';

start((main) => {
  if (!id) return startForm(main);
  return showRunning(main, '/v1/convai/load-tests/' + enc(id),
    h('p', {}, h('a', {href: 'loadtest.html'}, '← Start a load test')), 'Load test', render);
});

function render(lt, agent, msg, body) {
  const b = lt.latency_budget || {};
  const broke = lt.broke_budget_at_step;
  replace(body,
    h('section', {class: 'card', 'aria-labelledby': 'sum-h'}, h('h2', {id: 'sum-h'}, 'Summary'),
      h('dl', {class: 'facts'},
        h('dt', {}, 'Status'), h('dd', {}, badge(lt.status)),
        h('dt', {}, 'Agent'), h('dd', {}, h('a', {href: 'agents.html?id=' + enc(lt.agent_id)}, agent)),
        h('dt', {}, 'Test'), h('dd', {}, h('a', {href: 'tests.html?test=' + enc(lt.test_id)}, lt.test_name)),
        h('dt', {}, 'Started'), h('dd', {}, when(lt.created_at_unix_secs)),
        h('dt', {}, 'Steps'), h('dd', {}, lt.steps.map((s) => s.callers).join(' → ') + ' callers, ' + lt.turns_per_caller + ' turn(s) each'),
        h('dt', {}, 'Budget (p95)'), h('dd', {}, budgetText(b)),
        h('dt', {}, 'Result'), h('dd', {id: 'verdict'}, verdict(lt)))),
    h('section', {'aria-labelledby': 'chart-h'}, h('h2', {id: 'chart-h'}, 'Latency against concurrent callers'),
      chart(lt.steps, b, broke)),
    h('section', {'aria-labelledby': 'steps-h'}, h('h2', {id: 'steps-h'}, 'Steps'), stepsTable(lt.steps)),
    failures(lt.steps));
}

function budgetText(b) {
  const parts = [];
  if (b.first_token_p95_ms) parts.push(`first token ${b.first_token_p95_ms} ms`);
  if (b.turn_p95_ms) parts.push(`whole turn ${b.turn_p95_ms} ms`);
  return parts.length ? parts.join(', ') : 'none (a step meets it when no turn fails)';
}

function verdict(lt) {
  if (lt.broke_budget_at_step !== null && lt.broke_budget_at_step !== undefined) {
    const s = lt.steps[lt.broke_budget_at_step];
    const why = (s.budget_breaches || []).map((x) => `${x.metric.replaceAll('_', ' ')} ${x.measured_ms} ms over ${x.budget_ms} ms`);
    if (s.failed_turns) why.push(`${s.failed_turns} turn(s) failed`);
    return `The budget broke at step ${s.step + 1} (${s.callers} callers): ${why.join('; ')}.`;
  }
  return lt.status === 'completed' ? 'Every step met the budget.' : 'No step has broken the budget yet.';
}

const fmt = (p, k) => (p ? String(p[k]) : '—');

function stepsTable(steps) {
  const cols = ['Step', 'Callers', 'Status', 'Turns', 'Failed', 'First token p50 / p95 (ms)', 'Turn p50 / p95 (ms)', 'Overhead p50 / p95 (µs)', 'Budget'];
  return h('table', {class: 'cards', id: 'steps'},
    h('thead', {}, h('tr', {}, cols.map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, steps.map((s) => h('tr', {},
      h('td', {'data-label': 'Step'}, String(s.step + 1)),
      // Fewer at once when the runners could not start them all together.
      h('td', {'data-label': 'Callers'}, String(s.callers) + (s.peak_callers != null && s.peak_callers < s.callers ? ` (${s.peak_callers} at once)` : '')),
      h('td', {'data-label': 'Status'}, badge(s.status)),
      h('td', {'data-label': 'Turns'}, String(s.turns)),
      h('td', {'data-label': 'Failed'}, s.status === 'completed' ? `${s.failed_turns} (${(100 * s.failed_share).toFixed(1)}%)` : '—'),
      h('td', {'data-label': 'First token p50 / p95 (ms)'}, `${fmt(s.first_token_ms, 'p50')} / ${fmt(s.first_token_ms, 'p95')}`),
      h('td', {'data-label': 'Turn p50 / p95 (ms)'}, `${fmt(s.turn_ms, 'p50')} / ${fmt(s.turn_ms, 'p95')}`),
      h('td', {'data-label': 'Overhead p50 / p95 (µs)'}, `${fmt(s.overhead_us, 'p50')} / ${fmt(s.overhead_us, 'p95')}`),
      h('td', {'data-label': 'Budget'}, s.met_budget === null || s.met_budget === undefined ? '—' : badge(s.met_budget ? 'met' : 'broken'))))));
}

function failures(steps) {
  const rows = steps.flatMap((s) => (s.failures || []).map((f) => [s, f]));
  if (!rows.length) return null;
  return h('section', {'aria-labelledby': 'fail-h'}, h('h2', {id: 'fail-h'}, 'Failed turns, by reason'),
    h('ul', {id: 'failures'}, rows.map(([s, f]) => h('li', {}, `Step ${s.step + 1} (${s.callers} callers): ${f.count} × ${f.reason}`))));
}

// The chart: one point per finished step, evenly spaced and labelled by
// its callers; four lines (first token and whole turn, p50 and p95) told
// apart by their dash and marker as well as their colour; the budgets as
// dashed horizontal lines; the step that broke the budget marked.
const SVG = 'http://www.w3.org/2000/svg';
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

export function chart(steps, budget, broke) {
  const W = 640, H = 300, L = 56, R = 16, T = 16, B = 44;
  const done = steps.filter((x) => x.first_token_ms && x.turn_ms);
  const series = [
    {name: 'First token p50', key: 'first_token_ms', p: 'p50', cls: 'lt-first', dash: null, mark: 'circle'},
    {name: 'First token p95', key: 'first_token_ms', p: 'p95', cls: 'lt-first', dash: '6 4', mark: 'square'},
    {name: 'Turn p50', key: 'turn_ms', p: 'p50', cls: 'lt-turn', dash: null, mark: 'circle'},
    {name: 'Turn p95', key: 'turn_ms', p: 'p95', cls: 'lt-turn', dash: '6 4', mark: 'square'},
  ];
  const budgets = [['First token budget', budget.first_token_p95_ms, 'lt-first'], ['Turn budget', budget.turn_p95_ms, 'lt-turn']].filter(([, v]) => v);
  const top = Math.max(1, ...done.flatMap((x) => [x.turn_ms.p95, x.first_token_ms.p95]), ...budgets.map(([, v]) => v));
  const yMax = niceCeil(top * 1.1);
  const x = (i) => L + (steps.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (steps.length - 1));
  const y = (v) => T + (H - T - B) * (1 - v / yMax);
  const desc = done.length
    ? done.map((st) => `${st.callers} callers: first token p50 ${st.first_token_ms.p50} ms, p95 ${st.first_token_ms.p95} ms; turn p50 ${st.turn_ms.p50} ms, p95 ${st.turn_ms.p95} ms`).join('. ') + '.'
    : 'No step has finished yet.';
  const svg = s('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-labelledby': 'chart-title chart-desc', id: 'latency-chart'},
    s('title', {id: 'chart-title'}, 'Latency (ms) against concurrent callers'),
    s('desc', {id: 'chart-desc'}, desc));
  for (let k = 0; k <= 4; k++) {
    const v = (yMax * k) / 4;
    svg.append(s('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'grid'}),
      // A quarter of a small top is not whole: 1.5, not 2 on a line at 1.5.
      s('text', {x: L - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'tick'}, Number.isInteger(v) ? v : v.toFixed(1)));
  }
  steps.forEach((st, i) => svg.append(s('text', {x: x(i), y: H - B + 18, 'text-anchor': 'middle', class: 'tick'}, st.callers)));
  svg.append(s('text', {x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle', class: 'axis'}, 'simultaneous callers (one step each)'),
    s('text', {x: 12, y: T + (H - T - B) / 2, 'text-anchor': 'middle', class: 'axis', transform: `rotate(-90 12 ${T + (H - T - B) / 2})`}, 'ms'));
  for (const [name, v, cls] of budgets) {
    svg.append(s('line', {x1: L, x2: W - R, y1: y(v), y2: y(v), class: 'budget ' + cls, 'stroke-dasharray': '2 3'}),
      s('text', {x: W - R, y: y(v) - 4, 'text-anchor': 'end', class: 'tick'}, `${name} ${v} ms`));
  }
  if (broke !== null && broke !== undefined) {
    svg.append(s('line', {x1: x(broke), x2: x(broke), y1: T, y2: H - B, class: 'broke', 'data-step': broke}),
      s('text', {x: x(broke) - 4, y: T + 10, 'text-anchor': 'end', class: 'tick broke-label'}, 'budget broke'));
  }
  for (const se of series) {
    const pts = steps.map((st, i) => [i, st[se.key] && st[se.key][se.p]]).filter(([, v]) => v !== undefined && v !== null);
    if (!pts.length) continue;
    svg.append(s('polyline', {points: pts.map(([i, v]) => `${x(i)},${y(v)}`).join(' '), class: 'series ' + se.cls, 'stroke-dasharray': se.dash,
      'data-series': se.name}));
    for (const [i, v] of pts) {
      const mark = se.mark === 'circle'
        ? s('circle', {cx: x(i), cy: y(v), r: 4, class: 'mark ' + se.cls})
        : s('rect', {x: x(i) - 4, y: y(v) - 4, width: 8, height: 8, class: 'mark ' + se.cls});
      mark.append(s('title', {}, `${se.name} at ${steps[i].callers} callers: ${v} ms`));
      svg.append(mark);
    }
  }
  const legend = h('ul', {class: 'legend'}, series.map((se) => h('li', {class: se.cls},
    `${se.name}: ${se.dash ? 'dashed' : 'solid'} line, ${se.mark === 'circle' ? 'round' : 'square'} markers`)));
  return h('figure', {class: 'chart'}, svg, h('figcaption', {}, legend, h('span', {class: 'muted'}, 'The table below has the same figures.')));
}

function niceCeil(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

async function startForm(main) {
  const msg = h('p', {class: 'msg'});
  if (!can('testing.start_load_test')) {
    replace(main, h('h1', {}, 'Load test'), h('p', {}, 'This key may not start load tests (it needs convai_write).'));
    return;
  }
  const agents = await agentList().catch(() => []);
  // Among several agents, none is chosen for the person.
  const agent = h('select', {name: 'agent_id', required: true},
    agents.length > 1 ? h('option', {value: ''}, 'Choose the agent…') : null, agents.map((a) => h('option', {value: a.agent_id}, a.name)));
  const test = h('input', {name: 'test_id', required: true, spellcheck: 'false', autocomplete: 'off'});
  const steps = h('input', {name: 'steps', required: true, value: '1,10,50', pattern: '\\s*\\d+(\\s*,\\s*\\d+)*\\s*', spellcheck: 'false'});
  const turns = h('input', {name: 'turns_per_caller', type: 'number', min: 1, max: 20, value: 1});
  const form = h('form', {class: 'card', 'aria-labelledby': 'start-h'},
    h('h1', {id: 'start-h'}, 'Start a load test'),
    field('Agent', agent), field('Test id', test, 'Its agent turn is what every caller plays.'),
    field('Steps', steps, 'Simultaneous callers of each step, comma-separated, one step after another.'),
    field('Turns per caller', turns), h('button', {type: 'submit'}, 'Start'), msg);
  onSubmit(form, async () => {
    say(msg, 'Starting…');
    try {
      const lt = await api('POST', '/v1/convai/agents/' + enc(agent.value) + '/load-tests', {
        test_id: test.value.trim(), steps: steps.value.split(',').map((v) => parseInt(v, 10)), turns_per_caller: parseInt(turns.value, 10) || 1,
      });
      location.assign('loadtest.html?id=' + enc(lt.id));
    } catch (e) { say(msg, e.message, true); }
  });
  replace(main, form);
}
