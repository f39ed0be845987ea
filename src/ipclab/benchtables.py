"""docs/transports.md's tables of figures, made from the benches' committed JSON so they
cannot drift from it (issue 46: every number in a doc generated from a table or checked
against one).

Three shapes, one renderer each, every table of the document one call of them:

- ``transport_table``: ``bench/transports.py`` rows (one file a run; a file with rounds is
  one run per round), a row per candidate, each column a figure's median over the runs
  (optionally with its range), a median of per-run ratios to another candidate of the same
  run, a difference to one, or a count summed over the runs;
- ``stack_table``: ``bench/stacks.py`` steps, a row per stack, each column figures at a
  run's peak (the step with the most req/s among those without failures) or a range over
  every step;
- ``client_table``: two candidates of the same runs side by side, with the range and median
  of their per-run ratio.

``reference_costs`` renders ``data/runs/reference/*/results/bench.json``
(``bench/reference_costs.py``). The blocks are registered in ``ipclab.docblocks``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ipclab.paths import REPO_ROOT

RESULTS = REPO_ROOT / "bench" / "results"
REFERENCES = REPO_ROOT / "data" / "runs" / "reference"
SIDES = ("client", "server", "broker")

Run = dict[str, dict[str, Any]]  # candidate -> its row of one run (or round)
Fmt = Callable[[float], str]


def n0(x: float) -> str:
    return f"{x:,.0f}"


def sig2(x: float) -> str:
    """About two significant digits, never an exponent: 0.06, 0.45, 3.3, 11, 107."""
    if abs(x) >= 10:
        return f"{x:,.0f}"
    return f"{x:.1f}" if abs(x) >= 1 else f"{x:.2f}"


def sig3(x: float) -> str:
    """Three significant digits, never an exponent: 10.5, 107."""
    if abs(x) >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def pct(x: float) -> str:
    """A percentage: one decimal below 10 (0.7 %, 8.8 %), none above (100 %)."""
    return f"{x:,.0f} %" if abs(x) >= 10 else f"{x:.1f} %"


def f1(x: float) -> str:
    return f"{x:.1f}"


def f2(x: float) -> str:
    return f"{x:.2f}"


def f3(x: float) -> str:
    return f"{x:.3f}"


def f2_1(x: float) -> str:
    """Two decimals, one from 10 up: 0.43, 3.30, 20.4."""
    return f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


# --- bench/transports.py ---------------------------------------------------------------


def _with_costs(row: dict[str, Any]) -> dict[str, Any]:
    """A row with its CPU µs per call (derived from the processes' CPU % and req/s where the
    run predates the column) and each side's share of it."""
    r = dict(row)
    rps = r.get("rps") or 0
    for side in SIDES:
        share = r.get(f"{side}_cpu_percent")
        r[f"{side}_us_per_call"] = 1e4 * share / rps if share is not None and rps else None
    if r.get("cpu_us_per_call") is None and rps:
        r["cpu_us_per_call"] = sum(r[f"{s}_us_per_call"] or 0 for s in SIDES)
    return r


def transport_runs(files: Sequence[str], folder: Path = RESULTS) -> list[Run]:
    """Each run of ``files`` (a file, or each round of a file with rounds), its failed rows
    left out."""
    runs: list[Run] = []
    for name in files:
        doc = json.loads((folder / name).read_text())
        rounds: dict[int, Run] = {}
        for row in doc["rows"]:
            if "error" not in row:
                rounds.setdefault(int(row.get("round", 1)), {})[row["name"]] = _with_costs(row)
        runs += [rounds[k] for k in sorted(rounds)]
    return runs


Value = Callable[[Run, str], float | None]


def figure(key: str) -> Value:
    return lambda run, name: run[name].get(key)


def ratio(key: str, to: str, scale: float = 1.0) -> Value:
    """A row's ``key`` over candidate ``to``'s in the same run (times ``scale``)."""

    def value(run: Run, name: str) -> float | None:
        mine, other = run[name].get(key), run.get(to, {}).get(key)
        return scale * mine / other if mine and other else None

    return value


