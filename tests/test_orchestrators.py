"""Kubernetes beside compose (ipclab.studies.shafabakhsh.orchestrators, the part
``protocol.Orchestrators``): the part's run interleaves the orchestrators
(``run_interleaved``), and the tables find an orchestrator's cost and a changed comparison
of the styles when there is one, and none when there is none. Synthetic per-run tables, no
stack; the committed reference's README is what its runs give."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab.experiments import Cell, Experiment, interleaved, load_runs
from ipclab.paths import from_repo
from ipclab.studies import part
from ipclab.studies.shafabakhsh import orchestrators, ratios

REFERENCE = from_repo("data/runs/reference")


def _runs(kube_cost: dict[str, float], reps: int = 5) -> pd.DataFrame:
    """Per-run rows on both orchestrators: Kubernetes divides a style's throughput by
    ``kube_cost[style]`` and multiplies its latency and CPU by it."""
    rng = np.random.default_rng(3)
    rows = []
    for style, base in (("rest", 50.0), ("grpc", 80.0), ("amqp", 130.0)):
        for backend in orchestrators.BACKENDS:
            k = kube_cost[style] if backend == "kubernetes" else 1.0
            for r in range(1, reps + 1):
                noise = float(np.exp(rng.normal(0, 0.02)))
                rows.append({
                    "style": style, "users": 50, "backend": backend, "repetition": r,
                    "rps": 50_000 / base / k * noise, "mean_ms": base * k * noise,
                    "stack_cpu_ms_per_request": base / 25 * k * noise, "failures": 0,
                    "other_cpu_percent": 4.0, "steal_percent": 0.0,
                    "started_at": f"2026-11-28T00:{10 + r:02d}:00Z",
                })  # fmt: skip
    return pd.DataFrame(rows)


def test_each_repetition_runs_every_style_on_both_orchestrators_in_a_shuffled_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The part's run is ``run_interleaved`` over one experiment per orchestrator: every
    repetition a shuffled block of each style on each, the runs handed back per
    orchestrator."""
    k8s = part("shafabakhsh", "orchestrators")
    params = k8s.parameters(profile="full", runs_root=tmp_path)
    plan = k8s.experiments(params)
    assert list(plan) == list(orchestrators.BACKENDS)
    made: list[tuple[str, Cell]] = []

    def run_cell(self: Experiment, cell: Cell, *_: object) -> tuple[str, Cell]:
        made.append((self.name, cell))
        return (self.name, cell)

    monkeypatch.setattr(Experiment, "run_cell", run_cell)
    runs = k8s.run(plan)
    order = [(e.name, c) for e, c in interleaved(list(plan.values()), orchestrators.ORDER_SEED)]
    assert made == order
    assert {name: [c for n, c in order if n == name] for name in plan} == {
        name: [c for _, c in got] for name, got in runs.items()
    }
    assert len(order) == 3 * 2 * 5
    blocks = [order[i : i + 6] for i in range(0, len(order), 6)]
    for rep, block in enumerate(blocks, 1):
        assert {c.repetition for _, c in block} == {rep}
        assert {(b, c.stack) for b, c in block} == {
            (b, s) for b in orchestrators.BACKENDS for s in ("shop-rest", "shop-grpc", "shop-amqp")
        }
    assert len({tuple(b for b, _ in block) for block in blocks}) > 1  # not one fixed order
    assert {e.directory for e in plan.values()} == {
        tmp_path / orchestrators.FOLDER / b for b in orchestrators.BACKENDS
    }
    for e in plan.values():  # what the sitting measured: the same cells, the same load
        assert (e.repetitions, e.duration_s, e.warmup_s, tuple(e.users)) == (5, 70.0, 10.0, (50,))
        assert (e.backend, e.order_seed, e.profile_name) == (e.name, 2020, "full")


