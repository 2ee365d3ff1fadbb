// The console's only way to the API: the session (tokens in
// sessionStorage), calls with the bearer token and the one refresh a 401
// allows, and the list watches (?watch=true, JSON lines).

const BASE = '/api/v3';
const SESSION_KEY = 'svcbridge.session';

// ApiError is a failed call: the HTTP status and the API's
// {"name","message"} (message is what the user is shown).
export class ApiError extends Error {
  constructor(status, name, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.name = name || 'Error';
  }
}

// SessionEnded is thrown by a call whose 401 could not be mended by a
// refresh; the session is cleared by then and onSessionEnded was called.
export class SessionEnded extends Error {
  constructor() {
    super('Your session ended: sign in again');
    this.name = 'SessionEnded';
  }
}

// ---- The session ----

export function getSession() {
  try {
    const s = JSON.parse(sessionStorage.getItem(SESSION_KEY));
    if (s && typeof s.accessToken === 'string' && s.accessToken !== '') return s;
  } catch {
    // A hand-edited or foreign value: as if there were none.
  }
  return null;
}

export function setSession(accessToken, refreshToken) {
  sessionStorage.setItem(SESSION_KEY, JSON.stringify({ accessToken, refreshToken: refreshToken || '' }));
}

export function clearSession() {
  sessionStorage.removeItem(SESSION_KEY);
}

// The app sets this: what to do when a session ends (show the login
// screen). Called at most once per session, however many calls fail
// together.
let sessionEndedHandler = () => {};
export function onSessionEnded(fn) {
  sessionEndedHandler = fn;
}

function endSession() {
  if (getSession() === null) return; // already ended by another call
  clearSession();
  sessionEndedHandler();
}

// ---- Calls ----

// The refresh in flight, shared by every call that got a 401 meanwhile:
// the refresh token is used once, not once per call.
let refreshing = null;

// refreshOnce mends a 401 of a call made with usedToken. It reports
// whether the call is worth retrying with the session's token.
async function refreshOnce(usedToken) {
  const s = getSession();
  if (!s) return false;
  if (s.accessToken !== usedToken) return true; // refreshed since the call went out
  if (!s.refreshToken) return false;
  if (!refreshing) {
    refreshing = (async () => {
      try {
        const res = await fetch(BASE + '/user/refresh', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ refreshToken: s.refreshToken }),
        });
        if (!res.ok) return false;
        const t = await res.json();
        if (!t || !t.accessToken) return false;
        setSession(t.accessToken, t.refreshToken || s.refreshToken);
        return true;
      } catch {
        return false;
      } finally {
        refreshing = null;
      }
    })();
  }
  return refreshing;
}

function withToken(init, token) {
  const headers = new Headers(init.headers || {});
  headers.set('Authorization', 'Bearer ' + token);
  return { ...init, headers };
}

// authedFetch makes a call with the session's token and answers the
// Response. A 401 is refreshed once and the call retried; a 401 after
// that (or with nothing to refresh with) ends the session and throws
// SessionEnded. With keepSession, a 401 is returned as it is instead (the
// sign-in's check of a token it was just given).
export async function authedFetch(path, init = {}, { keepSession = false } = {}) {
  const s = getSession();
  if (!s) throw new SessionEnded();
  let res = await fetch(BASE + path, withToken(init, s.accessToken));
  if (res.status !== 401 || keepSession) return res;
  if (await refreshOnce(s.accessToken)) {
    const now = getSession();
    if (now) res = await fetch(BASE + path, withToken(init, now.accessToken));
  }
  if (res.status === 401) {
    endSession();
    throw new SessionEnded();
  }
  return res;
}

// errorOf reads a failed answer's {"name","message"}.
async function errorOf(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON (a proxy's page): the status is all there is.
  }
  const message = body && typeof body.message === 'string' && body.message !== '' ? body.message : `${res.status} ${res.statusText}`.trim();
  return new ApiError(res.status, body && body.name, message);
}

