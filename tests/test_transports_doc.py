"""docs/transports.md's numbers outside its generated blocks, checked against the benches'
committed JSON (issue 46: every number in a doc generated from a table or checked against
one). The tables themselves are generated blocks (``ipclab.benchtables``,
tests/test_docblocks.py); this checks the sentences that quote them and the words of the
table of choices, which has no numbers but says which pair costs less."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import numpy as np
import pytest

from ipclab import benchtables as bt
from ipclab.paths import REPO_ROOT

DOC = REPO_ROOT / "docs" / "transports.md"


def _text() -> str:
    """The document with every run of whitespace one space (sentences wrap)."""
    return re.sub(r"\s+", " ", DOC.read_text())


def _six(name: str, key: str) -> float:
    return float(np.median([r[name][key] for r in bt.transport_runs(bt.SIX_RUNS)]))


def _summary(file: str) -> dict[str, dict[str, float]]:
    doc = json.loads((bt.RESULTS / file).read_text())
    return {s["name"]: s for s in doc["summary"]}


def _load(files: list[str], when: str = "load_avg_before") -> str:
    loads = [json.loads((bt.RESULTS / f).read_text())[when][0] for f in files]
    return f"{min(loads):.1f}-{max(loads):.1f}"


def _load_both(files: list[str]) -> str:
    """The range of the 1-minute load average before and after each run of ``files``."""
    docs = [json.loads((bt.RESULTS / f).read_text()) for f in files]
    loads = [d[k][0] for d in docs for k in ("load_avg_before", "load_avg_after")]
    return f"{min(loads):.1f}-{max(loads):.1f}"


def _httpx_client_over_server() -> str:
    runs = bt.transport_runs(bt.SIX_RUNS)
    x = [r["rest-httpx"]["client_cpu_percent"] / r["rest-httpx"]["server_cpu_percent"]
         for r in runs]  # fmt: skip
    return f"its client process used {min(x):.1f}x or more the CPU of the server"


def _httpx_shares() -> str:
    runs = bt.transport_runs(bt.SIX_RUNS)
    c = [r["rest-httpx"]["client_cpu_percent"] for r in runs]
    s = [r["rest-httpx"]["server_cpu_percent"] for r in runs]
    return f"({min(c):.0f}-{max(c):.0f}% of a core against {min(s):.0f}-{max(s):.0f}%)"


def _least_loaded_rps_ratio() -> str:
    runs = bt.transport_runs(bt.SIX_RUNS)
    loads = [json.loads((bt.RESULTS / f).read_text())["load_avg_before"][0] for f in bt.SIX_RUNS]
    r = runs[int(np.argmin(loads))]
    return f"our least loaded run gave {r['rest']['rps'] / r['rest-httpx']['rps']:.0f}x"


def _stack_steps(files: list[str]) -> list[dict[str, float]]:
    return [s for steps in bt.stack_runs(files) for s in steps]


def _failures(files: list[str]) -> int:
    return sum(s["failures"] for s in _stack_steps(files))


def _generator_range() -> str:
    steps = _stack_steps(["stacks-run1.json", "stacks-run2.json"])
    mean = [s["loadgen_cpu_mean"] for s in steps]
    p95 = max(s["loadgen_cpu_p95"] for s in steps)
    return (f"between {min(mean):.0f}% and {max(mean):.0f}% of one core at every step of every "
            f"stack (p95 at most {p95:.0f}%)")  # fmt: skip


def _cores() -> str:
    steps = _stack_steps(["stacks-run1.json", "stacks-run2.json"])
    keys = ("gateway_cpu", "services_cpu", "broker_cpu", "loadgen_cpu_mean")
    cores = [sum(s[k] or 0 for k in keys) / 100 for s in steps]
    return f"used {min(cores):.1f} to {max(cores):.1f} cores"


def _quiet_generator() -> str:
    steps = _stack_steps(["stacks-quiet.json"])
    return f"used at most {max(s['loadgen_cpu_mean'] for s in steps):.0f}% of one core at any step"


def _h2c_rounds_above_grpc() -> str:
    runs = bt.transport_runs(["transports-h2c-coap.json"])
    above = sum(r["h2c"]["rps"] > r["grpc"]["rps"] for r in runs)
    return f"above 1 in {above} of {len(runs)} rounds"


def _h2c_coap(name: str, key: str) -> float:
    return _summary("transports-h2c-coap.json")[name][key]


def _h2c_coap_side(name: str, side: str) -> float:
    runs = bt.transport_runs(["transports-h2c-coap.json"])
    return float(np.median([r[name][f"{side}_us_per_call"] for r in runs]))


def _per_round(name: str, to: str, key: str = "rps") -> float:
    """The median of the per-round ratios of ``name``'s ``key`` to ``to``'s."""
    runs = bt.transport_runs(["transports-h2c-coap.json"])
    return float(np.median([bt.ratio(key, to)(r, name) for r in runs]))


def _cpu_over(name: str, to: str) -> float:
    return _h2c_coap(name, "cpu_us_per_call") / _h2c_coap(to, "cpu_us_per_call")


def _five(x: float) -> str:
    """Rounded to 5, as the prose rounds "about" figures."""
    return f"{5 * round(x / 5):.0f}"


def _ny(name: str, key: str) -> float:
    return _summary("transports-h2c-5rounds.json")[name][key]


def _coap_sides() -> str:
    c, s = (round(_h2c_coap_side("coap", side), -1) for side in ("client", "server"))
    return f"(about {c:.0f} µs of client and {s:.0f} µs of server CPU per call)"


def _pairs() -> str:
    s = _summary("transports-coap-pairs.json")
    doc = json.loads((bt.RESULTS / "transports-coap-pairs.json").read_text())
    inflight, rps = doc["args"]["inflight"], s["pair-californium"]["rps"]
    return (f"{inflight} calls in flight over {rps:.0f} calls a second is "
            f"{1000 * inflight / rps:.0f} ms a call")  # fmt: skip


def _quiet_httpx() -> str:
    q = bt.transport_runs(["transports-quiet.json"])[0]
    a, b = q["rest"], q["rest-httpx"]
    return (
        f"httpx serves **{a['rps'] / b['rps']:.1f}x fewer** requests per second than aiohttp at "
        f"32 in flight ({bt.n0(b['rps'])} against {bt.n0(a['rps'])}) and costs "
        f"{b['cpu_us_per_call'] / a['cpu_us_per_call']:.0f}x the CPU per call"
    )


def _client_plus_service() -> str:
    x = [bt.n0(_six(n, "client_us_per_call") + _six(n, "server_us_per_call"))
         for n in ("amqp", "grpc", "rest")]  # fmt: skip
    return f"client + service {x[0]} µs, against {x[1]} for gRPC and {x[2]} for REST"


def _rest_spread() -> str:
    """REST's CPU per call against its throughput over the six runs."""
    runs = bt.transport_runs(bt.SIX_RUNS)
    cpu = [r["rest"]["cpu_us_per_call"] for r in runs]
    rps = [r["rest"]["rps"] for r in runs]
    mid = float(np.median(cpu))
    spread = max(mid - min(cpu), max(cpu) - mid) / mid
    return (f"varied by about ±{_five(100 * spread)}% across runs while throughput varied "
            f"{max(rps) / min(rps):.0f}x")  # fmt: skip


