// The triage queue: every ticket of the workspace, filtered, with status,
// priority and assignee changed in place. New tickets appear without a
// reload: the first page is polled every 1.5 seconds (2 s at worst).
import {get, patch, query, enc} from './api.js';
import {h, replace, field, select, say, button, when, pageParam, onSubmit, onChoose} from './dom.js';
import {start, can, poll, staleIn} from './shell.js';
import {STATUSES, PRIORITIES, label, agentList, assignees, statusSelect, prioritySelect, assigneeSelect, badge} from './common.js';

start(async (main) => {
  const agents = await agentList().catch(() => []);
  const names = new Map(agents.map((a) => [a.agent_id, a.name]));
  const f = {
    status: select({name: 'status'}, [['', 'Any'], ...[...STATUSES, 'merged'].map((s) => [s, label(s)])], 'open'),
    priority: select({name: 'priority'}, [['', 'Any'], ...PRIORITIES.map((p) => [p, p])]),
    assignee: select({name: 'assignee'}, [['', 'Anyone'], ['unassigned', 'Unassigned'], ['@me', 'Me']]),
    source: select({name: 'source'}, [['', 'Any'], ['qa', 'QA'], ['agent', 'Agent'], ['manual', 'Manual']]),
    label: h('input', {name: 'label', type: 'text'}),
    agent: select({name: 'agent'}, [['', 'Any'], ...agents.map((a) => [a.agent_id, a.name])], pageParam('agent') || ''),
    search: h('input', {name: 'search', type: 'search'}),
    sort: select({name: 'sort'}, [['created_at', 'Newest first'], ['priority', 'Most urgent first']]),
  };
  const form = h('form', {class: 'card filters', role: 'search', 'aria-label': 'Filter tickets'},
    field('Status', f.status), field('Priority', f.priority), field('Assignee', f.assignee), field('Source', f.source),
    field('Label', f.label), field('Agent', f.agent), field('Search', f.search), field('Sort', f.sort),
    h('button', {type: 'submit'}, 'Apply filters'));
  const msg = h('p', {class: 'msg'});
  const stale = h('p', {class: 'msg'});
  const body = h('tbody', {});
  const more = button('Load more', () => load(false), {class: 'secondary', hidden: true});
  const table = h('table', {class: 'cards', 'aria-label': 'Tickets'},
    h('thead', {}, h('tr', {}, ['Title', 'Status', 'Priority', 'Assignee', 'Agent', 'Source', 'Created'].map((c) => h('th', {scope: 'col'}, c)))),
    body);
  replace(main, h('h1', {}, 'Triage queue'), form, msg, stale, table, more);

  const rows = new Map(); // ticket id → row
  let cursor = '';
  // applied is the filters of the list shown, set when they are applied:
  // a later page and the poll ask with them (not with a search typed but
  // not applied), and an answer to older ones is dropped (a poll sent
  // before a filter change must not add the old filter's tickets).
  let applied = null;
  const params = () => ({
    status: f.status.value, priorities: f.priority.value, assignee_user_id: f.assignee.value, sources: f.source.value,
    label: f.label.value.trim(), agent_id: f.agent.value, search: f.search.value.trim(), sort_by: f.sort.value,
  });
  const shownSay = (extra) => say(msg, rows.size ? `${rows.size} ticket${rows.size === 1 ? '' : 's'} shown${extra}` : 'No ticket matches.');

  async function load(first) {
    if (first) applied = params();
    const asked = applied;
    if (first) { cursor = ''; more.hidden = true; } // the old filters' next page is not this one's
    try {
      const page = await get('/v1/convai/triage-tickets' + query({...asked, page_size: 50, cursor: first ? '' : cursor}));
      if (asked !== applied) return; // the filters changed meanwhile
      if (first) { body.replaceChildren(); rows.clear(); }
      for (const t of page.agent_conversation_tickets) upsert(t, false);
      cursor = page.has_more ? page.next_cursor : '';
      more.hidden = !cursor;
      shownSay('');
    } catch (e) {
      if (asked !== applied) return;
      // New filters not shown: no rows of the old ones under them.
      if (first) { body.replaceChildren(); rows.clear(); }
      say(msg, e.message, true);
    }
  }

  // refresh polls the first page: new tickets go on top, shown ones are
  // updated unless someone is using their controls, and shown ones the
  // page proves gone from the filters (a status changed, say) are marked.
  async function refresh() {
    const asked = applied;
    const page = await get('/v1/convai/triage-tickets' + query({...asked, page_size: 50}));
    if (asked !== applied) return;
    const listed = page.agent_conversation_tickets;
    const ids = new Set(listed.map((t) => t.agentqa_ticket_id));
    const fresh = listed.filter((t) => !rows.has(t.agentqa_ticket_id));
    for (const t of listed) if (rows.has(t.agentqa_ticket_id)) upsert(t, false);
    for (const t of fresh.reverse()) upsert(t, true);
    let gone = 0;
    for (const [id, row] of rows) {
      if (ids.has(id) || row.dataset.left || !left(row, page, asked.sort_by)) continue;
      // Marked, not removed: it may be the row someone just changed in
      // place, and a row vanishing under them loses their place.
      row.dataset.left = 'yes';
      row.cells[0].append(h('div', {class: 'msg'}, 'No longer matches the filters.'));
      gone++;
    }
    if (fresh.length || gone) {
      const news = [fresh.length ? `${fresh.length} new` : '', gone ? `${gone} no longer matching` : ''];
      shownSay(` (${news.filter(Boolean).join(', ')})`);
    }
  }

  // left says whether a shown row's ticket, missing from the polled first
  // page, has left the filters rather than moved past that page: it has
  // when the page is the whole list, or, newest first, when it is newer
  // than the page's last ticket (its creation never changes). By
  // priority, a priority changed since may have moved it: not marked.
  function left(row, page, sort) {
    if (!page.has_more) return true;
    const last = page.agent_conversation_tickets.at(-1);
    return sort === 'created_at' && !!last && Number(row.dataset.created) > last.created_at_unix_secs;
  }

  function upsert(t, onTop) {
    const old = rows.get(t.agentqa_ticket_id);
    if (old && old.contains(document.activeElement)) return;
    const row = render(t);
    rows.set(t.agentqa_ticket_id, row);
    if (old) old.replaceWith(row);
    else if (onTop) body.prepend(row);
    else body.append(row);
  }

  // focusField focuses a row's control; the assignee's, drawn once the
  // people it offers are known, then.
  function focusField(row, name) {
    const find = () => row.querySelector(`[data-field="${name}"]`);
    if (find()) find().focus();
    else row.addEventListener('assignees', () => find()?.focus(), {once: true});
  }

  function render(t) {
    const id = t.agentqa_ticket_id;
    // A merged ticket is final: read-only here, as on its own page.
    const writable = can('tickets.update') && t.status !== 'merged';
    const note = h('div', {class: 'msg', role: 'status', 'data-note': ''});
    // redraw draws the row of ticket again. Keyboard users keep their
    // place: the control of the row they are on (the one changed, or the
    // next one Tab took them to, which saved the change), in the new row;
    // a focus elsewhere stays.
    const redraw = (ticket) => {
      const old = rows.get(id);
      const at = old.contains(document.activeElement) ? document.activeElement.dataset.field : '';
      const row = render(ticket);
      old.replaceWith(row);
      rows.set(id, row);
      if (at) focusField(row, at);
      return row;
    };
    const change = (fieldName) => async (value) => {
      try {
        redraw(await patch('/v1/convai/triage-tickets/' + enc(id), {[fieldName]: value || null}));
      } catch (e) {
        // Not saved: the row shows the ticket as it is again, and why.
        say(redraw(t).querySelector('[data-note]'), `Not saved: ${e.message}`, true);
      }
    };
    const cells = {
      status: writable ? statusSelect(t, {'aria-label': 'Status of ' + t.title, 'data-field': 'status'}) : badge(t.status),
      priority: writable ? prioritySelect(t, {'aria-label': 'Priority of ' + t.title, 'data-field': 'priority'}) : badge(t.priority ?? 'none', t.priority),
      assignee: h('span', {}, t.assignee_user_id ?? 'Unassigned'),
    };
    if (writable) {
      onChoose(cells.status, change('status'));
      onChoose(cells.priority, change('priority'));
      assignees(t.agent_id).then((users) => {
        const sel = assigneeSelect(t, users, {'aria-label': 'Assignee of ' + t.title, 'data-field': 'assignee_user_id'});
        onChoose(sel, change('assignee_user_id'));
        cells.assignee.replaceWith(sel);
        cells.assignee = sel;
        sel.closest('tr')?.dispatchEvent(new Event('assignees'));
      });
    } else {
      assignees(t.agent_id).then((users) => {
        const u = users.find((x) => x.user_id === t.assignee_user_id);
        if (u) cells.assignee.textContent = u.first_name || u.email;
      });
    }
    return h('tr', {'data-id': id, 'data-created': t.created_at_unix_secs},
      h('td', {'data-label': 'Title'}, h('a', {href: 'ticket.html?id=' + enc(id), 'data-field': 'title'}, t.title || '(untitled)'),
        matchShown(t.search_match), note),
      h('td', {'data-label': 'Status'}, cells.status),
      h('td', {'data-label': 'Priority'}, cells.priority),
      h('td', {'data-label': 'Assignee'}, cells.assignee),
      h('td', {'data-label': 'Agent'}, h('a', {href: 'agents.html?id=' + enc(t.agent_id), 'data-field': 'agent', class: 'clamp', title: names.get(t.agent_id) ?? t.agent_id}, names.get(t.agent_id) ?? t.agent_id)),
      h('td', {'data-label': 'Source'}, label(t.source)),
      h('td', {'data-label': 'Created'}, when(t.created_at_unix_secs)));
  }

  // matchShown is where a search matched outside the title (a match in
  // the title is the link above it): the field, and the snippet with the
  // match marked (the API's offsets are bytes of the UTF-8 snippet).
  function matchShown(m) {
    if (!m || m.field === 'title') return null;
    const bytes = new TextEncoder().encode(m.snippet);
    const text = (from, to) => new TextDecoder().decode(bytes.slice(from, to));
    const where = {description: 'QA comment', comment: 'Comment', turn_comment: `Comment on turn ${m.turn_index}`}[m.field] || m.field;
    return h('div', {class: 'muted'}, `${where}: `, text(0, m.highlight_start), h('mark', {}, text(m.highlight_start, m.highlight_end)), text(m.highlight_end));
  }

  onSubmit(form, () => load(true));
  // A choice reloads, not each arrow step towards it (onChoose).
  for (const el of [f.status, f.priority, f.assignee, f.source, f.agent, f.sort]) onChoose(el, () => load(true));
  await load(true);
  performance.mark('queue-interactive'); // the first page is shown and usable: make bench times it
  poll(refresh, 1500, staleIn(stale));
});
