"""The Nyfløtt 2017 load matrix: protocols x adapter sets x added delays x repetitions,
interleaved.

10 closed-loop users (the thesis's), each iteration the AcmeAir driver's mix
(``users.py``). The stacks are the three protocols through the Python adapters and, in
the full profile, the three through the thesis's own adapters (nginx, nghttpx,
Californium: the ``native`` set), where those stacks are registered. Every (stack, delay) cell of a
repetition runs in one shuffled order (``experiments.run_interleaved``), so no protocol,
adapter set or delay gets one time of the session. The delay is added per host by the
docker backend (each host's packets held on their way in by the NFQUEUE delayer, so every
hop between two hosts is delayed once: docs/docker.md; the thesis used netem on each VM's
egress); the local backend cannot delay, so there the matrix has delay 0 only. Runs go
under ``<root>/nyflott-<profile>-<backend>/delay<d>ms/``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ipclab.backends import StackOptions
from ipclab.experiments import Experiment, run_interleaved
from ipclab.paths import from_repo
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.studies.nyflott.stacks import ACMEAIR

STACKS = tuple(s.name for s in ACMEAIR if s.adapters == "python")  # the three protocols
NATIVE_STACKS = tuple(s.name for s in ACMEAIR if s.adapters == "native")  # + Californium
USERS = 10
DELAYS_MS = (0, 2, 5)
DELAYING_BACKENDS = ("docker",)


@dataclass(frozen=True)
class Profile:
    repetitions: int
    ramp_s: float  # users start evenly over this
    warmup_s: float  # discarded, ramp included
    measured_s: float
    adapter_sets: tuple[str, ...] = ("python",)


PROFILES = {
    # a first look for `make reproduce`: 3 stacks x 3 repetitions x 6 s on the local backend
    # (3: the fewest runs a claim is judged on, docs/statistics.md; 10 users reach their
    # steady state within the 2 s warm-up, and 4 s measured hold 1,100-2,500 requests a run)
    "quick": Profile(repetitions=3, ramp_s=1, warmup_s=2, measured_s=4),
    # the thesis's 30 s ramp, 2 min warm-up and 10 min window; 5 repetitions (it ran one);
    # both adapter sets
    "full": Profile(
        repetitions=5, ramp_s=30, warmup_s=150, measured_s=600, adapter_sets=("python", "native")
    ),
}


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


def delays(backend: str) -> tuple[int, ...]:
    return DELAYS_MS if backend in DELAYING_BACKENDS else (0,)


def stacks(adapter_sets: tuple[str, ...]) -> tuple[str, ...]:
    """The stacks of the adapter sets: the python set's three protocols, the native set's
    three (nginx, nghttpx, Californium)."""
    return tuple(s.name for s in ACMEAIR if s.adapters in adapter_sets)


def directory(profile_name: str, backend: str, root: Path = DEFAULT_ROOT) -> Path:
    """Where a profile's experiments put their runs (one folder per delay below it)."""
    return from_repo(root) / f"nyflott-{profile_name}-{backend}"


def experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    options: StackOptions | None = None,
    measured_s: float | None = None,
    warmup_s: float | None = None,
    repetitions: int | None = None,
) -> list[Experiment]:
    """One experiment per delay (delay is a stack option), all of the same profile;
    ``measured_s`` and ``warmup_s`` shorten the measured window and the warm-up (the ramp
    included), ``repetitions`` sets the runs per cell: deviations the results state."""
    p = profile(profile_name)
    if measured_s is not None:
        p = replace(p, measured_s=measured_s)
    if repetitions is not None:
        if repetitions < 1:
            raise ValueError(f"repetitions {repetitions}: at least 1 run per cell")
        p = replace(p, repetitions=repetitions)
    if warmup_s is not None:
        if warmup_s < p.ramp_s:
            raise ValueError(f"warm-up {warmup_s:g} s is shorter than the {p.ramp_s:g} s ramp")
        p = replace(p, warmup_s=warmup_s)
    base = options or StackOptions()
    return [
        Experiment(
            name=f"delay{d}ms",
            stacks=stacks(p.adapter_sets),
            users=(USERS,),
            repetitions=p.repetitions,
            duration_s=p.warmup_s + p.measured_s,
            warmup_s=p.warmup_s,
            spawn_rate=USERS / p.ramp_s,
            backend=backend,
            options=replace(base, delay_ms=float(d)),
            order_seed=2017,
            root=directory(profile_name, backend, root),
        )
        for d in delays(backend)
    ]


def run_experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    progress: Callable[[str], None] = print,
    measured_s: float | None = None,
    warmup_s: float | None = None,
) -> list[Run]:
    chosen = experiments(profile_name, backend, root, measured_s=measured_s, warmup_s=warmup_s)
    return run_interleaved(chosen, 2017, progress)
