"""The TLS factor's analysis (ipclab.studies.shafabakhsh.encryption): TLS / plain per style,
the thesis's remark judged as an interaction that can come out either way, and the results
the notebook and the reference write. Synthetic per-run tables, no stack."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as claims_mod
from ipclab import stats
from ipclab.results import StudyResults
from ipclab.studies import part
from ipclab.studies.shafabakhsh import encryption


def _runs(
    rest_tls_cost: float,
    grpc_tls_cost: float,
    reps: int = 5,
    edge: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Per-run rows of both variants: TLS multiplies REST's latency and CPU by
    ``rest_tls_cost`` and gRPC's by ``grpc_tls_cost`` (throughput divided by it); with
    ``edge`` (REST's cost, gRPC's) the edge level's runs too."""
    rng = np.random.default_rng(7)
    rows = []
    edges = edge or (1.0, 1.0)
    for style, base, cost, at_edge in (
        ("rest", 100.0, rest_tls_cost, edges[0]),
        ("grpc", 140.0, grpc_tls_cost, edges[1]),
        ("amqp", 200.0, 1.1, 1.05),
    ):
        levels = [("plain", 1.0), ("tls", cost), *([("edge", at_edge)] if edge else [])]
        for users in (50, 100):
            for variant, k in levels:
                for r in range(reps):
                    noise = float(np.exp(rng.normal(0, 0.02)))
                    rows.append({
                        "style": style, "users": users, "variant": variant, "repetition": r,
                        "rps": 1000 / base / k * noise * users,
                        "mean_ms": base * k * noise,
                        "stack_cpu_ms_per_request": base / 20 * k * noise,
                        "other_cpu_percent": 3.0, "steal_percent": 0.0,
                    })  # fmt: skip
    return pd.DataFrame(rows)


def _verdicts(runs: pd.DataFrame) -> dict[str, str]:
    users = tuple(sorted(runs["users"].unique()))
    judged = claims_mod.evaluate_claims(
        encryption.claims_table(runs), encryption.claims(users), family=encryption.FAMILY
    )
    return dict(zip(judged["claim_id"], judged["verdict"], strict=True))


def test_tls_over_plain_per_style_load_and_metric() -> None:
    ratios = encryption.ratio_table(_runs(1.3, 1.05))
    rest = ratios[(ratios["style"] == "rest") & (ratios["metric"] == "mean_ms")]
    assert len(rest) == 2 and rest["tls_over_plain"].to_numpy() == pytest.approx(1.3, rel=0.03)
    assert (rest["low"] < rest["tls_over_plain"]).all() and (rest["runs"] == 5).all()
    rps = ratios[(ratios["style"] == "grpc") & (ratios["metric"] == "rps")]
    assert rps["tls_over_plain"].to_numpy() == pytest.approx(1 / 1.05, rel=0.03)


def test_the_remark_can_come_out_either_way() -> None:
    more = _verdicts(_runs(1.3, 1.05))  # TLS costs REST more: the remark holds
    assert set(more.values()) == {claims_mod.REPRODUCED}, more
    less = _verdicts(_runs(1.05, 1.3))  # it costs gRPC more: the remark fails
    assert set(less.values()) == {claims_mod.NOT_REPRODUCED}, less


def test_the_notebook_part_writes_its_tables_claims_and_figure(tmp_path: Path) -> None:
    runs = _runs(1.3, 1.05)
    users = tuple(sorted(runs["users"].unique()))
    a = encryption.Analysis(
        profile="full",
        runs=runs,
        ratios=encryption.ratio_table(runs),
        claims=claims_mod.evaluate_claims(
            encryption.claims_table(runs), encryption.claims(users), family=encryption.FAMILY
        ),
        machine=stats.machine_check(runs, by=("variant", "style", "users")),
    )
    tls = part("shafabakhsh", "tls")
    params = tls.parameters(results_dir=tmp_path / "tls", figures_dir=tmp_path / "figures")
    results = tls.write(encryption.declared(a), params)
    assert isinstance(results, StudyResults)
    written = {p.name for p in (tmp_path / "tls").iterdir()}
    assert {"tls_over_plain.csv", "machine_state.csv", "claims.csv", "study.json"} <= written
    assert [f["name"] for f in results.figures] == ["shafabakhsh_tls_over_plain"]
    assert any("HTTPS" in d for d in tls.deviations(params))
    matrix = tls.experiments(params)["matrix"]
    assert matrix.variants.keys() == {"plain", "tls", "edge"}
    assert matrix.variants["edge"].tls == "edge"


def test_the_tls_reference_readme_is_what_its_runs_give() -> None:
    """Every measured number of the TLS reference's README is generated from its runs: the
    blocks the rebuilder writes are the ones committed."""
    from ipclab.experiments import load_runs
    from ipclab.findings import GENERATED
    from ipclab.paths import from_repo

    folder = from_repo("data/runs/reference/shafabakhsh-tls-full-local")
    text = (folder / "README.md").read_text()
    committed = {m.group("name"): m.group(0) for m in GENERATED.finditer(text)}
    blocks = encryption.readme_blocks(encryption.analyse(load_runs(folder), "full"))
    assert set(blocks) == set(committed)
    for name, body in blocks.items():
        block = f"<!-- generated: {name} -->\n{body.rstrip()}\n<!-- /generated -->"
        assert committed[name] == block


