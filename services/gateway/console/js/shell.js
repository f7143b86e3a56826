// The frame every page shares: navigation, sign-in and sign-out, and the
// session (who the caller is, which operations its key may call).
import {api, get, setCSRF, ApiError} from './api.js';
import {h, replace, field, say, onSubmit} from './dom.js';

export let session = null;
// drawn is whether this page has called its render: its listeners and
// polls live as long as the page does.
let drawn = false;

// can reports whether the signed-in key may call an operation of the API
// (by its name in the API's operation table, e.g. "tickets.update").
export function can(operation) {
  return !!session && session.operations.includes(operation);
}

const pages = [
  ['index.html', 'Triage', 'tickets.list'],
  ['conversations.html', 'Conversations', 'tickets.list_conversations'],
  ['tests.html', 'Tests', 'testing.list_tests'],
  ['review.html', 'Review', 'testing.review_queue'],
  ['loadtest.html', 'Load test', 'testing.start_load_test'],
  ['webhooks.html', 'Webhooks', 'webhooks.list'],
  ['agents.html', 'Agents', 'agents.list'],
  ['keys.html', 'API keys', 'identity.list_accounts'],
];

// start renders the frame, makes sure of a session (asking for a key
// when there is none) and then calls render(main).
const SAID_ON_SIGN_IN = ['api_key_revoked', 'api_key_disabled', 'api_key_expired', 'console_session_expired', 'console_session_ended'];

export async function start(render) {
  const main = document.getElementById('main');
  // Why, as the API said it, when it is the key's doing (revoked, disabled
  // or expired: signing in again with it would only fail) or the
  // session's (expired, signed out elsewhere).
  addEventListener('console:signedout', (e) => signIn(main, render,
    !SAID_ON_SIGN_IN.includes(e.detail?.status) ? 'Your session ended; sign in again.'
      : e.detail.message + (e.detail.status.startsWith('api_key_') ? ' Sign in with another key.' : '')));
  try {
    session = await api('GET', '/console/session');
  } catch (e) {
    if (e instanceof ApiError && (e.code === 401 || e.code === 503)) return signIn(main, render, e.code === 503 ? e.message : '');
    return replace(main, h('p', {class: 'msg error', role: 'alert'}, 'The console cannot reach the gateway: ' + e.message));
  }
  begin(main, render);
}

function begin(main, render) {
  setCSRF(session.csrf_token);
  frame();
  replace(main);
  drawn = true;
  Promise.resolve(render(main)).then(() => restoreDrafts(main), () => {});
}

// Text typed into a page whose session ended is kept over the sign-in
// (which loads the page afresh) in this tab's sessionStorage, and put
// back into the same fields once the page is drawn again: a comment
// written as the session expired is not lost.
const draftsKey = () => 'console-drafts:' + location.pathname + location.search;
const draftFields = 'textarea, input[type="text"], input[type="search"]';
const draftName = (el) => el.dataset.focus || el.name || el.getAttribute('aria-label') || '';

function keepDrafts(main) {
  const drafts = {};
  for (const el of main.querySelectorAll(draftFields)) {
    if (el.value.trim() && draftName(el)) drafts[draftName(el)] = el.value;
  }
  if (Object.keys(drafts).length) sessionStorage.setItem(draftsKey(), JSON.stringify(drafts));
}

function restoreDrafts(main) {
  const kept = sessionStorage.getItem(draftsKey());
  if (!kept) return;
  sessionStorage.removeItem(draftsKey());
  let drafts = {};
  try { drafts = JSON.parse(kept) || {}; } catch { return; }
  for (const el of main.querySelectorAll(draftFields)) {
    const text = drafts[draftName(el)];
    if (typeof text === 'string' && !el.value) el.value = text;
  }
}

function frame() {
  const here = location.pathname.split('/').pop() || 'index.html';
  const top = document.getElementById('top');
  replace(top,
    h('a', {class: 'brand', href: 'index.html'}, 'voiceai console'),
    h('nav', {'aria-label': 'Console'}, h('ul', {},
      pages.filter(([, , op]) => !session || can(op)).map(([href, label]) =>
        h('li', {}, h('a', {href, 'aria-current': href === here ? 'page' : null}, label))))),
    session ? h('div', {class: 'who'},
      h('span', {}, session.key_name || session.key_id),
      h('button', {type: 'button', on: {click: signOut}}, 'Sign out')) : null);
}

async function signOut() {
  try {
    await api('DELETE', '/console/session');
  } catch (e) {
    // Not recorded (the gateway could not reach its list of signed-out
    // sessions): the session still works, so say so and stay.
    if (e.code === 503) {
      alert('Sign-out did not go through: ' + e.message + ' Try again in a moment.');
      return;
    }
  }
  setCSRF('');
  session = null;
  location.assign('index.html');
}