def minus(key: str, to: str) -> Value:
    """A row's ``key`` less candidate ``to``'s in the same run."""

    def value(run: Run, name: str) -> float | None:
        mine, other = run[name].get(key), run.get(to, {}).get(key)
        return mine - other if mine is not None and other is not None else None

    return value


@dataclass(frozen=True)
class Col:
    """A column: per run a value of the row's candidate; the cell is their median (with the
    range when ``spread``), or their sum (``total``); the candidate ``base`` (the one a ratio
    or difference is taken to) shows ``base_text``; ``parts`` are further figures whose
    medians follow in brackets, ``a / b``; ``bold`` candidates' cells are bold."""

    header: str
    value: Value
    fmt: Fmt = n0
    spread: bool = False
    total: bool = False
    base: str | None = None
    base_text: str = "1"
    parts: tuple[str, ...] = ()
    bold: frozenset[str] = field(default_factory=frozenset)

    def cell(self, runs: list[Run], name: str) -> str:
        if name == self.base:
            return self.base_text
        values = [v for r in runs if (v := self.value(r, name)) is not None]
        if not values:
            return "-"
        if self.total:
            text = self.fmt(sum(values))
        else:
            text = self.fmt(float(np.median(values)))
            if self.spread and len(values) > 1:
                text += f" ({self.fmt(min(values))}–{self.fmt(max(values))})"
        if self.parts:
            medians = [
                self.fmt(float(np.median([v for r in runs if (v := r[name].get(k)) is not None])))
                for k in self.parts
            ]
            text += f" ({' / '.join(medians)})"
        return f"**{text}**" if name in self.bold else text


def transport_table(
    files: Sequence[str],
    candidates: Sequence[tuple[str, str]],
    cols: Sequence[Col],
    first: str = "candidate",
) -> str:
    """One row per ``(name, label)`` of ``candidates`` over every run of ``files``; a label
    may say ``{errors}``, the row's errors summed over the runs."""
    runs = transport_runs(files)
    rows = [f"| {first} | " + " | ".join(c.header for c in cols) + " |",
            "|---|" + "---|" * len(cols)]  # fmt: skip
    for name, label in candidates:
        mine = [r for r in runs if name in r]
        if not mine:
            raise ValueError(f"{files}: no row {name}")
        errors = sum(r[name].get("errors") or 0 for r in mine)
        cells = " | ".join(c.cell(mine, name) for c in cols)
        rows.append(f"| {label.format(errors=f'{errors:,}')} | {cells} |")
    return "\n".join(rows)


def cpu_split(files: Sequence[str], names: Sequence[str]) -> str:
    """Per candidate, the medians over the runs of each side's CPU µs per call."""
    runs = transport_runs(files)
    parts = []
    for name in names:
        sides = [
            [v for r in runs if name in r and (v := r[name][f"{s}_us_per_call"]) is not None]
            for s in SIDES
        ]
        parts.append(f"{name} " + " / ".join(n0(float(np.median(v))) for v in sides if v))
    return "; ".join(parts)


# --- bench/stacks.py -------------------------------------------------------------------


def stack_runs(files: Sequence[str], folder: Path = RESULTS) -> list[list[dict[str, Any]]]:
    """Each file's steps, each with its CPU ms per page (gateway, services and broker CPU
    over req/s)."""
    runs = []
    for name in files:
        steps = json.loads((folder / name).read_text())["steps"]
        for s in steps:
            cpu = sum(s[k] or 0 for k in ("gateway_cpu", "services_cpu", "broker_cpu"))
            s["cpu_ms_per_page"] = 10 * cpu / s["rps"] if s["rps"] else None
        runs.append(steps)
    return runs


def peak(steps: list[dict[str, Any]], stack: str) -> dict[str, Any]:
    """The stack's step with the most req/s among those without failures."""
    return max((s for s in steps if s["stack"] == stack and not s["failures"]),
               key=lambda s: s["rps"])  # fmt: skip


