'use strict';
// REST: GET /{op}?{field}={value} answered with the operation's JSON document, or an error
// document {"error", "message"} with the matching status (transports/rest.py, rest.go).
const http = require('node:http');
const { DOCUMENT, UNWRAP, serviceKey, requestId, settle } = require('./data');
const { ServiceError, asServiceError, fromCode, timeout, unavailable } = require('./errors');
const { KEEPALIVE_DELAY_MS, MAX_ANSWER, listen, newServer } = require('./limits');

// rest.py's POOL_PER_HOST: keep-alive connections per service (Node's Agent keeps every
// idle one up to maxFreeSockets; 100, not its default 256, so the pool is the others').
const POOL_PER_HOST = 100;
// rest.py's POOL_IDLE_S: an idle pooled connection is closed after this, well before the
// server closes it (75 s), so no request is sent on a connection the server is closing.
const POOL_IDLE_MS = 15000;

function send(res, status, body, extra) {
  const headers = { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) };
  res.writeHead(status, extra ? { ...headers, ...extra } : headers);
  res.end(body);
}

const errorBody = (e) => JSON.stringify({ error: e.code, message: e.message });

// invoke runs one operation on a request given as strings (services.py's _id rules).
function invoke(fixture, service, op, value, done) {
  if (op === 'ping') return done(null, '{}');
  const key = serviceKey(service);
  settle(
    () => fixture.answer(service, requestId(key, value)),
    (err, v) => (err ? done(err) : done(null, DOCUMENT[service](v))),
  );
}

function serveREST(fixture, service, host, port) {
  const server = newServer((req, res) => {
    if (req.method !== 'GET') {
      // as asgi.json_app: the body is not read
      send(res, 405, JSON.stringify({ error: 'method_not_allowed' }));
      return;
    }
    const url = new URL(req.url, 'http://service');
    const op = url.pathname.replace(/^\/+|\/+$/g, '');
    if (op !== 'get' && op !== 'ping') {
      send(res, 404, JSON.stringify({ error: 'no_such_operation', message: op }));
      return;
    }
    const values = url.searchParams.getAll(serviceKey(service));
    invoke(fixture, service, op, values.length ? values.at(-1) : undefined, (err, body) => {
      if (!err) return send(res, 200, body);
      const e = asServiceError(err);
      send(res, e.status, errorBody(e));
    });
  });
  return listen(server, host, port);
}

// The gateway's clients: one keep-alive pool (an http.Agent) for every service, TCP_NODELAY
// and TCP keep-alive on each connection, each call within its deadline.
class RestClients {
  constructor(addresses) {
    this.addresses = addresses;
    this.agent = new http.Agent({
      keepAlive: true,
      keepAliveMsecs: KEEPALIVE_DELAY_MS,
      keepAliveInitialDelay: KEEPALIVE_DELAY_MS, // from connect, not only once idle
      maxSockets: POOL_PER_HOST,
      maxFreeSockets: POOL_PER_HOST,
      timeout: POOL_IDLE_MS, // a free socket idle this long is closed
      scheduling: 'lifo',
      noDelay: true,
    });
  }

  call(service, op, id, limitMs) {
    const [host, port] = splitAddress(this.addresses[service] || '');
    const path = op === 'get' ? `/get?${serviceKey(service)}=${id}` : `/${op}`;
    return new Promise((resolve, reject) => {
      let done = false;
      const finish = (err, value) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value);
      };
      const req = http.get({ host, port, path, agent: this.agent }, (res) => {
        const chunks = [];
        let size = 0;
        res.on('data', (c) => {
          size += c.length;
          if (size > MAX_ANSWER) {
            req.destroy();
            const long = `${service}: an answer longer than ${MAX_ANSWER} bytes`;
            finish(new ServiceError('internal', long));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => {
          try {
            finish(null, answer(service, op, res.statusCode, Buffer.concat(chunks)));
          } catch (e) {
            finish(e);
          }
        });
        res.on('error', (e) => finish(unavailable(`${service}: ${e.message}`)));
      });
      const timer = setTimeout(() => {
        finish(timeout(`${service} did not answer within ${limitMs / 1000}s`));
        req.destroy();
      }, limitMs);
      req.on('error', (e) => finish(unavailable(`${service}: ${e.message}`)));
    });
  }

  stats() {
    return '{}';
  }

  close() {
    this.agent.destroy();
  }
}

// A service's answer: its document's value (a "get"), or the error it stands for.
function answer(service, op, status, body) {
  let doc;
  try {
    doc = JSON.parse(body);
  } catch {
    const what = status === 200 ? 'a bad body' : 'a non-JSON body';
    throw new ServiceError('internal', `${service}: HTTP ${status} with ${what}`);
  }
  if (status !== 200) throw fromCode(doc.error || 'internal', doc.message);
  return op === 'get' ? UNWRAP[service](doc) : null;
}

function splitAddress(address) {
  const i = address.lastIndexOf(':');
  return [address.slice(0, i).replace(/^\[|\]$/g, ''), Number(address.slice(i + 1))];
}

module.exports = { serveREST, RestClients, POOL_PER_HOST, POOL_IDLE_MS, send, splitAddress };
