// Small DOM helpers. Everything the console shows is built with
// createElement and textContent, never innerHTML: names, tags and reasons
// come from users and from the routers, and must never be read as markup.

// el('a', {href: '#/x', class: 'y', dataset: {service: n}}, 'text', child)
// makes an element. Attributes whose value is null, undefined or false
// are left out; true sets an empty attribute. Children are nodes or
// strings (as text); null and false children are skipped, arrays are
// flattened.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'dataset') {
      for (const [k, v] of Object.entries(value)) {
        if (v !== null && v !== undefined) node.dataset[k] = String(v);
      }
    } else if (key === 'class') {
      node.className = value;
    } else if (key.startsWith('on')) {
      // An event listener added from script, which the CSP allows (an
      // onclick= attribute would not be, and must never be made).
      if (typeof value !== 'function') throw new Error(`el: ${key} must be a function`);
      node.addEventListener(key.slice(2), value);
    } else if (value === true) {
      node.setAttribute(key, '');
    } else {
      node.setAttribute(key, String(value));
    }
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else if (child instanceof Node) node.appendChild(child);
    else node.appendChild(document.createTextNode(String(child)));
  }
}

// text(node, s) sets a node's text (all its children go).
export function text(node, s) {
  node.textContent = s;
  return node;
}

// Sorts and compares names by code point, the same in every browser
// locale (service and agent names are lower-case DNS-like names anyway).
export function byName(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

// plural(3, 'service') is "3 services".
export function plural(n, word, words = word + 's') {
  return `${n} ${n === 1 ? word : words}`;
}

// throttle(fn, ms) returns a function that calls fn at most once every ms
// milliseconds, and never twice at once when fn returns a promise: a call
// made meanwhile runs once afterwards. cancel() drops a pending call.
export function throttle(fn, ms) {
  let last = 0;
  let timer = null;
  let running = false;
  let again = false;
  async function run() {
    timer = null;
    if (running) {
      again = true;
      return;
    }
    running = true;
    last = Date.now();
    try {
      await fn();
    } catch (err) {
      console.error(err);
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      call();
    }
  }
  function call() {
    if (timer !== null) return;
    if (running) {
      again = true;
      return;
    }
    const wait = Math.max(0, last + ms - Date.now());
    timer = setTimeout(run, wait);
  }
  call.cancel = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    again = false;
  };
  return call;
}

// serviceHref is the address of a service's detail in the services view.
export function serviceHref(name) {
  return '#/services?service=' + encodeURIComponent(name);
}

// yesNo shows a boolean as yes or no.
export function yesNo(b) {
  return b ? 'yes' : 'no';
}
