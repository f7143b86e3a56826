// Conversations: the workspace's calls through a filter bar over the
// public listing (GET /v1/convai/conversations and its triage filters),
// and one conversation opened below with its transcript, its feedback
// (like / dislike), its tags (attach, detach, create), and its deletion
// for good (a caller's request to be forgotten).
import {get, post, del, query, enc} from './api.js';
import {h, replace, field, select, say, button, confirmButton, when, pageParam, onSubmit, focusKey, refocus} from './dom.js';
import {start, can} from './shell.js';
import {agentList, allPages, badge, toolBlocks} from './common.js';

start(async (main) => {
  const [agents, tags] = await Promise.all([agentList().catch(() => []), allTags().catch(() => [])]);
  const names = new Map(agents.map((a) => [a.agent_id, a.name]));
  const tagNames = new Map(tags.map((t) => [t.tag_id, t.title]));
  const f = {
    agent: select({name: 'agent_id'}, [['', 'Any'], ...agents.map((a) => [a.agent_id, a.name])], pageParam('agent') || ''),
    outcome: select({name: 'call_successful'}, [['', 'Any'], ['success', 'success'], ['failure', 'failure'], ['unknown', 'unknown']]),
    evaluation: h('input', {name: 'evaluation_params', type: 'text', placeholder: 'criterion:failure'}),
    data: h('input', {name: 'data_collection_params', type: 'text', placeholder: 'city:eq:Denver'}),
    tool: h('input', {name: 'tool_names', type: 'text'}),
    errored: h('input', {name: 'tool_names_errored', type: 'text'}),
    minSecs: h('input', {name: 'call_duration_min_secs', type: 'number', min: 0}),
    maxSecs: h('input', {name: 'call_duration_max_secs', type: 'number', min: 0}),
    rating: select({name: 'rating'}, [['', 'Any'], ['liked', 'Liked'], ['disliked', 'Disliked']]),
    tag: select({name: 'tag_ids'}, [['', 'Any'], ...tags.map((t) => [t.tag_id, t.title])]),
    search: h('input', {name: 'search', type: 'search'}),
    done: h('input', {name: 'exclude_statuses', type: 'checkbox', value: 'in-progress', checked: true}),
    summaries: h('input', {name: 'summary_mode', type: 'checkbox', value: 'include'}),
  };
  const form = h('form', {class: 'card filters', role: 'search', 'aria-label': 'Filter conversations'},
    field('Agent', f.agent), field('Outcome', f.outcome), field('Evaluation', f.evaluation, 'criterion_id:result'),
    field('Data collected', f.data, 'id:op:value (eq, neq, gt, gte, lt, lte, in)'), field('Tool used', f.tool),
    field('Tool errored', f.errored), field('Min seconds', f.minSecs), field('Max seconds', f.maxSecs),
    field('Feedback', f.rating), field('Tag', f.tag), field('Transcript words', f.search),
    field('Finished only', f.done), field('Show summaries', f.summaries),
    h('button', {type: 'submit'}, 'Apply filters'));
  const msg = h('p', {class: 'msg'});
  const body = h('tbody', {});
  const more = button('Load more', () => load(false), {class: 'secondary', hidden: true});
  const detail = h('div', {});
  const table = h('table', {class: 'cards', 'aria-label': 'Conversations'},
    h('thead', {}, h('tr', {}, ['Started', 'Agent', 'Seconds', 'Messages', 'Outcome', 'Feedback', 'Tags', ''].map((c) => h('th', {scope: 'col'}, c)))),
    body);
  replace(main, h('h1', {}, 'Conversations'), form, msg, table, more, detail);

  let cursor = '';
  let shown = 0;
  const params = () => ({
    agent_id: f.agent.value, call_successful: f.outcome.value,
    evaluation_params: f.evaluation.value.trim(), data_collection_params: f.data.value.trim(),
    tool_names: f.tool.value.trim(), tool_names_errored: f.errored.value.trim(),
    call_duration_min_secs: f.minSecs.value, call_duration_max_secs: f.maxSecs.value,
    rating_min: f.rating.value === 'liked' ? 4 : '', rating_max: f.rating.value === 'disliked' ? 2 : '',
    tag_ids: f.tag.value, search: f.search.value.trim(),
    exclude_statuses: f.done.checked ? 'in-progress' : '', summary_mode: f.summaries.checked ? 'include' : '',
  });

  // asked counts the listings asked for: an answer to one asked before the
  // last (filters changed meanwhile) is dropped, not drawn over it.
  let asked = 0;
  async function load(first) {
    const mine = ++asked;
    try {
      const page = await get('/v1/convai/conversations' + query({...params(), page_size: 50, cursor: first ? '' : cursor}));
      if (mine !== asked) return;
      if (first) { body.replaceChildren(); shown = 0; }
      for (const c of page.conversations) body.append(...render(c));
      shown += page.conversations.length;
      cursor = page.has_more ? page.next_cursor : '';
      more.hidden = !cursor;
      say(msg, shown ? `${shown} conversation${shown === 1 ? '' : 's'} shown` : 'No conversation matches.');
    } catch (e) {
      if (mine !== asked) return;
      // Refused filters (a 422) list nothing: no rows of the filters
      // before them under the error, as if they were the answer.
      if (first) { body.replaceChildren(); shown = 0; cursor = ''; more.hidden = true; }
      say(msg, e.message, true);
    }
  }

  function render(c) {
    const rows = [h('tr', {},
      h('td', {'data-label': 'Started'}, when(c.start_time_unix_secs)),
      h('td', {'data-label': 'Agent'}, names.get(c.agent_id) ?? c.agent_id),
      h('td', {'data-label': 'Seconds'}, String(c.call_duration_secs)),
      h('td', {'data-label': 'Messages'}, String(c.message_count)),
      h('td', {'data-label': 'Outcome'}, badge(c.call_successful)),
      h('td', {'data-label': 'Feedback'}, c.rating === 5 ? 'liked' : c.rating === 1 ? 'disliked' : '—'),
      h('td', {'data-label': 'Tags'}, (c.tag_ids || []).map((id) => tagNames.get(id) ?? id).join(', ') || '—'),
      h('td', {}, button('Open', () => open(c.conversation_id), {class: 'secondary', 'aria-label': 'Open ' + c.conversation_id})))];
    if (c.transcript_summary) rows.push(h('tr', {class: 'summary'}, h('td', {colspan: 8, class: 'muted'}, c.transcript_summary)));
    return rows;
  }

  // ticketsOf lists the tickets raised on the conversation, and lets a
  // triager raise one (a report on a conversation with an active ticket
  // joins it, as the API does).
  function ticketsOf(c) {
    const raised = c.triage_tickets || [];
    const list = raised.length
      ? h('ul', {'aria-label': 'Tickets of the conversation'}, raised.map((t) => h('li', {},
        h('a', {href: 'ticket.html?id=' + enc(t.agentqa_ticket_id)}, t.title || '(untitled)'), ' ', badge(t.status))))
      : h('p', {class: 'muted'}, 'No ticket raised on it yet.');
    let form = null;
    if (can('tickets.create')) {
      const comment = h('textarea', {rows: 2, maxlength: 20000, required: true, 'data-focus': 'report-comment'});
      const priority = select({'data-focus': 'report-priority'}, [['', 'No priority'], ['low', 'low'], ['medium', 'medium'], ['high', 'high'], ['urgent', 'urgent']]);
      const out = h('p', {class: 'msg', role: 'status'});
      form = h('form', {'aria-label': 'Raise a ticket on the conversation'}, field('What went wrong', comment), field('Priority', priority),
        h('button', {type: 'submit', 'data-focus': 'raise-ticket'}, 'Raise a ticket'), out);
      onSubmit(form, async () => {
        try {
          const t = await post('/v1/convai/triage-tickets', {conversation_id: c.conversation_id, qa_comment: comment.value,
            ...(priority.value ? {priority: priority.value} : {})});
          await open(c.conversation_id);
          say(detail.querySelector('[data-said="report"]'), `Reported on ticket "${t.title || t.agentqa_ticket_id}".`);
        } catch (e) { say(out, e.message, true); }
      });
    }
    return h('section', {'aria-labelledby': 'conv-tickets-h'}, h('h3', {id: 'conv-tickets-h'}, 'Tickets'),
      h('p', {class: 'msg', role: 'status', 'data-said': 'report'}), list, form);
  }

  async function open(id) {
    // Drawn again after a change: a tag title typed meanwhile is kept,
    // and so is the focus, on the control acted on (or, when it is gone,
    // on the conversation's heading).
    const again = detail.dataset.id === id;
    const typed = again ? detail.querySelector('input[aria-label="New tag title"]')?.value ?? '' : '';
    const focused = again ? focusKey(detail) : '';
    if (!again) replace(detail, h('p', {class: 'muted'}, 'Loading…'));
    try {
      const c = await get('/v1/convai/conversations/' + enc(id));
      const drawn = conversation(c);
      detail.dataset.id = id;
      const title = drawn.querySelector('input[aria-label="New tag title"]');
      if (title) title.value = typed;
      replace(detail, drawn);
      refocus(detail, focused, drawn.querySelector('h2'));
      detail.scrollIntoView({block: 'nearest'});
    } catch (e) {
      replace(detail, h('p', {class: 'msg error', role: 'alert'}, e.message));
    }
  }

  function conversation(c) {
    const note = h('p', {class: 'msg'});
    const act = (fn) => async () => {
      try { await fn(); await open(c.conversation_id); load(true); } catch (e) { say(note, e.message, true); }
    };
    const feedback = c.metadata?.feedback?.overall_score;
    const writable = can('tickets.conversation_feedback');
    const attach = select({'aria-label': 'Tag to attach', 'data-focus': 'tag-to-attach'}, tags.filter((t) => !(c.tag_ids || []).includes(t.tag_id)).map((t) => [t.tag_id, t.title]));
    const newTag = h('input', {type: 'text', 'aria-label': 'New tag title', placeholder: 'New tag', 'data-focus': 'new-tag'});
    const turns = c.transcript || [];
    return h('section', {class: 'card', 'aria-labelledby': 'conversation-h'},
      h('h2', {id: 'conversation-h', tabindex: -1}, 'Conversation ' + c.conversation_id),
      h('p', {class: 'muted'}, `${names.get(c.agent_id) ?? c.agent_id} · started ${when(c.metadata?.start_time_unix_secs)} · ${c.metadata?.call_duration_secs ?? '—'} s · ${c.analysis?.call_successful ?? '—'}`),
      c.analysis?.transcript_summary ? h('p', {}, c.analysis.transcript_summary) : null,
      h('p', {}, 'Feedback: ', feedback ?? 'none',
        writable ? [' ', button('Like', act(() => post('/v1/convai/conversations/' + enc(c.conversation_id) + '/feedback', {feedback: 'like'})), {'aria-pressed': String(feedback === 'like'), 'data-focus': 'like'}),
          ' ', button('Dislike', act(() => post('/v1/convai/conversations/' + enc(c.conversation_id) + '/feedback', {feedback: 'dislike'})), {'aria-pressed': String(feedback === 'dislike'), 'data-focus': 'dislike'})] : null),
      h('ul', {'aria-label': 'Tags'}, (c.tag_ids || []).map((id) => h('li', {}, tagNames.get(id) ?? id,
        writable ? [' ', button('Detach', act(() => del('/v1/convai/conversations/' + enc(c.conversation_id) + '/tags/' + enc(id))), {class: 'secondary', 'aria-label': 'Detach ' + (tagNames.get(id) ?? id), 'data-focus': 'detach-' + id})] : null))),
      writable ? h('p', {}, attach.options.length ? [attach, ' ', button('Attach tag', act(() => post('/v1/convai/conversations/' + enc(c.conversation_id) + '/tags', {tag_ids: [attach.value]})), {'data-focus': 'attach-tag'})] : null,
        ' ', newTag, ' ', button('Create and attach', act(async () => {
          // A tag of that title already there is attached, not made twice.
          const title = newTag.value.trim();
          let t = tags.find((x) => x.title.trim().toLowerCase() === title.toLowerCase());
          if (!t) {
            t = await post('/v1/convai/tags', {title});
            tags.push(t);
            tagNames.set(t.tag_id, t.title);
            f.tag.append(h('option', {value: t.tag_id}, t.title));
          }
          await post('/v1/convai/conversations/' + enc(c.conversation_id) + '/tags', {tag_ids: [t.tag_id]});
          newTag.value = ''; // attached: the title is not kept for the next drawing
        }), {'data-focus': 'create-tag'})) : null,
      ticketsOf(c),
      note,
      can('tickets.delete_conversation') ? h('p', {}, confirmButton('Delete conversation', 'Confirm: delete it for good', async () => {
        try {
          await del('/v1/convai/conversations/' + enc(c.conversation_id));
          delete detail.dataset.id;
          const said = h('p', {class: 'msg', role: 'status', tabindex: -1},
            `Conversation ${c.conversation_id} deleted: it is in no listing and its transcript can no longer be read.`);
          replace(detail, said);
          said.focus(); // the button pressed is gone: the focus goes to what it did
          load(true);
        } catch (e) { say(note, e.message, true); }
      }, {class: 'secondary'})) : null,
      turns.length ? h('ol', {class: 'transcript'}, turns.map((turn, i) => h('li', {class: 'turn ' + (turn.role === 'agent' ? 'agent' : 'user')},
        h('p', {class: 'who'}, `${turn.role === 'agent' ? 'Agent' : 'User'} · turn ${i}`),
        turn.message ? h('p', {}, turn.message) : null, toolBlocks(turn))))
        : h('p', {class: 'muted'}, 'No transcript was handed over for this conversation.'));
  }

  onSubmit(form, () => load(true));
  await load(true);
});

// allTags is every tag of the workspace (a few pages at most).
function allTags() {
  return allPages('/v1/convai/tags', 'conversation_tags');
}
