"""Every registered study implements the study protocol (``ipclab.protocol``) for every
notebook and notebook section it declares, and the notebooks reach the study through that
protocol only: its parameters, one call per stage of each part, and displays of what the
stages returned.

Checked against the registry: a study added later is checked with no edit here.
"""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import pytest

from ipclab.protocol import COMMON, EXTRA, STAGES, Parameters, StudyPart, implements
from ipclab.studies import Notebook, Section, Study, all_studies, part

PARTS = [(s, nb) for s in all_studies().values() for nb in s.notebooks]
SECTIONS = [(s, sec) for s in all_studies().values() for sec in s.sections]
# what a notebook may import: the registry's ``part``, the claims' tally, and displays
ALLOWED_IMPORTS = {"ipclab.studies": {"part"}, "ipclab.claims": {"tally"}}
DISPLAY_MODULES = ("pandas", "IPython", "pathlib", "matplotlib")


def _id(p: tuple[Study, Notebook]) -> str:
    return f"{p[0].name}:{p[1].results}"


@pytest.mark.parametrize("study_nb", PARTS, ids=[_id(p) for p in PARTS])
def test_every_part_of_every_study_implements_the_whole_protocol(
    study_nb: tuple[Study, Notebook],
) -> None:
    study, nb = study_nb
    made = part(study.name, nb.results)
    assert isinstance(made, StudyPart)
    assert implements(made) == []
    # the results folder and the title come from the declaration
    assert made.results == nb.results
    assert made.title == (nb.title or study.title)
    # every stage is the part's own, not the base class's abstract one
    for stage in STAGES:
        assert not getattr(getattr(made, stage), "__isabstractmethod__", False), stage
    # the notebook's own options are the part's declared ones, with the same defaults, and
    # a switch per section it shows, off by default
    defaults = _parameter_defaults(nb.path)
    switches = {sec.results for sec in study.sections if sec.notebook == nb.file}
    assert set(defaults) == {*COMMON, *made.OPTIONS, *switches}
    assert all(defaults.pop(name) is False for name in switches)
    for name, default in made.OPTIONS.items():
        assert defaults[name] == default, name
    params = made.parameters(**{k: v for k, v in defaults.items()})
    assert isinstance(params, Parameters)
    assert params.results_dir == Path(defaults["results_dir"])
    assert Path(defaults["results_dir"]).name == nb.results


@pytest.mark.parametrize(
    "study_sec", SECTIONS, ids=[f"{s.name}:{sec.results}" for s, sec in SECTIONS]
)
def test_every_section_is_a_whole_part_shown_by_a_notebook_of_its_study(
    study_sec: tuple[Study, Section],
) -> None:
    study, sec = study_sec
    made = part(study.name, sec.results)
    assert isinstance(made, StudyPart) and implements(made) == []
    assert (made.results, made.title) == (sec.results, sec.title or study.title)
    assert sec.notebook in {nb.file for nb in study.notebooks}
    assert not made.OPTIONS  # the notebook's parameters are its own part's
    assert sec.results not in {nb.results for nb in study.notebooks}


def test_a_part_refuses_an_option_it_does_not_declare() -> None:
    study, nb = PARTS[0]
    with pytest.raises(TypeError, match="unknown options"):
        part(study.name, nb.results).parameters(no_such_option=1)


def test_a_part_missing_a_stage_is_reported() -> None:
    class Partial(StudyPart):
        def experiments(self, params: Parameters) -> None:
            return None

    assert inspect.isabstract(Partial)
    missing = implements(object())
    assert "a StudyPart" in missing and set(STAGES) <= set(missing)


def _parameter_defaults(path: Path) -> dict[str, object]:
    """The names and literal defaults of the notebook's ``parameters`` cell."""
    cells = _code_cells(path)
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    out: dict[str, object] = {}
    for node in ast.parse("".join(tagged[0]["source"])).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = ast.literal_eval(node.value)
    return out


def _code_cells(path: Path) -> list[dict[str, object]]:
    doc = json.loads(path.read_text())
    return [c for c in doc["cells"] if c["cell_type"] == "code"]


def _tree(path: Path) -> ast.Module:
    cells = [c for c in _code_cells(path) if "parameters" not in c["metadata"].get("tags", [])]
    return ast.parse("\n".join("".join(c["source"]) for c in cells))  # type: ignore[arg-type]


def protocol_violations(path: Path, parts: int = 1) -> list[str]:
    """Where a notebook reaches its study other than through the protocol: an import of a
    study's module, a call on a part other than a stage, a stage of a part called more than
    once or not at all; ``parts``: the part objects it holds (its own and its sections')."""
    tree = _tree(path)
    bad: list[str] = []
    part_names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad += [f"import {a.name}" for a in node.names if a.name.startswith("ipclab")]
        elif isinstance(node, ast.ImportFrom) and node.module:
            allowed = ALLOWED_IMPORTS.get(node.module)
            if node.module.startswith(DISPLAY_MODULES):
                continue
            names = {a.name for a in node.names}
            if allowed is None or not names <= allowed:
                bad.append(f"from {node.module} import {', '.join(sorted(names))}")
        elif isinstance(node, ast.Assign) and _is_call_of(node.value, "part"):
            part_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    if len(part_names) != parts:
        return [*bad, f"{parts} part object(s) expected, found {sorted(part_names)}"]
    for name in sorted(part_names):
        calls = [
            n.func.attr
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)
            and n.func.value.id == name
        ]
        bad += [f"{c}() is no protocol stage" for c in calls if c not in (*STAGES, *EXTRA)]
        bad += [f"{s}() called {calls.count(s)} times" for s in STAGES if calls.count(s) != 1]
        bad += [f"{s}() called {calls.count(s)} times" for s in EXTRA if calls.count(s) > 1]
    return bad


def _is_call_of(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


@pytest.mark.parametrize("study_nb", PARTS, ids=[_id(p) for p in PARTS])
def test_the_notebook_calls_only_the_protocol_stages(study_nb: tuple[Study, Notebook]) -> None:
    study, nb = study_nb
    shown = sum(sec.notebook == nb.file for sec in study.sections)
    assert protocol_violations(nb.path, 1 + shown) == []


def test_the_notebook_check_catches_a_study_module_call(tmp_path: Path) -> None:
    """The check above is not vacuous: a notebook that calls a study's module directly, or
    a stage twice, fails it."""
    source = (
        "from ipclab.studies import part\nfrom ipclab.studies.x import analysis\n"
        "study = part('x')\nparams = study.parameters()\nplan = study.experiments(params)\n"
        "study.describe(plan)\nstudy.deviations(params)\nruns = study.run(plan)\n"
        "runs = study.run(plan)\na = analysis.analyse(runs)\nstudy.analyse(runs, params)\n"
        "study.write(a, params)\nstudy.summary(a)\n"
    )
    doc = {"cells": [{"cell_type": "code", "metadata": {}, "source": [source]}]}
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc))
    found = protocol_violations(tmp_path / "nb.ipynb")
    assert "from ipclab.studies.x import analysis" in found
    assert "run() called 2 times" in found
    assert "summary() is no protocol stage" in found