def _level_verdicts(runs: pd.DataFrame) -> dict[str, str]:
    judged = encryption.judge(runs)
    return dict(zip(judged["claim_id"], judged["verdict"], strict=True))


def test_the_edge_level_is_judged_apart_and_either_way() -> None:
    """The thesis's configuration (the edge only) gets verdicts of its own, beside every
    hop's, each level against the same plain runs; each can come out either way."""
    verdicts = _level_verdicts(_runs(1.3, 1.05, edge=(1.05, 1.3)))
    every = {k: v for k, v in verdicts.items() if not k.startswith("TLS-EDGE-")}
    edge = {k: v for k, v in verdicts.items() if k.startswith("TLS-EDGE-")}
    assert len(every) == len(edge) == 6
    assert set(every.values()) == {claims_mod.REPRODUCED}, every
    assert set(edge.values()) == {claims_mod.NOT_REPRODUCED}, edge
    flipped = _level_verdicts(_runs(1.05, 1.3, edge=(1.3, 1.05)))
    assert {v for k, v in flipped.items() if k.startswith("TLS-EDGE-")} == {claims_mod.REPRODUCED}
    judged = encryption.judge(_runs(1.3, 1.05, edge=(1.3, 1.05)))
    assert set(judged["family"]) == {"tls", "tls-edge"}
    # a sitting without the edge level is judged as before: every hop alone
    assert not any(k.startswith("TLS-EDGE") for k in _level_verdicts(_runs(1.3, 1.05)))


def test_the_edge_ratios_table_and_figure_are_written(tmp_path: Path) -> None:
    runs = _runs(1.3, 1.05, edge=(1.1, 1.02))
    edge = encryption.ratio_table(runs, "edge")
    rest = edge[(edge["style"] == "rest") & (edge["metric"] == "mean_ms")]
    assert rest["edge_over_plain"].to_numpy() == pytest.approx(1.1, rel=0.03)
    a = encryption.Analysis(
        profile="full", runs=runs, ratios=encryption.ratio_table(runs),
        claims=encryption.judge(runs),
        machine=stats.machine_check(runs, by=("variant", "style", "users")),
        edge_ratios=edge,
    )  # fmt: skip
    tls = part("shafabakhsh", "tls")
    params = tls.parameters(results_dir=tmp_path / "tls", figures_dir=tmp_path / "figures")
    results = tls.write(encryption.declared(a), params)
    assert "edge_over_plain.csv" in {p.name for p in (tmp_path / "tls").iterdir()}
    assert [f["name"] for f in results.figures] == [
        "shafabakhsh_tls_over_plain",
        "shafabakhsh_edge_tls_over_plain",
    ]
    stamped = runs.assign(
        started_at=[f"2026-11-29T08:{i // 60:02d}:{i % 60:02d}Z" for i in range(len(runs))]
    )
    blocks = encryption.readme_blocks(replace(a, runs=stamped))
    assert "edge_ratios" in blocks and "at the edge" in blocks["sitting"]


def test_the_node_sitting_is_plain_and_the_edge_in_a_folder_of_its_own(tmp_path: Path) -> None:
    """The thesis's HTTPS to the gateway beside plain on the Node.js shop (its roles serve
    TLS at the edge alone): no every-hop table or figure, the edge's claims and ratios."""
    tls = part("shafabakhsh", "tls")
    params = tls.parameters(results_dir=tmp_path / "tls", figures_dir=tmp_path / "figures",
                            runtime="node")  # fmt: skip
    matrix = tls.experiments(params)["matrix"]
    assert matrix.variants.keys() == {"plain", "edge"}
    assert matrix.name == "shafabakhsh-tls-levels-node-quick-local"
    assert set(matrix.stacks) == {"shop-rest-node", "shop-grpc-node", "shop-amqp-node"}
    with pytest.raises(ValueError, match="unknown runtime"):
        encryption.experiment("quick", runtime="jvm")
    runs = _runs(1.3, 1.05, edge=(1.1, 1.02))
    runs = runs[runs["variant"] != "tls"]
    a = encryption.Analysis(
        profile="quick", runs=runs, ratios=pd.DataFrame(), claims=encryption.judge(runs),
        machine=stats.machine_check(runs, by=("variant", "style", "users")),
        edge_ratios=encryption.ratio_table(runs, "edge"),
    )  # fmt: skip
    assert not encryption.every_hop(a)
    assert all(c.startswith("TLS-EDGE-") for c in a.claims["claim_id"])
    results = tls.write(encryption.declared(a), params)
    written = {p.name for p in (tmp_path / "tls").iterdir()}
    assert "edge_over_plain.csv" in written and "tls_over_plain.csv" not in written
    assert [f["name"] for f in results.figures] == ["shafabakhsh_edge_tls_over_plain"]
