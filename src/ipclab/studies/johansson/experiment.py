"""Johansson 2017's experiments: the profiles, the three experiment matrices and the
serialisation micro-benchmark's rounds, with the deviations from the thesis they make.

Three experiments (:func:`experiments`), each a randomized matrix of run directories that a
rerun reuses (``ipclab.experiments``):

* **thesis**: the thesis's test made sound. One client, a pause after every request (the
  thesis's 1 s), 100 measured requests per interface per data size (5, 25, 50 rows per
  table: tests 1-3), discarded warm-up requests; both stacks run at once and the client
  sends REST and GraphQL requests **interleaved in a random order** (a group run,
  ``ipclab.load.group``), so every run compares the two under the same machine state;
  repetitions with the sizes in a random order. Per request: client time, body bytes and
  the gateway's own time (``Server-Timing``); per run and gateway: CPU per request.
* **sweep**: the same design over 1-200 rows per table for the trend, with the gateways
  calling the four services **sequentially** as a sensitivity factor at some sizes.
* **saturation**: the suite's load profile, one stack per run (quick: one per interface and
  repetition, its cells back to back): closed-loop users without
  think time (50, 100, 200) per interface and data size: throughput and latency at
  saturation, CPU per request.

:mod:`~ipclab.studies.johansson.analysis` turns their runs into the study's results.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ipclab.backends import StackOptions
from ipclab.experiments import Experiment
from ipclab.load.group import GroupLoad
from ipclab.paths import from_repo
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.studies.johansson.stacks import COMPARED

STACKS = tuple(s.name for s in COMPARED)
STYLES = ("rest", "graphql")
USERS_MODULE = "ipclab.studies.johansson.users_interleaved"
ROWS_ENV = "IPCLAB_BUNDLE_ROWS"


@dataclass(frozen=True)
class Interleaved:
    """One client, REST and GraphQL interleaved: ``requests`` measured and ``warmup``
    discarded requests per interface, ``pause_s`` after each, per size of ``rows`` (and of
    ``sequential_rows`` with sequential gateways), ``repetitions`` times."""

    rows: tuple[int, ...]
    requests: int
    warmup: int
    pause_s: float
    repetitions: int
    sequential_rows: tuple[int, ...] = ()

    @property
    def sends(self) -> int:
        """Requests per run, both interfaces, warm-up included."""
        return len(STACKS) * (self.requests + self.warmup)

    @property
    def bound_s(self) -> float:
        """The most a run may take (a slower schedule fails the run)."""
        return self.sends * (self.pause_s + 0.25) + 30.0


@dataclass(frozen=True)
class Saturation:
    users: tuple[int, ...]
    rows: tuple[int, ...]
    duration_s: float  # per run, warm-up included
    warmup_s: float
    repetitions: int
    share_stacks: bool = False  # a stack's loads on one stack (Experiment.share_stacks)


@dataclass(frozen=True)
class Profile:
    thesis: Interleaved
    sweep: Interleaved
    saturation: Saturation
    serialisation_rounds: int  # per process, averaged into one value (the replicate)
    serialisation_seconds: float  # per format, size and round (both directions)
    serialisation_processes: int = 3  # the replicates: each a fresh interpreter


PROFILES = {
    # a first look and CI: seconds per run, one repetition, few sizes (a run is mostly its
    # two stacks' and PostgreSQL clusters' start: 12 requests per interface and a 3.5 s
    # saturation window keep every table, figure and claim, fewer samples in each; a
    # stack's two saturation loads on one stack)
    "quick": Profile(
        thesis=Interleaved((5, 25, 50), requests=12, warmup=2, pause_s=0.05, repetitions=1),
        sweep=Interleaved(
            (1, 50, 200),
            requests=12,
            warmup=2,
            pause_s=0.02,
            repetitions=1,
            sequential_rows=(50,),
        ),  # fmt: skip
        saturation=Saturation(
            (10, 40), (25,), duration_s=5, warmup_s=1.5, repetitions=1, share_stacks=True
        ),
        serialisation_rounds=1,
        serialisation_seconds=0.05,
        serialisation_processes=3,  # about 12 s
    ),
    # the thesis's 100 requests per interface with 10 warm-up requests, 5 repetitions; the
    # pause halved (0.5 s) so that the whole profile fits in about 80 minutes (a deviation,
    # stated in the reference result's README); the sweep and the saturation runs shorter
    "full": Profile(
        thesis=Interleaved((5, 25, 50), requests=100, warmup=10, pause_s=0.5, repetitions=5),
        sweep=Interleaved(
            (1, 5, 10, 25, 50, 100, 200),
            requests=50,
            warmup=5,
            pause_s=0.05,
            repetitions=5,
            sequential_rows=(5, 25, 50),
        ),  # fmt: skip
        saturation=Saturation(
            (50, 100, 200), (5, 25, 50), duration_s=15, warmup_s=3, repetitions=5
        ),
        serialisation_rounds=3,
        serialisation_seconds=0.3,
        serialisation_processes=10,  # about 6 min (a process: 3 rounds of 20 batches, 34 s)
    ),
}

DEVIATIONS = [
    "Python on Linux (asyncio, uvicorn) instead of .NET on Windows Server 2012 R2; the GraphQL "
    "engine is ariadne on graphql-core (chosen by bench/graphql_engines.py), not graphql-dotnet.",
    "Both gateways and the four services run on one shared 2-core machine (local processes) "
    "instead of a 3-node Azure Service Fabric cluster of single-core Standard A0 VMs; "
    "PostgreSQL (a private cluster per stack, seeded identically) instead of Microsoft SQL "
    "databases on a separate VM.",
    "The gateways reach the services over gRPC (the thesis: Service Fabric's built-in "
    "remoting) and call the four concurrently; sequential calls are run as a sensitivity "
    "factor (the thesis does not say which it did).",
    "The client is Locust's FastHttpUser on the same machine (no browser, no Apollo or Axios, "
    "no network between client and gateway); the REST request is GET /api/Databundle/, the "
    "GraphQL request POST /api/graphql with the four-field query.",
    "Test 1's row count is not printed; 5 rows per table are used.",
    "The pause after each request is 0.5 s in the full profile (the thesis: 1 s) and 0.05 s in "
    "the quick one; with requests of 5-30 ms the gateways are idle most of the time either "
    "way. The sweep pauses 0.05 s and sends 50 requests per interface.",
    "Added: discarded warm-up requests, REST and GraphQL interleaved in a random order within "
    "each run (both stacks up at once), 5 repetitions with the sizes in a random order, body "
    "bytes and the gateways' own time (Server-Timing) per request, CPU per request, and a "
    "saturation test (50-200 closed-loop users without think time) the thesis did not run.",
    "Serialisation (Tables 5.1 and 5.2 are rankings from the thesis's literature, no "
    "measurement of its own): the micro-benchmark times Python libraries, and which library "
    "decides a comparison: XML with the standard library's ElementTree, JSON with orjson (a C "
    "library, the gateways' encoder), Thrift binary with thriftpy2 (Cython binary protocol, "
    "struct handling partly in Python), Protocol Buffers with protobuf's upb runtime. Library "
    "speed in Python is not format speed: the JSON-against-Thrift time claims (S03b encoding, "
    "S05a decoding, J16f encode plus decode) are decided by orjson against thriftpy2. Sizes "
    "are those of these encodings (compact JSON, one XML element per field, Thrift's binary "
    "protocol, proto3) of the seeded bundles.",
]


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


def options(rows: int, sequential: bool = False) -> StackOptions:
    """The stacks' knobs for ``rows`` rows per table."""
    return StackOptions(sequential=sequential, extra_env={ROWS_ENV: str(rows)})


