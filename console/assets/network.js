// The network view (#/network[?service=<name>]): the routers as a picture
// (cytoscape.js) and as a table. Nodes are the agents with a router
// (routerMode not none), edges are each agent's `links` as the server
// computes them (never inferred here). Without a selected service, nodes
// are coloured by what their router side reported; with one, by where the
// service listens and how far its rollout got.

import { followService } from './follow.js';
import { el, text, byName } from './dom.js';
import { state, changed, agentName } from './state.js';
import { routerState, refusedDetail, COLORS } from './model.js';

// cytoscape.js is a classic script that sets window.cytoscape. It is
// loaded on the first visit of this view only: the services view, which
// most visits open, need not parse 440 kB it does not use.
let cytoscapeLoad = null;
function loadCytoscape() {
  if (window.cytoscape) return Promise.resolve(window.cytoscape);
  if (!cytoscapeLoad) {
    cytoscapeLoad = new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = 'vendor/cytoscape.min.js';
      script.addEventListener('load', () => resolve(window.cytoscape));
      script.addEventListener('error', () => {
        cytoscapeLoad = null;
        script.remove();
        reject(new Error('Could not load vendor/cytoscape.min.js'));
      });
      document.head.appendChild(script);
    });
  }
  return cytoscapeLoad;
}

// What each colour means, by mode, for the legend and data-state.
const ROUTER_STATES = [
  ['ok', COLORS.green, 'holds its latest config'],
  ['lagging', COLORS.amber, 'lagging: does not hold the latest config'],
  ['error', COLORS.red, 'error or refused bridges'],
  ['acknowledged', COLORS.greenish, 'no router side; acknowledged its latest config'],
  ['unacknowledged', COLORS.amber, 'no router side; has not acknowledged its latest config'],
  ['no-report', COLORS.grey, 'no report from its router side'],
];
const SERVICE_STATES = [
  ['connector', COLORS.purple, "connector: the service's backend is reached from here"],
  ['applied', COLORS.green, 'listening, applied by the router'],
  ['acknowledged', COLORS.greenish, 'listening, acknowledged by the agent'],
  ['pending', COLORS.amber, 'listening, rollout pending'],
  ['failed', COLORS.red, 'listening, rollout failed'],
  ['not-listening', COLORS.grey, 'not listening'],
];
const COLOR_OF = Object.fromEntries([...ROUTER_STATES, ...SERVICE_STATES].map(([s, c]) => [s, c]));

const STYLE = [
  {
    selector: 'node',
    style: {
      'background-color': 'data(color)',
      label: 'data(label)',
      width: 22,
      height: 22,
      'font-size': 11,
      'font-family': 'system-ui, sans-serif',
      color: '#222',
      'text-valign': 'bottom',
      'text-margin-y': 3,
      'border-width': 1,
      'border-color': '#555',
      'min-zoomed-font-size': 7, // no labels when they would be unreadable
    },
  },
  { selector: 'node[?hub]', style: { width: 44, height: 44, 'font-size': 14, 'font-weight': 'bold', 'border-width': 2 } },
  { selector: 'node:selected', style: { 'border-width': 3, 'border-color': '#1565c0' } },
  { selector: 'edge', style: { width: 1.5, 'line-color': '#b0b0b0', 'curve-style': 'straight', 'target-arrow-shape': 'triangle', 'target-arrow-color': '#b0b0b0', 'arrow-scale': 0.8 } },
];

