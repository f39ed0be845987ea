'use strict';
// What every Node.js server grants one client: the values of services/limits.py and
// services/go/limits.go (tests/test_hardening.py compares them), explained in docs/hardening.md.
const http = require('node:http');
const https = require('node:https');

const MAX_BODY = 1 << 20; // bytes: a longer request body is refused with 413 (the gateway)
const MAX_HEADER_BYTES = 64 << 10; // bytes: a longer request head is refused with 431
const HEADER_TIMEOUT_MS = 5000;
const READ_TIMEOUT_MS = 30000;
const IDLE_TIMEOUT_MS = 75000;
const MAX_ANSWER = 16 << 20; // bytes: a longer service answer fails the call (internal)
// TCP keep-alive on accepted and dialled sockets, first probe after 15 s idle (Go's default)
const KEEPALIVE_DELAY_MS = 15000;

const FIRST_HEAD = Symbol('ipclab.firstHead');

// newServer is an http.Server with the limits: the head within HEADER_TIMEOUT_MS (from the
// connection's start, then from each later request's first byte), the whole request within
// READ_TIMEOUT_MS, an idle keep-alive connection closed after IDLE_TIMEOUT_MS; TCP_NODELAY
// and TCP keep-alive on every accepted socket. Node checks the head and request timeouts
// every connectionsCheckingInterval (30 s by default): 1 s here, so they hold; and it times
// a head from its first byte only, so a timer per connection closes one that sends nothing.
// A connection timed out is closed without an answer (as Go and uvicorn; Node would
// answer 408); a head over MAX_HEADER_BYTES is answered 431, other malformed requests 400.
// With ``tls`` (lib/tls.js's serverTLS: the gateway with --tls-hops edge) it serves HTTPS,
// the handshake within HEADER_TIMEOUT_MS too (as the Python and Go servers), the head's timer
// started once the handshake is done (on the TLS socket the requests arrive on).
function newServer(handler, tls = null) {
  const options = {
    maxHeaderSize: MAX_HEADER_BYTES,
    noDelay: true,
    keepAlive: true,
    keepAliveInitialDelay: KEEPALIVE_DELAY_MS,
    headersTimeout: HEADER_TIMEOUT_MS,
    requestTimeout: READ_TIMEOUT_MS,
    connectionsCheckingInterval: 1000,
  };
  const create = tls ? https.createServer : http.createServer;
  const server = create(
    tls ? { ...options, ...tls, handshakeTimeout: HEADER_TIMEOUT_MS } : options,
    (req, res) => {
      const socket = req.socket;
      if (socket[FIRST_HEAD]) {
        clearTimeout(socket[FIRST_HEAD]);
        socket[FIRST_HEAD] = null;
      }
      handler(req, res);
    },
  );
  server.keepAliveTimeout = IDLE_TIMEOUT_MS;
  server.on(tls ? 'secureConnection' : 'connection', (socket) => {
    socket[FIRST_HEAD] = setTimeout(() => socket.destroy(), HEADER_TIMEOUT_MS);
    socket.once('close', () => clearTimeout(socket[FIRST_HEAD]));
  });
  server.on('clientError', (err, socket) => {
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || !socket.writable || socket._httpMessage) {
      socket.destroy();
      return;
    }
    const status =
      err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  });
  return server;
}

// listen binds host:port (IPCLAB_HOST, IPCLAB_PORT) with a backlog of 4096, as the others.
function listen(server, host, port) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port, backlog: 4096 }, resolve);
  });
}

module.exports = {
  MAX_BODY, MAX_HEADER_BYTES, HEADER_TIMEOUT_MS, READ_TIMEOUT_MS, IDLE_TIMEOUT_MS, MAX_ANSWER,
  KEEPALIVE_DELAY_MS, newServer, listen,
};