// api(path, {method, body}) calls the API and answers its JSON (null for
// an empty answer, as a 202). A failure throws ApiError or SessionEnded.
export async function api(path, { method = 'GET', body, keepSession = false, signal } = {}) {
  const init = { method, signal, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await authedFetch(path, init, { keepSession });
  if (!res.ok) throw await errorOf(res);
  const raw = await res.text();
  return raw === '' ? null : JSON.parse(raw);
}

// login trades an email and password (and one-time code) for tokens.
// Not an authed call: a 401 here is a wrong password, thrown as ApiError.
export async function login(email, password, totp) {
  const body = { email, password };
  if (totp) body.totp = totp;
  const res = await fetch(BASE + '/user/login', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw await errorOf(res);
  return res.json();
}

// ---- Watches ----

const BACKOFF_FIRST = 1000;
const BACKOFF_MAX = 30000;

// WatchedList keeps one list (services, agents or microservices) in step
// with the API through its watch. items maps each item's key to the item.
// A connection's ADDED events up to its BOOKMARK are the whole list:
// they are gathered aside and replace items at the BOOKMARK, so a
// reconnect drops what was deleted meanwhile and the views never see a
// half-loaded list. After the BOOKMARK, events apply one by one.
//
// onChange(changedKeys | 'all') is called for each change, live-ness
// changes included (with an empty Set); the caller batches them.
export class WatchedList {
  constructor(path, keyOf, onChange) {
    this.path = path;
    this.keyOf = keyOf;
    this.onChange = onChange;
    this.items = new Map();
    this.synced = false; // has had a first BOOKMARK
    this.live = false; // streaming, past this connection's BOOKMARK
    this.lastError = '';
    this.stopped = true;
    this.abort = null;
    this.timer = null;
    this.backoff = BACKOFF_FIRST;
  }

  start() {
    if (!this.stopped) return;
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    if (this.abort) this.abort.abort();
    this.abort = null;
    clearTimeout(this.timer);
    this.timer = null;
    this.live = false;
  }

  setLive(live) {
    if (this.live === live) return;
    this.live = live;
    this.onChange(new Set());
  }

  async connect() {
    const abort = new AbortController();
    this.abort = abort;
    let fresh = null; // the state being gathered, until the BOOKMARK
    let wait = 0; // a Retry-After, in ms, for the next try
    try {
      const res = await authedFetch(this.path + '?watch=true', { signal: abort.signal });
      if (!res.ok) {
        const err = await errorOf(res);
        const after = Number(res.headers.get('Retry-After'));
        if (after > 0) wait = after * 1000;
        throw err;
      }
      fresh = new Map();
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let rest = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        // stream: true keeps a character split across chunks whole.
        rest += decoder.decode(value, { stream: true });
        const lines = rest.split('\n');
        rest = lines.pop(); // a line not ended yet
        for (const line of lines) {
          if (line.trim() === '') continue;
          fresh = this.apply(JSON.parse(line), fresh);
        }
      }
      this.lastError = 'the watch ended';
    } catch (err) {
      if (this.stopped || err instanceof SessionEnded) return;
      this.lastError = err.message || String(err);
      abort.abort(); // an ERROR event or a bad line: let the connection go
    }
    if (this.stopped || this.abort !== abort) return;
    this.setLive(false);
    this.timer = setTimeout(() => this.connect(), Math.max(wait, this.backoff));
    this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX);
  }

  // apply takes one event. fresh is the state being gathered before this
  // connection's BOOKMARK (null after it); it returns the new fresh.
  apply(ev, fresh) {
    const obj = ev.object || {};
    switch (ev.type) {
      case 'BOOKMARK':
        if (fresh) {
          this.items = fresh;
          this.synced = true;
          this.backoff = BACKOFF_FIRST; // a working stream: start over
          this.lastError = '';
          this.live = true;
          this.onChange('all');
        }
        return null;
      case 'ERROR':
        // The stream ends after it; the reconnect follows.
        throw new Error(obj.message || 'the watch failed');
      case 'ADDED':
      case 'MODIFIED': {
        const key = this.keyOf(obj);
        if (fresh) {
          fresh.set(key, obj);
        } else {
          this.items.set(key, obj);
          this.onChange(new Set([key]));
        }
        return fresh;
      }
      case 'DELETED': {
        const key = this.keyOf(obj);
        if (fresh) {
          fresh.delete(key);
        } else if (this.items.delete(key)) {
          this.onChange(new Set([key]));
        }
        return fresh;
      }
      default:
        return fresh; // a type this console does not know: skipped
    }
  }
}
