// Service accounts and their API keys: create a key (its secret is shown
// once), revoke one. Only the permissions the signed-in key holds can be
// granted (the API refuses more).
import {get, post, del, enc} from './api.js';
import {h, replace, field, select, say, when, confirmButton, checked, onSubmit} from './dom.js';
import {start, can, session, failure} from './shell.js';

const PERMISSIONS = ['convai_read', 'convai_write', 'webhooks_write', 'service_account_write', 'create_user_api_key', 'workspace_read',
  'workspace_write', 'workspace_members_read', 'workspace_members_invite', 'workspace_members_remove', 'audit_log_read', 'user_read', 'user_write'];

start(async (main) => {
  const msg = h('p', {class: 'msg'});
  const secretBox = h('div', {});
  const box = h('div', {});
  const forms = h('div', {});
  replace(main, h('h1', {}, 'API keys'), msg, secretBox, forms, box);
  let accounts = [];

  async function load() {
    accounts = (await get('/v1/service-accounts'))['service-accounts'];
    replace(box, accounts.map((acc) => h('section', {class: 'card', 'aria-label': 'Service account ' + acc.name},
      h('h2', {}, acc.name, h('span', {class: 'muted'}, ' · ' + acc.service_account_user_id)),
      acc['api-keys'].length ? h('table', {class: 'cards'},
        h('thead', {}, h('tr', {}, ['Key', 'Permissions', 'State', 'Limits', 'Created', ''].map((c) => h('th', {scope: 'col'}, c)))),
        h('tbody', {}, acc['api-keys'].map((k) => h('tr', {},
          h('td', {'data-label': 'Key'}, k.name, h('div', {class: 'muted'}, `${k.key_id} · …${k.hint}`)),
          h('td', {'data-label': 'Permissions'}, Array.isArray(k.permissions) ? k.permissions.join(', ') : String(k.permissions)),
          h('td', {'data-label': 'State'}, k.is_disabled ? 'disabled' : 'active', k.expires_at_unix ? ` · expires ${when(k.expires_at_unix)}` : ''),
          h('td', {'data-label': 'Limits'}, limits(k)),
          h('td', {'data-label': 'Created'}, when(k.created_at_unix)),
          h('td', {}, can('identity.revoke_key') && k.key_id !== session.key_id ? revokeButton(acc, k) : null)))))
        : h('p', {class: 'muted'}, 'No key.'))));
  }

  // limits says where a key may be used from and how often: what an
  // admin set, else the defaults.
  function limits(k) {
    const parts = [];
    if (k.allowed_ips?.length) parts.push('from ' + k.allowed_ips.join(', '));
    if (k.rate_limit_per_minute) parts.push(`${k.rate_limit_per_minute}/min`);
    if (k.rate_limit_per_hour) parts.push(`${k.rate_limit_per_hour}/h`);
    return parts.length ? parts.join(' · ') : 'defaults';
  }

  function revokeButton(acc, k) {
    return confirmButton('Revoke', 'Confirm revoke', async () => {
      try {
        await del('/v1/service-accounts/' + enc(acc.service_account_user_id) + '/api-keys/' + enc(k.key_id));
        say(msg, `Revoked ${k.name}.`);
        await load();
        renderForms();
      } catch (e) { say(msg, e.message, true); }
    }, {class: 'danger', 'aria-label': `Revoke key ${k.name}`});
  }

  function renderForms() {
    if (!can('identity.create_key')) return replace(forms);
    const held = session.permissions.includes('all') ? PERMISSIONS : PERMISSIONS.filter((p) => session.permissions.includes(p));
    const account = select({name: 'account', required: true}, accounts.map((a) => [a.service_account_user_id, a.name]));
    const name = h('input', {type: 'text', name: 'name', required: true, maxlength: 200});
    const boxes = held.map((p) => h('input', {type: 'checkbox', name: 'permissions', value: p, id: 'perm-' + p}));
    // Restrictions: where it may be used from, until when, how often. The
    // rate limits are a workspace admin's to set (the API refuses others).
    const ips = h('input', {type: 'text', name: 'allowed_ips', placeholder: '203.0.113.7, 10.0.0.0/8'});
    const expires = h('input', {type: 'datetime-local', name: 'expires_at'});
    const admin = session.permissions.includes('all') || session.permissions.includes('workspace_write');
    const perMinute = h('input', {type: 'number', name: 'rate_limit_per_minute', min: 1, max: 1000000});
    const perHour = h('input', {type: 'number', name: 'rate_limit_per_hour', min: 1, max: 1000000});
    const keyForm = h('form', {class: 'card', 'aria-labelledby': 'newkey-h'}, h('h2', {id: 'newkey-h'}, 'New API key'),
      h('div', {class: 'row'}, field('Service account', account), field('Key name', name)),
      h('fieldset', {}, h('legend', {}, 'Permissions'), h('div', {class: 'filters'},
        held.map((p, i) => h('div', {}, boxes[i], ' ', h('label', {for: boxes[i].id}, p))))),
      h('div', {class: 'row'}, field('Allowed IPs', ips, 'Addresses or ranges, comma-separated; empty: any'),
        field('Expires', expires, 'Empty: never'),
        admin ? field('Requests per minute', perMinute, 'Empty: the default') : null,
        admin ? field('Requests per hour', perHour, 'Empty: the default') : null),
      h('button', {type: 'submit'}, 'Create key'));
    onSubmit(keyForm, async () => {
      const permissions = checked(boxes);
      if (!permissions.length) return say(msg, 'Choose at least one permission.', true);
      const body = {name: name.value, permissions};
      const allowed = ips.value.split(',').map((s) => s.trim()).filter(Boolean);
      if (allowed.length) body.allowed_ips = allowed;
      if (expires.value) body.expires_at_unix = Math.floor(new Date(expires.value).getTime() / 1000);
      if (perMinute.value) body.rate_limit_per_minute = Number(perMinute.value);
      if (perHour.value) body.rate_limit_per_hour = Number(perHour.value);
      try {
        const k = await post('/v1/service-accounts/' + enc(account.value) + '/api-keys', body);
        replace(secretBox, h('section', {class: 'card', role: 'status', 'aria-labelledby': 'keysecret-h'},
          h('h2', {id: 'keysecret-h'}, 'New key ' + name.value),
          h('p', {}, 'Copy it now: it is shown this once.'), h('p', {class: 'secret'}, k['xi-api-key'])));
        name.value = ips.value = expires.value = perMinute.value = perHour.value = '';
        say(msg, 'Key created.');
        await load();
      } catch (e) { say(msg, e.message, true); }
    });
    const accName = h('input', {type: 'text', name: 'account_name', required: true, maxlength: 200});
    const accForm = h('form', {class: 'card row', 'aria-labelledby': 'newacc-h'}, h('h2', {id: 'newacc-h'}, 'New service account'),
      field('Account name', accName), h('button', {type: 'submit'}, 'Create account'));
    onSubmit(accForm, async () => {
      try {
        await post('/v1/service-accounts', {name: accName.value});
        say(msg, 'Service account created.');
        await load();
        renderForms();
      } catch (e) { say(msg, e.message, true); }
    });
    replace(forms, keyForm, can('identity.create_account') ? accForm : null);
  }

  if (!can('identity.list_accounts')) {
    // Said as what the key may not do, under the page's heading, not as
    // the API's refusal in place of the page.
    replace(main, h('h1', {}, 'API keys'),
      h('p', {}, 'This key may not list service accounts and their keys: that needs workspace_read, workspace_members_read or service_account_write.'));
    return;
  }
  try {
    await load();
    renderForms();
  } catch (e) {
    failure(box, e);
  }
});
