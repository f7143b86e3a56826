// What several pages share: names of agents and of the people tickets may
// be assigned to, fetched once per page.
import {get, query, enc} from './api.js';
import {h, replace, select} from './dom.js';
import {shown, followLive, session, can} from './shell.js';

export const STATUSES = ['open', 'in_progress', 'resolved'];
export const PRIORITIES = ['low', 'medium', 'high', 'urgent'];
export const label = (s) => String(s ?? '').replaceAll('_', ' ');

// allPages is the items (page[field]) of every page of a listing at path,
// the first 1,000 at most.
export async function allPages(path, field) {
  const out = [];
  let cursor = '';
  do {
    const page = await get(path + query({page_size: 100, cursor}));
    out.push(...page[field]);
    cursor = page.has_more ? page.next_cursor : '';
  } while (cursor && out.length < 1000);
  return out;
}

let agents = null;
// agentList is every agent (the first 1,000), newest first.
export async function agentList() {
  if (!agents) agents = await allPages('/v1/convai/agents', 'agents');
  return agents;
}

export async function agentName(id) {
  const a = (await agentList().catch(() => [])).find((x) => x.agent_id === id);
  return a ? a.name : id;
}

// showRunning is the page of something that runs (an invocation, a load
// test), read from path: back (a link), the heading, a message line, and
// a body that render(item, agent, msg, body) fills, again each time the
// item is read while it runs.
export async function showRunning(main, path, back, heading, render) {
  let item = await shown(main, path, back);
  if (!item) return;
  const agent = await agentName(item.agent_id);
  const msg = h('p', {class: 'msg'});
  const body = h('div', {});
  replace(main, back, h('h1', {}, heading), msg, body);
  render(item, agent, msg, body);
  followLive(msg, () => item.status, async () => {
    item = await get(path);
    render(item, agent, msg, body);
  });
}

const assignable = new Map();
// assignees are the members a ticket of the agent may be assigned to.
export function assignees(agentID) {
  if (!assignable.has(agentID)) {
    assignable.set(agentID, get('/v1/convai/agents/' + enc(agentID) + '/triage-tickets/assignable-users').catch(() => []));
  }
  return assignable.get(agentID);
}

export function personName(users, id) {
  if (!id) return 'Unassigned';
  const u = users.find((x) => x.user_id === id);
  if (u) return u.first_name || u.email;
  if (id === session?.user_id && session.user_name) return session.user_name;
  return id;
}

// actors are the people who may have acted on a ticket, to name them:
// the members a ticket may be assigned to, and the service accounts (whose
// keys sign most people in to the console), where the key may list them.
export async function actors(agentID) {
  const users = await assignees(agentID);
  if (!can('identity.list_accounts')) return users;
  const accounts = await get('/v1/service-accounts').then((a) => a['service-accounts'], () => []);
  return [...users, ...accounts.map((a) => ({user_id: a.service_account_user_id, first_name: a.name + ' (service account)'}))];
}

// Controls that change a ticket in place.
export function statusSelect(ticket, props) {
  const opts = ticket.status === 'merged' ? [['merged', 'merged']] : STATUSES.map((s) => [s, label(s)]);
  return select({...props, disabled: props.disabled || ticket.status === 'merged'}, opts, ticket.status);
}

export function prioritySelect(ticket, props) {
  return select(props, [['', 'none'], ...PRIORITIES.map((p) => [p, p])], ticket.priority ?? '');
}

// A locked member (has_access false) is offered to no ticket; one that
// holds the ticket already is shown so.
export function assigneeSelect(ticket, users, props) {
  const open = users.filter((u) => u.has_access !== false);
  const opts = [['', 'Unassigned'], ...open.map((u) => [u.user_id, u.first_name || u.email])];
  if (ticket.assignee_user_id && !open.some((u) => u.user_id === ticket.assignee_user_id)) {
    const u = users.find((x) => x.user_id === ticket.assignee_user_id);
    opts.push([ticket.assignee_user_id, u ? (u.first_name || u.email) + ' (locked)' : ticket.assignee_user_id]);
  }
  return select(props, opts, ticket.assignee_user_id ?? '');
}

export const badge = (value, cls) => h('span', {class: 'badge ' + (cls ?? value ?? '')}, label(value ?? '—'));

// toolBlocks shows a turn's tool calls and their (possibly mocked) results.
export function toolBlocks(turn) {
  const calls = turn.tool_calls || [];
  const results = turn.tool_results || [];
  if (!calls.length && !results.length) return null;
  return h('div', {},
    calls.map((c) => h('div', {}, h('span', {class: 'badge'}, 'tool call'), ' ', c.tool_name || '',
      h('pre', {}, c.params_as_json || JSON.stringify(c.params ?? c, null, 1)))),
    // A failed call's result says so: it reads like any other otherwise.
    results.map((r) => h('div', {}, h('span', {class: r.is_error ? 'badge failed' : 'badge'}, r.is_error ? 'tool error' : 'tool result'), ' ', r.tool_name || '',
      h('pre', {}, typeof r.result_value === 'string' ? r.result_value : JSON.stringify(r, null, 1)))));
}
