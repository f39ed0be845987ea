"""The study end to end on synthetic run directories: per-run tables, cells beside the
thesis, the adapter sets apart, results and figures written, and a reference without
per-request records rebuilt from the per-run tables it keeps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from ipclab import plotting  # noqa: E402
from ipclab.experiments import load_runs  # noqa: E402
from ipclab.results import StudyResults  # noqa: E402
from ipclab.runs import read_run  # noqa: E402
from ipclab.studies.nyflott import analysis, reference  # noqa: E402
from tests.test_nyflott_extremes import write_gc  # noqa: E402
from tests.test_nyflott_hosts import write_resources  # noqa: E402
from tests.test_nyflott_tables import make_run  # noqa: E402

BASE = {"http1": 5.0, "h2c": 5.6, "coap": 6.4}
CELLS = [("python", s) for s in BASE] + [("native", "http1"), ("native", "h2c")]
STACK = {("python", "http1"): "acmeair-http1", ("python", "h2c"): "acmeair-h2c",
         ("python", "coap"): "acmeair-coap", ("native", "http1"): "acmeair-http1-nginx",
         ("native", "h2c"): "acmeair-h2c-nghttpx"}  # fmt: skip


def world(root: Path, reps: int = 3) -> list[Path]:
    """Runs of every cell at 0 and 5 ms: response times by protocol and delay (native 10%
    faster), CoAP's gateway CPU highest, a GC under CoAP's slowest request."""
    paths = []
    for adapters, style in CELLS:
        for delay in (0.0, 5.0):
            for rep in range(reps):
                base = (BASE[style] + 4.8 * delay) * (0.9 if adapters == "native" else 1.0)
                lat = [base * (1 + 0.01 * rep) + 0.1 * (i % 7) for i in range(100)]
                lat[60] = 120.0 if style == "coap" else base * 3  # t = 1006.0
                spec = {"adapters": adapters, "style": style, "hosts": {"egress": "gateway"}}
                d = root / f"delay{int(delay)}ms"
                d.mkdir(parents=True, exist_ok=True)
                path = make_run(d, STACK[(adapters, style)], rep, delay, lat, stack_spec=spec)
                gw = {"coap": 40.0, "h2c": 25.0, "http1": 20.0}[style] - 3 * delay + rep
                write_resources(path, gateway_cpu=gw, bytes_per_s=900.0 if style == "h2c" else
                                1000.0, sidecars=True, loadgen=True)  # fmt: skip
                write_gc(path, "flight-ingress", [(1005.99, 30.0)] if style == "coap" else [])
                paths.append(path)
    return paths


def test_analyse_puts_the_adapter_sets_beside_the_thesis(tmp_path: Path) -> None:
    world(tmp_path / "runs")
    runs = [r for d in sorted((tmp_path / "runs").iterdir()) for r in load_runs(d)]
    a = analysis.analyse(runs, warmup_s=1.0)
    assert len(a.runs) == 5 * 2 * 3 and not a.missing
    assert set(a.runs["adapters"]) == {"python", "native"}
    t2 = a.table2.set_index(["adapters", "style", "delay_ms"])
    assert len(t2) == 10 and (t2["runs"] == 3).all()
    assert t2.loc[("python", "coap", 0.0), "published_mean_ms"] == 6.4042
    assert t2.loc[("native", "h2c", 5.0), "published_mean_ms"] == 29.5732
    assert t2.loc[("native", "http1", 0.0), "mean_ms"] < t2.loc[("python", "http1", 0.0), "mean_ms"]
    t3 = a.table3.set_index(["adapters", "style", "delay_ms"])
    assert t3.loc[("python", "http1", 0.0), "published_bytes_per_request"] == 3782.2935
    assert t3["bytes_per_request"].notna().all()
    text = analysis.table2_text(a.table2)
    sources = text[(text["protocol"] == "h2c") & (text["delay (ms)"] == "0")]["source"].tolist()
    assert sources == [analysis.SOURCES[k] for k in ("thesis", "python", "native")]
    assert "[" in text.iloc[1]["mean ms"]  # measured: mean [95% interval]
    hosts = a.hosts.set_index(["adapters", "style", "delay_ms", "host"])
    assert hosts.loc[("python", "coap", 0.0, "gateway"), "cpu_mean"] == pytest.approx(43.0)
    assert ("python", "coap", 0.0, "loadgen") in hosts.index
    gc = a.gc.set_index(["adapters", "style", "delay_ms"])
    assert gc.loc[("python", "coap", 0.0), "fraction"] == 1.0
    assert gc.loc[("python", "http1", 0.0), "with_gc"] == 0
    fx = a.adapters.set_index(["style", "delay_ms", "metric"])
    assert fx.loc[("http1", 0.0, "mean_ms"), "ratio"] == pytest.approx(0.9, rel=0.05)
    assert ("coap", 0.0, "mean_ms") not in fx.index  # no native CoAP
    tested = fx[fx["p"].notna()]  # Holm over the table's rows
    assert len(tested) and (tested["p_holm"] >= tested["p"]).all()
    assert tested["p_holm"].max() <= 1.0 and fx["p_holm"].isna().sum() == fx["p"].isna().sum()
    # the claims are judged on the python set only: 3 runs a side
    c = a.claims.set_index("claim_id")
    assert c.loc["N01d", "n_a"] == 3 and c.loc["N01d", "verdict"] == "reproduced"
    assert c.loc["N10b", "verdict"] == "reproduced"  # CoAP's gateway CPU above HTTP/1.1's
    assert "not one of" not in " ".join(c["reason"].astype(str))
    assert len(a.slow) and set(a.slow["run"]) <= set(a.runs.loc[a.runs["delay_ms"] == 0, "run"])
    assert "Table 2" in analysis.summary_markdown(a)
    # every claim on the native set's runs beside it: CoAP has none there (not measured)
    v = a.adapter_verdicts.set_index("claim_id")
    assert set(v.index) == set(c.index[c["evidence"] == "test"])
    assert v.loc["N02b", "native_n_a"] == 3 and v.loc["N01d", "python_verdict"] == "reproduced"
    coap = [i for i in v.index if "coap" in str(v.loc[i, "comparison"])]
    assert coap and (v.loc[coap, "explanation"].isin(["not measured", "agree"])).all()


def test_results_and_a_rebuild_from_the_per_run_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = tmp_path / "reference" / "nyflott-x"
    world(base)
    figures = tmp_path / "figures"
    out = reference.rebuild(tmp_path / "reference", figures, "nyflott-x")
    meta = json.loads((out / "study.json").read_text())
    names = {f["name"] for f in meta["figures"]}
    assert {"nyflott_table2", "nyflott_table3", "nyflott_fig10", "nyflott_fig11_14",
            "nyflott_fig11_14_per_request", "nyflott_fig20_23", "nyflott_fig15",
            "nyflott_fig16", "nyflott_fig19", "nyflott_adapters"} <= names  # fmt: skip
    # every adapter set measured gets its own Figs. 10-15 and 20-23 (issue 52)
    assert {"nyflott_fig10_native", "nyflott_fig15_native", "nyflott_fig11_14_native",
            "nyflott_fig20_23_per_request_native"} <= names  # fmt: skip
    assert all(Path(f["png"]).is_file() for f in meta["figures"])
    shown = {t["name"] for t in meta["tables"] if t["in_report"] == "True"}
    assert {"table2", "table3", "hosts", "gc_extremes", "adapters"} <= shown
    tables = {t["name"] for t in meta["tables"]}
    assert {"claims", "power", "machine_state", "per_test_case", "runs", "environment",
            "seed_items"} <= tables  # fmt: skip
    assert meta["claims"] == "claims.csv" and meta["skipped"] == []
    first = pd.read_csv(out / "runs.csv")
    claims = pd.read_csv(out / "claims.csv")
    # the committed reference keeps no per-request records or logs
    for run in base.glob("delay*/*"):
        shutil.rmtree(run / "requests")
        shutil.rmtree(run / "logs")
    a = reference.load(tmp_path / "reference", "nyflott-x")
    assert not a.missing and len(a.runs) == len(first)
    # the tables again (the figures were checked above; drawing them is most of a rebuild)
    monkeypatch.setattr(plotting, "save", lambda fig, name, *_, **__: [Path(f"{name}.png")])
    reference.rebuild(tmp_path / "reference", figures, "nyflott-x")
    pd.testing.assert_frame_equal(pd.read_csv(out / "runs.csv"), first)
    again = pd.read_csv(out / "claims.csv")
    assert list(again["verdict"]) == list(claims["verdict"])
    assert len(pd.read_csv(out / "extremes.csv")) == len(a.extremes) > 0


def test_a_run_without_records_or_cached_rows_is_listed(tmp_path: Path) -> None:
    path = make_run(tmp_path, "acmeair-coap", 1, 0.0, [5.0] * 100)
    shutil.rmtree(path / "requests")
    a = analysis.analyse([read_run(path)])
    assert a.missing == [f"{path.parent.name}/{path.name}"] and a.runs.empty
    res = StudyResults(tmp_path / "results", "nyflott", "N", figures_dir=tmp_path / "figs")
    analysis.write_results(a, res)
    assert "without per-request records" in res.skipped[0]


def test_local_runs_say_what_was_not_measured(tmp_path: Path) -> None:
    paths = [make_run(tmp_path, s, r, 0.0, [BASE[s.split("-")[1]]] * 100)
             for s in ("acmeair-http1", "acmeair-coap") for r in range(2)]  # fmt: skip
    a = analysis.analyse([read_run(p) for p in paths], warmup_s=1.0)
    assert any("Added delays run: 0 ms" in d for d in a.deviations)
    assert any("Measured window" in d for d in a.deviations)
    res = StudyResults(tmp_path / "results", "nyflott", "N", figures_dir=tmp_path / "figs")
    analysis.write_results(a, res)
    assert any("no per-host network counters" in s for s in res.skipped)
    assert "table3" not in {t["name"] for t in res.tables}
    assert (a.claims["verdict"] == "inconclusive").all()  # 2 runs a cell


def test_runs_of_the_same_name_in_two_delay_folders_stay_apart(tmp_path: Path) -> None:
    """An experiment names its runs alike in every delay's folder (acmeair-coap-u10-base-r1):
    every per-run table keys a run by its folder and name, so no merge mixes delays."""
    paths = []
    for delay in (0.0, 5.0):
        d = tmp_path / f"delay{int(delay)}ms"
        d.mkdir()
        lat = [5.0 + 4.8 * delay + 0.1 * (i % 7) for i in range(100)]
        path = make_run(d, "acmeair-coap", 0, delay, lat, stack_spec={"adapters": "python"})
        write_resources(path, gateway_cpu=30.0 - delay, bytes_per_s=1000.0, sidecars=True)
        write_gc(path, "egress", [(1005.99, 30.0)])
        paths.append(path.rename(d / "acmeair-coap-u10-base-r1"))
    runs = [read_run(p) for p in paths]
    a = analysis.analyse(runs, warmup_s=1.0)
    assert sorted(a.runs["run"]) == [
        "delay0ms/acmeair-coap-u10-base-r1",
        "delay5ms/acmeair-coap-u10-base-r1",
    ]
    assert sorted(a.runs["delay_ms"]) == [0.0, 5.0]
    assert len(a.hosts_runs.drop_duplicates(["run", "host"])) == len(a.hosts_runs)
    assert list(a.gc.sort_values("delay_ms")["runs"]) == [1, 1]
    assert a.runs.groupby("delay_ms")["mean_ms"].mean().diff().iloc[-1] > 20