StackCell = Callable[[list[list[dict[str, Any]]], str], str]


def at_peak(keys: Sequence[str], fmt: Fmt | Callable[[Any], str], runs: int | None = None,
            within: str = " / ") -> StackCell:  # fmt: skip
    """The peak's ``keys`` (joined by ``within``) of each run (the first ``runs`` only if
    given), the runs joined by " / "."""

    def cell(all_runs: list[list[dict[str, Any]]], stack: str) -> str:
        peaks = [peak(steps, stack) for steps in all_runs[:runs]]
        return " / ".join(within.join(fmt(p[k]) for k in keys) for p in peaks)

    return cell


def over_steps(key: str, fmt: Fmt) -> StackCell:
    """The range of ``key`` over every step of every run."""

    def cell(all_runs: list[list[dict[str, Any]]], stack: str) -> str:
        values = [s[key] for steps in all_runs for s in steps if s["stack"] == stack]
        return f"{fmt(min(values))}-{fmt(max(values))}"

    return cell


def yes_no(flag: Any) -> str:
    return "yes" if flag else "no"


def stack_table(files: Sequence[str], stacks: Sequence[str],
                cols: Sequence[tuple[str, StackCell]], first: str = "stack") -> str:  # fmt: skip
    runs = stack_runs(files)
    rows = [f"| {first} | " + " | ".join(h for h, _ in cols) + " |",
            "|---|" + "---|" * len(cols)]  # fmt: skip
    for stack in stacks:
        rows.append(f"| {stack} | " + " | ".join(cell(runs, stack) for _, cell in cols) + " |")
    return "\n".join(rows)


