'use strict';
// TLS for a Node.js role (issue 50): the gateway's listener over HTTPS with --tls-hops edge,
// as services/tls.py and services/go/tls.go serve it: the stack's certificate and key
// (IPCLAB_TLS_CERT, IPCLAB_TLS_KEY), TLS 1.3 at least, HTTP/1.1 by ALPN. The Node.js roles
// encrypt that hop alone: their clients dial the services and the broker in the clear, so
// a role given the files without IPCLAB_TLS_HOPS=edge (every hop, --tls) is refused.
const fs = require('node:fs');

// serverTLS is the options of node:https's server, or null when TLS is off.
function serverTLS(env = process.env) {
  if (!env.IPCLAB_TLS_CA) return null;
  if (env.IPCLAB_TLS_HOPS !== 'edge') {
    throw new Error('TLS on every hop is not built for Node.js: --tls-hops edge only');
  }
  for (const key of ['IPCLAB_TLS_CERT', 'IPCLAB_TLS_KEY']) {
    if (!env[key]) throw new Error(`IPCLAB_TLS_CA is set but ${key} is not`);
  }
  return {
    cert: fs.readFileSync(env.IPCLAB_TLS_CERT),
    key: fs.readFileSync(env.IPCLAB_TLS_KEY),
    minVersion: 'TLSv1.3',
    ALPNProtocols: ['http/1.1'],
  };
}

module.exports = { serverTLS };