export function createNetworkView() {
  let root = null;
  let select, message, graphBox, legend, listBody;
  let cy = null;
  // The selected service ('' for none) and its GET /services/{name}.
  const service = followService(() => draw());
  let serviceNames = []; // the select's options, to rebuild them only on a change
  let nodeKey = ''; // the drawn node ids, sorted and joined: a change re-runs the layout
  let marked = false; // performance mark network-rendered made (once a page)

  // ---- The selected service ----

  function selectService(name) {
    if (!service.choose(name)) return;
    renderOptions(true);
    draw();
  }

  // renderOptions fills the select with "(none)" and every service, when
  // the names changed (10,000 options are not rebuilt on every event).
  function renderOptions(force = false) {
    const names = state.services ? [...state.services.items.keys()].sort(byName) : [];
    if (service.name && !state.services?.items.has(service.name)) names.unshift(service.name); // not (yet) listed
    const same = names.length === serviceNames.length && names.every((n, i) => n === serviceNames[i]);
    if (!same || force) {
      serviceNames = names;
      select.replaceChildren(el('option', { value: '' }, '(none)'), ...names.map((n) => el('option', { value: n }, n)));
    }
    select.value = service.name;
  }

  // ---- Colours ----

  // nodeState answers {state, text} for a drawn agent; dist maps agent
  // uuids to the selected service's distribution entries.
  function nodeState(agent, dist) {
    if (!service.name) return routerState(agent);
    if (!service.data) return { state: 'not-listening', text: service.error ? '' : 'loading…' };
    const placement = service.data.placement || {};
    const d = dist.get(agent.uuid);
    const listening = d && d.listening;
    const rollout = listening ? `listening, ${d.rollout || 'pending'}${d.rolloutReason ? ': ' + d.rolloutReason : ''}` : '';
    if (placement.connectorAgent && placement.connectorAgent === agent.uuid) {
      return { state: 'connector', text: listening ? `connector; ${rollout}` : 'connector' };
    }
    if (listening) {
      const s = ['applied', 'acknowledged', 'pending', 'failed'].includes(d.rollout) ? d.rollout : 'pending';
      return { state: s, text: rollout };
    }
    return { state: 'not-listening', text: d && d.wanted ? 'not listening (listener not written yet)' : 'not listening' };
  }

  // ---- Drawing ----

  function routers() {
    if (!state.agents) return [];
    return [...state.agents.items.values()].filter((a) => a.routerMode && a.routerMode !== 'none').sort((a, b) => byName(a.name, b.name));
  }

  function draw() {
    if (!root) return;
    renderMessage();
    renderLegend();
    const agents = routers();
    const shown = new Map(agents.map((a) => [a.uuid, a]));
    const dist = new Map(((service.data && service.data.distribution) || []).map((d) => [d.agent, d]));
    const states = new Map(agents.map((a) => [a.uuid, nodeState(a, dist)]));
    renderList(agents, states);
    if (!cy) return;

    const nodes = agents.map((a) => {
      const st = states.get(a.uuid);
      return {
        id: a.uuid,
        label: st.state === 'connector' ? `${a.name} (connector)` : a.name,
        color: COLOR_OF[st.state] || COLORS.grey,
        state: st.state,
        hub: Boolean(a.defaultRouter),
        name: a.name,
      };
    });
    const edges = [];
    for (const a of agents) {
      for (const to of a.links || []) {
        if (shown.has(to) && to !== a.uuid) edges.push({ id: `${a.uuid}>${to}`, source: a.uuid, target: to });
      }
    }

    const key = nodes
      .map((n) => n.id)
      .sort()
      .join('\n');
    cy.batch(() => {
      const wantNodes = new Set(nodes.map((n) => n.id));
      const wantEdges = new Set(edges.map((e) => e.id));
      cy.remove(cy.elements().filter((e) => !(e.isNode() ? wantNodes : wantEdges).has(e.id())));
      const add = [];
      for (const n of nodes) {
        const have = cy.getElementById(n.id);
        if (have.empty()) {
          add.push({ group: 'nodes', data: n });
        } else {
          for (const [k, v] of Object.entries(n)) if (have.data(k) !== v) have.data(k, v);
        }
      }
      for (const e of edges) {
        if (cy.getElementById(e.id).empty()) add.push({ group: 'edges', data: e });
      }
      // Nodes before edges: an edge needs its ends.
      cy.add(add.filter((e) => e.group === 'nodes'));
      cy.add(add.filter((e) => e.group === 'edges'));
    });
    if (key !== nodeKey) {
      nodeKey = key;
      layout(agents, edges);
    }
    if (!marked && state.agents && state.agents.synced) {
      // The load-time benchmark's mark: every router of the watch's first
      // state is in the picture.
      marked = true;
      performance.mark('network-rendered');
    }
  }

  // layout places the routers as a breadth-first tree from the hub (the
  // default router), or from the interior routers when there is none: a
  // router's level is its distance in links from a root, the roots on top.
  // It is computed here rather than with cytoscape's breadthfirst layout,
  // which takes seconds on 1,000 routers and draws a hub's 900 edge
  // routers as one line too long to read: a level wider than perRow is
  // folded into several rows. It runs only when the set of routers
  // changed, so positions stay put otherwise.
  function layout(agents, edges) {
    if (agents.length === 0) return;
    const neighbours = new Map(agents.map((a) => [a.uuid, []])); // in name order
    for (const e of edges) {
      neighbours.get(e.source).push(e.target);
      neighbours.get(e.target).push(e.source);
    }
    const order = new Map(agents.map((a, i) => [a.uuid, i]));
    for (const list of neighbours.values()) list.sort((x, y) => order.get(x) - order.get(y));

    let roots = agents.filter((a) => a.defaultRouter);
    if (roots.length === 0) roots = agents.filter((a) => a.routerMode === 'interior');
    const levels = []; // levels[i]: the uuids at distance i, in visiting order
    const seen = new Set();
    // A breadth-first walk from starts, whose level is base.
    const walk = (starts, base) => {
      let frontier = starts.filter((id) => !seen.has(id));
      frontier.forEach((id) => seen.add(id));
      for (let depth = base; frontier.length > 0; depth++) {
        (levels[depth] = levels[depth] || []).push(...frontier);
        const next = [];
        for (const id of frontier) {
          for (const n of neighbours.get(id)) {
            if (!seen.has(n)) {
              seen.add(n);
              next.push(n);
            }
          }
        }
        frontier = next;
      }
    };
    walk(roots.map((a) => a.uuid), 0);
    // Routers no root reaches: their own trees, below.
    for (const a of agents) {
      if (!seen.has(a.uuid)) walk([a.uuid], levels.length);
    }

    const perRow = Math.max(24, Math.ceil(Math.sqrt(agents.length) * 1.6));
    const dx = 70; // between nodes of a row: room for a label
    const dy = 56; // between the rows of a folded level
    const levelGap = 120; // between levels
    const pos = new Map();
    let y = 0;
    for (const level of levels) {
      if (!level) continue;
      level.forEach((id, i) => {
        const row = Math.floor(i / perRow);
        const inRow = Math.min(perRow, level.length - row * perRow);
        pos.set(id, { x: ((i % perRow) - (inRow - 1) / 2) * dx, y: y + row * dy });
      });
      y += (Math.ceil(level.length / perRow) - 1) * dy + levelGap;
    }
    cy.nodes().positions((n) => pos.get(n.id()) || { x: 0, y: 0 });
    fitTo([...pos.values()]);
  }

  // fitTo zooms and pans so that points (node centres) are all in view.
  // It is cy.fit() from the positions alone: cy.fit() measures every
  // label first, which takes most of a second on 1,000 routers.
  function fitTo(points) {
    const margin = 40; // a node and its label around each centre
    const xs = points.map((p) => p.x);
    const ys = points.map((p) => p.y);
    const x0 = Math.min(...xs) - margin;
    const x1 = Math.max(...xs) + margin;
    const y0 = Math.min(...ys) - margin;
    const y1 = Math.max(...ys) + margin;
    const w = cy.width();
    const h = cy.height();
    const zoom = Math.min(1.5, w / (x1 - x0), h / (y1 - y0));
    cy.viewport({ zoom, pan: { x: w / 2 - (zoom * (x0 + x1)) / 2, y: h / 2 - (zoom * (y0 + y1)) / 2 } });
  }

  function renderList(agents, states) {
    listBody.replaceChildren(
      ...agents.map((a) => {
        const st = states.get(a.uuid);
        const links = (a.links || []).map(agentName);
        return el(
          'tr',
          { dataset: { router: a.name, state: st.state } },
          el('td', { class: 'r-name' }, a.name),
          el('td', { class: 'r-mode' }, a.routerMode),
          el(
            'td',
            { class: 'r-state' },
            el('span', { class: `state state-${st.state}`, title: service.name ? '' : refusedDetail(a) }, st.text),
          ),
          el('td', { class: 'r-links' }, links.join(', ')),
        );
      }),
    );
    if (agents.length === 0) {
      const loading = !state.agents || !state.agents.synced;
      listBody.appendChild(el('tr', {}, el('td', { colspan: 4, class: 'muted' }, loading ? 'Loading agents…' : 'No agent has a router.')));
    }
  }

  function renderLegend() {
    const items = service.name ? SERVICE_STATES : ROUTER_STATES;
    legend.replaceChildren(
      el('span', { class: 'legend-title' }, service.name ? `Service ${service.name}:` : 'Router side:'),
      ...items.map(([s, color, meaning]) => {
        const swatch = el('span', { class: 'swatch' });
        swatch.style.backgroundColor = color;
        return el('span', { class: 'legend-item', dataset: { legend: s } }, swatch, meaning);
      }),
      el('span', { class: 'legend-item muted' }, 'Large node: the hub (default router). Arrows: router links.'),
    );
  }

  function renderMessage() {
    if (service.error) {
      message.className = 'error';
      text(message, service.error);
      return;
    }
    message.className = 'muted';
    if (service.name && !service.data) {
      text(message, `Loading ${service.name}…`);
      return;
    }
    // A connector on an agent without a router is not in the picture: say so.
    const placement = (service.data && service.data.placement) || {};
    const connector = placement.connectorAgent && state.agents && state.agents.items.get(placement.connectorAgent);
    if (connector && connector.routerMode === 'none') {
      text(message, `The connector's agent, ${connector.name}, has no router: it is not drawn.`);
    } else {
      text(message, '');
    }
  }

  async function startGraph() {
    let cytoscape;
    try {
      cytoscape = await loadCytoscape();
    } catch (err) {
      if (root) graphBox.replaceChildren(el('p', { class: 'error' }, err.message));
      return;
    }
    if (!root || cy) return;
    cy = cytoscape({
      container: graphBox,
      style: STYLE,
      elements: [],
      minZoom: 0.05,
      maxZoom: 4,
      boxSelectionEnabled: false,
      textureOnViewport: true, // smooth panning with 1,000 routers
      hideEdgesOnViewport: true,
    });
    window.svcbridgeGraph = cy; // the tests read the nodes' colours here
    nodeKey = '';
    draw();
  }

  return {
    mount(container, params) {
      select = el('select', { id: 'network-service', 'aria-label': 'Service to show' });
      select.addEventListener('change', () => {
        location.hash = select.value ? `#/network?service=${encodeURIComponent(select.value)}` : '#/network';
      });
      message = el('span', { id: 'network-message', class: 'muted' });
      graphBox = el('div', { id: 'network-graph', class: 'graph' });
      legend = el('div', { id: 'network-legend', class: 'legend' });
      listBody = el('tbody');
      root = el(
        'section',
        { class: 'view network-view' },
        el('div', { class: 'toolbar' }, el('label', { for: 'network-service' }, 'Service '), select, message),
        graphBox,
        legend,
        el(
          'table',
          { id: 'network-list', class: 'list' },
          el('thead', {}, el('tr', {}, ['Router', 'Mode', 'State', 'Links to'].map((h) => el('th', {}, h)))),
          listBody,
        ),
      );
      container.replaceChildren(root);
      serviceNames = [];
      renderOptions(true);
      selectService(params.get('service') || '');
      draw();
      startGraph();
    },

    update(params) {
      selectService(params.get('service') || '');
    },

    unmount() {
      service.choose('');
      if (cy) cy.destroy();
      cy = null;
      window.svcbridgeGraph = null;
      root = null;
    },

    onChange(changes) {
      if (changed(changes, 'services')) renderOptions();
      // A service or agent change (a tag edit) may move the listeners.
      if (service.name && (changed(changes, 'services') || changed(changes, 'agents'))) service.refetch();
      if (changed(changes, 'agents')) draw();
    },
  };
}