# --- two clients side by side ------------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    """A row of ``client_table``: a figure, its unit, the word for ``b`` against ``a`` and
    whether more of it is better (then the ratio is a over b: "x fewer")."""

    label: str
    key: str
    unit: str
    word: str
    more_is_better: bool = False


def client_table(files: Sequence[str], a: tuple[str, str, str], b: tuple[str, str, str],
                 measures: Sequence[Measure]) -> str:  # fmt: skip
    """``a`` and ``b`` (name, header, short name) over the same runs: each measure's
    medians, and the range and median of b against a per run."""
    runs = [r for r in transport_runs(files) if a[0] in r and b[0] in r]
    rows = [f"| per run ({len(runs)} runs) | {a[1]} | {b[1]} | {b[2]} / {a[2]} |",
            "|---|---|---|---|"]  # fmt: skip
    for m in measures:
        va = [r[a[0]][m.key] for r in runs]
        vb = [r[b[0]][m.key] for r in runs]
        ratios = [(x / y) if m.more_is_better else (y / x) for x, y in zip(va, vb, strict=True)]
        rows.append(
            f"| {m.label} | {n0(float(np.median(va)))}{m.unit} | {n0(float(np.median(vb)))}"
            f"{m.unit} | {min(ratios):.0f}-{max(ratios):.0f}x {m.word} (median "
            f"{float(np.median(ratios)):.0f}x) |"
        )
    return "\n".join(rows)


# --- the references' own code ----------------------------------------------------------


def _revision(folder: Path) -> str | None:
    """The revision most of the folder's runs name (their manifests), as
    ``bench/reference_costs.py`` picks it."""
    counts: Counter[str] = Counter()
    for m in folder.rglob("manifest.json"):
        git = (json.loads(m.read_text()).get("environment") or {}).get("git") or {}
        if git.get("revision"):
            counts[str(git["revision"])] += 1
    return counts.most_common(1)[0][0] if counts else None


def reference_costs(folder: Path = REFERENCES, names: Sequence[str] = ("rest", "grpc", "amqp"),
                    base: str = "floor") -> str:  # fmt: skip
    """Per reference folder with ``results/bench.json`` (``bench/reference_costs.py``): its
    revision, the floor's CPU µs per call and each of ``names``' with its ratio to the floor
    of the same run (the median over the rounds, if several); the folders without figures
    are named below."""
    rows = ["| reference | revision | floor, CPU us per call | "
            + " | ".join(f"{n}, CPU us per call (x floor)" for n in names) + " |",
            "|---|---|---:|" + "---|" * len(names)]  # fmt: skip
    loads, missing = [], []
    for ref in sorted(p for p in folder.iterdir() if p.is_dir()):
        path = ref / "results" / "bench.json"
        if not path.exists():
            why = (f"its runs' revision `{rev[:8]}` not measured" if (rev := _revision(ref))
                   else "no runs with a revision")  # fmt: skip
            missing.append(f"`{ref.name}` ({why if (ref / 'results').is_dir() else 'no results/'})")
            continue
        doc = json.loads(path.read_text())
        loads.append(doc["load_avg_before"][0])
        runs = transport_runs([path.name], path.parent)
        cells = [n0(float(np.median([r[base]["cpu_us_per_call"] for r in runs])))]
        for n in names:
            per = [r[n]["cpu_us_per_call"] for r in runs if n in r]
            x = [v for r in runs if (v := ratio("cpu_us_per_call", base)(r, n)) is not None]
            cells.append(f"{n0(float(np.median(per)))} ({float(np.median(x)):.1f}x)"
                         if per else "not measured")  # fmt: skip
        rounds = doc["args"].get("rounds", 1)
        rows.append(f"| `{ref.name}` | `{doc['revision'][:8]}` ({rounds} round"
                    f"{'s' if rounds != 1 else ''}) | " + " | ".join(cells) + " |")  # fmt: skip
    rows.append(
        f"\n1-minute load average {min(loads):.1f}-{max(loads):.1f} before each revision's "
        f"bench. No figures for: {', '.join(missing) or 'none'}."
    )
    return "\n".join(rows)


# --- docs/transports.md's blocks ---------------------------------------------------------

SIX_RUNS = [f"transports-run{i}.json" for i in range(1, 7)]
FLOOR = ("floor", "grpc", "rest")


def _p99_ms(run: Run, name: str) -> float | None:
    us = run[name].get("seq_p99_us")
    return us / 1000 if us is not None else None


def _six_runs() -> str:
    return transport_table(
        SIX_RUNS,
        [
            ("floor", "floor: raw asyncio TCP echo, length-prefixed"),
            ("rest", "**rest**: adapter, uvicorn+httptools server, aiohttp client"),
            ("rest-httpx", "rest-httpx: same server, httpx.AsyncClient"),
            ("aiohttp-web", "aiohttp-web: aiohttp.web server, aiohttp client"),
            ("h2c", "h2c: hypercorn, httpx http2 client (optional)"),
            ("grpc", "**grpc**: adapter, grpc.aio both sides, uvloop"),
            ("grpc-asyncio", "grpc-asyncio: adapter, default asyncio loop"),
            ("amqp", "**amqp**: adapter, aio-pika, exclusive reply queue + correlation id"),
            ("amqp-direct", "amqp-direct: adapter server, direct reply-to client"),
            ("coap", "coap: aiocoap both sides, GET"),
        ],
        [
            Col("sequential p50 µs", figure("seq_p50_us"), spread=True),
            Col("p99 ms", _p99_ms, sig2, spread=True),
            Col("req/s, 32 in flight", figure("rps"), spread=True),
            Col("CPU µs/call", figure("cpu_us_per_call"), spread=True),
            Col("p50 × floor", ratio("seq_p50_us", "floor"), base="floor"),
            Col(
                "req/s % of floor", ratio("rps", "floor", 100), pct, base="floor", base_text="100 %"
            ),
            Col("CPU × floor", ratio("cpu_us_per_call", "floor"), base="floor"),
        ],
    )


def _six_runs_split() -> str:
    names = ["floor", "rest", "rest-httpx", "aiohttp-web", "grpc", "grpc-asyncio", "amqp",
             "amqp-direct", "coap"]  # fmt: skip
    return ("Where the CPU goes (median µs per call, client / server / broker): "
            f"{cpu_split(SIX_RUNS, names)}.")  # fmt: skip


def _quiet() -> str:
    return transport_table(
        ["transports-quiet.json"],
        [
            ("floor", "floor: raw asyncio TCP echo"),
            ("rest", "**rest** (uvicorn+httptools, aiohttp)"),
            ("rest-httpx", "rest-httpx (same server)"),
            ("aiohttp-web", "aiohttp-web (aiohttp both sides)"),
            ("h2c", "h2c (hypercorn, httpx http2; {errors} errors)"),
            ("grpc", "**grpc** (grpc.aio, uvloop)"),
            ("grpc-asyncio", "grpc-asyncio"),
            ("amqp", "**amqp** (aio-pika, reply queue)"),
            ("amqp-direct", "amqp-direct (direct reply-to)"),
            ("coap", "coap (aiocoap)"),
        ],
        [
            Col("sequential p50 µs", figure("seq_p50_us")),
            Col("p99 µs", figure("seq_p99_us")),
            Col("req/s, 32 in flight", figure("rps")),
            Col("CPU µs/call", figure("cpu_us_per_call")),
            Col("CPU × floor", ratio("cpu_us_per_call", "floor"), sig2, base="floor"),
        ],
    )


def _rounds_cols(rounds: int, split: bool, bold: frozenset[str]) -> list[Col]:
    cpu = (Col("CPU µs/call (client / server)", figure("cpu_us_per_call"),
               parts=("client_us_per_call", "server_us_per_call"))
           if split else Col("CPU µs/call", figure("cpu_us_per_call")))  # fmt: skip
    return [
        Col("p50 µs", figure("seq_p50_us")),
        Col("p99 µs", figure("seq_p99_us")),
        Col("req/s, 32 in flight", figure("rps")),
        cpu,
        Col(f"errors ({rounds} rounds)", figure("errors"), total=True),
        Col("req/s × grpc", ratio("rps", "grpc"), f2_1, base="grpc", bold=bold),
        Col(
            "CPU × grpc",
            ratio("cpu_us_per_call", "grpc"),
            f2,
            base="grpc",
            bold=bold if split else frozenset(),
        ),
    ]


def _rounds(name: str) -> int:
    return int(json.loads((RESULTS / name).read_text())["args"]["rounds"])


def _h2c_5rounds() -> str:
    f = "transports-h2c-5rounds.json"
    return transport_table(
        [f],
        [
            ("floor", "floor: raw asyncio TCP echo"),
            ("rest", "**rest**: uvicorn+httptools, aiohttp (HTTP/1.1)"),
            ("h2c", "**h2c**: own asyncio protocols on `h2`, both sides"),
            ("h2c-granian", "h2c-granian: granian server, adapter client"),
            ("h2c-hypercorn", "h2c-hypercorn: hypercorn server, adapter client"),
            ("h2c-httpx", "h2c-httpx: adapter server, httpx http2 client"),
            ("h2c-hyp-httpx", "h2c-hyp-httpx: hypercorn + httpx"),
            ("grpc", "**grpc**: grpc.aio both sides (also HTTP/2)"),
            ("coap", "**coap**: aiocoap both sides, CON, endpoint pool"),
        ],
        _rounds_cols(_rounds(f), False, frozenset({"h2c"}))
        + [Col("req/s × floor", ratio("rps", "floor"), f3, base="floor")],
    )


def _h2c_coap() -> str:
    f = "transports-h2c-coap.json"
    return transport_table(
        [f],
        [
            ("floor", "floor: raw asyncio TCP echo"),
            ("rest", "**rest**: uvicorn+httptools, aiohttp (HTTP/1.1)"),
            ("h2c", "**h2c**: adapter, own asyncio protocols on `h2`, both sides"),
            ("h2c-granian", "h2c-granian: granian server (Rust, RSGI), adapter client"),
            ("h2c-hypercorn", "h2c-hypercorn: hypercorn server, adapter client"),
            ("h2c-httpx", "h2c-httpx: adapter server, httpx http2 client"),
            ("h2c-hyp-httpx", 'h2c-hyp-httpx: hypercorn + httpx (the earlier "h2c" row)'),
            ("grpc", "**grpc**: grpc.aio both sides (also HTTP/2)"),
            ("coap", "**coap**: adapter, aiocoap both sides, CON"),
        ],
        _rounds_cols(_rounds(f), True, frozenset({"h2c"}))
        + [Col("req/s × rest", ratio("rps", "rest"), f2_1, base="rest")],
    )


def _coap_pairs() -> str:
    return transport_table(
        ["transports-coap-pairs.json"],
        [
            ("pair-none", "none (HTTP/1.1 client to server)"),
            ("pair-aiocoap", "aiocoap (Python adapters)"),
            ("pair-californium", "Californium (JVM, services/java/californium)"),
        ],
        [
            Col("p50 us", figure("seq_p50_us")),
            Col("p99 us", figure("seq_p99_us")),
            Col("req/s, 32 in flight", figure("rps")),
            Col("CPU us per call", figure("cpu_us_per_call")),
            Col(
                "adds to p50, us", minus("seq_p50_us", "pair-none"), base="pair-none", base_text="-"
            ),
            Col(
                "adds CPU us per call",
                minus("cpu_us_per_call", "pair-none"),
                base="pair-none",
                base_text="-",
            ),
        ],
        first="pair",
    )


STACKS = ("shop-rest", "shop-grpc", "shop-amqp")


def _percent(x: float) -> str:
    return f"{x:.0f}%"


def _stacks_quiet() -> str:
    return stack_table(
        ["stacks-quiet.json"],
        STACKS,
        [
            ("peak rps", at_peak(["rps"], n0)),
            ("at users", at_peak(["users"], str)),
            ("p50 / p99 ms at the peak", at_peak(["p50_ms", "p99_ms"], f1)),
            (
                "generator CPU at the peak (mean / p95)",
                at_peak(["loadgen_cpu_mean", "loadgen_cpu_p95"], _percent),
            ),
            ("saturated", at_peak(["loadgen_saturated"], yes_no)),
            ("gateway CPU", at_peak(["gateway_cpu"], _percent)),
            ("CPU ms per page", over_steps("cpu_ms_per_page", f1)),
        ],
        first="stack (quiet)",
    )


def _stacks_runs() -> str:
    return stack_table(
        ["stacks-run1.json", "stacks-run2.json"],
        STACKS,
        [
            ("peak rps (run 1 / run 2)", at_peak(["rps"], n0)),
            ("at users", at_peak(["users"], str)),
            ("p50 / p99 ms at the peak (run 1)", at_peak(["p50_ms", "p99_ms"], sig3, runs=1)),
            (
                "generator CPU at the peak, % of one core (mean)",
                at_peak(["loadgen_cpu_mean"], n0),
            ),
            ("saturated", at_peak(["loadgen_saturated"], yes_no)),
            ("CPU ms per page (all steps, both runs)", over_steps("cpu_ms_per_page", f1)),
        ],
    )


def _clients() -> str:
    return client_table(
        SIX_RUNS,
        ("rest", "aiohttp", "aiohttp"),
        ("rest-httpx", "httpx AsyncClient", "httpx"),
        [
            Measure("req/s with 32 in flight (median)", "rps", "", "fewer", True),
            Measure("sequential p50 (median)", "seq_p50_us", " µs", "slower"),
            Measure("client CPU per call (median)", "client_us_per_call", " µs", "more"),
        ],
    )


#: block name -> its text, for docs/transports.md
TRANSPORTS_MD: dict[str, Callable[[], str]] = {
    "transport-costs": _six_runs,
    "transport-costs-split": _six_runs_split,
    "transport-costs-quiet": _quiet,
    "stack-peaks-quiet": _stacks_quiet,
    "client-rest": _clients,
    "stack-peaks": _stacks_runs,
    "transports-h2c-5rounds": _h2c_5rounds,
    "transports-h2c-coap": _h2c_coap,
    "transports-coap-pairs": _coap_pairs,
    "reference-costs": reference_costs,
}
