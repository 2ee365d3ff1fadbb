// How the API's items are read for display, shared by the views.

// The order of services in the table: what needs a look comes first.
const STATUS_RANK = { failed: 0, pending: 1, deleting: 2, ready: 3 };

export function statusRank(status) {
  return status in STATUS_RANK ? STATUS_RANK[status] : 4;
}

// serviceReason is why a service is as it is: its error, else its message.
export function serviceReason(s) {
  return s.provisioningError || s.provisioningMessage || '';
}

// serviceEndpoint is where users connect, or "not served".
export function serviceEndpoint(s) {
  if (s.serviceEndpoint === null || s.serviceEndpoint === undefined || s.serviceEndpoint === '') return 'not served';
  return s.bridgePort ? `${s.serviceEndpoint}:${s.bridgePort}` : String(s.serviceEndpoint);
}

export function isServed(s) {
  return serviceEndpoint(s) !== 'not served';
}

// serviceBackend is what the service forwards to: resourceName:targetPort.
export function serviceBackend(s) {
  const resource = s.resourceName || s.resource || '';
  return s.targetPort ? `${resource}:${s.targetPort}` : resource;
}

// safeUrl answers url when it is an http(s) address, else null: a link's
// href must never be a javascript: URL, whoever wrote it.
export function safeUrl(url) {
  if (typeof url !== 'string' || url === '') return null;
  try {
    const u = new URL(url, location.href);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
  } catch {
    return null;
  }
}

// routerState reads what an agent's router side last reported:
// {state, text} with state one of ok | lagging | error | no-report | no-router.
// An error or a refused bridge weighs more than lagging. short picks the
// agents view's words ("2 refused") over the network list's ("2 bridges
// refused: <first reason>"). An agent without a router side tells only
// whether it acknowledged its newest config change: acknowledged, or
// unacknowledged (since when).
export function routerState(agent, short = false) {
  if (agent.routerMode === 'none') return { state: 'no-router', text: 'no router' };
  const r = agent.router;
  if (!r) {
    const c = agent.configChange;
    if (!c) return { state: 'no-report', text: 'no report' };
    if (c.acknowledged) return { state: 'acknowledged', text: 'acknowledged its latest config' };
    return { state: 'unacknowledged', text: `change of ${since(c.changedAt)} not acknowledged` };
  }
  const failed = Array.isArray(r.failed) ? r.failed : [];
  if (r.error || failed.length > 0) {
    const parts = [];
    if (r.error) parts.push(r.error);
    if (failed.length > 0) {
      if (short) parts.push(`${failed.length} refused`);
      else parts.push(`${failed.length} ${failed.length === 1 ? 'bridge' : 'bridges'} refused: ${failed[0].reason || failed[0].name}`);
    }
    return { state: 'error', text: parts.join('; ') };
  }
  if (r.lagging) return { state: 'lagging', text: 'lagging' };
  if (r.appliedChange !== null && r.appliedChange !== undefined) {
    return { state: 'ok', text: `applied change ${r.appliedChange}` };
  }
  return { state: 'ok', text: 'reported' };
}

// since says how long ago an RFC 3339 time was, in the largest whole unit.
function since(time) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(time)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

// refusedDetail lists an agent's refused bridges, one a line, for a tooltip.
export function refusedDetail(agent) {
  const failed = (agent.router && agent.router.failed) || [];
  return failed.map((f) => `${f.type} ${f.name}: ${f.reason}`).join('\n');
}

// Colours of the picture and its legend (the CSS uses the same ones).
export const COLORS = {
  green: '#2e7d32',
  greenish: '#66bb6a',
  amber: '#ef9a00',
  red: '#c62828',
  grey: '#9e9e9e',
  purple: '#7b1fa2',
};
