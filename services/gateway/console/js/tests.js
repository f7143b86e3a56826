// Tests and folders, running tests on an agent (with repeat), and the
// recent invocations.
import {get, post, query, enc} from './api.js';
import {h, replace, field, select, say, when, pageParam, checked, onSubmit} from './dom.js';
import {start, can, failure} from './shell.js';
import {agentList, badge} from './common.js';
import {latencyText, latencyChart} from './latency.js';
import {passRateChart} from './passrate.js';

const focus = pageParam('test') || '';
// The agent to run on, when the page was opened from it ("Run tests on
// it" on an agent's page): chosen in the run form, and kept by the links
// to folders and tests.
const runOn = pageParam('agent') || '';
// MAX_ENTRIES bounds the folder's entries listed (page by page).
const MAX_ENTRIES = 1000;

start(async (main) => {
  const msg = h('p', {class: 'msg'});
  // One test (?test=, the link from its ticket) is shown in its folder,
  // and its run form runs it, not the folder's ticked tests.
  let test = null, folder = pageParam('folder') || '';
  // Every page of the folder, not the first only: the run takes the ticked
  // tests, and a test not listed could not be ticked (nor seen missing).
  const entries = [];
  let crumbs = [], cursor = '';
  try {
    if (focus) {
      test = await get('/v1/convai/agent-testing/' + enc(focus));
      folder ||= test.parent_folder_id || '';
    }
    do {
      const page = await get('/v1/convai/agent-testing' + query({include_folders: true, parent_folder_id: folder || 'root', page_size: 100, cursor}));
      entries.push(...page.tests);
      cursor = page.has_more ? page.next_cursor : '';
    } while (cursor && entries.length < MAX_ENTRIES);
    if (folder) crumbs = (await get('/v1/convai/agent-testing/folders/' + enc(folder))).folder_path;
  } catch (e) {
    return failure(main, e);
  }
  // Past MAX_ENTRIES the page says the list, and so the run, is partial.
  const partial = cursor ? h('p', {class: 'msg error', role: 'status'},
    `Only the first ${entries.length} entries of this folder are listed: "Run selected tests" runs the ticked tests among them.`) : null;
  const tests = entries.filter((e) => e.entity_type === 'test');
  const boxes = new Map(tests.map((t) => [t.id, h('input', {type: 'checkbox', value: t.id, id: 'run-' + t.id, checked: true})]));
  const runnable = can('testing.run_tests');
  const ticks = runnable && !test; // a test's page runs that test: nothing to tick

  const list = h('table', {class: 'cards', 'aria-label': 'Tests and folders'},
    h('thead', {}, h('tr', {}, [ticks ? 'Run' : null, 'Name', 'Kind', 'Updated'].filter(Boolean).map((c) => h('th', {scope: 'col'}, c)))),
    h('tbody', {}, entries.map((e) => h('tr', {},
      ticks ? h('td', {'data-label': 'Run'}, e.entity_type === 'test' ? [boxes.get(e.id), h('label', {for: 'run-' + e.id, class: 'muted'}, ' include')] : null) : null,
      h('td', {'data-label': 'Name'}, e.entity_type === 'folder'
        ? h('a', {href: 'tests.html' + query({folder: e.id, agent: runOn})}, e.name, ` (${e.children_count ?? 0} inside)`)
        : h('a', {href: 'tests.html' + query({folder, test: e.id, agent: runOn})}, e.name)),
      h('td', {'data-label': 'Kind'}, e.entity_type === 'folder' ? 'folder' : (e.type || 'test')),
      h('td', {'data-label': 'Updated'}, when(e.last_updated_at_unix_secs))))));

  let runForm = null;
  if (runnable && (test || tests.length)) {
    const agents = await agentList().catch(() => []);
    // Among several agents, none is chosen for the person (the newest is
    // not the one they mean more often than another), unless they came
    // from one.
    const choose = agents.length > 1 && !runOn ? [['', 'Choose the agent…']] : [];
    const agent = select({name: 'agent', required: true}, [...choose, ...agents.map((a) => [a.agent_id, a.name])], runOn);
    const repeat = h('input', {type: 'number', name: 'repeat', min: 1, max: 50, value: 1, required: true});
    runForm = h('form', {class: 'card', 'aria-labelledby': 'run-h'}, h('h2', {id: 'run-h'}, test ? 'Run this test' : 'Run tests'),
      test ? h('p', {}, `Runs "${test.name}" alone. To run several tests, tick them in `,
        h('a', {href: 'tests.html' + query({folder, agent: runOn})}, 'its folder'), '.') : null,
      h('div', {class: 'row'}, field('Agent', agent), field('Repeat each test', repeat, '1 to 50 runs'),
        h('button', {type: 'submit'}, test ? 'Run this test' : 'Run selected tests')));
    onSubmit(runForm, async () => {
      const ids = test ? [test.id] : checked(boxes.values());
      if (!ids.length) return say(msg, 'Choose at least one test.', true);
      say(msg, 'Starting…');
      try {
        const inv = await post('/v1/convai/agents/' + enc(agent.value) + '/run-tests',
          {tests: ids.map((test_id) => ({test_id})), repeat_count: Number(repeat.value)});
        location.assign('invocation.html?id=' + enc(inv.id));
      } catch (e) { say(msg, e.message, true); }
    });
  }

  const invocations = h('div', {}, h('p', {class: 'muted'}, 'Loading…'));
  // Each names the agent it ran on: the same tests run on several.
  Promise.all([get('/v1/convai/test-invocations' + query({page_size: 10})), agentList().catch(() => [])]).then(([p, agents]) => replace(invocations, p.results.length
    ? h('ul', {}, p.results.map((i) => h('li', {},
      h('a', {href: 'invocation.html?id=' + enc(i.id)}, i.title || i.id), ' ', badge(i.status),
      h('span', {class: 'muted'}, ` · on ${agents.find((a) => a.agent_id === i.agent_id)?.name ?? i.agent_id}` +
        ` · ${i.passed_count} passed, ${i.failed_count} failed, ${i.pending_count} pending · ${when(i.created_at_unix_secs)}`))))
    : h('p', {class: 'muted'}, 'No invocation yet.')), (e) => replace(invocations, h('p', {class: 'msg error'}, e.message)));

  replace(main,
    h('h1', {}, 'Tests'),
    h('nav', {'aria-label': 'Folder'}, h('a', {href: 'tests.html' + query({agent: runOn})}, 'All tests'),
      crumbs.map((c) => [' / ', h('a', {href: 'tests.html' + query({folder: c.id, agent: runOn}), 'aria-current': c.id === folder && !test ? 'page' : null}, c.name)])),
    msg, partial,
    test ? testCard(test) : null,
    runForm,
    entries.length ? list : h('p', {class: 'muted'}, 'No test here.'),
    h('section', {'aria-labelledby': 'inv-h'}, h('h2', {id: 'inv-h'}, 'Recent invocations'), invocations));
});

