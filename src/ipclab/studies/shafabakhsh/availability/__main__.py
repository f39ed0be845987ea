"""Make a profile's availability runs, or a subset of them:
``python -m ipclab.studies.shafabakhsh.availability --backend docker --method until_failure
--users 400 --runs 1 --root data/runs/reference`` (method 1's confirmation, docs/availability.md,
"Method 1"). The subset's runs are the full profile's (its run keys, its order); finished
runs are reused, so a killed sitting resumes where it stopped and the full profile later
reuses the subset's runs. ``--dry-run`` lists the runs still to make and their machine time.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ipclab.backends import all_backends
from ipclab.runs import DEFAULT_ROOT, Run
from ipclab.studies.shafabakhsh.availability import plan
from ipclab.studies.shafabakhsh.availability.profiles import (
    METHODS,
    PROFILES,
    STACKS,
    AvailabilityExperiment,
    experiments,
)
from ipclab.studies.shafabakhsh.availability.until_failure import run_table


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m ipclab.studies.shafabakhsh.availability",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    ap.add_argument("--profile", default="full", choices=sorted(PROFILES))
    ap.add_argument("--backend", default="local")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="runs go under ROOT/<name>")
    ap.add_argument("--method", dest="methods", action="append", choices=METHODS,
                    help="a method to run (repeat for several; default: every one)")  # fmt: skip
    ap.add_argument("--stack", dest="stacks", action="append", choices=STACKS,
                    help="a style's stack (repeat; default: every one)")  # fmt: skip
    ap.add_argument("--users", action="append", type=int,
                    help="one of method 1's loads (repeat; default: every one)")  # fmt: skip
    ap.add_argument("--runs", type=int, help="the first RUNS runs of each cell (default: all)")
    ap.add_argument("--dry-run", action="store_true", help="list the runs to make, run none")
    return ap


def describe(exp: AvailabilityExperiment) -> list[str]:
    """What a sitting of ``exp`` will do: its runs, those still to make and their time."""
    selected, todo = exp.order(), exp.todo()
    planned, longest = plan.sitting_hours(exp, todo)
    lines = [
        f"{exp.directory}: {len(selected)} runs selected, {len(selected) - len(todo)} reused, "
        f"{len(todo)} to make: about {planned:.2f} h, at most {longest:.2f} h",
    ]
    return lines + [f"  {j.key}" for j in todo]


def report(runs: Sequence[Run], superseded: Sequence[Run]) -> list[str]:
    """One line per method-1 run of the sitting's cells: its spawn, its time to failure from
    the ramp's end (or to its cap) and Little's law beside what its users saw."""
    t = run_table(runs, superseded)
    out = []
    for r in t.itertuples():
        end = "failed" if r.failed else "censored"
        out.append(
            f"{r.run}: {r.judged.split(':')[0]}; users up {_s(r.users_up_s)}, ramp end "
            f"{_s(r.ramp_end_s)}; {end} at {_s(r.ttf_s)} from the ramp's end "
            f"({int(r.startup)} start-up); N / X_max {_s(r.predicted_response_s)}, "
            f"N / X {_s(r.observed_response_s)}"
        )
    return out


def _s(v: object) -> str:
    try:
        x = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"
    return "-" if x != x else f"{x:.2f} s"


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    if a.backend not in all_backends():
        ap.error(f"unknown backend {a.backend!r}; choose one of {', '.join(all_backends())}")
    try:
        exp = experiments(
            a.profile, a.backend, a.root, tuple(a.methods or METHODS),
            stacks=tuple(a.stacks or STACKS), users=tuple(a.users) if a.users else None,
            repetitions=a.runs,
        )  # fmt: skip
    except ValueError as e:
        ap.error(str(e))
    for line in describe(exp):
        print(line)
    if a.dry_run:
        return 0
    runs = exp.run()
    for line in report(runs.until_failure, runs.superseded):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
