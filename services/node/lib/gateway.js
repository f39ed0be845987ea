'use strict';
// The product-page gateway (services/domains/shop/gateway.py, gateway.go): GET
// /product/{id}?customer_id={id} fans out to the five services (at once, or one after
// another with IPCLAB_SEQUENTIAL=1) and merges their answers; GET /healthz pings every
// service; GET /stats shows the transport's counters. Answers carry the gateway's own time
// in a Server-Timing header (fronts/http_json.py).
const { page } = require('./data');
const { ServiceError, asServiceError, badRequest, timeout, worst } = require('./errors');
const { MAX_BODY, listen, newServer } = require('./limits');
const { send } = require('./rest');
const { serverTLS } = require('./tls');

const INT64_MAX = (1n << 63n) - 1n;
const MAX_QUERY_FIELDS = 16;
const CALLS = ['product-info', 'reviews', 'recommendations', 'shipping', 'cart'];

// gateway.py's parse_id: a non-negative int64 in ASCII digits, else a bad_request.
function parseId(text, what) {
  if (text === undefined || !/^[0-9]{1,19}$/.test(text) || BigInt(text) > INT64_MAX) {
    const shown = text === undefined ? 'None' : `'${text.length <= 40 ? text : `${text.slice(0, 40)}...`}'`;
    throw badRequest(`${what} must be an integer from 0 to ${INT64_MAX}, got ${shown}`);
  }
  return BigInt(text);
}

// domains.all_answers: every call at once; the first failure ends the wait with the most
// telling error among the calls ended by then; no call is cancelled.
function allAnswers(promises, limitMs) {
  return new Promise((resolve, reject) => {
    const results = new Array(promises.length);
    let left = promises.length;
    let over = false;
    const timer = setTimeout(() => {
      over = true;
      reject(timeout(`page deadline of ${limitMs / 1000} s passed`));
    }, limitMs);
    const errors = [];
    promises.forEach((p, i) =>
      p.then(
        (v) => {
          results[i] = v;
          left -= 1;
          if (left === 0 && !over) {
            over = true;
            clearTimeout(timer);
            resolve(results);
          }
        },
        (e) => {
          errors.push(asServiceError(e));
          if (over) return;
          over = true;
          clearTimeout(timer);
          queueMicrotask(() => reject(worst(errors))); // the errors of this same turn too
        },
      ),
    );
  });
}

class Gateway {
  constructor(clients, services, timeoutMs, sequential) {
    Object.assign(this, { clients, services, timeoutMs, sequential });
  }

  async productPage(productId, customerId) {
    const ids = [productId, productId, productId, productId, customerId];
    let results;
    if (this.sequential) {
      const deadline = Date.now() + this.timeoutMs;
      results = [];
      for (let i = 0; i < CALLS.length; i++) {
        const left = deadline - Date.now();
        if (left <= 0) throw timeout(`page deadline of ${this.timeoutMs / 1000} s passed before ${CALLS[i]}`);
        results.push(await this.clients.call(CALLS[i], 'get', ids[i], left));
      }
    } else {
      const calls = CALLS.map((s, i) => this.clients.call(s, 'get', ids[i], this.timeoutMs));
      results = await allAnswers(calls, this.timeoutMs);
    }
    return page(...results);
  }

  // /healthz: 200 once every service answers a ping within min(timeout, 1 s), else 503
  async health() {
    const limit = Math.min(this.timeoutMs, 1000);
    const settled = await Promise.allSettled(
      this.services.map((s) => this.clients.call(s, 'ping', 0n, limit)),
    );
    const status = {};
    this.services.forEach((s, i) => {
      const r = settled[i];
      status[s] = r.status === 'fulfilled' ? 'ok' : asServiceError(r.reason).typeName;
    });
    const ready = Object.values(status).every((v) => v === 'ok');
    return [ready ? 200 : 503, JSON.stringify({ ready, services: status })];
  }

  async route(method, target) {
    if (method !== 'GET') return [405, JSON.stringify({ error: 'method_not_allowed' })];
    const url = new URL(target, 'http://gateway');
    let parts;
    try {
      parts = url.pathname.split('/').filter((p) => p).map(decodeURIComponent);
    } catch {
      parts = [url.pathname];
    }
    try {
      if (parts.length === 2 && parts[0] === 'product') {
        const keys = new Set(url.searchParams.keys());
        if (keys.size > MAX_QUERY_FIELDS) throw badRequest(`at most ${MAX_QUERY_FIELDS} query fields`);
        const productId = parseId(parts[1], 'product_id');
        const customer = url.searchParams.getAll('customer_id');
        const customerId = customer.length ? parseId(customer.at(-1), 'customer_id') : 0n;
        return [200, await this.productPage(productId, customerId)];
      }
      if (parts.length === 1 && parts[0] === 'healthz') return await this.health();
      if (parts.length === 1 && parts[0] === 'stats') return [200, this.clients.stats()];
      return [404, JSON.stringify({ error: 'not_found', message: 'no such path' })];
    } catch (err) {
      if (!(err instanceof ServiceError)) console.error('gateway: internal error', err);
      const e = err instanceof ServiceError ? err : new ServiceError('internal', 'internal error');
      return [e.status, JSON.stringify({ error: e.code, message: e.message })];
    }
  }
}

// A request other than GET has its body read up to MAX_BODY (413 beyond, as
// fronts/http_json.py), then is answered 405.
function readBody(req) {
  return new Promise((resolve) => {
    let size = 0;
    let over = false;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY && !over) {
        over = true;
        resolve(false);
      }
    });
    req.on('end', () => resolve(!over));
    req.on('error', () => resolve(true));
  });
}

function serveGateway(gateway, host, port) {
  const server = newServer(async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD' && !(await readBody(req))) {
      send(res, 413, JSON.stringify({ error: 'too_large', message: 'body too large' }), {
        Connection: 'close',
      });
      return;
    }
    const t0 = process.hrtime.bigint();
    const [status, body] = await gateway.route(req.method, req.url);
    const took = Number(process.hrtime.bigint() - t0) / 1e6;
    send(res, status, body, { 'Server-Timing': `app;dur=${took.toFixed(3)}` });
  }, serverTLS());
  return listen(server, host, port);
}

module.exports = { Gateway, serveGateway, parseId };
