// The services view (#/services): a summary, a filter, the table of
// services (failed first) and, for #/services?service=<name>, the detail
// panel with the service's rollout to the routers.
//
// The table is windowed: with 10,000 services only the rows in view (and
// a few around) are in the DOM, each ROW_HEIGHT pixels high and placed at
// its index inside a spacer as tall as all the rows together.

import { api, SessionEnded } from './api.js';
import { followService } from './follow.js';
import { el, text, byName, plural, serviceHref, yesNo } from './dom.js';
import { state, canRetry, changed } from './state.js';
import { statusRank, serviceReason, serviceEndpoint, serviceBackend, safeUrl, isServed } from './model.js';

const ROW_HEIGHT = 34; // px; .svc-row's height in console.css
const OVERSCAN = 8; // rows rendered beyond each edge of the view

// Retries asked for, by service name: {busy, error}. Kept across renders
// and views, so a row scrolled away and back still shows its error.
const retries = new Map();

// retry asks for a reconcile of a service; onUpdate re-renders what shows it.
async function retry(name, onUpdate) {
  const r = retries.get(name);
  if (r && r.busy) return;
  retries.set(name, { busy: true, error: '' });
  onUpdate();
  try {
    await api(`/services/${encodeURIComponent(name)}/reconcile`, { method: 'POST' });
    retries.delete(name);
  } catch (err) {
    if (err instanceof SessionEnded) return;
    retries.set(name, { busy: false, error: err.message });
  }
  onUpdate();
}

// actions are a service's Retry button (when the user may) and History
// link (when the server knows the Temporal Web UI).
function actions(s, onUpdate) {
  const out = [];
  if (canRetry()) {
    const r = retries.get(s.name);
    out.push(
      el(
        'button',
        {
          type: 'button',
          class: 'retry',
          disabled: Boolean(r && r.busy),
          title: 'Ask the control plane to provision this service again',
          onclick: (ev) => {
            ev.stopPropagation();
            retry(s.name, onUpdate);
          },
        },
        r && r.busy ? 'Retrying…' : 'Retry',
      ),
    );
  }
  const url = safeUrl(s.workflowUrl);
  if (url) {
    out.push(el('a', { class: 'history', href: url, target: '_blank', rel: 'noopener', title: 'The workflow in the Temporal Web UI' }, 'History'));
  }
  return out;
}

function retryError(name) {
  const r = retries.get(name);
  return r && r.error ? el('span', { class: 'retry-error', title: r.error }, 'Retry failed: ' + r.error) : null;
}

// endpointWhy is the endpoint, or "not served" with why when the
// service says (its provisioningMessage).
function endpointWhy(s) {
  if (isServed(s) || !s.provisioningMessage) return serviceEndpoint(s);
  return `not served: ${s.provisioningMessage}`;
}

function statusBadge(status) {
  return el('span', { class: `status status-text-${status}` }, status);
}

