"""Buono on Kubernetes beside compose (issue 51, must-show 4): the tables that put the JVM's
memory and procedure runs of both orchestrators side by side, on made-up rows (the
committed compose reference and a cluster's runs: ``python -m
ipclab.studies.buono.orchestrators``)."""

from __future__ import annotations

import pandas as pd

from ipclab.studies.buono import orchestrators


def _memory_row(backend: str, run: int, killed: bool) -> dict[str, object]:
    return {
        "run": f"{backend}-{run}", "fmt": "json", "structure": "flat", "count": 300_000,
        "heap": "limit", "backend": backend, "limit_mb": 400, "traced": False,
        "completed": not killed, "kernel_killed": killed, "heap_exhausted": False,
        "peak_usage_mb": 390.0 + run, "cgroup_peak_mb": float("nan"),
        "heap_committed_mb": 380.0, "elapsed_s": 3.0,
    }  # fmt: skip


def test_the_memory_cells_outcomes_on_each_orchestrator() -> None:
    rows = [_memory_row("docker", i, True) for i in range(3)]
    rows += [_memory_row("kubernetes", i, i > 0) for i in range(3)]
    out = orchestrators.memory_beside(pd.DataFrame(rows)).set_index("backend")
    assert out.loc["docker", ["runs", "completed", "kernel_killed"]].tolist() == [3, 0, 3]
    assert out.loc["kubernetes", ["runs", "completed", "kernel_killed"]].tolist() == [3, 1, 2]
    assert out.loc["kubernetes", "peak_usage_mb"] == 391.0
    assert orchestrators.memory_beside(pd.DataFrame()).empty


def test_the_procedures_times_kubernetes_over_compose() -> None:
    cell = {"gzip": False, "cache": False, "structure": "flat", "method": "GET",
            "count": 1000, "fmt": "json"}  # fmt: skip
    rows = [{**cell, "backend": "docker", "response_ms": v} for v in (4.0, 4.2, 3.8)]
    rows += [{**cell, "backend": "kubernetes", "response_ms": v} for v in (5.0, 5.2, 4.8)]
    rows += [{**cell, "fmt": "protobuf", "backend": "docker", "response_ms": 3.0}]
    out = orchestrators.procedure_beside(pd.DataFrame(rows)).set_index("fmt")
    assert out.loc["json", "kubernetes_over_docker"] == 1.25
    assert out.loc["json", "interval"].startswith("1.250 [")
    assert out.loc["protobuf", "kubernetes_runs"] == 0 and out.loc["protobuf", "interval"] == ""


def test_the_claims_verdicts_on_each_orchestrator_agree_or_not() -> None:
    def verdicts(*v: str) -> pd.DataFrame:
        return pd.DataFrame({"claim_id": ["B1", "B2"], "comparison": ["a", "b"], "verdict": v})

    both = orchestrators.claims_beside(
        {"docker": verdicts("supported", "refuted"), "kubernetes": verdicts("supported", "x")}
    )
    assert both["agree"].tolist() == [True, False]
    assert list(both.columns) == ["claim_id", "comparison", "docker", "kubernetes", "agree"]
    assert orchestrators.claims_beside({"docker": verdicts("a", "b")}).empty
