"""The committed references' Shafabakhsh analyses, each made once per test session:
tests/test_reference_runs.py and tests/test_shafabakhsh_reference.py check the same
analyses of the same committed runs (one reads their counts and claims, the other the
READMEs written from them), none changes one, and each takes seconds to tens of seconds."""

from __future__ import annotations

from functools import cache

from ipclab.experiments import load_runs
from ipclab.paths import from_repo
from ipclab.runs import Run
from ipclab.studies.shafabakhsh import languages, performance, reference

REFERENCE = from_repo("data/runs/reference")


@cache
def runs(folder: str) -> tuple[Run, ...]:
    """The complete runs of the committed reference ``folder``."""
    return tuple(load_runs(REFERENCE / folder))


@cache
def shafabakhsh(backend: str) -> performance.Analysis:
    """The matrix on ``backend`` (full profile), with the think-time runs on local."""
    think = list(runs("shafabakhsh-think-full-local")) if backend == "local" else []
    return performance.analyse(list(runs(f"shafabakhsh-full-{backend}")), think, "full")


@cache
def shafabakhsh_languages() -> languages.Analysis:
    return reference.analyse_languages(REFERENCE)
