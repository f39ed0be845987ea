"""Figures render from synthetic tables and save as PNG and SVG (no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from ipclab import stats  # noqa: E402
from ipclab.runs import RunWriter, read_run  # noqa: E402
from ipclab.studies.shafabakhsh import (
    figures,  # noqa: E402
    published,  # noqa: E402
)


def summary() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    base = published.published_cells()
    reps = pd.concat(
        [
            base.assign(rps=base["rps"] * (1 + 0.02 * rng.standard_normal(len(base))))
            for _ in range(4)
        ]
    )
    return stats.cell_summary(reps, metrics=("rps", "mean_ms"), n_resamples=999)


def test_grouped_bars_and_save(tmp_path: Path) -> None:
    fig = figures.grouped_bars(summary(), "rps", title="t")
    ax = fig.axes[0]
    assert ax.get_ylabel() == "Throughput (requests/s)"
    assert ax.get_xlabel() == "Concurrent users"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["50", "100", "200"]
    paths = figures.save(fig, "bars", tmp_path)
    assert [p.suffix for p in paths] == [".png", ".svg"]
    assert all(p.stat().st_size > 1000 for p in paths)
    plt.close(fig)


def test_bars_without_ci_for_single_runs(tmp_path: Path) -> None:
    s = stats.cell_summary(published.published_cells(), metrics=("rps",))
    assert s["ci_low"].isna().all()
    fig = figures.grouped_bars(s, "rps")
    figures.save(fig, "published", tmp_path, formats=("pdf",))
    assert (tmp_path / "published.pdf").exists()
    plt.close(fig)


def test_latency_growth_normalised() -> None:
    fig = figures.latency_growth(summary(), "mean_ms", normalize=True)
    ax = fig.axes[0]
    ys = [line.get_ydata() for line in ax.get_lines()]
    assert len(ys) == 3 and all(y[0] == pytest.approx(1.0) for y in ys)
    assert "relative" in ax.get_ylabel()
    plt.close(fig)


def test_unknown_metric_is_an_error() -> None:
    with pytest.raises(ValueError, match="no rows"):
        figures.grouped_bars(summary(), "p99_ms")


def test_history_frame_and_timeseries(tmp_path: Path) -> None:
    w = RunWriter(tmp_path / "r", "load", {"users": 5}, stack="shop-rest")
    rows = [
        "Timestamp,User Count,Type,Name,Requests/s,Failures/s,50%,95%,Total Request Count,"
        "Total Failure Count,Total Median Response Time,Total Average Response Time,"
        "Total Min Response Time,Total Max Response Time,Total Average Content Size"
    ]
    for t in range(10):
        rows.append(f"{1000 + t},5,GET,/product,{10 + t},0,5,9,{10 * t},0,5,5.5,1,20,900")
        rows.append(f"{1000 + t},5,,Aggregated,{10 + t},0,5,9,{10 * t},0,5,5.5,1,20,900")
    (w.path / "locust_stats_history.csv").write_text("\n".join(rows) + "\n")
    w.finish("complete")
    h = figures.history_frame(read_run(w.path))
    assert len(h) == 10 and h["t_s"].tolist() == list(range(10))
    assert h["rps"].iloc[-1] == 19 and h["p95_ms"].iloc[0] == 9
    fig = figures.timeseries({"rest": h, "grpc": h.assign(rps=h["rps"] * 2)}, "rps", warmup_s=2.0)
    assert fig.axes[0].get_ylabel() == "Throughput (requests/s)"
    assert fig.axes[0].get_xlabel() == "Time since start (s)"
    plt.close(fig)
    empty = RunWriter(tmp_path / "e", "load", {}, stack="shop-rest")
    assert figures.history_frame(read_run(empty.path)).empty


def test_buono_memory_figure_draws_the_limit_in_mib_as_docker_sets_it(tmp_path: Path) -> None:
    """docker's mem_limit ``400m`` is 400 MiB, on the figure's MiB axis (not 400e6 bytes)."""
    from ipclab.studies.buono import figures as buono_figures

    pd.DataFrame({"t": [0.0, 0.05, 0.1], "rss_bytes": [1, 2, 3],
                  "usage_bytes": [50 * 2**20, 300 * 2**20, 60 * 2**20]}).to_csv(
        tmp_path / "memory.csv", index=False)  # fmt: skip
    mem = pd.DataFrame([{"path": str(tmp_path), "count": 300_000, "fmt": "json",
                         "json_library": "orjson", "repetition": 1, "traced": False,
                         "completed": True, "oom_killed": 0.0, "limit_mb": 400}])  # fmt: skip
    drawn = buono_figures.fig32_35(mem)
    assert drawn is not None
    fig, caption = drawn
    lines = {ln.get_label(): ln.get_ydata() for ln in fig.axes[0].get_lines()}
    assert list(lines["limit: 400 MiB (mem_limit 400m)"]) == [400, 400]
    assert max(lines["json (orjson), usage"]) == 300
    assert "mem_limit 400m = 400 MiB" in caption
    plt.close(fig)


def _cells_with_tails() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    base = published.published_cells()
    reps = pd.concat(
        [base.assign(p95_ms=base["mean_ms"] * (1.5 + 0.05 * rng.standard_normal(len(base))))
         for _ in range(3)]
    )  # fmt: skip
    return stats.cell_summary(reps, metrics=("mean_ms", "p95_ms"), n_resamples=999)


def test_latency_lines_draw_the_mean_per_style_and_the_tail_dashed() -> None:
    fig = figures.latency_lines(_cells_with_tails(), tail="p95_ms")
    ax = fig.axes[0]
    lines = ax.get_lines()
    assert len(lines) == 6 and sum(ln.get_linestyle() == "--" for ln in lines) == 3
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    assert list(ax.get_xticks()) == [50, 100, 200]
    plt.close(fig)


def test_thesis_fig_a2_published_beside_measured() -> None:
    """Fig. A.2 rebuilt from the cells: published means (no tail) left, measured right."""
    from ipclab.studies.shafabakhsh import performance

    fig = performance._latency_a2(_cells_with_tails())
    left, right = fig.axes
    assert len(left.get_lines()) == 3 and len(right.get_lines()) == 6
    assert "Tables 5.1-5.3" in left.get_title()
    plt.close(fig)


def test_timeseries_captions_name_the_thesis_figures_or_say_there_is_none() -> None:
    from ipclab.studies.shafabakhsh import performance

    assert performance._TIMESERIES_FIGURES == {
        50: "thesis Figs. A.3 and A.4",
        100: "thesis Figs. A.5 and A.6",
    }
    assert "none published" not in performance._NO_TIMESERIES
    assert "no time series" in performance._NO_TIMESERIES