export function createServicesView() {
  let root = null;
  let summary, filterBox, shownNote, scroller, spacer, detail;
  let filter = '';
  let rows = []; // the services shown, filtered and sorted
  let rowsStale = true;
  let rowCache = new Map(); // name -> {svc, key, node}
  let scrollFrame = 0;
  // The service whose detail is open ('' for none) and its GET
  // /services/{name}.
  const shown = followService(() => renderDetail());
  let marked = false;

  // ---- The table ----

  function computeRows() {
    const list = state.services ? [...state.services.items.values()] : [];
    const q = filter.trim().toLowerCase();
    const shown = q === '' ? list : list.filter((s) => `${s.name}\n${serviceBackend(s)}\n${serviceReason(s)}`.toLowerCase().includes(q));
    shown.sort((a, b) => statusRank(a.provisioningStatus) - statusRank(b.provisioningStatus) || byName(a.name, b.name));
    rows = shown;
    rowsStale = false;
  }

  function renderSummary() {
    const list = state.services ? state.services.items : new Map();
    if (!state.services || !state.services.synced) {
      text(summary, 'Loading services…');
      text(shownNote, '');
      return;
    }
    const counts = { failed: 0, pending: 0, deleting: 0, ready: 0 };
    let other = 0;
    for (const s of list.values()) {
      if (s.provisioningStatus in counts) counts[s.provisioningStatus]++;
      else other++;
    }
    const parts = [`${counts.failed} failed`, `${counts.pending} pending`];
    if (counts.deleting > 0) parts.push(`${counts.deleting} deleting`);
    parts.push(`${counts.ready} ready`);
    if (other > 0) parts.push(`${other} other`);
    text(summary, `${plural(list.size, 'service')}: ${parts.join(', ')}`);
    text(shownNote, filter.trim() === '' ? '' : `${rows.length} match the filter`);
  }

  function buildRow(s) {
    const status = s.provisioningStatus || 'unknown';
    const reason = serviceReason(s);
    const endpoint = serviceEndpoint(s);
    const backend = serviceBackend(s);
    return el(
      'div',
      { class: `svc-row status-${status}${s.name === shown.name ? ' selected' : ''}`, role: 'row', dataset: { service: s.name } },
      el('div', { class: 'cell c-name', role: 'cell' }, el('a', { href: serviceHref(s.name), class: 'service-link', title: s.name }, s.name)),
      el('div', { class: 'cell c-status', role: 'cell' }, statusBadge(status)),
      el('div', { class: 'cell c-reason', role: 'cell', title: reason }, retryError(s.name), reason),
      el('div', { class: `cell c-endpoint${isServed(s) ? '' : ' not-served'}`, role: 'cell', title: endpointWhy(s) }, endpoint),
      el('div', { class: 'cell c-backend', role: 'cell', title: backend }, backend),
      el('div', { class: 'cell c-actions', role: 'cell' }, actions(s, rerenderRetries)),
    );
  }

  // rowKey is what a row shows besides its service: a change rebuilds it.
  function rowKey(name) {
    const r = retries.get(name);
    return `${name === shown.name}|${r ? `${r.busy}|${r.error}` : ''}`;
  }

  // renderRows puts the rows in view into the spacer, reusing the nodes of
  // rows that did not change (so a focused button stays focused) and
  // keeping the DOM in the table's order.
  function renderRows() {
    if (rowsStale) computeRows();
    spacer.style.height = `${rows.length * ROW_HEIGHT}px`;
    const top = Math.max(0, scroller.scrollTop - spacer.offsetTop);
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(rows.length, Math.ceil((top + scroller.clientHeight) / ROW_HEIGHT) + OVERSCAN);
    const wanted = [];
    const nextCache = new Map();
    for (let i = first; i < last; i++) {
      const s = rows[i];
      const key = rowKey(s.name);
      let c = rowCache.get(s.name);
      if (!c || c.svc !== s || c.key !== key) c = { svc: s, key, node: buildRow(s) };
      c.node.style.top = `${i * ROW_HEIGHT}px`;
      nextCache.set(s.name, c);
      wanted.push(c.node);
    }
    for (const [name, c] of rowCache) {
      if (nextCache.get(name) !== c) c.node.remove();
    }
    rowCache = nextCache;
    // What is left is in order; insert the new rows in their places.
    let at = spacer.firstChild;
    for (const node of wanted) {
      if (node === at) at = at.nextSibling;
      else spacer.insertBefore(node, at);
    }
    for (const e of spacer.querySelectorAll(':scope > .empty')) e.remove();
    if (rows.length === 0 && state.services && state.services.synced) {
      spacer.style.height = 'auto';
      spacer.appendChild(el('div', { class: 'empty' }, filter.trim() ? 'No service matches the filter.' : 'There are no services.'));
    }
    if (!marked && state.services && state.services.synced) {
      // The load-time test's marks: the first render of the whole list.
      marked = true;
      performance.mark('services-rendered');
      document.body.dataset.loaded = 'services';
    }
  }

  function onScroll() {
    if (scrollFrame) return;
    scrollFrame = requestAnimationFrame(() => {
      scrollFrame = 0;
      if (root) renderRows();
    });
  }

  // rerenderRetries shows a retry's progress in the table and the detail.
  function rerenderRetries() {
    if (!root) return;
    renderRows();
    renderDetail();
  }

  // ---- The detail panel ----

  function select(name) {
    if (!shown.choose(name)) return;
    renderDetail();
    if (root) renderRows(); // the selected row is marked
  }

  function renderDetail() {
    if (!root) return;
    detail.hidden = !shown.name;
    root.classList.toggle('with-detail', Boolean(shown.name));
    if (!shown.name) {
      detail.replaceChildren();
      return;
    }
    const head = el(
      'div',
      { class: 'detail-head' },
      el('h2', {}, shown.name),
      el('a', { href: '#/services', class: 'close', title: 'Close', 'aria-label': 'Close the detail' }, '×'),
    );
    if (!shown.data) {
      detail.replaceChildren(head, el('p', { class: shown.error ? 'error' : 'muted' }, shown.error || 'Loading…'));
      return;
    }
    const s = shown.data;
    const status = s.provisioningStatus || 'unknown';
    const placement = s.placement || {};
    const reason = serviceReason(s);
    const facts = [
      ['Status', statusBadge(status)],
      ['Reason', reason || '—'],
      ['Endpoint', endpointWhy(s)],
      ['Backend', `${serviceBackend(s)} (${s.type})`],
      ['Connector agent', placement.connectorAgentName || placement.connectorAgent || '—'],
      ['Hub agent', placement.hubAgentName || placement.hubAgent || '—'],
    ];
    // The reason shows the error; a message besides it is shown too.
    if (s.provisioningError && s.provisioningMessage && isServed(s)) facts.splice(2, 0, ['Message', s.provisioningMessage]);
    detail.replaceChildren(
      head,
      el('dl', { class: `facts status-${status}` }, facts.map(([k, v]) => [el('dt', {}, k), el('dd', { class: `f-${k.toLowerCase().replace(/ /g, '-')}` }, v)])),
      el('div', { class: 'detail-actions' }, actions(s, rerenderRetries), retryError(s.name)),
      el('h3', {}, 'Rollout'),
      rolloutTable(s.distribution || []),
    );
  }

  // ---- The view ----

  function onFilter() {
    filter = filterBox.value;
    rowsStale = true;
    scroller.scrollTop = 0;
    renderSummary();
    renderRows();
  }

  return {
    mount(container, params) {
      filterBox = el('input', {
        id: 'service-filter',
        type: 'search',
        placeholder: 'Filter by name, backend or reason',
        'aria-label': 'Filter services',
        value: filter,
        oninput: onFilter,
      });
      summary = el('p', { id: 'services-summary', class: 'summary' });
      shownNote = el('span', { id: 'services-shown', class: 'muted' });
      spacer = el('div', { class: 'svc-rows', role: 'rowgroup' });
      const head = el(
        'div',
        { class: 'svc-row svc-head', role: 'row' },
        ['Name', 'Status', 'Reason', 'Endpoint', 'Backend', ''].map((h) => el('div', { class: 'cell', role: 'columnheader' }, h)),
      );
      scroller = el('div', { id: 'services-table', class: 'svc-scroll', role: 'table', 'aria-label': 'Services', onscroll: onScroll }, head, spacer);
      detail = el('aside', { id: 'service-detail', class: 'detail', hidden: true });
      root = el(
        'section',
        { class: 'view services-view' },
        el('div', { class: 'toolbar' }, summary, filterBox, shownNote),
        el('div', { class: 'split' }, scroller, detail),
      );
      container.replaceChildren(root);
      rowCache = new Map();
      rowsStale = true;
      renderSummary();
      renderRows();
      select(params.get('service') || '');
      window.addEventListener('resize', onScroll);
    },

    update(params) {
      select(params.get('service') || '');
    },

    unmount() {
      window.removeEventListener('resize', onScroll);
      shown.choose('');
      root = null;
    },

    onChange(changes) {
      if (changed(changes, 'services')) {
        rowsStale = true;
        renderSummary();
        renderRows();
      }
      // The rollout follows the service and its agents' router reports.
      if (shown.name && (changed(changes, 'services', shown.name) || changed(changes, 'agents'))) shown.refetch();
    },
  };
}

