// The console's one way to the API: same-origin fetch with the session
// cookie (HttpOnly, sent by the browser) and the CSRF token, which lives in
// this module's memory only.

let csrf = '';

export function setCSRF(token) {
  csrf = token || '';
}

export class ApiError extends Error {
  constructor(code, status, message, detail, retryAfter = 0) {
    super(message);
    this.code = code; // HTTP status
    this.status = status; // the API's stable status, e.g. ticket_not_found
    this.detail = detail;
    this.retryAfter = retryAfter; // seconds the answer asked to wait (a 429's, a 503's), 0 when none
  }
}

// newKey is an Idempotency-Key for one write: with it the gateway may send
// the write again (after a lost connection to a service, or while its
// answer is slow) and it is still done once. crypto.getRandomValues, as
// randomUUID needs a secure context the console may be served without.
function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return 'console-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// api sends one request; a JSON body is encoded, a JSON answer decoded,
// an error answer thrown as ApiError. A 401 tells the page to sign in
// again. Every write to the API goes with a key of its own.
export async function api(method, path, body, {raw = false} = {}) {
  const headers = {};
  if (csrf) headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && path.startsWith('/v1/')) headers['Idempotency-Key'] = newKey();
  const res = await fetch(path, {
    method, headers, credentials: 'same-origin', cache: 'no-store',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.ok && raw) return res;
  if (res.status === 204) return null;
  const type = res.headers.get('Content-Type') || '';
  const data = type.includes('json') ? await res.json().catch(() => null) : await res.text();
  if (!res.ok) {
    const d = (data && data.detail) || {};
    const message = typeof d.message === 'string' ? d.message
      : Array.isArray(d) ? d.map((e) => e.msg).join('; ') : 'HTTP ' + res.status;
    if (res.status === 401 && !path.startsWith('/console/session')) {
      dispatchEvent(new CustomEvent('console:signedout', {detail: {status: d.status || '', message}}));
    }
    throw new ApiError(res.status, d.status || '', message, d, Number(res.headers.get('Retry-After')) || 0);
  }
  return data;
}

export const get = (path) => api('GET', path);
export const post = (path, body) => api('POST', path, body === undefined ? {} : body);
export const patch = (path, body) => api('PATCH', path, body);
export const put = (path, body) => api('PUT', path, body);
export const del = (path) => api('DELETE', path);

// query builds ?a=1&b=2 from an object, leaving out empty values; an
// array value repeats its name.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === '' || v === null || v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) q.append(k, String(one));
  }
  const s = q.toString();
  return s ? '?' + s : '';
}

export const enc = encodeURIComponent;
