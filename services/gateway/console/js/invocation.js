// One test invocation, followed live until every run has finished: each
// run's verdict, the judge's rationale, the transcript (agent responses,
// tool calls and the mocked results), pass rates, the agent's latency
// (first token and whole turn), and its JUnit XML.
import {api, post, enc} from './api.js';
import {h, replace, say, when, pageParam, button} from './dom.js';
import {start, noneNamed, can} from './shell.js';
import {showRunning, badge, toolBlocks} from './common.js';
import {latencyText} from './latency.js';

const id = pageParam('id') || '';

start((main) => (id ? showRunning(main, '/v1/convai/test-invocations/' + enc(id),
  h('p', {}, h('a', {href: 'tests.html'}, '← Tests')), 'Test invocation', render) : noneNamed(main, 'test invocation', 'tests.html', 'Tests')));

// onlyNotPassed keeps the run list to the runs that did not pass (a
// repeated invocation has hundreds of cards); kept across redraws.
let onlyNotPassed = false;

function render(inv, agent, msg, body) {
  const again = () => render(inv, agent, msg, body);
  const runs = inv.test_runs;
  const count = (s) => runs.filter((r) => r.status === s).length;
  const done = inv.status !== 'running';
  const finished = count('passed') + count('failed');
  const byTest = new Map();
  for (const r of runs) {
    const g = byTest.get(r.test_id) || {name: r.test_name, runs: 0, passed: 0};
    g.runs += r.status === 'passed' || r.status === 'failed' ? 1 : 0;
    g.passed += r.status === 'passed' ? 1 : 0;
    byTest.set(r.test_id, g);
  }
  replace(body,
    h('section', {class: 'card', 'aria-labelledby': 'sum-h'}, h('h2', {id: 'sum-h'}, 'Summary'),
      h('dl', {class: 'facts'},
        h('dt', {}, 'Status'), h('dd', {}, badge(inv.status)),
        h('dt', {}, 'Agent'), h('dd', {}, h('a', {href: 'agents.html?id=' + enc(inv.agent_id)}, agent)),
        h('dt', {}, 'Started'), h('dd', {}, when(inv.created_at)),
        h('dt', {}, 'Runs'), h('dd', {}, `${runs.length} (each test ${inv.repeat_count}×): ${count('passed')} passed, ${count('failed')} failed, ${count('pending')} pending` +
          (count('cancelled') ? `, ${count('cancelled')} cancelled` : '')),
        h('dt', {}, 'Pass rate'), h('dd', {}, finished ? `${Math.round(100 * count('passed') / finished)}%` : '—'),
        // What a caller waits before the agent speaks, then its whole turn.
        h('dt', {}, 'First token'), h('dd', {}, latencyText(inv.agent_latency, 'first_token_')),
        h('dt', {}, 'Whole turn'), h('dd', {}, latencyText(inv.agent_latency, '') +
          (inv.agent_latency?.turns ? ` (${inv.agent_latency.turns} agent turn${inv.agent_latency.turns === 1 ? '' : 's'})` : ''))),
      h('label', {for: 'progress'}, 'Progress'),
      h('progress', {id: 'progress', max: runs.length || 1, value: runs.length - count('pending')}),
      done ? button('Download JUnit XML', () => junit(msg), {class: 'secondary'}) : null,
      // Its runs not started yet will not run; those under way finish.
      !done && can('testing.cancel_invocation') ? button('Cancel the runs not started', () => cancel(msg), {class: 'danger'}) : null),
    h('section', {'aria-labelledby': 'rates-h'}, h('h2', {id: 'rates-h'}, 'Pass rate per test'),
      h('table', {class: 'cards'}, h('thead', {}, h('tr', {}, ['Test', 'Passed', 'Pass rate'].map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, [...byTest].map(([tid, g]) => h('tr', {},
          h('td', {'data-label': 'Test'}, h('a', {href: 'tests.html?test=' + enc(tid)}, g.name)),
          h('td', {'data-label': 'Passed'}, `${g.passed} of ${g.runs}`),
          h('td', {'data-label': 'Pass rate'}, g.runs ? `${Math.round(100 * g.passed / g.runs)}%` : '—')))))),
    h('section', {'aria-labelledby': 'runs-h'}, h('h2', {id: 'runs-h'}, 'Runs'),
      h('label', {}, h('input', {type: 'checkbox', checked: onlyNotPassed, 'data-focus': 'only-not-passed',
        on: {change: (e) => { onlyNotPassed = e.target.checked; again(); }}}), ' Only the runs that did not pass'),
      runs.filter((r) => !onlyNotPassed || r.status !== 'passed').map(runCard)));
}

async function cancel(msg) {
  try {
    await post('/v1/convai/test-invocations/' + enc(id) + '/cancel');
    say(msg, 'Cancelled: the runs not started will not run; those under way finish.');
  } catch (e) {
    say(msg, e.message, true);
  }
}

async function junit(msg) {
  try {
    const res = await api('GET', '/v1/convai/test-invocations/' + enc(id) + '?format=junit', undefined, {raw: true});
    const url = URL.createObjectURL(await res.blob());
    const a = h('a', {href: url, download: `${id}.junit.xml`, hidden: true});
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    say(msg, 'JUnit XML downloaded.');
  } catch (e) { say(msg, e.message, true); }
}

function runCard(r) {
  const cr = r.condition_result || {};
  const rationale = cr.rationale || {};
  return h('article', {class: 'card', 'aria-label': `Run of ${r.test_name}`},
    h('h3', {}, r.test_name, ' ', badge(r.status)),
    h('p', {class: 'muted'}, `Run ${r.test_run_id}`),
    r.status === 'passed' || r.status === 'failed' ? [
      h('h4', {}, 'Verdict: ', cr.result || r.status),
      rationale.summary ? h('p', {}, rationale.summary) : null,
      (rationale.messages || []).length ? h('ul', {}, rationale.messages.map((m) => h('li', {}, m))) : null,
    ] : null,
    (r.agent_responses || []).length ? h('details', {},
      h('summary', {}, `Transcript (${r.agent_responses.length} turn${r.agent_responses.length === 1 ? '' : 's'})`),
      h('ol', {class: 'transcript'}, r.agent_responses.map((m) =>
        h('li', {class: 'turn ' + (m.role === 'agent' ? 'agent' : 'user')},
          h('p', {class: 'who'}, m.role), m.message ? h('p', {}, m.message) : null, toolBlocks(m))))) : null);
}
