"""shop-grpc-node's gateway calls its services as the Python and Go gateways do (docs/node.md,
"shop-grpc-node's wait"): one channel per service, opened at start and reused by every call
(five channels in all, one connection per service whatever the pages), the five calls of a
page in flight at once (a page takes one service's time, not five), one after another only
with IPCLAB_SEQUENTIAL=1.
TCP_NODELAY on those channels is read on live sockets by tests/test_socket_options.py.

The gateway's own code (``lib/gateway.js``'s Gateway over ``lib/grpc.js``'s GrpcClients, from
the ``npm ci`` build) runs against five grpc-js servers that answer every Get after
``DELAY_MS`` and note each call's peer (the client's address and port: its connection)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ipclab import nodebuild
from ipclab.stacks import NODE

DELAY_MS = 60
PAGES = 4

SCRIPT = r"""
const grpc = require('@grpc/grpc-js');
const channel = require('@grpc/grpc-js/build/src/channel');
let opened = 0; // every channel a grpc-js Client opens (a Client per call would open one each)
channel.ChannelImplementation = class extends channel.ChannelImplementation {
  constructor(...args) { super(...args); opened += 1; }
};
const protoLoader = require('@grpc/proto-loader');
const { GrpcClients, PROTO } = require('./lib/grpc');
const { Gateway } = require('./lib/gateway');
const [delayMs, pages, sequential] = JSON.parse(process.argv[1]);
const shop = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO, { keepCase: true }))
  .ipclab.shop;
const NAMES = { 'product-info': 'ProductInfo', reviews: 'ProductReviews',
  recommendations: 'ProductRecommendations', shipping: 'ProductShipping', cart: 'ShoppingCart' };
const peers = {};
function serve(service) {
  const server = new grpc.Server();
  peers[service] = [];
  server.addService(shop[NAMES[service]].service, {
    Get(call, cb) { peers[service].push(call.getPeer()); setTimeout(() => cb(null, {}), delayMs); },
    Ping(_call, cb) { cb(null, {}); },
  });
  const insecure = grpc.ServerCredentials.createInsecure();
  return new Promise((ok, no) => server.bindAsync('127.0.0.1:0', insecure,
    (err, port) => (err ? no(err) : ok([server, `127.0.0.1:${port}`]))));
}
(async () => {
  const services = Object.keys(NAMES);
  const servers = await Promise.all(services.map(serve));
  const clients = new GrpcClients(Object.fromEntries(services.map((s, i) => [s, servers[i][1]])));
  const channels = services.map((s) => clients.clients[s].getChannel());
  const gateway = new Gateway(clients, services, 5000, sequential);
  const took = [];
  for (let i = 0; i < pages; i++) {
    const t = process.hrtime.bigint();
    const [status] = await gateway.route('GET', `/product/${i + 1}?customer_id=1`);
    if (status !== 200) throw new Error(`page answered ${status}`);
    took.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  const same = services.every((s, i) => clients.clients[s].getChannel() === channels[i]);
  const connections = Object.fromEntries(services.map((s) => [s, new Set(peers[s]).size]));
  const calls = Object.fromEntries(services.map((s) => [s, peers[s].length]));
  console.log(JSON.stringify({ took, same, connections, calls, opened }));
  clients.close();
  for (const [server] of servers) server.forceShutdown();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def run_gateway(sequential: bool) -> dict:
    if why := NODE.unavailable():
        pytest.skip(f"Node.js stacks not tested: {why}")
    app = nodebuild.launcher().parent / "app"
    done = subprocess.run(
        ["node", "-e", SCRIPT, json.dumps([DELAY_MS, PAGES, sequential])],
        cwd=app, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_one_channel_per_service_reused_by_every_page() -> None:
    got = run_gateway(sequential=False)
    assert got["opened"] == 5 and got["same"], got  # five channels, opened at start
    assert got["calls"] == dict.fromkeys(got["calls"], PAGES), got
    assert got["connections"] == dict.fromkeys(got["calls"], 1), got  # one connection each


def test_a_pages_five_calls_are_in_flight_at_once() -> None:
    """A page waits for its slowest call (DELAY_MS), not for the five in turn (5 x DELAY_MS);
    the sequential mode, run the same way, is the control that shows the test can fail."""
    concurrent = run_gateway(sequential=False)["took"][1:]  # the first page may connect
    sequential = run_gateway(sequential=True)["took"][1:]
    assert max(concurrent) < 2.5 * DELAY_MS, concurrent
    assert min(sequential) >= 5 * DELAY_MS, sequential
