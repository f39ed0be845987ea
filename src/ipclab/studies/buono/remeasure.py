"""Measure Buono's JVM runs of a profile again, beside its Python runs made already:
``python -m ipclab.studies.buono.remeasure --root data/runs/reference [--dry-run]``.

The JVM's runs are the procedure on the JVM (``procedure-jvm/``: gzip x cache with Jackson,
the profile's repetitions) and the JVM's memory cells (``memory/*-jackson-*``: JSON and
Protobuf at each count under each heap policy, the profile's repetitions), run as
:func:`ipclab.studies.buono.experiment.run_jvm` runs them: a run on disk with the same
parameters (the JVM's flags among them) made by the current measuring code is reused, any
other is measured again in its own directory. ``--dry-run`` lists the runs to make and the
machine time they take, from the per-run times of the committed reference's JVM runs.
Afterwards, ``python -m ipclab.studies.buono.reference`` rebuilds the tables, figures and
README from the runs; with ``--backend kubernetes`` (the runs in pods with the 400 MB limit,
``buono-full-kubernetes``), ``python -m ipclab.studies.buono.orchestrators`` puts them
beside compose's.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ipclab.studies.buono import experiment, memory

#: seconds per run, stack start and stop included: the mean of the committed reference's JVM
#: runs (buono-full-docker, 2026-11-27, a quiet 2-core VM: 28 procedure runs 20.9 s, 32
#: memory runs 9.1 s), rounded up; a loaded machine takes up to 2-3 times as long
SECONDS_PER_RUN = {"procedure": 25.0, "memory": 12.0}
#: seconds a run takes beyond that on a backend whose stacks start and stop more slowly: in
#: pods (namespace, Services, Deployments, every pod ready; the namespace's deletion waited
#: for) a JVM memory cell (Protobuf, 300,000 users) took 15.9 s against the 9.1 s of compose's
#: JVM memory runs on average (2026-11-29, two nodes, the images imported), rounded up
EXTRA_SECONDS_PER_RUN = {"kubernetes": 10.0}
#: what rebuilds the tables from the runs afterwards: the reference's (compose), or the
#: Kubernetes runs beside compose's (``orchestrators``: the kubernetes folder holds the
#: JVM's runs alone)
REBUILD = {
    "docker": "ipclab.studies.buono.reference",
    "kubernetes": "ipclab.studies.buono.orchestrators",
}


def todo(e: experiment.Experiments) -> dict[str, list[str]]:
    """The JVM's runs of ``e`` still to make (not reusable): procedure and memory."""
    if e.procedure_jvm is None:
        raise ValueError("this profile runs no JVM cells (the full profile does)")
    plan = replace(e.memory_plan, runtimes=("jvm",))
    cells = memory.pending(plan, e.memory_root, backend=e.backend)
    return {
        "procedure": [c.key for c in e.procedure_jvm.pending()],
        "memory": [f"{cell.key}-r{rep}" for rep, cell in cells],
    }


def minutes(runs: dict[str, list[str]], backend: str = "docker") -> float:
    """The machine time ``runs`` take on a quiet machine (:data:`SECONDS_PER_RUN`, and
    :data:`EXTRA_SECONDS_PER_RUN` on ``backend``)."""
    extra = EXTRA_SECONDS_PER_RUN.get(backend, 0.0)
    return sum(len(v) * (SECONDS_PER_RUN[k] + extra) for k, v in runs.items()) / 60


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    p.add_argument("--root", type=Path, default=Path("data/runs/reference"))
    p.add_argument("--profile", default="full")
    p.add_argument("--backend", default="docker")
    p.add_argument("--dry-run", action="store_true", help="list the runs to make, run none")
    a = p.parse_args(argv)
    e = experiment.experiments(a.profile, a.backend, a.root)
    runs = todo(e)
    print(f"{e.memory_root.parent}: {len(runs['procedure'])} procedure runs and "
          f"{len(runs['memory'])} memory runs on the JVM to make, about "
          f"{minutes(runs, a.backend):.0f} min on a quiet machine")  # fmt: skip
    if a.dry_run:
        for kind, names in runs.items():
            print("\n".join(f"  {kind}: {n}" for n in names))
        return 0
    started = time.monotonic()
    experiment.run_jvm(e)
    rebuild = REBUILD.get(a.backend, REBUILD["docker"])
    print(f"done in {(time.monotonic() - started) / 60:.0f} min; now rebuild: "
          f"python -m {rebuild}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
