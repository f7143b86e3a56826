// Element building for the console. Data only ever becomes text
// (textContent, text nodes, attribute values): never markup.

// h builds an element: h('a', {href: '...', class: 'x', on: {click: fn}}, 'text', child, [more]).
// A click handler runs once at a time (see once).
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'on') {
      for (const [type, fn] of Object.entries(v)) el.addEventListener(type, type === 'click' ? once(el, fn) : fn);
    } else if (/^(inner|outer)HTML$/i.test(k) || k.startsWith('on')) {
      throw new Error('dom.js sets text and listeners only, not ' + k);
    } else if (k === 'href' && !safeHref(String(v))) {
      throw new Error('dom.js: refused link ' + v);
    } else if (k === 'value') {
      el.value = String(v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

// svg builds an SVG element the way h builds an HTML one: attributes and
// text only (no listeners, links or inline style, which the CSP refuses).
const SVG_NS = 'http://www.w3.org/2000/svg';
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (/^on|href$|^style$/i.test(k)) throw new Error('dom.js: svg sets plain attributes only, not ' + k);
    el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

// Links are relative (console pages, API paths) or blob: (downloads). A
// path may not start with // or /\ (browsers read both as another host),
// nor hold a tab or newline anywhere: browsers drop those before parsing,
// so "/\t/evil.example" is "//evil.example".
function safeHref(href) {
  return !/[\t\n\r]/.test(href) && /^(?:[a-z0-9_.-]+\.html(?:[?#].*)?|#.*|\/(?![/\\]).*|blob:.*)$/i.test(href);
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// replace empties el and appends children.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function text(el, s) {
  el.textContent = s;
  return el;
}

// field is a labelled control: the label names it for assistive technology.
let nextID = 0;
export function field(label, control, hint) {
  if (!control.id) control.id = 'f' + ++nextID;
  return h('div', {class: 'field'}, h('label', {for: control.id}, label), control, hint ? h('small', {}, hint) : null);
}

// select builds a <select> from [value, label] pairs with value chosen.
export function select(props, options, chosen) {
  return h('select', props, options.map(([v, label]) =>
    h('option', {value: v, selected: String(v) === String(chosen ?? '')}, label)));
}

// onChoose runs choose(value) when a choice is made in sel, not at each
// step towards it: the keyboard's arrows (and typed letters) step a
// closed select through its options, and Chromium fires change at every
// step. Such a step waits for Enter, or for the select to be left; a pick
// from the opened list (mouse or keyboard) is a choice at once. A choice
// equal to the last one (down, then up again) sends nothing, and Escape
// puts the last choice back.
export function onChoose(sel, choose) {
  let chosen = sel.value;
  // stepping: a key is down on the select, and the change it fires is a
  // step. Until the key is up, not until a timer: Chromium may fire the
  // change after a zero timer set on keydown when the machine is busy,
  // and a step was then saved as a choice.
  let stepping = false;
  const commit = () => {
    if (sel.value === chosen) return;
    chosen = sel.value;
    choose(sel.value);
  };
  sel.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter') return commit();
    if (ev.key === 'Escape') { sel.value = chosen; return; }
    stepping = true;
  });
  sel.addEventListener('keyup', () => { stepping = false; });
  sel.addEventListener('pointerdown', () => { stepping = false; }); // a pick with the mouse is a choice
  sel.addEventListener('change', () => { if (!stepping) commit(); });
  // Left: a choice. Removed (a redraw: blur fires as it goes, and the
  // redrawing script runs on) is not.
  sel.addEventListener('blur', () => {
    stepping = false; // a Tab's keyup goes to the next control
    queueMicrotask(() => { if (sel.isConnected) commit(); });
  });
}

export function button(label, onClick, props = {}) {
  return h('button', {type: 'button', ...props, on: {click: onClick}}, label);
}

// onSubmit runs handle when form is submitted, instead of the browser's
// navigation.
export function onSubmit(form, handle) {
  const run = once(form, handle);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run(ev);
  });
}

// once wraps an event handler of el so that, while what it started is
// still running, the event is ignored: a double click or a second Enter
// sends one request, not two. el says it is busy meanwhile (aria-busy);
// it is not disabled, which would drop its focus.
export function once(el, handle) {
  let running = false;
  return async (ev) => {
    if (running) return;
    running = true;
    el.setAttribute('aria-busy', 'true');
    try {
      await handle(ev);
    } finally {
      running = false;
      el.removeAttribute('aria-busy');
    }
  };
}

// checked is the values of the ticked checkboxes among boxes.
export function checked(boxes) {
  return [...boxes].filter((b) => b.checked).map((b) => b.value);
}

// confirmButton acts in two steps instead of a dialog: the first press
// asks (its label becomes confirmLabel), the second runs onConfirm.
// Leaving the button, or Escape on it, takes the question back.
export function confirmButton(label, confirmLabel, onConfirm, props = {}) {
  // An aria-label ("Delete <url>") is the name assistive technology
  // reads instead of the label: it must say the confirm step too
  // ("Confirm delete <url>").
  const name = props['aria-label'];
  const armedName = name && (name.startsWith(label) ? confirmLabel + name.slice(label.length) : `${confirmLabel}: ${name}`);
  const arm = (armed) => {
    b.dataset.armed = armed ? 'yes' : '';
    b.textContent = armed ? confirmLabel : label;
    if (name) b.setAttribute('aria-label', armed ? armedName : name);
  };
  const b = button(label, async () => {
    if (b.dataset.armed !== 'yes') return arm(true);
    await onConfirm();
  }, props);
  b.addEventListener('blur', () => arm(false));
  b.addEventListener('keydown', (ev) => { if (ev.key === 'Escape') arm(false); });
  return b;
}

// A page that draws a part of itself again (after a change) replaces the
// control that had the focus, and the focus falls to <body>: a keyboard
// user loses their place. A control that names itself (data-focus, one
// name per page) gets it back: focusKey reads the name of the control
// focused in root before root is drawn again, refocus gives the focus to
// the redrawn control of that name.
export function focusKey(root) {
  const el = document.activeElement;
  return el && root.contains(el) ? el.dataset.focus || '' : '';
}

// refocus focuses root's control named key, if the focus was lost. One
// drawn later (its part of the page is fetched) gets the focus when it
// appears, and fallback (focusable: tabindex -1) has it meanwhile, or
// for good when the control is gone (a tag detached); a person who moved
// the focus elsewhere keeps it.
export function refocus(root, key, fallback) {
  if (!key) return;
  const lost = () => [document.body, root, fallback].includes(document.activeElement);
  const find = () => root.querySelector(`[data-focus="${CSS.escape(key)}"]`);
  if (!lost() || put(find())) return;
  fallback?.focus();
  const watcher = new MutationObserver(() => {
    if (!lost() || put(find())) watcher.disconnect();
  });
  watcher.observe(root, {childList: true, subtree: true});
}

// put focuses el, opening the <details> it is folded in.
function put(el) {
  if (!el) return false;
  const folded = el.closest('details:not([open])');
  if (folded) folded.open = true;
  el.focus();
  return true;
}

// when formats unix seconds (or an ISO string) for people, in their zone.
export function when(t) {
  if (t === null || t === undefined || t === '') return '—';
  const d = typeof t === 'number' ? new Date(t * 1000) : new Date(t);
  return isNaN(d) ? String(t) : d.toLocaleString();
}

// status shows a short message in a live region (role=status or alert).
export function say(el, message, isError) {
  el.setAttribute('role', isError ? 'alert' : 'status');
  el.className = isError ? 'msg error' : 'msg';
  el.textContent = message;
}

export function pageParam(name) {
  return new URLSearchParams(location.search).get(name);
}

// spanLabels are a chart's first and last times, to the minute, or to the
// second when both fall in one minute (two equal labels said nothing).
export function spanLabels(firstSecs, lastSecs) {
  const at = (t, opts) => new Date(t * 1000).toLocaleString([], {month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', ...opts});
  const [a, b] = [at(firstSecs), at(lastSecs)];
  return a !== b ? [a, b] : [at(firstSecs, {second: '2-digit'}), at(lastSecs, {second: '2-digit'})];
}
