// One ticket: its fields and history, the conversation's transcript with
// the turn comments at their turns, comments, and merging others into it.
import {get, post, patch, query, enc, ApiError} from './api.js';
import {h, replace, field, select, say, when, pageParam, checked, onSubmit, onChoose, focusKey, refocus} from './dom.js';
import {start, can, shown, noneNamed, backTo} from './shell.js';
import {label, agentName, assignees, actors, personName, statusSelect, prioritySelect, assigneeSelect, badge, toolBlocks} from './common.js';

const id = pageParam('id') || '';

start(async (main) => {
  if (!id) return noneNamed(main, 'ticket', 'index.html', 'Triage queue');
  let t = await shown(main, '/v1/convai/triage-tickets/' + enc(id), backTo('index.html', 'Triage queue'));
  if (!t) return;
  const users = await assignees(t.agent_id);
  const people = await actors(t.agent_id); // to name who did what
  const agent = await agentName(t.agent_id);
  // The focus falls back on the message when the control acted on is
  // drawn later or not again (see refocus).
  const msg = h('p', {class: 'msg', tabindex: -1});
  const writable = can('tickets.update');
  let shownConv = null; // the conversation whose transcript is shown, kept across redraws

  const show = (ticket) => {
    // A write answers the ticket without what only a read adds (its
    // reviewed verdicts, its deleted conversations): kept from the read.
    t = {verdict_labels: t.verdict_labels, deleted_conversation_ids: t.deleted_conversation_ids, ...ticket};
    document.title = (t.title || 'Ticket') + ' · voiceai console';
    const focused = focusKey(main);
    replace(main,
      h('p', {}, h('a', {href: 'index.html'}, '← Triage queue')),
      h('h1', {}, t.title || '(untitled)'),
      msg,
      // The details (status, priority, assignee) come first, for the
      // keyboard and on a narrow screen, not after the whole transcript;
      // a wide screen draws them on the right.
      h('div', {class: 'split'},
        h('div', {class: 'aside'}, factsSection(), mergeSection(), historySection()),
        h('div', {class: 'main'}, transcriptSection(), commentsSection())));
    refocus(main, focused, msg);
  };

  async function change(body, what) {
    try {
      show(await patch('/v1/convai/triage-tickets/' + enc(id), body));
      say(msg, what);
    } catch (e) {
      say(msg, e.message, true);
    }
  }

  function factsSection() {
    const rows = [];
    const fact = (k, v) => rows.push(h('dt', {}, k), h('dd', {}, v));
    if (writable && t.status !== 'merged') {
      const st = statusSelect(t, {'data-focus': 'status'});
      onChoose(st, (v) => change({status: v}, 'Status changed to ' + label(v) + '.'));
      const pr = prioritySelect(t, {'data-focus': 'priority'});
      onChoose(pr, (v) => change({priority: v || null}, 'Priority changed.'));
      const as = assigneeSelect(t, users, {'data-focus': 'assignee'});
      onChoose(as, (v) => change({assignee_user_id: v || null}, 'Assignee changed.'));
      rows.push(h('div', {class: 'row', style: null}, field('Status', st), field('Priority', pr), field('Assignee', as)));
    } else {
      fact('Status', badge(t.status));
      fact('Priority', badge(t.priority ?? 'none', t.priority));
      fact('Assignee', personName(users, t.assignee_user_id));
    }
    fact('Agent', h('a', {href: 'agents.html?id=' + enc(t.agent_id)}, agent));
    fact('Source', label(t.source));
    fact('Issue type', label(t.issue_type ?? '—'));
    fact('Labels', t.labels.length ? t.labels.join(', ') : '—');
    fact('Conversations', t.conversation_ids.length ? t.conversation_ids.join(', ') : '—');
    if (t.merged_into_ticket_id) {
      // Named by its title once read; its id until then, or if it cannot be read.
      const into = h('a', {href: 'ticket.html?id=' + enc(t.merged_into_ticket_id), 'data-field': 'merged-into'}, t.merged_into_ticket_id);
      get('/v1/convai/triage-tickets/' + enc(t.merged_into_ticket_id)).then((x) => { if (x.title) into.textContent = x.title; }, () => {});
      fact('Merged into', into);
    }
    if (t.test_failures) {
      const tf = t.test_failures;
      fact('Failing test', h('span', {}, h('a', {href: 'tests.html?test=' + enc(tf.test_id)}, tf.test_name || tf.test_id),
        ` (${tf.failed_runs} failed run${tf.failed_runs === 1 ? '' : 's'})`));
      fact('Invocations', h('ul', {}, tf.invocations.map((inv) =>
        h('li', {}, h('a', {href: 'invocation.html?id=' + enc(inv.invocation_id)}, inv.invocation_id),
          ` · ${inv.failed_runs} failed · ${when(inv.last_failed_at_unix_secs)}`))));
    }
    if (t.test_failures || t.conversation_ids.length) fact('Reviewed verdicts', reviewsOf(t.verdict_labels || []));
    fact('Created', when(t.created_at_unix_secs));
    fact('Updated', when(t.updated_at_unix_secs));
    fact('Ticket id', t.agentqa_ticket_id);
    const facts = h('dl', {class: 'facts'});
    const controls = rows.filter((r) => r.tagName === 'DIV');
    for (const r of rows) if (r.tagName !== 'DIV') facts.append(r);
    return h('section', {class: 'card', 'aria-labelledby': 'facts-h'}, h('h2', {id: 'facts-h'}, 'Details'), controls, facts,
      t.qa_comment ? [h('h3', {}, 'QA comment'), h('p', {class: 'prose'}, t.qa_comment)] : null);
  }

  // reviewsOf lists what people said of the verdicts of the ticket's
  // failed runs and of its conversations' analyses (each one's current
  // label), as the ticket carries them (verdict_labels).
  function reviewsOf(labels) {
    return h('ul', {'aria-label': 'Reviewed verdicts'}, labels.length ? labels.map((l) => h('li', {},
      `${l.kind === 'conversation' ? l.conversation_id : l.run_id}: ` +
        (l.overturned ? 'the judge was wrong' + (l.corrected_result ? ` (should be ${l.corrected_result})` : '') : 'the judge was right'),
      h('span', {class: 'muted'}, ` · judge ${l.judge_model} · ${l.reviewer.name || l.reviewer.email || l.reviewer.user_id} · ${when(l.labelled_at_unix)}`),
      l.criteria.filter((c) => !c.correct).length
        ? h('div', {}, 'Overturned criteria: ' + l.criteria.filter((c) => !c.correct).map((c) => c.text || c.id).join('; ')) : null,
      l.note ? h('div', {}, l.note) : null)) : h('li', {class: 'muted'}, 'No verdict reviewed yet.'));
  }

  function historySection() {
    const events = [
      ...t.status_changes.map((c) => ({at: c.changed_at_unix_secs, by: c.changed_by_user_id, what: 'Status → ' + label(c.status)})),
      ...t.priority_changes.map((c) => ({at: c.changed_at_unix_secs, by: c.changed_by_user_id, what: 'Priority → ' + (c.priority ?? 'none')})),
    ].sort((a, b) => a.at - b.at);
    return h('section', {class: 'card', 'aria-labelledby': 'history-h'}, h('h2', {id: 'history-h'}, 'History'),
      events.length ? h('ol', {}, events.map((e) => h('li', {}, e.what, h('span', {class: 'muted'}, ` · ${personName(people, e.by)} · ${when(e.at)}`))))
        : h('p', {class: 'muted'}, 'No change yet.'));
  }

  function commentsSection() {
    const list = t.ticket_comments.length
      ? h('ul', {}, t.ticket_comments.map((c) => h('li', {}, h('p', {class: 'prose'}, c.comment),
        h('p', {class: 'muted'}, `${personName(people, c.owner_user_id)} · ${when(c.created_at_unix_secs)}`))))
      : h('p', {class: 'muted'}, 'No comment yet.');
    let form = null;
    if (can('tickets.comment') && t.status !== 'merged') {
      const text = h('textarea', {name: 'comment', required: true, 'data-focus': 'comment'});
      form = h('form', {'aria-label': 'Add a comment'}, field('Comment', text), h('button', {type: 'submit', 'data-focus': 'add-comment'}, 'Add comment'));
      onSubmit(form, async () => {
        try {
          show(await post('/v1/convai/triage-tickets/' + enc(id) + '/comments', {comment: text.value}));
          say(msg, 'Comment added.');
        } catch (e) { say(msg, e.message, true); }
      });
    }
    return h('section', {class: 'card', 'aria-labelledby': 'comments-h'}, h('h2', {id: 'comments-h'}, 'Comments'), list, form);
  }

  // transcriptSection shows one of the ticket's conversations: the first
  // (its own, which the turn comments are on), or, on a ticket that took
  // others in by a merge, the one chosen.
  function transcriptSection() {
    const convs = t.conversation_ids;
    if (!convs.includes(shownConv)) shownConv = convs[0];
    const box = h('div', {});
    let heading = null;
    if (convs.length > 1) {
      const chooser = select({'data-focus': 'conversation'}, convs.map((c, i) => [c, i === 0 ? c + ' (the ticket\'s own)' : c + ' (merged in)']), shownConv);
      onChoose(chooser, (v) => { shownConv = v; load(v); });
      heading = field(`Conversation (${convs.length})`, chooser);
    } else if (shownConv) {
      heading = h('p', {class: 'muted'}, 'Conversation ' + shownConv);
    }
    const load = (conv) => {
      // Turn comments are on the ticket's own conversation's turns.
      const own = conv === convs[0];
      const comments = own ? t.turn_comments : [];
      if (!conv) return replace(box, h('p', {class: 'muted'}, 'This ticket names no conversation.'), turnComments(comments));
      if ((t.deleted_conversation_ids || []).includes(conv)) {
        return replace(box, h('p', {class: 'muted'}, 'The conversation was deleted: its transcript is gone for good.'), turnComments(comments));
      }
      replace(box, h('p', {class: 'muted'}, 'Loading the transcript…'));
      get('/v1/convai/conversations/' + enc(conv)).then((c) => {
        if (conv === shownConv) replace(box, transcript(c, own), evaluation(c));
      }, (e) => {
        if (conv !== shownConv) return;
        const gone = e instanceof ApiError && (e.code === 404 || e.code === 405);
        replace(box, h('p', {class: 'muted'}, gone ? 'Transcript not available.' : 'The transcript could not be loaded: ' + e.message),
          turnComments(comments));
      });
    };
    load(shownConv);
    return h('section', {class: 'card', 'aria-labelledby': 'transcript-h'}, h('h2', {id: 'transcript-h'}, 'Transcript'), heading, box);
  }

  function turnComments(comments) {
    if (!comments.length) return null;
    return h('ul', {'aria-label': 'Turn comments'}, comments.map((c) => h('li', {class: 'turn-comment'},
      `Turn ${c.turn_index}: `, c.comment, h('span', {class: 'muted'}, ` · ${personName(people, c.owner_user_id)}`))));
  }

  // transcript draws a conversation's turns; own is whether it is the
  // ticket's own conversation, whose turns take the turn comments.
  function transcript(c, own) {
    const turns = c.transcript || [];
    const comments = own ? t.turn_comments : [];
    const byTurn = new Map();
    for (const tc of comments) byTurn.set(tc.turn_index, [...(byTurn.get(tc.turn_index) || []), tc]);
    const items = turns.map((turn, i) => h('li', {class: 'turn ' + (turn.role === 'agent' ? 'agent' : 'user')},
      h('p', {class: 'who'}, `${turn.role === 'agent' ? 'Agent' : 'User'} · turn ${i}`,
        turn.time_in_call_secs !== undefined ? ` · ${turn.time_in_call_secs}s` : ''),
      turn.message ? h('p', {}, turn.message) : null,
      toolBlocks(turn),
      (byTurn.get(i) || []).map((tc) => h('p', {class: 'turn-comment'}, tc.comment,
        h('span', {class: 'muted'}, ` · ${personName(people, tc.owner_user_id)} · ${when(tc.created_at_unix_secs)}`))),
      own ? turnCommentForm(i) : null));
    const meta = c.metadata || {};
    const beyond = comments.filter((tc) => tc.turn_index >= turns.length);
    const none = turns.length === 0 ? h('p', {class: 'muted'}, 'No transcript was handed over for this conversation.') : null;
    return [h('p', {class: 'muted'}, `Status ${c.status ?? '—'} · started ${when(meta.start_time_unix_secs)} · ${meta.call_duration_secs ?? '—'} s`),
      none, h('ol', {class: 'transcript'}, items), turnComments(beyond)];
  }

  // evaluation shows the conversation's re-judged analysis (its judge,
  // each criterion's verdict) and its current label; a reviewer may have
  // it judged again, and label it right or wrong.
  function evaluation(c) {
    const box = h('div', {});
    const out = h('p', {class: 'msg', role: 'status', tabindex: -1});
    const path = '/v1/convai/conversations/' + enc(c.conversation_id);
    const draw = (an, lbl) => {
      const judged = an && an.judge;
      const note = h('textarea', {rows: 2, maxlength: 4000, name: 'evaluation_note', 'data-focus': 'evaluation-note'});
      const mark = (right) => async () => {
        try {
          const l = await post('/v1/voiceai/conversations/' + enc(c.conversation_id) + '/evaluation/labels', {verdict_correct: right, note: note.value});
          draw(an, l);
          say(out, `Labelled: the judge was ${right ? 'right' : 'wrong'}` + (l.corrected_result ? ` (should be ${l.corrected_result}).` : '.'));
        } catch (e) { say(out, e.message, true); }
      };
      const again = async () => {
        try {
          const a = await post(path + '/analysis/run');
          draw(a.analysis, lbl);
          say(out, a.stored ? 'Judged again.' : 'The judge stopped early: ' + (a.error || 'no verdict') + '.', !a.stored);
        } catch (e) { say(out, e.message, true); }
      };
      const focused = focusKey(box);
      replace(box, h('h3', {}, 'Evaluation'),
        judged ? [h('p', {}, h('strong', {}, `Judged by ${an.judge.judge_model}: ${an.call_successful}.`),
          h('span', {class: 'muted'}, ` ${when(an.judge.analysed_at_unix_secs)}`)),
        h('ul', {'aria-label': 'Evaluation criteria'}, an.evaluation_criteria_results_list.map((r) => h('li', {},
          `${r.criteria_id}: ${r.result}`, r.rationale ? h('span', {class: 'muted'}, ' · ' + r.rationale) : null)))]
          : h('p', {class: 'muted'}, 'Not judged again yet.'),
        lbl ? h('p', {}, `Reviewed: the judge was ${lbl.overturned ? 'wrong' : 'right'}`,
          h('span', {class: 'muted'}, ` · ${lbl.reviewer.name || lbl.reviewer.email || lbl.reviewer.user_id} · ${when(lbl.labelled_at_unix)}`),
          lbl.note ? h('div', {}, lbl.note) : null) : null,
        can('testing.run_conversation_analysis') ? h('button', {type: 'button', class: 'secondary', on: {click: again}, 'data-focus': 'judge-again'}, 'Judge this conversation again') : null,
        judged && can('testing.label_conversation') ? h('div', {class: 'row'}, field('Note on the evaluation', note),
          h('button', {type: 'button', on: {click: mark(true)}, 'data-focus': 'evaluation-right'}, 'Evaluation right'),
          h('button', {type: 'button', class: 'secondary', on: {click: mark(false)}, 'data-focus': 'evaluation-wrong'}, 'Evaluation wrong')) : null,
        out);
      refocus(box, focused, out);
    };
    draw(c.analysis, c.evaluation_label);
    return box;
  }

  function turnCommentForm(i) {
    if (!can('tickets.turn_comment') || t.status === 'merged') return null;
    const text = h('textarea', {name: 'turn_comment', required: true, 'data-focus': 'turn-comment-' + i});
    const form = h('form', {}, field('Comment on turn ' + i, text), h('button', {type: 'submit', 'data-focus': 'add-turn-comment-' + i}, 'Add turn comment'));
    onSubmit(form, async () => {
      try {
        show(await post('/v1/convai/triage-tickets/' + enc(id) + '/turn-comments', {turn_index: i, comment: text.value}));
        say(msg, 'Turn comment added.');
      } catch (e) { say(msg, e.message, true); }
    });
    return h('details', {}, h('summary', {'data-focus': 'turn-' + i}, 'Comment on this turn'), form);
  }

  function mergeSection() {
    if (!can('tickets.merge') || t.status === 'merged') return null;
    const list = h('div', {}, h('p', {class: 'muted'}, 'Looking for other open tickets of this agent…'));
    const section = h('section', {class: 'card', 'aria-labelledby': 'merge-h'}, h('h2', {id: 'merge-h'}, 'Merge duplicates into this ticket'), list);
    Promise.all(['open', 'in_progress'].map((s) =>
      get('/v1/convai/agents/' + enc(t.agent_id) + '/triage-tickets' + query({status: s, page_size: 100})))).then((pages) => {
      const others = pages.flatMap((p) => p.agent_conversation_tickets).filter((o) => o.agentqa_ticket_id !== id);
      if (!others.length) return replace(list, h('p', {class: 'muted'}, 'No other open ticket of this agent.'));
      const boxes = others.map((o) => h('input', {type: 'checkbox', name: 'source', value: o.agentqa_ticket_id, id: 'm-' + o.agentqa_ticket_id, 'data-focus': 'm-' + o.agentqa_ticket_id}));
      const form = h('form', {'aria-label': 'Merge tickets'},
        h('fieldset', {}, h('legend', {}, 'Tickets to merge'), others.map((o, i) => h('div', {},
          boxes[i], ' ', h('label', {for: boxes[i].id}, o.title || o.agentqa_ticket_id, h('span', {class: 'muted'}, ` (${label(o.status)})`))))),
        h('button', {type: 'submit', 'data-focus': 'merge'}, 'Merge selected'));
      onSubmit(form, async () => {
        const ids = checked(boxes);
        if (!ids.length) return say(msg, 'Choose the tickets to merge.', true);
        try {
          show(await post('/v1/convai/triage-tickets/' + enc(id) + '/merge', {source_ticket_ids: ids}));
          say(msg, `Merged ${ids.length} ticket${ids.length === 1 ? '' : 's'} into this one.`);
        } catch (e) { say(msg, e.message, true); }
      });
      replace(list, form);
    }, (e) => replace(list, h('p', {class: 'msg error'}, e.message)));
    return section;
  }

  show(t);
});

