// What the console knows of the fleet: the three watched lists and who is
// signed in. Views subscribe to changes; changes are batched so that the
// views render at most once per animation frame, however many events a
// watch brings (a fleet may have 10,000 services changing together).

import { WatchedList } from './api.js';

export const state = {
  self: null, // GET /user/self: {name, role, actions}
  services: null, // WatchedList keyed by name
  agents: null, // WatchedList keyed by uuid
  microservices: null, // WatchedList keyed by uuid
};

// canRetry tells whether the signed-in user may ask for a reconcile.
export function canRetry() {
  return Boolean(state.self && state.self.actions && state.self.actions.reconcileService);
}

const listeners = new Set();
let pending = null; // {services?: Set|'all', agents?: ..., microservices?: ...}
let frame = 0;

// subscribe(fn) calls fn(changes) once per frame in which something
// changed. changes.<list> is 'all' (the whole list was replaced), a Set of
// the keys that changed (empty when only the live state did), or absent.
export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function note(list, keys) {
  if (!pending) pending = {};
  const had = pending[list];
  if (keys === 'all' || had === 'all') pending[list] = 'all';
  else if (had) for (const k of keys) had.add(k);
  else pending[list] = new Set(keys);
  if (!frame) frame = requestAnimationFrame(flush);
}

function flush() {
  frame = 0;
  const changes = pending;
  pending = null;
  if (!changes) return;
  for (const fn of listeners) {
    try {
      fn(changes);
    } catch (err) {
      console.error(err);
    }
  }
}

// changed tells whether changes touch the list, or the item key in it.
export function changed(changes, list, key) {
  const c = changes[list];
  if (!c) return false;
  if (c === 'all' || key === undefined) return c === 'all' || c.size > 0;
  return c.has(key);
}

// startWatches opens the three watches afresh (nothing is kept from an
// earlier session: it may have been another user's).
export function startWatches() {
  stopWatches();
  state.services = new WatchedList('/services', (s) => s.name, (k) => note('services', k));
  state.agents = new WatchedList('/agents', (a) => a.uuid, (k) => note('agents', k));
  state.microservices = new WatchedList('/microservices', (m) => m.uuid, (k) => note('microservices', k));
  state.services.start();
  state.agents.start();
  state.microservices.start();
}

export function stopWatches() {
  for (const list of ['services', 'agents', 'microservices']) {
    if (state[list]) state[list].stop();
    state[list] = null;
  }
  pending = null;
}

// isLive tells whether all three watches are streaming.
export function isLive() {
  return Boolean(state.services && state.services.live && state.agents.live && state.microservices.live);
}

// liveProblem is why the watches are not live, for a tooltip.
export function liveProblem() {
  if (!state.services) return '';
  return [state.services, state.agents, state.microservices]
    .filter((w) => !w.live && w.lastError)
    .map((w) => `${w.path}: ${w.lastError}`)
    .join('; ');
}

// agentName answers an agent's name from its uuid (the uuid itself when
// the agent is not known).
export function agentName(uuid) {
  const a = state.agents && state.agents.items.get(uuid);
  return a ? a.name : uuid;
}