// testCard shows one test: what it asks, what passes, how reliable it is
// (its pass rate over its recent invocations, drawn), and how fast its
// agent answered (first token and whole turn) recently.
function testCard(t) {
  const r = t.reliability || {};
  return h('section', {class: 'card', 'aria-labelledby': 'test-h'}, h('h2', {id: 'test-h'}, t.name),
    h('dl', {class: 'facts'},
      h('dt', {}, 'Type'), h('dd', {}, t.type),
      h('dt', {}, 'Success condition'), h('dd', {}, t.success_condition || '—'),
      h('dt', {}, 'Pass rate'), h('dd', {}, r.runs ? `${Math.round(r.pass_rate * 100)}% of ${r.runs} recent runs` : 'not run yet'),
      h('dt', {}, 'First token'), h('dd', {}, latencyText(r.agent_latency, 'first_token_')),
      h('dt', {}, 'Whole turn'), h('dd', {}, latencyText(r.agent_latency, '')),
      h('dt', {}, 'Test id'), h('dd', {}, t.id)),
    r.runs ? [h('h3', {}, 'Pass rate over its recent invocations'), passRateChart(r.invocations, 'test-pass-rate'),
      h('h3', {}, 'Agent latency over its recent invocations'), latencyChart(r.invocations, 'test-latency')] : null,
    (t.chat_history || []).length ? [h('h3', {}, 'Conversation'), h('ol', {class: 'transcript'}, t.chat_history.map((m) =>
      h('li', {class: 'turn ' + (m.role === 'agent' ? 'agent' : 'user')}, h('p', {class: 'who'}, m.role), h('p', {}, m.message ?? ''))))] : null);
}
