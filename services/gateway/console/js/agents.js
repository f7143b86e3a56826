// Agents: the list, and one agent with its tickets and test invocations
// (their pass rates drawn).
import {get, query, enc} from './api.js';
import {h, replace, field, say, when, pageParam, onSubmit} from './dom.js';
import {start, can, shown, backTo} from './shell.js';
import {badge} from './common.js';
import {passRateChart} from './passrate.js';

const id = pageParam('id') || '';

start((main) => (id ? detail(main) : list(main)));

async function list(main) {
  const msg = h('p', {class: 'msg'});
  const search = h('input', {type: 'search', name: 'search'});
  const form = h('form', {class: 'row', role: 'search', 'aria-label': 'Find agents'}, field('Search', search), h('button', {type: 'submit'}, 'Search'));
  const box = h('div', {});
  replace(main, h('h1', {}, 'Agents'), form, msg, box);
  async function load() {
    try {
      const page = await get('/v1/convai/agents' + query({search: search.value.trim(), page_size: 100}));
      replace(box, page.agents.length ? h('table', {class: 'cards', 'aria-label': 'Agents'},
        h('thead', {}, h('tr', {}, ['Name', 'Tags', 'Last call', 'Created'].map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, page.agents.map((a) => h('tr', {},
          h('td', {'data-label': 'Name'}, h('a', {href: 'agents.html?id=' + enc(a.agent_id)}, a.name), a.archived ? ' (archived)' : ''),
          h('td', {'data-label': 'Tags'}, a.tags.join(', ') || '—'),
          h('td', {'data-label': 'Last call'}, when(a.last_call_time_unix_secs)),
          h('td', {'data-label': 'Created'}, when(a.created_at_unix_secs))))))
        : h('p', {class: 'muted'}, 'No agent found.'));
      say(msg, page.has_more ? 'The first 100 agents; search to narrow.' : '');
    } catch (e) { say(msg, e.message, true); }
  }
  onSubmit(form, () => load());
  await load();
}

async function detail(main) {
  const a = await shown(main, '/v1/convai/agents/' + enc(id), backTo('agents.html', 'Agents'));
  if (!a) return;
  const tickets = h('div', {}, h('p', {class: 'muted'}, 'Loading…'));
  const invocations = h('div', {}, h('p', {class: 'muted'}, 'Loading…'));
  replace(main, h('p', {}, h('a', {href: 'agents.html'}, '← Agents')), h('h1', {}, a.name),
    h('div', {class: 'split'},
      h('section', {class: 'card', 'aria-labelledby': 'prompt-h'}, h('h2', {id: 'prompt-h'}, 'System prompt'),
        h('pre', {}, a.system_prompt || '(none)')),
      h('section', {class: 'card', 'aria-labelledby': 'facts-h'}, h('h2', {id: 'facts-h'}, 'Details'),
        h('dl', {class: 'facts'},
          h('dt', {}, 'Agent id'), h('dd', {}, a.agent_id),
          h('dt', {}, 'Type'), h('dd', {}, a.agent_type ?? '—'),
          h('dt', {}, 'Tags'), h('dd', {}, a.tags.join(', ') || '—'),
          h('dt', {}, 'Created'), h('dd', {}, when(a.created_at_unix)),
          h('dt', {}, 'Updated'), h('dd', {}, when(a.metadata.updated_at_unix_secs))),
        can('testing.run_tests') ? h('p', {}, h('a', {href: 'tests.html' + query({agent: id})}, 'Run tests on it')) : null)),
    h('section', {'aria-labelledby': 'tk-h'}, h('h2', {id: 'tk-h'}, 'Tickets'),
      h('p', {}, h('a', {href: 'index.html?agent=' + enc(id)}, 'Its tickets in the triage queue')), tickets),
    h('section', {'aria-labelledby': 'inv-h'}, h('h2', {id: 'inv-h'}, 'Test invocations'), invocations));
  get('/v1/convai/agents/' + enc(id) + '/triage-tickets' + query({page_size: 20})).then((p) => replace(tickets,
    p.agent_conversation_tickets.length ? h('ul', {}, p.agent_conversation_tickets.map((t) => h('li', {},
      h('a', {href: 'ticket.html?id=' + enc(t.agentqa_ticket_id)}, t.title || '(untitled)'), ' ', badge(t.status), ' ',
      t.priority ? badge(t.priority) : null)))
      : h('p', {class: 'muted'}, 'No ticket.')), (e) => replace(tickets, h('p', {class: 'msg error'}, e.message)));
  get('/v1/convai/test-invocations' + query({agent_id: id, page_size: 10})).then((p) => replace(invocations,
    p.results.length ? [
      h('h3', {}, 'Pass rate over its recent invocations'),
      passRateChart(p.results.filter((i) => i.reliability)
        .map((i) => ({...i.reliability, invocation_id: i.id, created_at_unix_secs: i.created_at_unix_secs})), 'agent-pass-rate'),
      h('ul', {}, p.results.map((i) => h('li', {},
        h('a', {href: 'invocation.html?id=' + enc(i.id)}, i.title || i.id), ' ', badge(i.status),
        h('span', {class: 'muted'}, ` · ${i.passed_count} passed, ${i.failed_count} failed · ${when(i.created_at_unix_secs)}`))))]
      : h('p', {class: 'muted'}, 'No invocation.')), (e) => replace(invocations, h('p', {class: 'msg error'}, e.message)));
}
