"""The Node.js references as one command each (issue 50): the Node.js matrix with its anchors
(notebook 08's plan, ``runtimes``) and, with ``--tls``, the Node.js shop in the clear and
with HTTPS to the gateway (notebook 07's plan with ``runtime="node"``); ``--dry-run`` lists
the runs still to make and their machine time. Then ``python -m
ipclab.studies.shafabakhsh.reference`` writes the references' results (docs/node.md).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ipclab.experiments import Experiment
from ipclab.protocol import Parameters
from ipclab.runs import DEFAULT_ROOT
from ipclab.studies.shafabakhsh.protocol import Encryption, Runtimes
from ipclab.studies.shafabakhsh.runtimes import PROFILES

#: a run's wall time beyond its window (stack start and stop, the recorder's flush): the
#: committed full references' start-to-start gaps are 1-5 s; 15 s errs long
OVERHEAD_S = 15.0


def machine_time(experiments: Sequence[tuple[Experiment, int]]) -> float:
    """The machine time in seconds of ``(experiment, runs to make)`` pairs (window plus
    :data:`OVERHEAD_S` each)."""
    return sum(n * (e.duration_s + OVERHEAD_S) for e, n in experiments)


def main(argv: Sequence[str] | None = None) -> int:
    """``--dry-run``: the runs the Node.js reference (or with ``--tls``, its plain-vs-edge
    sitting) still needs and their machine time; without it, make them."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=tuple(PROFILES), default="full")
    ap.add_argument("--backend", default="local")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--tls", action="store_true", help="the Node.js TLS sitting (plain, edge)")
    ap.add_argument("--dry-run", action="store_true", help="list what is to run, run nothing")
    a = ap.parse_args(argv)
    params = Parameters(a.profile, a.backend, a.root,
                        options={"runtime": "node"} if a.tls else {})  # fmt: skip
    part = Encryption("tls", "TLS") if a.tls else Runtimes("runtimes", "runtimes")
    plan = part.experiments(params)
    pending = (
        part.pending(plan)
        if isinstance(part, Runtimes)
        else {n: e.pending() for n, e in plan.items()}
    )
    for name, e in plan.items():
        print(f"{name}: {len(pending[name])} of {len(e.cells())} runs to make in {e.directory}")
    n = sum(len(c) for c in pending.values())
    seconds = machine_time([(plan[k], len(c)) for k, c in pending.items()])
    print(f"{n} runs, about {seconds / 3600:.1f} h of machine time "
          f"({OVERHEAD_S:g} s each beyond its window)")  # fmt: skip
    if not a.dry_run and n:
        part.run(plan)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
