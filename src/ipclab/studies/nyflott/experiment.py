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

The **Californium fix** experiment (:func:`fix_experiment`, folder ``californium-fix/``
beside the delays) measures the thesis's "the fix doubles throughput" (§4.2.5, claim N33):
the Californium stack at 0 ms with the logging the thesis profiled (``thesis``: every CoAP
message's log text built eagerly, services/java/californium Logging.java) and Californium 3.11
as it is (``fixed``), the two a factor (``variants``, the environment variable
:data:`LOGGING_ENV`) shuffled within each repetition, each cell a fresh stack:
``python -m ipclab.studies.nyflott.experiment --californium-fix``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
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
FIX_STACK = "acmeair-coap-californium"
FIX_EXPERIMENT = "californium-fix"
LOGGING_ENV = "IPCLAB_CALIFORNIUM_LOGGING"  # Logging.java: thesis | fixed
LOGGING_CONFIGS = ("thesis", "fixed")


@dataclass(frozen=True)
class Profile:
    repetitions: int
    ramp_s: float  # users start evenly over this
    warmup_s: float  # discarded, ramp included
    measured_s: float
    adapter_sets: tuple[str, ...] = ("python",)
    profiling: bool = False  # the profiling testbed beside the matrix (profiling.py)


PROFILES = {
    # a first look for `make reproduce`: 3 stacks x 3 repetitions x 6 s on the local backend
    # (3: the fewest runs a claim is judged on, docs/statistics.md; 10 users reach their
    # steady state within the 2 s warm-up, and 4 s measured hold 1,100-2,500 requests a run)
    "quick": Profile(repetitions=3, ramp_s=1, warmup_s=2, measured_s=4),
    # the thesis's 30 s ramp, 2 min warm-up and 10 min window; 5 repetitions (it ran one);
    # both adapter sets, and the profiling testbed (the quick profile's minutes go to the matrix)
    "full": Profile(
        repetitions=5,
        ramp_s=30,
        warmup_s=150,
        measured_s=600,
        adapter_sets=("python", "native"),
        profiling=True,
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
            profile_name=profile_name,
        )
        for d in delays(backend)
    ]


def logging_options(config: str, base: StackOptions | None = None) -> StackOptions:
    """``base`` with the Californium adapters' logging set to ``config`` (thesis or fixed)."""
    if config not in LOGGING_CONFIGS:
        raise ValueError(f"logging config {config!r}; choose {', '.join(LOGGING_CONFIGS)}")
    base = base or StackOptions()
    return replace(base, extra_env={**base.extra_env, LOGGING_ENV: config})


def fix_experiment(
    profile_name: str = "full",
    backend: str = "docker",
    root: Path = DEFAULT_ROOT,
    repetitions: int | None = None,
    measured_s: float | None = None,
) -> Experiment:
    """The Californium fix's cells (claim N33): the Californium stack at 0 ms, thesis and
    fixed logging interleaved (one shuffled order per repetition), the profile's users,
    ramp, warm-up and window; ``repetitions`` and ``measured_s`` override the profile's."""
    p = profile(profile_name)
    reps = p.repetitions if repetitions is None else repetitions
    if reps < 1:
        raise ValueError(f"repetitions {reps}: at least 1 run per cell")
    window = p.measured_s if measured_s is None else measured_s
    return Experiment(
        name=FIX_EXPERIMENT,
        stacks=(FIX_STACK,),
        users=(USERS,),
        repetitions=reps,
        duration_s=p.warmup_s + window,
        warmup_s=p.warmup_s,
        spawn_rate=USERS / p.ramp_s,
        backend=backend,
        variants={c: logging_options(c) for c in LOGGING_CONFIGS},
        order_seed=2017,
        root=directory(profile_name, backend, root),
        profile_name=profile_name,
    )


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


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--californium-fix", action="store_true", required=True,
                    help="the Californium fix's cells (thesis vs fixed logging)")  # fmt: skip
    ap.add_argument("--profile", default="full", choices=sorted(PROFILES))
    ap.add_argument("--backend", default="docker")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--repetitions", type=int)
    ap.add_argument("--measured-s", type=float)
    a = ap.parse_args(argv)
    exp = fix_experiment(a.profile, a.backend, a.root, a.repetitions, a.measured_s)
    run_interleaved([exp], 2017, print)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
