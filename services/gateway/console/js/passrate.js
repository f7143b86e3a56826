// A pass rate over recent invocations (a test's, an agent's), drawn:
// each invocation a point at its pass rate with a bar over its 95%
// interval (few runs, a wide bar: a rate people can weigh, not one they
// take at its word). An inline SVG drawn here, described for screen
// readers, the figures in a table.
import {h, svg, when, spanLabels} from './dom.js';
import {enc} from './api.js';

const pct = (v) => `${Math.round(v * 100)}%`;


// passRateChart charts invocations (reliability figures with the
// invocation's id and time, newest first, as the API answers them) oldest
// to newest, left to right.
export function passRateChart(invocations, idBase) {
  const points = [...(invocations || [])].reverse().filter((i) => i.runs > 0);
  const span = points.length ? spanLabels(points[0].created_at_unix_secs, points[points.length - 1].created_at_unix_secs) : [];
  if (!points.length) return h('p', {class: 'muted'}, 'No run has finished in these invocations.');
  const W = 480, H = 200, L = 48, R = 14, T = 12, B = 34;
  const x = (i) => points.length === 1 ? L + (W - L - R) / 2 : L + i * (W - L - R) / (points.length - 1);
  const y = (v) => T + (H - T - B) * (1 - v);
  const titleID = idBase + '-title', descID = idBase + '-desc';
  const rates = points.map((p) => p.pass_rate);
  const desc = `Over ${points.length} invocation${points.length === 1 ? '' : 's'}, oldest first: pass rate from ${pct(rates[0])} to ` +
    `${pct(rates[rates.length - 1])} (lowest ${pct(Math.min(...rates))}); each bar is the rate's 95% interval.`;

  const chart = svg('svg', {viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-labelledby': titleID, 'aria-describedby': descID, class: 'chart-svg'},
    svg('title', {id: titleID}, 'Pass rate per invocation'),
    [0, 0.5, 1].map((v) => [
      svg('line', {class: 'grid', x1: L, x2: W - R, y1: y(v), y2: y(v)}),
      svg('text', {class: 'tick', x: L - 6, y: y(v) + 4, 'text-anchor': 'end'}, pct(v)),
    ]),
    svg('text', {class: 'tick', x: x(0), y: H - 10, 'text-anchor': points.length === 1 ? 'middle' : 'start'}, span[0]),
    points.length > 1 ? svg('text', {class: 'tick', x: x(points.length - 1), y: H - 10, 'text-anchor': 'end'}, span[1]) : null,
    svg('g', {class: 'series pass-rate'},
      points.length > 1 ? svg('polyline', {class: 'line', points: points.map((p, i) => `${x(i)},${y(p.pass_rate)}`).join(' ')}) : null,
      points.map((p, i) => {
        const [low, high] = p.pass_rate_ci95;
        const label = `Pass rate ${pct(p.pass_rate)} (${p.passed} of ${p.runs} runs; 95% interval ${pct(low)} to ${pct(high)}), invocation ${p.invocation_id}, ${when(p.created_at_unix_secs)}`;
        return svg('g', {class: 'point', 'data-invocation': p.invocation_id, 'data-value': p.pass_rate, 'data-low': low, 'data-high': high},
          svg('title', {}, label),
          svg('line', {class: 'interval', x1: x(i), x2: x(i), y1: y(low), y2: y(high)}),
          svg('circle', {cx: x(i), cy: y(p.pass_rate), r: 4.5}));
      })));

  const table = h('table', {class: 'cards', 'aria-label': 'Pass rate per invocation, newest first'},
    h('thead', {}, h('tr', {}, ['Invocation', 'Started', 'Runs', 'Passed', 'Pass rate', '95% interval'].map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, [...points].reverse().map((p) => h('tr', {},
      h('td', {'data-label': 'Invocation'}, h('a', {href: 'invocation.html?id=' + enc(p.invocation_id)}, p.invocation_id)),
      h('td', {'data-label': 'Started'}, when(p.created_at_unix_secs)),
      h('td', {'data-label': 'Runs'}, String(p.runs)),
      h('td', {'data-label': 'Passed'}, String(p.passed)),
      h('td', {'data-label': 'Pass rate'}, pct(p.pass_rate)),
      h('td', {'data-label': '95% interval'}, `${pct(p.pass_rate_ci95[0])} to ${pct(p.pass_rate_ci95[1])}`)))));

  return h('figure', {class: 'chart'},
    chart,
    h('figcaption', {}, h('p', {id: descID, class: 'muted'}, desc)),
    h('details', {}, h('summary', {}, 'The pass rates as a table'), table));
}