def _cpu_per_page() -> str:
    steps = _stack_steps(["stacks-run1.json", "stacks-run2.json"])
    mid = [float(np.median([s["cpu_ms_per_page"] for s in steps if s["stack"] == st]))
           for st in bt.STACKS]  # fmt: skip
    return f"REST ~{mid[0]:.0f} ms, gRPC ~{mid[1]:.0f} ms, AMQP ~{mid[2]:.1f} ms"


def _californium_before() -> str:
    """The Nyfløtt reference's Californium cell at 0 ms before the fix, and aiocoap's now."""
    import pandas as pd

    before = pd.read_csv(REPO_ROOT / "data" / "measured" / "californium_reference_before.csv")
    b = before[before.delay_ms == 0].iloc[0]
    runs = pd.read_csv(bt.REFERENCES / b.reference / "results" / "runs.csv")
    beside = runs[(runs["stack"] == b.beside) & (runs.delay_ms == 0)].rps.mean()
    return (f"(revision {b.revision}: {b.rps:.0f} req/s at 0 ms, a mean of {b.mean_ms:.1f} ms a "
            f"request, against aiocoap's {beside:.0f})")  # fmt: skip


#: a sentence of the document, made from the JSON it quotes
SENTENCES: list[Callable[[], str]] = [
    # the conditions
    lambda: f"(load average {_load(['transports-quiet.json', 'stacks-quiet.json'])};",
    lambda: (
        f"before and after each run: {_load_both(bt.SIX_RUNS)} and "
        f"{_load_both(['stacks-run1.json', 'stacks-run2.json'])}"
    ),
    # the six runs and the quiet rerun
    lambda: (
        f"server CPU {bt.n0(_six('rest', 'server_us_per_call'))} against "
        f"{bt.n0(_six('aiohttp-web', 'server_us_per_call'))} µs per call, "
        f"~{_five(_six('rest', 'cpu_us_per_call'))}-"
        f"{_five(_six('aiohttp-web', 'cpu_us_per_call'))} µs all in"
    ),
    lambda: (
        f"({bt.n0(_six('grpc', 'cpu_us_per_call'))} against "
        f"{bt.n0(_six('grpc-asyncio', 'cpu_us_per_call'))} CPU µs per call"
    ),
    lambda: (
        f"({bt.n0(_six('amqp-direct', 'cpu_us_per_call'))} against "
        f"{bt.n0(_six('amqp', 'cpu_us_per_call'))} µs)"
    ),
    _client_plus_service,
    _quiet_httpx,
    _quiet_generator,
    _httpx_client_over_server,
    _httpx_shares,
    _least_loaded_rps_ratio,
    # the stack peaks
    lambda: (
        f"average {_load_both(['stacks-run1.json'])} for the first, "
        f"{_load_both(['stacks-run2.json'])} for the second). No step of either run had a "
        "failure." * (_failures(["stacks-run1.json", "stacks-run2.json"]) == 0)
    ),
    lambda: f"1-minute load average {_load(['transports-h2c-coap.json'])[:3]} at the start",
    _generator_range,
    _cores,
    # the Nyfløtt rerun and the first h2c/CoAP run
    lambda: (
        f"h2c carries {_ny('h2c', 'rps_x_grpc'):.2f}x grpc.aio's requests at "
        f"{_ny('h2c', 'cpu_x_grpc'):.2f}x its CPU per call"
    ),
    lambda: (
        f"({_ny('rest', 'rps') / _ny('h2c', 'rps'):.1f}x the req/s, "
        f"{_ny('rest', 'cpu_us_per_call') / _ny('h2c', 'cpu_us_per_call'):.2f}x the CPU per call)"
    ),
    lambda: (
        f"({bt.n0(_h2c_coap('coap', 'rps'))} req/s, {_h2c_coap('coap', 'rps_x_grpc'):.2f}x grpc)"
    ),
    lambda: f"CoAP carries {bt.n0(_ny('coap', 'rps'))} req/s",
    lambda: f"throughput than grpc.aio ({_h2c_coap('h2c', 'rps_x_grpc'):.2f}x",
    _h2c_rounds_above_grpc,
    lambda: (
        f"the same CPU per call ({bt.n0(_h2c_coap('h2c', 'cpu_us_per_call'))} against "
        f"{bt.n0(_h2c_coap('rest', 'cpu_us_per_call'))} µs)"
    ),
    lambda: (
        f"throughput falls to {_h2c_coap('h2c-httpx', 'rps_x_grpc'):.2f}x grpc and CPU per "
        f"call rises {_cpu_over('h2c-httpx', 'h2c'):.1f}x "
        f"(httpx spends {_h2c_coap_side('h2c-httpx', 'client'):.0f} µs of client CPU per call "
        f"against our {_h2c_coap_side('h2c', 'client'):.0f})"
    ),
    lambda: (
        f"costs {_h2c_coap_side('h2c-hypercorn', 'server') / _h2c_coap_side('h2c', 'server'):.1f}x "
        "our server's CPU per call"
    ),
    lambda: f"hence the {_h2c_coap('h2c-hypercorn', 'errors'):.0f} calls lost in one round",
    lambda: (
        f"({_h2c_coap('h2c-granian', 'rps_x_grpc'):.2f}x grpc, "
        f"{_per_round('h2c-granian', 'rest'):.2f}x REST; its server costs "
        f"{_h2c_coap_side('h2c-granian', 'server'):.0f} µs per call against our "
        f"{_h2c_coap_side('h2c', 'server'):.0f})"
    ),
    lambda: (
        f"({_h2c_coap_side('h2c', 'server'):.0f} against {_h2c_coap_side('rest', 'server'):.0f} µs)"
    ),
    lambda: (
        f"{_h2c_coap('coap', 'rps_x_grpc'):.2f}x grpc's throughput at "
        f"{_h2c_coap('coap', 'cpu_x_grpc'):.1f}x its CPU per call"
    ),
    _coap_sides,
    _pairs,
    lambda: "had 0 too)" * (_ny("h2c-hypercorn", "errors") == 0),
    _rest_spread,
    _cpu_per_page,
    _californium_before,
    lambda: "through aiocoap's (p50 {:.1f} ms)".format(
        _summary("transports-coap-pairs.json")["pair-californium"]["seq_p50_us"] / 1000
    ),
]