function signIn(main, render, why) {
  if (drawn) keepDrafts(main);
  session = null;
  setCSRF('');
  frame();
  const key = h('input', {type: 'password', name: 'api_key', autocomplete: 'off', required: true, spellcheck: 'false'});
  const msg = h('p', {class: 'msg'});
  const form = h('form', {class: 'card signin', 'aria-labelledby': 'signin-title'},
    h('h1', {id: 'signin-title'}, 'Sign in'),
    h('p', {}, 'Paste an API key. The console keeps it, sealed, in an HttpOnly cookie for 8 hours (closing the browser does not end that: sign out does) and can do only what the key may.'),
    field('API key', key),
    h('button', {type: 'submit'}, 'Sign in'), msg);
  onSubmit(form, async () => {
    say(msg, 'Signing in…');
    try {
      session = await api('POST', '/console/session', {api_key: key.value});
      key.value = '';
      // After a session ended, the page drawn before still has its
      // listeners and polls over what it showed then (a review key press
      // would label a run of the old list too): load the page afresh, now
      // that the cookie is set, instead of drawing it a second time.
      if (drawn) return location.reload();
      begin(main, render);
    } catch (e) {
      say(msg, e.message, true);
    }
  });
  replace(main, form);
  if (why) say(msg, why, true);
  key.focus();
}

// poll calls fn every ms while the page is visible, one call at a time.
// A failed call is not hidden (the page would look live while it shows
// old data): stale(error, since) hears of it, with when the page was last
// up to date, and stale(null) of the next call that succeeds.
export function poll(fn, ms, stale) {
  let busy = false, failed = false, since = new Date(), waitUntil = 0;
  const tick = async () => {
    if (busy || document.visibilityState !== 'visible' || !session || Date.now() < waitUntil) return;
    busy = true;
    try {
      await fn();
      since = new Date();
      if (failed) stale(null);
      failed = false;
    } catch (e) {
      failed = true;
      // A refusal that says when to ask again (the key's rate limit) is
      // asked again then, not at every tick, which would only spend the
      // key's limit further; otherwise the next tick tries again.
      if (e instanceof ApiError && e.retryAfter > 0) waitUntil = Date.now() + e.retryAfter * 1000;
      stale(e, since);
    } finally { busy = false; }
  };
  const id = setInterval(tick, ms);
  return () => clearInterval(id);
}

// notUpdated is what a page says while its polls fail.
export function notUpdated(e, since) {
  const hms = [since.getHours(), since.getMinutes(), since.getSeconds()].map((n) => String(n).padStart(2, '0')).join(':');
  return `Not updated since ${hms}: ${e.message || e}`;
}

// staleIn is a poll's stale for a page: el (hidden while all is well)
// says since when and why the page is not updated, until it is again.
export function staleIn(el) {
  el.hidden = true;
  return (e, since) => {
    el.hidden = !e;
    if (e) say(el, notUpdated(e, since), true);
    else el.textContent = '';
  };
}

// followLive keeps a page on something that runs (an invocation, a load
// test) up to date: while status() is running, refresh fetches and shows
// it again every 1.5 s; msg says it is followed (or since when it is not,
// while refreshing fails), then how it finished.
export function followLive(msg, status, refresh) {
  const finished = () => say(msg, 'Finished: ' + status() + '.');
  const running = () => say(msg, 'Running: this page follows it live.');
  if (status() !== 'running') return finished();
  running();
  const stop = poll(async () => {
    await refresh();
    if (status() !== 'running') {
      stop();
      finished();
    }
  }, 1500, (e, since) => {
    if (e) say(msg, notUpdated(e, since), true);
    else if (status() === 'running') running(); // a finish said so already
  });
}

// failure renders an error where a page's content would be.
export function failure(el, e) {
  const msg = h('p', {});
  say(msg, e.message || String(e), true);
  replace(el, msg);
}

// noneNamed is what the page of one item (a ticket, an invocation) says
// when its address names none (a link cut short): that, and a link back
// to where they are listed, not the API's answer for a path without id.
export function noneNamed(main, what, listHref, listName) {
  replace(main, h('p', {class: 'msg error', role: 'alert'}, `This page shows one ${what}, and its address names none.`),
    backTo(listHref, listName));
}

// backTo is the link from one item's page to where such items are listed.
export function backTo(href, name) {
  return h('p', {}, h('a', {href}, '← ' + name));
}

// shown is what a page shows, read from path; when it cannot be read (an
// unknown id, say), the page says why instead, with back (a link to the
// listing) under it, and shown is null.
export async function shown(main, path, back = null) {
  try {
    return await get(path);
  } catch (e) {
    failure(main, e);
    if (e instanceof ApiError && e.code === 429 && e.retryAfter > 0) {
      // The key's rate limit: the page loads again once it allows.
      main.append(h('p', {class: 'muted'}, `The page loads again in ${e.retryAfter} s.`));
      setTimeout(() => location.reload(), e.retryAfter * 1000);
    }
    if (back) main.append(back);
    return null;
  }
}
