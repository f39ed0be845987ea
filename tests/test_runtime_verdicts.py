"""The thesis's own runtime (issue 50): the Node.js matrix beside the Python and Go ones, the
thesis's load-matrix claims judged per runtime and store, and the table of which verdicts hold
on every runtime and which depend on it. Synthetic per-run tables, no stack."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as claims_mod
from ipclab import stats
from ipclab.reproduce import why_not
from ipclab.studies import get_study, part
from ipclab.studies.shafabakhsh import languages, node_reference, performance, runtimes

# req/s at 50 users per style; Node.js orders gRPC first, Python REST first, Go as Node.js
ORDER = {
    "node": {"rest": 900.0, "grpc": 1500.0, "amqp": 500.0},
    "python": {"rest": 1500.0, "grpc": 900.0, "amqp": 500.0},
    "go": {"rest": 900.0, "grpc": 1500.0, "amqp": 500.0},
}


def _runs(order: dict[str, dict[str, float]] = ORDER, reps: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for runtime, rps in order.items():
        for style, base in rps.items():
            for users in (50, 100, 200):
                for r in range(1, reps + 1):
                    x = base * (1 + 0.02 * rng.standard_normal()) * (1 - users / 1000)
                    rows.append({
                        "runtime": runtime, "store": runtimes.MEMORY, "style": style,
                        "stack": f"shop-{style}" + ("" if runtime == "python" else f"-{runtime}"),
                        "users": users, "repetition": r, "think_time_s": 0.0, "rps": x,
                        "mean_ms": users * 1000 / x, "failure_rate": 0.0,
                        "stack_cpu_ms_per_request": 1.0, "other_cpu_percent": 1.0,
                        "steal_percent": 0.0,
                    })  # fmt: skip
    return pd.DataFrame(rows)


def test_the_thesis_claims_are_judged_on_each_runtime_apart_in_families_of_their_own() -> None:
    judged = runtimes.judge(_runs())
    assert list(dict.fromkeys(judged["runtime"])) == ["node", "python", "go"]  # thesis's first
    assert set(judged["family"]) == {runtimes.family(r, "memory") for r in ORDER}
    v = dict(zip(judged["claim_id"], judged["verdict"], strict=True))
    # T01a: gRPC's throughput above REST's at 50 users
    assert v["T01a-node"] == v["T01a-go"] == claims_mod.REPRODUCED
    assert v["T01a-python"] == claims_mod.NOT_REPRODUCED
    # T02a: REST's above AMQP's, on every runtime
    assert {v[f"T02a-{r}"] for r in ORDER} == {claims_mod.REPRODUCED}


def test_the_verdict_table_says_which_verdicts_hold_on_every_runtime() -> None:
    table = runtimes.verdict_table(runtimes.judge(_runs())).set_index("claim_id")
    cols = [c for c in table.columns if c.endswith("_verdict")]
    assert cols == ["node_verdict", "python_verdict", "go_verdict"]
    assert table.loc["T02a", "across_runtimes"] == runtimes.SAME
    assert table.loc["T01a", "across_runtimes"] == runtimes.DIFFERS
    assert table.loc["T01a", "python_against_node"] == "runtime"
    assert table.loc["T01a", "go_against_node"] == "agree"
    assert set(table["store"]) == {"memory"}
    counts = runtimes.verdict_counts(table.reset_index())
    assert counts["claims"].sum() == len(table)
    view = runtimes.verdict_view(table.reset_index()).set_index("claim_id")
    assert list(view.columns)[2:5] == ["Node.js", "Python", "Go"]
    assert view.loc["T01a", "Python"].startswith("not reproduced, ")
    assert view.loc["T01a", "Python against Node.js"] == "runtime"


def test_one_run_per_cell_decides_nothing_on_any_runtime() -> None:
    table = runtimes.verdict_table(runtimes.judge(_runs(reps=1)))
    assert set(table["across_runtimes"]) == {runtimes.NONE_DECIDED}


def test_a_runtime_not_measured_leaves_its_column_and_says_so() -> None:
    only = {k: v for k, v in ORDER.items() if k != "go"}
    table = runtimes.verdict_table(runtimes.judge(_runs(only)))
    assert table["go_verdict"].isna().all()
    assert set(table["across_runtimes"]) == {runtimes.MISSING}


def test_runs_in_a_database_store_are_judged_apart() -> None:
    runs = _runs()
    db = runs[runs["runtime"] != "go"].assign(store="db")
    judged = runtimes.judge(pd.concat([runs, db], ignore_index=True))
    assert "T01a-node-db" in set(judged["claim_id"])
    table = runtimes.verdict_table(judged)
    assert set(table["store"]) == {"memory", "db"}
    mine = table[table["store"] == "db"].set_index("claim_id")
    assert mine.loc["T01a", "across_runtimes"] == runtimes.MISSING  # no Go run in a db


def test_the_part_writes_the_verdict_table_and_figure(tmp_path: Path) -> None:
    runs = _runs(reps=2)
    claims = runtimes.judge(runs)
    by = ("runtime", "store", "style", "users")
    a = runtimes.Analysis(
        profile="quick", runs=runs, cells=stats.cell_summary(runs, by=by),
        relative=runtimes.relative_to_rest(runs), claims=claims,
        verdicts=runtimes.verdict_table(claims), machine=stats.machine_check(runs, by=by),
        sittings=pd.DataFrame(),
    )  # fmt: skip
    node = part("shafabakhsh", "runtimes")
    params = node.parameters(results_dir=tmp_path / "rt", figures_dir=tmp_path / "figures")
    results = node.write(runtimes.declared(a), params)
    written = {p.name for p in (tmp_path / "rt").iterdir()}
    assert {"runtime_verdicts.csv", "runtime_verdict_counts.csv", "claims.csv"} <= written
    assert [f["name"] for f in results.figures] == ["shafabakhsh_runtimes"]
    rel = a.relative[(a.relative["runtime"] == "node") & (a.relative["metric"] == "rps")]
    grpc = rel[(rel["style"] == "grpc") & (rel["users"] == 50)]["ratio"].iloc[0]
    assert grpc == pytest.approx(1500 / 900, rel=0.05)


def test_the_node_matrix_mirrors_the_python_matrix_with_anchors_in_its_sitting() -> None:
    for name in ("quick", "full"):
        py = performance.experiments(name)[0]
        node = runtimes.experiment(name)
        assert node.users == py.users and node.repetitions == py.repetitions
        assert node.warmup_s == py.warmup_s and node.duration_s == py.duration_s
        assert node.order_seed == py.order_seed and node.options == py.options
        assert set(node.stacks) == {f"{s}-node" for s in py.stacks}
    assert runtimes.anchor("quick") is None
    full = runtimes.anchor("full")
    assert full is not None and full.repetitions == 1
    assert set(full.stacks) == {*languages.LANGUAGES["python"], *languages.LANGUAGES["go"]}
    plan = part("shafabakhsh", "runtimes").experiments(
        part("shafabakhsh", "runtimes").parameters(profile="full")
    )
    assert list(plan) == ["python", "go", "node", "anchor"]
    assert plan["python"].directory.name == "shafabakhsh-full-local"


def test_the_node_notebook_says_why_not_when_node_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    nb = next(n for n in get_study("shafabakhsh").notebooks if n.results == "runtimes")
    monkeypatch.setattr("ipclab.gobuild.toolchain_missing", lambda: None)
    monkeypatch.setattr("ipclab.nodebuild.toolchain_missing", lambda: "no node: install")
    assert why_not(nb, "local") == "no node: install"


def test_the_dry_run_counts_the_runs_and_their_machine_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert node_reference.main(["--root", str(tmp_path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "node: 45 of 45 runs" in out and "anchor: 18 of 18 runs" in out
    seconds = node_reference.machine_time([(runtimes.experiment("full", root=tmp_path), 45)])
    assert seconds == 45 * (190 + node_reference.OVERHEAD_S)
    assert node_reference.main(["--root", str(tmp_path), "--dry-run", "--tls"]) == 0
    assert "matrix: 90 of 90 runs" in capsys.readouterr().out