// rolloutTable shows where a service's listener is, and how far its
// rollout to each router went.
export function rolloutTable(distribution) {
  if (distribution.length === 0) {
    return el('p', { class: 'muted' }, 'No router holds or should hold a listener for this service.');
  }
  const sorted = [...distribution].sort((a, b) => byName(a.agentName || a.agent, b.agentName || b.agent));
  return el(
    'table',
    { class: 'rollout', id: 'rollout-table' },
    el('thead', {}, el('tr', {}, ['Agent', 'Listening', 'Rollout', 'Rollout reason', 'Why'].map((h) => el('th', {}, h)))),
    el(
      'tbody',
      {},
      sorted.map((d) =>
        el(
          'tr',
          { dataset: { rolloutAgent: d.agentName || d.agent } },
          el('td', {}, d.agentName || d.agent),
          el('td', { class: 'listening' }, yesNo(d.listening)),
          el('td', {}, rolloutBadge(d.rollout)),
          el('td', { class: 'rollout-reason' }, d.rolloutReason || ''),
          el('td', { class: 'muted' }, listenWhy(d)),
        ),
      ),
    ),
  );
}

// rolloutBadge shows a rollout state in its colour ("" where the agent
// does not listen).
export function rolloutBadge(rollout) {
  return rollout ? el('span', { class: `rollout-state rollout-${rollout}` }, rollout) : el('span', { class: 'muted' }, '—');
}

// listenWhy says why an agent listens for a service (the selecting tag,
// "hub") and whether a change of its listener is still to be written:
// wanted and not listening is an add to come, listening and not wanted a
// removal to come.
export function listenWhy(d) {
  const why = d.reason || '';
  if (d.wanted && !d.listening) return why ? `${why}; listener not written yet` : 'listener not written yet';
  if (d.wanted === false && d.listening) return why ? `${why}; to be removed` : 'no longer selected: to be removed';
  return why;
}