def test_the_versions_are_the_runs() -> None:
    """Each "Versions:" line names what every run it speaks of recorded."""
    text = _text()
    lines = re.findall(r"Versions: (.*?)\.(?: |$)", text)
    assert len(lines) == 2, lines
    for line, files in zip(lines, (bt.SIX_RUNS, ["transports-h2c-coap.json"]), strict=True):
        for f in files:
            doc = json.loads((bt.RESULTS / f).read_text())
            recorded = doc["versions"] | {"Python": doc["python"]}
            for name, version in re.findall(r"([\w-]+) ([\d.]+)", line):
                if name in ("RabbitMQ", "h2") and name not in recorded:
                    continue  # the broker's version is not recorded by the bench
                assert recorded.get(name) == version, (f, name, version)


@pytest.mark.parametrize("sentence", SENTENCES, ids=range(len(SENTENCES)))
def test_the_sentence_is_its_json(sentence: Callable[[], str]) -> None:
    expected = sentence()
    assert expected in _text(), f"docs/transports.md does not say: {expected!r}"


def test_every_source_ran_32_calls_in_flight() -> None:
    """The tables' headers say "32 in flight"."""
    for path in sorted(bt.RESULTS.glob("transports-*.json")):
        assert json.loads(path.read_text())["args"]["inflight"] == 32, path.name


