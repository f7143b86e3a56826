// The latency a caller hears from an agent: figures as text, and a test's
// p95 time to first token and whole turn across its recent invocations as
// a chart, an inline SVG drawn here (no library, nothing from elsewhere,
// nothing the CSP refuses), described for screen readers and with the
// same figures in a table.
import {h, svg, when, spanLabels} from './dom.js';
import {enc} from './api.js';

// latencyText is one kind of figure of an agent_latency: prefix '' for the
// whole turn, 'first_token_' for the time to first token.
export function latencyText(l, prefix) {
  const get = (k) => l?.[prefix + k];
  if (!l || !l.turns || get('p50_ms') === null || get('p50_ms') === undefined) return '—';
  return `p50 ${get('p50_ms')} ms · p95 ${get('p95_ms')} ms · max ${get('max_ms')} ms`;
}

const SERIES = [
  {key: 'first_token_p95_ms', name: 'First token p95', cls: 'lat-first'},
  {key: 'p95_ms', name: 'Whole turn p95', cls: 'lat-turn'},
];

// niceCeil rounds up to a round number of milliseconds (at least 1).
function niceCeil(v) {
  if (v <= 1) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].map((m) => m * p).find((c) => c >= v);
}

const msLabel = (v) => `${Number.isInteger(v) ? v : v.toFixed(1)} ms`;


// latencyChart charts invocations (a test's reliability.invocations, newest
// first, as the API answers them) oldest to newest, left to right.
export function latencyChart(invocations, idBase) {
  const points = [...(invocations || [])].reverse().filter((i) => i.agent_latency?.turns > 0);
  const span = points.length ? spanLabels(points[0].created_at_unix_secs, points[points.length - 1].created_at_unix_secs) : [];
  if (!points.length) return h('p', {class: 'muted'}, 'No agent turn was recorded in its recent invocations.');
  const W = 480, H = 220, L = 78, R = 14, T = 14, B = 34;
  const values = points.flatMap((p) => SERIES.map((s) => p.agent_latency[s.key])).filter((v) => typeof v === 'number');
  const top = niceCeil(Math.max(0, ...values));
  const x = (i) => points.length === 1 ? L + (W - L - R) / 2 : L + i * (W - L - R) / (points.length - 1);
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const titleID = idBase + '-title', descID = idBase + '-desc';

  const from = (s) => {
    const vs = points.map((p) => p.agent_latency[s.key]).filter((v) => typeof v === 'number');
    return vs.length ? `${s.name.toLowerCase()} from ${vs[0]} ms to ${vs[vs.length - 1]} ms (highest ${Math.max(...vs)} ms)` : `${s.name.toLowerCase()} not recorded`;
  };
  const desc = `Over ${points.length} invocation${points.length === 1 ? '' : 's'}, oldest first: ${SERIES.map(from).join('; ')}.`;

  const chart = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': titleID, 'aria-describedby': descID, class: 'chart-svg'},
    svg('title', {id: titleID}, 'Agent latency p95 per invocation'),
    // Grid and y axis: 0, half and the top, in ms.
    [0, top / 2, top].map((v) => [
      svg('line', {class: 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v)}),
      svg('text', {class: 'tick', x: L - 6, y: y(v) + 4, 'text-anchor': 'end'}, msLabel(v)),
    ]),
    // x: the first and the last invocation's time.
    svg('text', {class: 'tick', x: x(0), y: H - 10, 'text-anchor': points.length === 1 ? 'middle' : 'start'}, span[0]),
    points.length > 1 ? svg('text', {class: 'tick', x: x(points.length - 1), y: H - 10, 'text-anchor': 'end'}, span[1]) : null,
    SERIES.map((s) => {
      const pts = points.map((p, i) => [i, p.agent_latency[s.key], p]).filter(([, v]) => typeof v === 'number');
      return svg('g', {class: 'series ' + s.cls},
        pts.length > 1 ? svg('polyline', {class: 'line', points: pts.map(([i, v]) => `${x(i)},${y(v)}`).join(' ')}) : null,
        pts.map(([i, v, p]) => {
          const label = `${s.name}: ${v} ms, invocation ${p.invocation_id}, ${when(p.created_at_unix_secs)}`;
          const attrs = {class: 'point', 'data-series': s.key, 'data-value': v, 'data-invocation': p.invocation_id};
          // Shapes differ as well as colours: a circle, a square.
          return s.cls === 'lat-turn'
            ? svg('rect', {...attrs, x: x(i) - 4, y: y(v) - 4, width: 8, height: 8}, svg('title', {}, label))
            : svg('circle', {...attrs, cx: x(i), cy: y(v), r: 4.5}, svg('title', {}, label));
        }));
    }));

  const table = h('table', {class: 'cards', 'aria-label': 'Agent latency per invocation, newest first'},
    h('thead', {}, h('tr', {}, ['Invocation', 'Started', 'Turns', 'First token', 'Whole turn'].map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, [...points].reverse().map((p) => h('tr', {},
      h('td', {'data-label': 'Invocation'}, h('a', {href: 'invocation.html?id=' + enc(p.invocation_id)}, p.invocation_id)),
      h('td', {'data-label': 'Started'}, when(p.created_at_unix_secs)),
      h('td', {'data-label': 'Turns'}, String(p.agent_latency.turns)),
      h('td', {'data-label': 'First token'}, latencyText(p.agent_latency, 'first_token_')),
      h('td', {'data-label': 'Whole turn'}, latencyText(p.agent_latency, ''))))));

  return h('figure', {class: 'chart'},
    chart,
    h('figcaption', {}, h('ul', {class: 'legend'}, SERIES.map((s) => h('li', {}, h('span', {class: 'swatch ' + s.cls, 'aria-hidden': 'true'}), s.name))),
      h('p', {id: descID, class: 'muted'}, desc)),
    h('details', {}, h('summary', {}, 'The figures as a table'), table));
}
