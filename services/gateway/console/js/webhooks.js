// The webhooks portal: endpoints with their events and delivery health;
// create (the signing secret is shown once), disable, delete; a webhook's
// delivery log with every attempt, resending one delivery, and recovering
// every delivery that failed for good since a time.
import {get, post, put, del, query, enc} from './api.js';
import {h, replace, field, select, say, when, pageParam, button, confirmButton, checked, onSubmit, onChoose} from './dom.js';
import {start, can, poll, shown, failure, staleIn, backTo} from './shell.js';
import {badge, label} from './common.js';

const id = pageParam('id') || '';

start((main) => (id ? detail(main) : overview(main)));

async function overview(main) {
  const msg = h('p', {class: 'msg'});
  const listBox = h('div', {});
  const secretBox = h('div', {});
  replace(main, h('h1', {}, 'Webhooks'), msg, secretBox, listBox);

  async function load() {
    const [list, health] = await Promise.all([get('/v1/convai/webhooks'), get('/v1/voiceai/webhooks/health').catch(() => ({webhooks: []}))]);
    const byID = new Map(health.webhooks.map((x) => [x.webhook_id, x]));
    replace(listBox, list.data.length ? h('table', {class: 'cards', 'aria-label': 'Webhooks'},
      h('thead', {}, h('tr', {}, ['Endpoint', 'Events', 'State', 'Health', 'Actions'].map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, list.data.map((w) => row(w, byID.get(w.webhook_id)))))
      : h('p', {class: 'muted'}, 'No webhook yet.'));
  }

  function row(w, hl) {
    const name = w.url || 'relay ' + w.webhook_id;
    const actions = [];
    if (can('webhooks.update')) {
      actions.push(button(w.active ? 'Disable' : 'Enable', async () => {
        try {
          await put('/v1/convai/webhooks/' + enc(w.webhook_id), {active: !w.active});
          say(msg, `${w.active ? 'Disabled' : 'Enabled'} ${name}.`);
          await load();
        } catch (e) { say(msg, e.message, true); }
      }, {class: 'secondary', 'aria-label': `${w.active ? 'Disable' : 'Enable'} ${name}`}));
    }
    if (can('webhooks.delete')) {
      actions.push(' ', confirmButton('Delete', 'Confirm delete', async () => {
        try {
          await del('/v1/convai/webhooks/' + enc(w.webhook_id));
          say(msg, `Deleted ${name}.`);
          await load();
        } catch (e) { say(msg, e.message, true); }
      }, {class: 'danger', 'aria-label': `Delete ${name}`}));
    }
    return h('tr', {},
      h('td', {'data-label': 'Endpoint'}, h('a', {href: 'webhooks.html?id=' + enc(w.webhook_id)}, name),
        h('div', {class: 'muted'}, 'secret ' + w.secret_hint)), // the hint ends with its own "…"
      h('td', {'data-label': 'Events'}, w.events.map(label).join(', ')),
      h('td', {'data-label': 'State'}, state(w)),
      h('td', {'data-label': 'Health'}, hl ? [badge(hl.status),
        h('div', {class: 'muted'}, `${hl.success_rate === null ? 'no attempts' : Math.round(hl.success_rate * 100) + '% delivered'} · ` +
          `${hl.consecutive_failures} failing in a row · ${hl.backlog} queued`)] : '—'),
      h('td', {'data-label': 'Actions'}, actions.length ? actions : '—'));
  }

  if (can('webhooks.create')) main.append(await createForm(msg, secretBox, load));
  try { await load(); } catch (e) { say(msg, e.message, true); }
}

// Why the dispatcher disabled a webhook, by its disabled_reason.
const REASONS = {
  failing: 'its deliveries kept failing: enable it to resume, then recover what failed',
  gone: 'its receiver answered 410 Gone',
};

// state is a webhook's state: active, disabled by a user, or disabled
// automatically (and why), with its latest delivery that failed for good.
function state(w) {
  const auto = w.is_auto_disabled;
  return [
    badge(w.active ? 'active' : auto ? 'auto_disabled' : 'disabled', w.active ? 'healthy' : 'failed'),
    auto ? h('div', {class: 'muted'}, 'Disabled automatically: ' + (REASONS[w.disabled_reason] || w.disabled_reason)) : null,
    w.most_recent_failure_timestamp ? h('div', {class: 'muted'}, 'Last failure: ' +
      (w.most_recent_failure_error_code ? 'HTTP ' + w.most_recent_failure_error_code : 'no answer') + ' · ' + when(w.most_recent_failure_timestamp)) : null,
  ];
}

async function createForm(msg, secretBox, reload) {
  const catalog = await get('/v1/voiceai/webhooks/events').catch(() => ({events: []}));
  const url = h('input', {type: 'url', name: 'url', required: true, placeholder: 'https://example.com/hooks/voiceai'});
  const boxes = catalog.events.map((e) => h('input', {type: 'checkbox', name: 'events', value: e.name, id: 'ev-' + e.name}));
  const form = h('form', {class: 'card', 'aria-labelledby': 'new-h'}, h('h2', {id: 'new-h'}, 'New webhook'),
    field('URL', url),
    h('fieldset', {}, h('legend', {}, 'Events'), h('div', {class: 'filters'}, catalog.events.map((e, i) =>
      h('div', {}, boxes[i], ' ', h('label', {for: boxes[i].id, title: e.description}, label(e.name)))))),
    h('button', {type: 'submit'}, 'Create webhook'));
  onSubmit(form, async () => {
    const events = checked(boxes);
    if (!events.length) return say(msg, 'Choose at least one event.', true);
    try {
      const w = await post('/v1/convai/webhooks', {url: url.value, events});
      url.value = '';
      for (const b of boxes) b.checked = false;
      replace(secretBox, h('section', {class: 'card', role: 'status', 'aria-labelledby': 'secret-h'},
        h('h2', {id: 'secret-h'}, 'Signing secret of ' + w.url),
        h('p', {}, 'Copy it now: it is shown this once. Deliveries are signed with it (X-Service-Signature, ElevenLabs-Signature and the Standard Webhooks headers).'),
        h('p', {class: 'secret'}, w.secret)));
      say(msg, 'Webhook created.');
      await reload();
    } catch (e) { say(msg, e.message, true); }
  });
  return form;
}

async function detail(main) {
  const w = await shown(main, '/v1/convai/webhooks/' + enc(id), backTo('webhooks.html', 'Webhooks'));
  if (!w) return;
  const msg = h('p', {class: 'msg'});
  const status = select({name: 'status'}, [['', 'Any'], ['failed', 'Failed'], ['success', 'Delivered']]);
  const logBox = h('div', {}, h('p', {class: 'muted'}, 'Loading…'));
  const stale = h('p', {class: 'msg'});
  const filter = h('form', {class: 'row', 'aria-label': 'Filter the log'}, field('Outcome', status));
  // The newest page follows the log (polled); once older pages are
  // shown, the log stays as it is until the filter changes.
  let rows = [];
  let older = false;
  // fresh shows the newest page again (another outcome, an action done);
  // when it cannot, the log says why in place of rows that may not match
  // the outcome chosen.
  const fresh = async () => {
    older = false;
    try { await load(); } catch (e) { failure(logBox, e); }
  };
  onChoose(status, fresh); // a choice, not each arrow step towards it
  onSubmit(filter, fresh);

  let recover = null;
  if (can('webhooks.recover')) {
    const since = h('input', {type: 'datetime-local', name: 'since', required: true,
      value: new Date(Date.now() - 3600e3 - new Date().getTimezoneOffset() * 60e3).toISOString().slice(0, 16)});
    recover = h('form', {class: 'card', 'aria-labelledby': 'recover-h'}, h('h2', {id: 'recover-h'}, 'Recover failed deliveries'),
      h('p', {class: 'muted'}, 'Delivers again every event that failed for good since then and was not delivered since.'),
      h('div', {class: 'row'}, field('Failed since', since), h('button', {type: 'submit'}, 'Recover')));
    onSubmit(recover, async () => {
      try {
        const r = await post('/v1/voiceai/webhooks/' + enc(id) + '/recover', {start_time: Math.floor(new Date(since.value).getTime() / 1000)});
        say(msg, `${r.recovered_count} deliver${r.recovered_count === 1 ? 'y' : 'ies'} resent${r.has_more ? '; more remain: recover again' : ''}.`);
        await fresh();
      } catch (e) { say(msg, e.message, true); }
    });
  }

  // Its state (auto-disabled, its last failure) is read again with every
  // fifth poll of the log: fresh within 10 s, at a fifth of the key's
  // requests the log's polls cost.
  const stateBox = h('div', {}, state(w));
  replace(main, h('p', {}, h('a', {href: 'webhooks.html'}, '← Webhooks')),
    h('h1', {}, w.url || 'Relay webhook'),
    stateBox,
    h('p', {}, w.events.map(label).join(', ')),
    msg, recover,
    h('section', {'aria-labelledby': 'log-h'}, h('h2', {id: 'log-h'}, 'Delivery log'), filter, stale, logBox));

  const page = (cursor) => get('/v1/voiceai/webhooks/' + enc(id) + '/logs' + query({limit: 100, status: status.value, cursor}));

  // Only the newest load draws, or says it failed: a poll sent before the
  // outcome changed must not draw the old outcome's rows after the new.
  let asks = 0;
  async function load() {
    if (older) return;
    const ask = ++asks;
    const log = await page().catch((e) => { if (ask === asks) throw e; });
    if (ask !== asks) return;
    if (older || logBox.contains(document.activeElement) && logBox.querySelector('details[open]')) return; // someone is reading
    rows = log.recent_deliveries;
    show(log);
  }

  // show draws the rows, and a button for the page after log, if any.
  function show(log) {
    const more = log.has_more ? button('Show older attempts', async () => {
      try {
        older = true;
        const next = await page(log.next_cursor);
        rows = rows.concat(next.recent_deliveries);
        show(next);
      } catch (e) { say(msg, e.message, true); }
    }, {class: 'secondary'}) : null;
    // Older pages shown, the log no longer follows new attempts: say so.
    const newest = older ? h('p', {class: 'muted'}, 'New attempts are not shown while older ones are. ',
      button('Show newest attempts', fresh, {class: 'secondary'})) : null;
    replace(logBox, newest, rows.length ? h('table', {class: 'cards', 'aria-label': 'Delivery attempts'},
      h('thead', {}, h('tr', {}, ['Time', 'Event', 'Outcome', 'Attempt', 'Delivery', ''].map((c) => h('th', {scope: 'col'}, c)))),
      h('tbody', {}, rows.map(attempt)))
      : h('p', {class: 'muted'}, 'No delivery attempt yet.'), more);
  }

  function attempt(a) {
    let resend = null;
    if (can('webhooks.resend')) {
      resend = button('Resend', async () => {
        try {
          const r = await post('/v1/voiceai/webhooks/' + enc(id) + '/deliveries/' + enc(a.delivery_id) + '/resend');
          say(msg, `Resent as delivery ${r.delivery_id}.`);
          await fresh();
        } catch (e) { say(msg, e.message, true); }
      }, {class: 'secondary', 'aria-label': `Resend delivery ${a.delivery_id}`});
    }
    return h('tr', {},
      h('td', {'data-label': 'Time'}, when(a.timestamp)),
      h('td', {'data-label': 'Event'}, label(a.event)),
      h('td', {'data-label': 'Outcome'}, badge(a.status), ` ${a.response_code || 'no answer'}`,
        a.delivery_time_ms !== undefined ? h('span', {class: 'muted'}, ` · ${a.delivery_time_ms} ms`) : null,
        a.error ? h('div', {class: 'muted'}, a.error) : null),
      h('td', {'data-label': 'Attempt'}, String((a.retry_count ?? 0) + 1)),
      h('td', {'data-label': 'Delivery'}, a.delivery_id,
        a.request_body || a.response_body ? h('details', {}, h('summary', {}, 'Request and response'),
          a.request_body ? [h('h3', {}, 'Request body'), h('pre', {}, JSON.stringify(a.request_body, null, 2))] : null,
          a.response_body ? [h('h3', {}, 'Response body'), h('pre', {}, a.response_body)] : null) : null),
      h('td', {}, resend));
  }

  await fresh();
  let polls = 0;
  poll(async () => {
    await load();
    if (++polls % 5 === 0) replace(stateBox, state(await get('/v1/convai/webhooks/' + enc(id))));
  }, 2000, staleIn(stale));
}