def test_the_choice_table_is_what_the_runs_show() -> None:
    """The words of "The choice per style, and why" against the runs they came from."""
    cpu = {n: _six(n, "cpu_us_per_call") for n in
           ("rest", "rest-httpx", "aiohttp-web", "grpc", "grpc-asyncio", "amqp", "amqp-direct",
            "coap")}  # fmt: skip
    # REST: the cheapest HTTP/1.1 pair measured
    assert cpu["rest"] == min(cpu["rest"], cpu["rest-httpx"], cpu["aiohttp-web"])
    # gRPC: runs fine on uvloop (no dearer than on the default loop)
    assert cpu["grpc"] <= cpu["grpc-asyncio"]
    # AMQP: direct reply-to gained nothing (no cheaper per call)
    assert cpu["amqp-direct"] >= cpu["amqp"]
    # CoAP: costs about as much per call as AMQP (within 10 %)
    assert abs(cpu["coap"] / cpu["amqp"] - 1) < 0.10
    # h2c: more throughput than grpc.aio at under half its CPU per call, in both runs; level
    # with REST on the loaded machine (within 10 %), behind it on the quiet one
    for f in ("transports-h2c-coap.json", "transports-h2c-5rounds.json"):
        h2c = _summary(f)["h2c"]
        assert h2c["rps_x_grpc"] > 1 and h2c["cpu_x_grpc"] < 0.5, f
    loaded, quiet = _summary("transports-h2c-coap.json"), _summary("transports-h2c-5rounds.json")
    assert abs(loaded["h2c"]["rps"] / loaded["rest"]["rps"] - 1) < 0.10
    assert quiet["h2c"]["rps"] < quiet["rest"]["rps"]
    text = _text()
    for words in ("cheapest HTTP/1.1 pair measured", "runs fine on uvloop",
                  "direct reply-to gained nothing", "costs about as much per call as AMQP",
                  "more throughput than grpc.aio at under half its CPU per call, level with "
                  "REST on a loaded machine and behind it on a quiet one"):  # fmt: skip
        assert words in text, words
