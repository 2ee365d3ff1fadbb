// followService keeps GET /services/{name} of the one service a view
// shows (the services view's detail, the network view's selection). An
// answer to an older choice or fetch is dropped; answered is called with
// each kept one, and data/error say what it was.

import { api, ApiError, SessionEnded } from './api.js';
import { throttle } from './dom.js';

export function followService(answered) {
  const f = { name: '', data: null, error: '' };
  let seq = 0; // the fetch whose answer counts

  async function load() {
    const name = f.name;
    if (!name) return;
    const mine = ++seq;
    try {
      const d = await api(`/services/${encodeURIComponent(name)}`);
      if (mine !== seq) return;
      f.data = d;
      f.error = '';
    } catch (err) {
      if (err instanceof SessionEnded || mine !== seq) return;
      f.data = null;
      f.error = err instanceof ApiError && err.status === 404 ? `There is no service named ${name}.` : err.message;
    }
    answered();
  }

  // refetch reads the service again, at most once a second: for watches'
  // changes that may have moved it.
  f.refetch = throttle(load, 1000);

  // choose follows name ('' for none) from now on, fetching it, and says
  // whether that was a change.
  f.choose = (name) => {
    if (name === f.name) return false;
    f.name = name;
    f.data = null;
    f.error = '';
    seq++;
    f.refetch.cancel();
    if (name) load();
    return true;
  };
  return f;
}