def test_an_orchestrator_cost_and_a_changed_comparison_are_found() -> None:
    runs = _runs({"rest": 1.5, "grpc": 1.1, "amqp": 1.1})
    table = ratios.ratio_table(runs, orchestrators.METRICS, "kubernetes", "docker", "backend")
    rest = table[(table["style"] == "rest") & (table["metric"] == "rps")].iloc[0]
    assert rest["kubernetes_over_docker"] == pytest.approx(1 / 1.5, rel=0.05)
    assert rest["high"] < 1  # a loss the interval shows
    styles = orchestrators.style_table(runs).set_index(["style", "metric"])
    grpc = styles.loc[("grpc", "rps")]
    # gRPC / REST is 0.625 on compose, 0.625 * 1.5 / 1.1 on Kubernetes: the comparison moves
    assert grpc["docker"] == pytest.approx(50 / 80, rel=0.05)
    assert grpc["interaction"] == pytest.approx(1.5 / 1.1, rel=0.05) and grpc["low"] > 1


def test_no_cost_and_no_change_leave_every_interval_around_one() -> None:
    runs = _runs({"rest": 1.0, "grpc": 1.0, "amqp": 1.0})
    table = ratios.ratio_table(runs, orchestrators.METRICS, "kubernetes", "docker", "backend")
    assert ((table["low"] < 1) & (table["high"] > 1)).all(), table
    styles = orchestrators.style_table(runs)
    assert ((styles["low"] < 1) & (styles["high"] > 1)).all(), styles


def test_the_readme_blocks_count_what_the_tables_hold() -> None:
    runs = _runs({"rest": 1.3, "grpc": 1.2, "amqp": 1.0})
    a = orchestrators.Analysis(
        runs=runs,
        ratios=ratios.ratio_table(runs, orchestrators.METRICS, "kubernetes", "docker", "backend"),
        styles=orchestrators.style_table(runs),
        machine=pd.DataFrame(),
    )
    means = orchestrators.means_markdown(a.runs)
    assert len(re.findall(r"^\| (REST|gRPC|AMQP) \| (docker|kubernetes) \| 5 \|", means, re.M)) == 6
    rows = ratios.ratios_markdown(a.ratios, orchestrators.METRICS, orchestrators.RATIO)
    assert len(rows.splitlines()) == 2 + 3  # head, rule, a row per style
    assert len(orchestrators.styles_markdown(a.styles).splitlines()) == 2 + 2 * 3


def _block(readme: Path, name: str) -> str:
    text = readme.read_text()
    m = re.search(rf"<!-- generated: {name} -->\n(.*?)\n?<!-- /generated -->", text, re.S)
    assert m, f"{readme}: no block {name}"
    return m.group(1).rstrip()


@pytest.mark.skipif(
    not (REFERENCE / orchestrators.FOLDER).is_dir(), reason="no committed reference"
)
def test_the_committed_reference_is_complete_and_its_readme_is_what_its_runs_give() -> None:
    exps = orchestrators.experiments("full", REFERENCE)
    # the part's full plan is the sitting's: every committed run a cell of it
    assert all(e.pending(current_only=False) == [] for e in exps.values())
    a = orchestrators.analyse({b: load_runs(e.directory) for b, e in exps.items()}, "full")
    assert len(a.runs) == 30 and (a.runs["failures"] == 0).all()
    assert sorted(a.runs.groupby(["backend", "style"]).size().unique()) == [5]
    readme = REFERENCE / orchestrators.FOLDER / "README.md"
    for name, text in orchestrators.readme_blocks(a).items():
        assert _block(readme, name) == text.rstrip(), name


def test_the_deviations_state_a_profile_other_than_the_sittings() -> None:
    k8s = part("shafabakhsh", "orchestrators")
    full = k8s.deviations(k8s.parameters(profile="full"))
    assert full == orchestrators.DEVIATIONS
    quick = k8s.deviations(k8s.parameters(profile="quick"))
    assert quick[:-1] == full[:-1] and "3 repetitions of 6 s" in quick[-1]
    with pytest.raises(ValueError, match="unknown profile"):
        k8s.experiments(k8s.parameters(profile="huge"))
