// The inventory views: agents (#/agents), each row opening what its router
// listens for, and microservices (#/microservices) with the services that
// reach them.

import { api, SessionEnded } from './api.js';
import { el, byName, throttle, serviceHref, yesNo } from './dom.js';
import { state, changed, agentName } from './state.js';
import { routerState, refusedDetail } from './model.js';
import { rolloutBadge, listenWhy } from './services.js';

// ---- Agents ----

export function createAgentsView() {
  let root = null;
  let body = null;
  // Expanded agents, by name: {services, error} (services null while loading).
  const open = new Map();

  async function loadServices(name) {
    try {
      const list = await api(`/agents/${encodeURIComponent(name)}/services`);
      if (open.has(name)) open.set(name, { services: list || [], error: '' });
    } catch (err) {
      if (err instanceof SessionEnded) return;
      if (open.has(name)) open.set(name, { services: open.get(name).services, error: err.message });
    }
    render();
  }

  // What an agent listens for changes with services and agents (tags):
  // refresh the open ones, at most once a second.
  const refreshOpen = throttle(() => Promise.all([...open.keys()].map(loadServices)), 1000);

  function toggle(name) {
    if (open.has(name)) {
      open.delete(name);
    } else {
      open.set(name, { services: null, error: '' });
      loadServices(name);
    }
    render();
  }

  function agentRow(a) {
    const rs = routerState(a, true);
    const expanded = open.has(a.name);
    const upstream = a.upstreamRouterNames && a.upstreamRouterNames.length ? a.upstreamRouterNames : (a.upstreamRouters || []).map(agentName);
    return el(
      'tr',
      {
        class: `agent-row${expanded ? ' expanded' : ''}`,
        dataset: { agentRow: a.name },
        tabindex: 0,
        'aria-expanded': String(expanded),
        title: 'Show what this agent listens for',
        onclick: () => toggle(a.name),
        onkeydown: (ev) => {
          if (ev.key === 'Enter' || ev.key === ' ') {
            ev.preventDefault();
            toggle(a.name);
          }
        },
      },
      el('td', { class: 'a-name' }, el('span', { class: 'caret', 'aria-hidden': 'true' }, expanded ? '▾ ' : '▸ '), a.name),
      el('td', { class: 'a-mode' }, a.routerMode + (a.defaultRouter ? ' (hub)' : '')),
      el('td', { class: 'a-host' }, a.host || ''),
      el('td', { class: 'a-tags' }, (a.tags || []).join(', ')),
      el('td', { class: 'a-router' }, el('span', { class: `state state-${rs.state}`, title: refusedDetail(a) || rs.text }, rs.text)),
      el('td', { class: 'a-upstream' }, upstream.join(', ')),
    );
  }

  function servicesRow(a) {
    const o = open.get(a.name);
    let content;
    if (o.services === null) {
      content = el('p', { class: o.error ? 'error' : 'muted' }, o.error || 'Loading…');
    } else if (o.services.length === 0) {
      content = el('p', { class: 'muted' }, `${a.name}'s router listens for no service.`);
    } else {
      const sorted = [...o.services].sort((x, y) => byName(x.service, y.service));
      content = el(
        'table',
        { class: 'nested' },
        el('thead', {}, el('tr', {}, ['Service', 'Bridge port', 'Listening', 'Rollout', 'Rollout reason', 'Why'].map((h) => el('th', {}, h)))),
        el(
          'tbody',
          {},
          sorted.map((s) =>
            el(
              'tr',
              { dataset: { agentService: s.service } },
              el('td', {}, el('a', { href: serviceHref(s.service) }, s.service)),
              el('td', {}, s.bridgePort === null || s.bridgePort === undefined ? '—' : String(s.bridgePort)),
              el('td', {}, yesNo(s.listening)),
              el('td', {}, rolloutBadge(s.rollout)),
              el('td', { class: 'rollout-reason' }, s.rolloutReason || ''),
              el('td', { class: 'muted' }, listenWhy(s)),
            ),
          ),
        ),
      );
      if (o.error) content = [el('p', { class: 'error' }, o.error), content];
    }
    return el('tr', { class: 'agent-services', dataset: { agentServices: a.name } }, el('td', { colspan: 6 }, content));
  }

  function render() {
    if (!root) return;
    const agents = state.agents ? [...state.agents.items.values()] : [];
    // The hub first, then by name.
    agents.sort((a, b) => Number(Boolean(b.defaultRouter)) - Number(Boolean(a.defaultRouter)) || byName(a.name, b.name));
    const rows = [];
    for (const a of agents) {
      rows.push(agentRow(a));
      if (open.has(a.name)) rows.push(servicesRow(a));
    }
    if (agents.length === 0) rows.push(emptyRow(state.agents, 6, 'agents'));
    body.replaceChildren(...rows);
  }

  return {
    mount(container) {
      body = el('tbody');
      root = listView(container, 'agents', ['Name', 'Router mode', 'Host', 'Tags', 'Router side', 'Upstream routers'], body);
      render();
    },
    update() {},
    unmount() {
      refreshOpen.cancel();
      root = null;
    },
    onChange(changes) {
      if (changed(changes, 'agents')) render();
      if (open.size > 0 && (changed(changes, 'agents') || changed(changes, 'services'))) refreshOpen();
    },
  };
}

