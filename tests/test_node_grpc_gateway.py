"""shop-grpc-node's gateway calls its services as the Python and Go gateways do (docs/node.md,
"shop-grpc-node's wait"): one channel per service, opened at start and reused by every call
(five channels in all, one connection per service whatever the pages), the five calls of a
page in flight at once (a page takes one service's time, not five), one after another only
with IPCLAB_SEQUENTIAL=1.
TCP_NODELAY on those channels is read on live sockets by tests/test_socket_options.py.

The gateway's own code (``lib/gateway.js``'s Gateway over ``lib/grpc.js``'s GrpcClients, from
the ``npm ci`` build) runs against five grpc-js servers that note each call's peer (the
client's address and port: its connection) and how many calls are in flight at once."""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

from ipclab import nodebuild
from ipclab.docblocks import MEASURED
from ipclab.paths import REPO_ROOT
from ipclab.stacks import NODE

HOLD_MS = 300
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
const [holdMs, pages, sequential] = JSON.parse(process.argv[1]);
const shop = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO, { keepCase: true }))
  .ipclab.shop;
const NAMES = { 'product-info': 'ProductInfo', reviews: 'ProductReviews',
  recommendations: 'ProductRecommendations', shipping: 'ProductShipping', cart: 'ShoppingCart' };
const peers = {};
let held = 0; // calls arrived and not answered yet, over the five servers
let most = 0;
const waiting = [];
function serve(service) {
  const server = new grpc.Server();
  peers[service] = [];
  server.addService(shop[NAMES[service]].service, {
    Get(call, cb) {
      peers[service].push(call.getPeer());
      let done = false;
      const answer = () => { if (!done) { done = true; held -= 1; cb(null, {}); } };
      held += 1;
      most = Math.max(most, held);
      waiting.push(answer);
      if (held === 5) waiting.splice(0).forEach((f) => f()); // the page's five are all here
      else setTimeout(answer, holdMs);
    },
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
  console.log(JSON.stringify({ took, same, connections, calls, opened, most }));
  clients.close();
  for (const [server] of servers) server.forceShutdown();
})().catch((e) => { console.error(e); process.exit(1); });
"""


def run_gateway(sequential: bool, pages: int = PAGES) -> dict:
    if why := NODE.unavailable():
        pytest.skip(f"Node.js stacks not tested: {why}")
    app = nodebuild.launcher().parent / "app"
    done = subprocess.run(
        ["node", "-e", SCRIPT, json.dumps([HOLD_MS, pages, sequential])],
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
    """The servers hold each call until the page's five are all in (then answer them at once)
    or HOLD_MS has passed: the five calls are in flight together; the sequential mode, run
    the same way, is the control that shows the test can fail (one call at a time)."""
    assert run_gateway(sequential=False)["most"] == 5
    assert run_gateway(sequential=True, pages=2)["most"] == 1


def test_the_figures_docs_node_states_are_its_tables() -> None:
    """docs/node.md's sentences on the wait quote the measured tables it shows (generated
    blocks, tests/test_docblocks.py): every figure below is computed from them."""
    text = " ".join((REPO_ROOT / "docs" / "node.md").read_text().split())
    ab = pd.read_csv(MEASURED / "shop_node_ab_first.csv")
    sit = pd.read_csv(MEASURED / "shop_node_sitting.csv")
    probe = pd.read_csv(MEASURED / "shop_node_probe_first.csv").set_index("stack").p50_ms
    node, rest = (ab[ab["stack"] == s] for s in ("shop-grpc-node", "shop-rest-node"))
    cold = sit[sit.phase == "cold"].set_index("stack").p50_ms
    host = pd.concat([ab.host_cpu_percent, sit.host_busy])
    said = {
        f"at {node.rps.mean():.0f} req/s and {node.mean_ms.mean():.0f} ms mean": True,
        f"gateway at {node.gateway_cpu_percent.mean():.0f} % of a core": True,
        f"gave {probe['shop-grpc-node']:g} ms a page against `shop-rest-node`'s "
        f"{probe['shop-rest-node']:g} ms": True,
        f"{host.min():.0f}-{host.max():.0f} % busy in every run": True,
        f"needed about {(node.cpu_ms_per_request.mean() / rest.cpu_ms_per_request.mean()):.0f}x "
        "the CPU per request": True,
        f"50 users over {node.rps.mean():.0f} req/s is {50 / node.rps.mean():.1f} s": True,
        f"(about {probe['shop-grpc-node'] / probe['shop-rest-node']:.0f}x, at load average "
        f"{ab.load_average.min():.1f}-{ab.load_average.max():.1f})": True,
        f"(about {cold['shop-grpc-node'] / cold['shop-rest-node']:.0f}x, at "
        f"{sit.load_average.min():.1f}-{sit.load_average.max():.1f})": True,
    }
    assert {k: k in text for k in said} == said
    # "no cell's p95 reaches 40 ms" (warm, one client); the run queue outlasts the page
    one = sit[(sit.phase == "warm") & (sit.clients == 1)]
    assert (one.p95_ms < 40).all() and (one.runq_ms_per_page > one.mean_ms).all()
    # the loaded sitting: rounds 2-3 serve about the A/B's req/s, round 1 about three times more
    loaded = pd.read_csv(MEASURED / "shop_node_sitting_loaded.csv")
    at50 = loaded[(loaded.phase == "warm") & (loaded.clients == 50)]
    rps = at50[at50["stack"] == "shop-grpc-node"].set_index("round").rps
    assert "with the code that served about three times more in round 1" in text
    assert round(rps[1] / rps[[2, 3]].mean()) == 3
    assert ((rps[[2, 3]] / node.rps.mean()).between(0.75, 1.5)).all(), rps
