// The console's boot: sign-in, the header, and the hash routes
// (#/services, #/network, #/agents, #/microservices; ?key=value after the
// route passes parameters, as #/network?service=web).

import { api, login, getSession, setSession, clearSession, onSessionEnded, ApiError, SessionEnded } from './api.js';
import { el, text } from './dom.js';
import { state, subscribe, startWatches, stopWatches, isLive, liveProblem } from './state.js';
import { createServicesView } from './services.js';
import { createNetworkView } from './network.js';
import { createAgentsView, createMicroservicesView } from './inventory.js';

const views = {
  services: createServicesView(),
  network: createNetworkView(),
  agents: createAgentsView(),
  microservices: createMicroservicesView(),
};

const $ = (id) => document.getElementById(id);

let current = null; // {name, view} of the view shown

// ---- Routing ----

// parseHash reads "#/network?service=web" (or "#network") as
// {name: 'network', params}; anything unknown is the services view.
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const name = path.split('/')[0];
  return { name: name in views ? name : 'services', params };
}

function route() {
  if (!state.self) return; // the login screen is up
  const { name, params } = parseHash();
  for (const a of document.querySelectorAll('#nav a')) {
    const on = a.getAttribute('href') === `#/${name}`;
    a.classList.toggle('active', on);
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (current && current.name === name) {
    current.view.update(params);
    return;
  }
  if (current) current.view.unmount();
  current = { name, view: views[name] };
  current.view.mount($('view'), params);
}

function closeView() {
  if (current) current.view.unmount();
  current = null;
  $('view').replaceChildren();
}

// ---- The header ----

function renderLive() {
  const live = isLive();
  const badge = $('live');
  badge.dataset.state = live ? 'live' : 'reconnecting';
  text(badge, live ? 'live' : 'reconnecting…');
  badge.title = live ? 'The lists are streaming from the API' : liveProblem() || 'Connecting to the API';
}

subscribe((changes) => {
  renderLive();
  if (current) current.view.onChange(changes);
});

// ---- Signing in and out ----

function showLogin(message, detail = '') {
  stopWatches();
  closeView();
  state.self = null;
  $('signed-in').hidden = true;
  $('nav').hidden = true;
  $('view').hidden = true;
  $('login').hidden = false;
  text($('login-message'), message);
  $('login-message').hidden = message === '';
  text($('login-detail'), detail);
  $('login-detail').hidden = detail === '';
  $('login-password').value = '';
  $('login-totp').value = '';
  $('login-token').value = '';
  for (const b of document.querySelectorAll('#login button')) b.disabled = false;
}

function enterConsole(self) {
  state.self = self;
  $('login').hidden = true;
  $('signed-in').hidden = false;
  $('nav').hidden = false;
  $('view').hidden = false;
  text($('whoami'), `${self.name} (${self.role})`);
  startWatches();
  renderLive();
  route();
}

// checkSelf asks who the session's token belongs to. With keepSession a
// 401 is the token's fault, told as badToken; otherwise the usual
// refresh-or-end applies.
async function checkSelf(badToken) {
  try {
    const self = await api('/user/self', { keepSession: Boolean(badToken) });
    enterConsole(self);
  } catch (err) {
    if (err instanceof SessionEnded) return; // the login screen is up already
    if (err instanceof ApiError && err.status === 401 && badToken) {
      clearSession();
      showLogin(badToken);
      return;
    }
    // The API is down or erring: keep the session, offer to try again.
    showLogin(`Could not reach svcbridge: ${err.message}`);
    if (getSession()) {
      $('login-detail').hidden = false;
      $('login-detail').replaceChildren(el('button', { type: 'button', onclick: () => checkSelf(null) }, 'Try again with the current session'));
    }
  }
}

function busy(form, on) {
  for (const b of form.querySelectorAll('button')) b.disabled = on;
}

$('token-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const token = $('login-token').value.trim();
  if (!token) return;
  busy(ev.target, true);
  setSession(token, '');
  await checkSelf('That token is not valid');
  busy(ev.target, false);
});

$('password-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  busy(ev.target, true);
  try {
    const tokens = await login($('login-email').value.trim(), $('login-password').value, $('login-totp').value.trim());
    setSession(tokens.accessToken, tokens.refreshToken);
  } catch (err) {
    busy(ev.target, false);
    if (err instanceof ApiError && err.status === 401) {
      // The API's own words only when they say more than "wrong".
      const detail = err.message && err.message !== 'invalid credentials' ? err.message : '';
      showLogin('Wrong email or password', detail);
    } else {
      showLogin(err.message);
    }
    return;
  }
  await checkSelf('Wrong email or password');
  busy(ev.target, false);
});

$('sign-out').addEventListener('click', () => {
  clearSession();
  showLogin('');
});

onSessionEnded(() => showLogin('Your session ended: sign in again'));

window.addEventListener('hashchange', route);

// Leaving the page closes the watches. A browser may keep a left page
// alive (the back/forward cache) with its streams still open, and with
// HTTP/1.1's six connections to a host, three left-open watches and the
// next page's three would leave that page no connection for anything
// else. Coming back to a kept page opens them again.
window.addEventListener('pagehide', () => stopWatches());
window.addEventListener('pageshow', (ev) => {
  if (ev.persisted && state.self) startWatches();
});

// ---- Boot ----

if (getSession()) {
  checkSelf(null);
} else {
  showLogin('');
}