// ---- Microservices ----

export function createMicroservicesView() {
  let root = null;
  let body = null;

  function render() {
    if (!root) return;
    // Services reaching a microservice: type microservice, resourceName
    // application/name.
    const using = new Map();
    if (state.services) {
      for (const s of state.services.items.values()) {
        if (s.type !== 'microservice' || !s.resourceName) continue;
        if (!using.has(s.resourceName)) using.set(s.resourceName, []);
        using.get(s.resourceName).push(s.name);
      }
    }
    const list = state.microservices ? [...state.microservices.items.values()] : [];
    const key = (m) => `${m.application}/${m.name}`;
    list.sort((a, b) => byName(key(a), key(b)));
    const rows = list.map((m) => {
      const names = (using.get(key(m)) || []).sort(byName);
      const links = [];
      names.forEach((n, i) => {
        if (i > 0) links.push(', ');
        links.push(el('a', { href: serviceHref(n) }, n));
      });
      return el(
        'tr',
        { dataset: { microservice: key(m) } },
        el('td', { class: 'm-name' }, key(m)),
        el('td', { class: 'm-agent' }, m.agentName || (m.agent ? agentName(m.agent) : '')),
        el('td', { class: 'm-services' }, links.length ? links : el('span', { class: 'muted' }, 'none')),
      );
    });
    if (list.length === 0) rows.push(emptyRow(state.microservices, 3, 'microservices'));
    body.replaceChildren(...rows);
  }

  return {
    mount(container) {
      body = el('tbody');
      root = listView(container, 'microservices', ['Microservice', 'Agent', 'Services using it'], body);
      render();
    },
    update() {},
    unmount() {
      root = null;
    },
    onChange(changes) {
      if (changed(changes, 'microservices') || changed(changes, 'services') || changed(changes, 'agents')) render();
    },
  };
}

// listView puts a view of one table (#<name>-table, its headers, body) in
// container and returns the view's element.
function listView(container, name, headers, body) {
  const root = el(
    'section',
    { class: `view ${name}-view` },
    el('table', { id: `${name}-table`, class: 'list' }, el('thead', {}, el('tr', {}, headers.map((h) => el('th', {}, h)))), body),
  );
  container.replaceChildren(root);
  return root;
}

// emptyRow is the row of an empty table of a watched list: loading until
// the watch's first state, then "There are no <noun>."
function emptyRow(list, columns, noun) {
  const loading = !list || !list.synced;
  return el('tr', {}, el('td', { colspan: columns, class: 'muted' }, loading ? `Loading ${noun}…` : `There are no ${noun}.`));
}
