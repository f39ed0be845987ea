"""Every committed reference's deviations name every runtime and adapter set its runs used
(issue 46): a reference whose runs ran on the JVM, on Go or on the native adapters, and
whose deviations do not say so, fails here. The runs say what they used (their manifests:
the stack's declaration, and each role's runtime as the role reported it), so the text
cannot drift from them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ipclab.paths import REPO_ROOT
from ipclab.stacks import all_stacks

REFERENCE = REPO_ROOT / "data" / "runs" / "reference"

#: how a deviation names a runtime or an adapter set (the seeds' own runtimes were Node.js,
#: Java and others: a runtime of ipclab's is a deviation wherever a reference used it)
NAMES = {
    "runtime python": re.compile(r"\bPython\b|\bCPython\b"),
    "runtime go": re.compile(r"\bGo\b"),
    "runtime jvm": re.compile(r"\bJVMs?\b"),  # "Java" alone names the seeds' own services
    "adapters python": re.compile(r"\bpython set\b|\bPython adapters?\b", re.I),
    "adapters native": re.compile(r"\bnative set\b|\bnative adapters?\b", re.I),
}


def used(manifest: dict) -> set[str]:
    """The runtimes and adapter sets one run used, from its manifest (older manifests have
    no declaration: the registry's declaration of their stack)."""
    spec = manifest.get("stack_spec") or {}
    if not spec:
        stacks = all_stacks()
        names = [manifest.get("stack"), *(manifest.get("stacks") or [])]
        spec = next((stacks[n].declaration() for n in names if n in stacks), {})
    out = {f"runtime {spec.get('runtime') or 'python'}"}
    if spec.get("adapters"):
        out.add(f"adapters {spec['adapters']}")
    for role in (manifest.get("runtimes") or {}).values():
        if isinstance(role, dict) and role.get("runtime"):
            out.add(f"runtime {role['runtime']}")
    return out


def references() -> list[Path]:
    return sorted(p.parent.parent for p in REFERENCE.glob("*/results/study.json"))


@pytest.mark.parametrize("folder", references(), ids=lambda p: p.name)
def test_deviations_name_every_runtime_and_adapter_set(folder: Path) -> None:
    deviations = " ".join(json.loads((folder / "results" / "study.json").read_text())
                          .get("deviations") or [])  # fmt: skip
    runs: set[str] = set()
    for manifest in folder.rglob("manifest.json"):
        runs |= used(json.loads(manifest.read_text()))
    unnamed = sorted(u for u in runs if u in NAMES and not NAMES[u].search(deviations))
    assert not unnamed, f"{folder.name}: runs used {unnamed}, which no deviation names"


def test_the_check_sees_what_runs_used() -> None:
    """The check is not vacuous: the Nyfløtt reference's Californium runs used the JVM and
    the native adapters, and Buono's JVM runs the JVM."""
    manifests = (REFERENCE / "nyflott-full-docker").rglob("manifest.json")
    nyflott = set().union(*(used(json.loads(m.read_text())) for m in manifests))
    assert {"runtime jvm", "adapters native", "adapters python"} <= nyflott
    assert "runtime go" in used({"stack": "shop-grpc-go"})
    assert not NAMES["runtime jvm"].search("CoAP has no native variant (no Californium).")