def variant(rows: int, sequential: bool = False) -> str:
    return f"{'seq-' if sequential else ''}rows{rows}"


@dataclass(frozen=True)
class Experiments:
    thesis: Experiment
    sweep: Experiment
    saturation: Experiment

    def all(self) -> tuple[Experiment, Experiment, Experiment]:
        return self.thesis, self.sweep, self.saturation


def _interleaved(name: str, p: Interleaved, backend: str, root: Path) -> Experiment:
    variants = {variant(r): options(r) for r in p.rows}
    variants |= {variant(r, True): options(r, True) for r in p.sequential_rows}
    load = GroupLoad(
        USERS_MODULE,
        requests=p.sends,
        env={"IPCLAB_SCHEDULE_REQUESTS": str(p.requests), "IPCLAB_SCHEDULE_WARMUP": str(p.warmup)},
    )
    return Experiment(
        name=name, stacks=STACKS, users=(1,), repetitions=p.repetitions, duration_s=p.bound_s,
        warmup_s=0.0, spawn_rate=1.0, think_time_s=p.pause_s, variants=variants, group=load,
        backend=backend, root=root,
    )  # fmt: skip


def experiments(
    profile_name: str, backend: str = "local", root: Path = DEFAULT_ROOT
) -> Experiments:
    """The three experiments of a profile; their runs go under
    ``<root>/johansson-<profile>-<backend>/{thesis,sweep,saturation}/``."""
    p = profile(profile_name)
    base = from_repo(root) / f"johansson-{profile_name}-{backend}"
    s = p.saturation
    saturation = Experiment(
        name="saturation", stacks=STACKS, users=s.users, repetitions=s.repetitions,
        duration_s=s.duration_s, warmup_s=s.warmup_s,
        variants={variant(r): options(r) for r in s.rows}, backend=backend, root=base,
        share_stacks=s.share_stacks,
    )  # fmt: skip
    return Experiments(
        _interleaved("thesis", p.thesis, backend, base),
        _interleaved("sweep", p.sweep, backend, base),
        saturation,
    )


def run_experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    progress: Callable[[str], None] = print,
) -> dict[str, list[Run]]:
    return {e.name: e.run(progress) for e in experiments(profile_name, backend, root).all()}


def measure_serialisation(
    profile_name: str, progress: Callable[[str], None] | None = print
) -> pd.DataFrame:
    """The serialisation micro-benchmark at the profile's processes and rounds (per process,
    round, format and size; each process a fresh interpreter, the replicate)."""
    from ipclab.studies.johansson import serialisation as ser

    p = profile(profile_name)
    return ser.measure(p.serialisation_processes, p.serialisation_rounds,
                       p.serialisation_seconds, progress=progress)  # fmt: skip
