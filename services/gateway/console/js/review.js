// Review the judge's verdicts, keyboard first: a queue of runs to check
// (failed runs, runs whose judge votes disagreed, a sample of passes),
// each marked right or wrong with a note, and the judge report the labels
// make, drawn per judge and test over time. Keys: j / k next and previous
// run, y the verdict is right, n it is wrong, c write a note (Escape goes
// back to the list). The run's own verdict is never changed.
import {get, post, query, enc} from './api.js';
import {h, replace, field, select, say, pageParam} from './dom.js';
import {start, can, failure} from './shell.js';
import {badge} from './common.js';

const KEYS = 'Keys: j / k next and previous run · y the verdict is right · n it is wrong · c write a note (Escape back to the list).';

start(async (main) => {
  const sample = select({name: 'sample'}, [['100', '1 in 10'], ['1000', 'All'], ['0', 'None']], pageParam('sample_per_mille') || '100');
  const msg = h('p', {class: 'msg', role: 'status'});
  const list = h('ol', {class: 'review', 'aria-label': 'Runs to review'});
  const report = h('section', {'aria-labelledby': 'report-h'});
  // Judge models to compare on the same labels (after POST
  // /v1/voiceai/judge/rejudge judged the labelled runs with the other).
  const models = h('input', {name: 'compare', value: pageParam('compare') || '', placeholder: 'gpt-4o,offline-v1'});
  const compareSaid = h('p', {class: 'msg', role: 'status'});
  const compareForm = h('form', {class: 'card filters', 'aria-label': 'Compare judges'}, field('Compare judge models (comma-separated)', models),
    h('button', {type: 'submit'}, 'Compare'), compareSaid);
  compareForm.addEventListener('submit', (e) => { e.preventDefault(); drawReport(); });
  const writable = can('testing.label_run');
  replace(main, h('h1', {}, 'Review verdicts'),
    h('p', {class: 'muted', id: 'review-keys'}, writable ? KEYS : 'Your key may read verdicts and the report, not label them.'),
    h('p', {}, h('a', {href: '#report-h'}, 'The judge report'), ' is below the runs.'),
    h('form', {class: 'card filters', 'aria-label': 'Which runs'}, field('Passed runs drawn for review', sample)),
    msg, list, compareForm, report);

  let items = []; // {run, el, note}
  let at = 0;
  const PAGE = 50;
  // full is whether more runs wait behind the queue's page last read. labelled is the runs labelled here, left out should the
  // queue not have caught up with a label yet.
  let full = false;
  const labelled = new Set();

  // load reads the queue's first runs. Labelled runs leave the queue, so
  // reading it again once a page's runs are labelled brings the next ones.
  // said (what was just done) goes before what it finds; the first run
  // takes the focus unless the reader is choosing the sample (keep).
  async function load(said = '', keep = false) {
    try {
      const q = await get('/v1/voiceai/judge/review-queue' + query({sample_per_mille: sample.value, page_size: PAGE}));
      full = q.has_more;
      items = q.runs.filter((r) => !labelled.has(r.run_id)).map(card);
      replace(list, items.map((it) => it.el));
      at = 0;
      const n = items.length;
      say(msg, said + (n ? `${n} run${n === 1 ? '' : 's'} to review${full ? ', and more after them' : ''}.`
        : said ? 'Nothing left to review.' : 'Nothing to review.'));
      if (!keep) focus(0);
      else if (items.length) showCurrent();
    } catch (e) {
      failure(list, e);
    }
  }

  function card(run) {
    const note = h('textarea', {rows: 2, maxlength: 4000, 'aria-label': `Note on run ${run.run_id}`});
    const verdict = run.condition_result.result;
    const mark = (right) => () => label(it, right);
    const el = h('li', {tabindex: -1, 'data-run': run.run_id, 'aria-describedby': 'review-keys'},
      h('article', {'aria-label': `Run ${run.run_id} of ${run.test_name}`},
        h('h2', {}, run.test_name, ' ', badge(run.status), ' ', h('span', {class: 'muted'}, run.run_id)),
        // Where it came from, to read it whole.
        h('p', {class: 'muted'}, run.test_id ? [h('a', {href: 'tests.html?test=' + enc(run.test_id)}, 'the test'), ' · '] : null,
          h('a', {href: 'invocation.html?id=' + enc(run.invocation_id)}, 'its invocation')),
        h('p', {}, 'Why here: ', run.reasons.map((r) => r.replace(/_/g, ' ')).join(', '),
          run.judge_votes.length > 1 ? ` (votes: ${run.judge_votes.join(', ')})` : ''),
        h('p', {}, h('strong', {}, `Judge (${run.judge_model || 'unknown'}) said: ${verdict}.`), ' ', run.condition_result.rationale?.summary || ''),
        run.error ? h('p', {class: 'msg error'}, run.error) : null,
        h('p', {class: 'muted'}, 'Success conditions:'),
        h('ol', {start: 0}, run.success_conditions.map((c) => h('li', {}, c))),
        h('ul', {class: 'transcript', 'aria-label': 'Agent responses'}, run.agent_responses.filter((m) => m.message).map((m) =>
          h('li', {class: 'turn ' + m.role}, h('p', {class: 'who'}, m.role), h('p', {}, m.message)))),
        writable ? h('div', {class: 'row'}, field('Note', note),
          h('button', {type: 'button', on: {click: mark(true)}}, 'Right (y)'),
          h('button', {type: 'button', class: 'secondary', on: {click: mark(false)}}, 'Wrong (n)')) : null,
        h('p', {class: 'msg', role: 'status'})));
    const it = {run, el, note};
    el.addEventListener('focusin', () => { at = items.indexOf(it); showCurrent(); });
    return it;
  }

  function showCurrent() {
    items.forEach((it, i) => it.el.setAttribute('aria-current', i === at ? 'true' : 'false'));
  }

  function focus(i) {
    if (!items.length) return;
    at = Math.max(0, Math.min(items.length - 1, i));
    showCurrent();
    items[at].el.focus();
    items[at].el.scrollIntoView({block: 'nearest'});
  }

  async function label(it, right) {
    if (it.labelling) return; // a second y, or a double click, while the first is sent
    it.labelling = true;
    const out = it.el.querySelector('article > .msg');
    try {
      const l = await post(`/v1/convai/test-invocations/${enc(it.run.invocation_id)}/runs/${enc(it.run.run_id)}/labels`,
        {verdict_correct: right, note: it.note.value});
      labelled.add(it.run.run_id);
      const said = `Labelled ${it.run.run_id}: the judge was ${right ? 'right' : 'wrong'}` + (l.corrected_result ? ` (should be ${l.corrected_result}).` : '.');
      say(msg, said);
      const i = items.indexOf(it);
      if (i < 0) return drawReport(); // the list was read again meanwhile, without it
      items.splice(i, 1);
      it.el.remove();
      if (items.length) focus(i);
      else if (full) await load(said + ' '); // this page is done, not the queue: read on before saying none are left
      else say(msg, said + ' Nothing left to review.');
      await drawReport();
    } catch (e) {
      say(out, e.message, true);
    } finally {
      it.labelling = false;
    }
  }

  async function drawReport() {
    let rep;
    const compare = models.value.trim();
    say(compareSaid, '');
    try {
      rep = await get('/v1/voiceai/judge/report' + query(compare ? {compare} : {}));
    } catch (e) {
      // Models the API refuses to compare are said beside them: the report
      // is drawn without the comparison, not replaced by the refusal.
      if (!compare || e.code !== 422) return failure(report, e);
      say(compareSaid, e.message, true);
      try {
        rep = await get('/v1/voiceai/judge/report');
      } catch (e2) {
        return failure(report, e2);
      }
    }
    const pct = (r) => r.value === null ? '—' : `${r.value.toFixed(2)} (${r.ci95[0].toFixed(2)}–${r.ci95[1].toFixed(2)})`;
    replace(report, h('h2', {id: 'report-h'}, 'Judge report'),
      h('p', {id: 'report-total'}, `${rep.labels} label${rep.labels === 1 ? '' : 's'} counted.`),
      rep.judges.length ? h('table', {class: 'cards', 'aria-label': 'Judge report'},
        h('thead', {}, h('tr', {}, ['Judge', 'Test', 'Labels', 'Agreement (95%)', 'κ', 'True pass', 'True fail', 'False pass', 'Flips', 'Over time']
          .map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, rep.judges.map((j) => h('tr', {},
          h('td', {'data-label': 'Judge'}, `${j.judge_provider}/${j.judge_model}`),
          h('td', {'data-label': 'Test'}, j.test_name ?? (j.scope === 'conversations' ? `Conversations of ${j.agent_id}` : 'All tests')),
          ...agreementCells(j, pct),
          h('td', {'data-label': 'Flips'}, pct(j.flip_rate)),
          h('td', {'data-label': 'Over time'}, chart(j)))))) : h('p', {class: 'muted'}, 'No labels yet.'),
      rep.compare ? compared(rep.compare, pct) : null);
  }

  // agreementCells are a judge's labels and how it agrees with them: the
  // columns the report and the comparison share.
  function agreementCells(j, pct) {
    return [
      h('td', {'data-label': 'Labels'}, String(j.labels)),
      h('td', {'data-label': 'Agreement (95%)'}, pct(j.agreement)),
      h('td', {'data-label': 'κ'}, j.cohens_kappa === null ? '—' : j.cohens_kappa.toFixed(2)),
      h('td', {'data-label': 'True pass'}, pct(j.true_pass_rate)),
      h('td', {'data-label': 'True fail'}, pct(j.true_fail_rate)),
      h('td', {'data-label': 'False pass'}, pct(j.false_pass_rate))];
  }

  // compared draws judge models side by side on the labelled runs all of
  // them judged.
  function compared(c, pct) {
    return [h('h3', {}, `Judges compared on the same ${c.runs} labelled run${c.runs === 1 ? '' : 's'}`),
      h('table', {class: 'cards', 'aria-label': 'Judges compared'},
        h('thead', {}, h('tr', {}, ['Judge', 'Labels', 'Agreement (95%)', 'κ', 'True pass', 'True fail', 'False pass', 'Judged']
          .map((col) => h('th', {scope: 'col'}, col)))),
        h('tbody', {}, c.judges.map((j) => h('tr', {},
          h('td', {'data-label': 'Judge'}, j.judge_model),
          ...agreementCells(j, pct),
          h('td', {'data-label': 'Judged'}, String(j.judged))))))];
  }

  // chart draws a judge's daily agreement as a small line (SVG, no library).
  function chart(j) {
    const pts = j.series.filter((d) => d.agreement !== null);
    const label = `Agreement by day: ${pts.map((d) => `${d.date} ${d.agreement.toFixed(2)} over ${d.labels}`).join('; ') || 'none'}`;
    const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
    svg.setAttribute('viewBox', '0 0 120 40');
    svg.setAttribute('width', '120');
    svg.setAttribute('height', '40');
    svg.setAttribute('role', 'img');
    svg.setAttribute('aria-label', label);
    const step = pts.length > 1 ? 110 / (pts.length - 1) : 0;
    const xy = pts.map((d, i) => `${5 + i * step},${35 - 30 * d.agreement}`);
    const line = document.createElementNS('http://www.w3.org/2000/svg', pts.length > 1 ? 'polyline' : 'circle');
    if (pts.length > 1) {
      line.setAttribute('points', xy.join(' '));
      line.setAttribute('fill', 'none');
    } else if (pts.length === 1) {
      const [x, y] = xy[0].split(',');
      line.setAttribute('cx', x);
      line.setAttribute('cy', y);
      line.setAttribute('r', '3');
    }
    line.setAttribute('stroke', 'currentColor');
    svg.append(line);
    return svg;
  }

  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const t = e.target;
    if (t instanceof HTMLTextAreaElement || t instanceof HTMLInputElement || t instanceof HTMLSelectElement) {
      if (e.key === 'Escape' && items[at]) { e.preventDefault(); items[at].el.focus(); }
      return;
    }
    // The keys act on the run in hand only while the reader is in the
    // list (or nowhere): on a button or a link they are that control's.
    if (t !== document.body && !list.contains(t)) return;
    const it = items[at];
    switch (e.key) {
      case 'j': case 'ArrowDown': focus(at + 1); break;
      case 'k': case 'ArrowUp': focus(at - 1); break;
      case 'y': if (it && writable) label(it, true); break;
      case 'n': if (it && writable) label(it, false); break;
      case 'c': if (it && writable) it.note.focus(); break;
      default: return;
    }
    e.preventDefault();
  });
  sample.addEventListener('change', () => load('', true));
  await Promise.all([load(), drawReport()]);
});
