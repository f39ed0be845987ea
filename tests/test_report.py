"""The report PDF: built by headless Chromium from a small results folder, then read back.

``pdftotext`` must find every figure caption, every table caption and every claim with its
verdict; ``pdftoppm`` must render every page. Skipped, saying why, without Chromium or
poppler-utils.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from ipclab import report  # noqa: E402
from ipclab.report import html as rh  # noqa: E402
from ipclab.report import pdf  # noqa: E402
from ipclab.results import StudyResults  # noqa: E402

CLAIM_COLUMNS = [
    "claim_id", "statement_id", "source", "document", "section", "page", "quote", "scope",
    "test", "comparison", "measured_users", "published_value", "published_unit",
    "published_ratio", "published_consistent", "band_low", "band_high", "measured_a",
    "measured_b", "n_a", "n_b", "measured_ratio", "ci_low", "ci_high", "measured", "p_value",
    "p_raw", "p_method", "p_welch", "p_mannwhitney", "cliffs_delta", "cliffs_low",
    "cliffs_high", "verdict", "reason", "note",
]  # fmt: skip
VERDICTS = {"Z01a": "reproduced", "Z01b": "not reproduced", "Z02a": "inconclusive"}
FIGURE_CAPTION = "Mean response time per style and load: measured here, with 95% CIs."
TABLE_CAPTION = "Published beside measured mean response time per style and load."
WIDE_CAPTION = "Every run with every metric, one column each (a very wide table)."


def _claims() -> pd.DataFrame:
    rows = []
    for i, (cid, verdict) in enumerate(VERDICTS.items()):
        rows.append(
            {
                "claim_id": cid, "statement_id": cid[:3], "source": "thesis §5.1.1, p. 35",
                "document": "thesis", "section": "5.1.1", "page": 35,
                "quote": "gRPC has outperformed REST API, and RabbitMQ in the first case " * 3,
                "scope": "performance", "test": "direction",
                "comparison": f"rps: grpc@avg(50+100+200) > rest@avg(50+100+200) #{i}",
                "measured_users": 50, "published_value": 43 if i == 0 else np.nan,
                "published_unit": "requests per 180 s", "published_ratio": 1.0101,
                "published_consistent": True, "band_low": np.nan, "band_high": np.nan,
                "measured_a": 357.48, "measured_b": 535.86, "n_a": 5, "n_b": 5,
                "measured_ratio": 0.6671, "ci_low": 0.61234, "ci_high": 0.7012,
                "measured": "0.6671 [0.6123, 0.7012]", "p_value": [0.0004, 0.0123, 0.41][i],
                "p_raw": 0.0004, "p_method": "welch", "p_welch": 0.0004, "p_mannwhitney": 0.008,
                "cliffs_delta": -1.0, "cliffs_low": -1.0, "cliffs_high": -0.6, "verdict": verdict,
                "reason": "ratio on the claimed side of 1, p < 0.05", "note": "" if i else "n",
            }
        )  # fmt: skip
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def _results(root: Path) -> Path:
    res = StudyResults(root / "results" / "demo", "demo", "Demo study",
                       parameters={"profile": "quick", "users": [50, 100]},
                       deviations=["Python services instead of Node.js."],
                       skipped=["the docker backend because no Docker engine answers"],
                       figures_dir=root / "figures")  # fmt: skip
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar(["rest", "grpc", "amqp"], [90, 130, 350])
    ax.set_ylabel("Mean response time (ms)")
    res.figure(fig, "demo_latency", FIGURE_CAPTION)
    plt.close(fig)
    table = pd.DataFrame(
        {"style": ["rest", "grpc"], "users": [50, 50], "published_mean_rt_s": [0.23, 0.22],
         "measured_mean_rt_s": [0.0897, 0.12894], "welch_p": [0.0001, 0.2]}
    )  # fmt: skip
    res.table(table, "published_vs_measured", TABLE_CAPTION)
    wide = pd.DataFrame({f"metric_number_{i}": [1234.5678 * i, 0.001234] for i in range(30)})
    res.table(wide, "wide", WIDE_CAPTION)
    res.table(table, "hidden", "Not printed in the report.", in_report=False)
    res.claims_table(_claims())
    return res.directory


def _tool(name: str, package: str) -> None:
    if shutil.which(name) is None:
        pytest.skip(f"{name} not installed (apt-get install {package})")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    try:
        report.find_chromium()
    except report.ChromiumMissing as e:
        pytest.skip(str(e))
    _tool("pdftotext", "poppler-utils")
    _tool("pdftoppm", "poppler-utils")
    root = tmp_path_factory.mktemp("report")
    directory = _results(root)
    run_log = {
        "profile": "quick", "backend": "local", "seconds": 42.0,
        "notebooks": [
            {"notebook": "01_demo.ipynb", "results": "demo", "status": "ok", "seconds": 40.0},
            {"notebook": "02_other.ipynb", "results": "other", "status": "skipped",
             "reason": "no Docker engine answers"},
        ],
    }  # fmt: skip
    pdf = report.build_report([directory], root / "out" / "report.pdf", run_log=run_log)
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    return pdf, text, " ".join(text.split())


def test_captions_and_claims_are_in_the_text(built: tuple[Path, str, str]) -> None:
    pdf, layout, flat = built
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert pdf.with_suffix(".html").is_file()
    assert f"Figure 1. {FIGURE_CAPTION}" in flat
    for cap in (TABLE_CAPTION, WIDE_CAPTION):
        assert re.search(rf"Table \d+\. {re.escape(cap)}", flat), cap
    assert "Not printed in the report." in flat  # listed as not printed, not shown
    assert "Claims of Demo study" in flat and "Claims per verdict." in flat
    lines = layout.splitlines()
    for cid, verdict in VERDICTS.items():
        # the study's claims table and the all-claims table: id and verdict on one row
        rows = [ln for ln in lines if re.search(rf"\b{cid}\b", ln) and verdict in ln]
        assert len(rows) >= 2, (cid, verdict)
    assert "<0.001" in flat and "0.012" in flat  # p-values
    assert "Skipped: the docker backend because no Docker engine answers" in flat
    assert "Skipped: 02_other.ipynb because no Docker engine answers" in flat
    assert "How this report was made" in flat and "Python" in flat


def test_pages_render_and_wide_tables_turn_landscape(
    built: tuple[Path, str, str], tmp_path: Path
) -> None:
    pdf = built[0]
    subprocess.run(["pdftoppm", "-png", "-r", "50", str(pdf), str(tmp_path / "p")], check=True)
    pages = sorted(tmp_path.glob("p-*.png"))
    info = subprocess.run(["pdfinfo", "-f", "1", "-l", "999", str(pdf)], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    sizes = re.findall(r"Page\s+\d+ size:\s+([\d.]+) x ([\d.]+)", info)
    assert len(pages) == len(sizes) >= 4
    assert any(float(w) > float(h) for w, h in sizes), "the 30-column table is on a landscape page"
    for page in pages:
        img = plt.imread(page)
        assert img.size and float(img[..., :3].min()) < 0.5, f"{page.name} is blank"


def test_missing_chromium_names_the_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IPCLAB_CHROMIUM", raising=False)
    monkeypatch.setattr(pdf.shutil, "which", lambda name: None)
    with pytest.raises(report.ChromiumMissing, match=r"apt-get install chromium"):
        report.build_report([], Path("unused.pdf"))


def test_chromium_prints_with_its_sandbox_on_and_never_as_root(
    built: tuple[Path, str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report printed above ran this command: no --no-sandbox; as root, run as nobody."""
    monkeypatch.delenv("IPCLAB_CHROMIUM_NO_SANDBOX", raising=False)
    work, html, out = Path("/w"), Path("/w/report.html"), Path("/w/report.pdf")
    cmd = pdf.chromium_command("chromium", work, html, out, as_root=True)
    assert "--no-sandbox" not in cmd
    assert cmd[1:4] == [f"--reuid={pdf.NOBODY}", f"--regid={pdf.NOBODY}", "--clear-groups"]
    assert "--no-sandbox" not in pdf.chromium_command("chromium", work, html, out, False)
    monkeypatch.setenv("IPCLAB_CHROMIUM_NO_SANDBOX", "1")  # only when asked
    assert "--no-sandbox" in pdf.chromium_command("chromium", work, html, out, False)


def test_main_without_results_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report.main(["--results", str(tmp_path), "--out", str(tmp_path / "r.pdf")]) == 2
    assert "no results folders" in capsys.readouterr().err


def test_find_results_follows_the_run_log(tmp_path: Path) -> None:
    for name in ("a_first", "b_second"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "study.json").write_text(json.dumps({"study": name}))
    log = {"notebooks": [{"results": "b_second"}, {"results": "a_first"}]}
    assert [d.name for d in report.find_results(tmp_path, log)] == ["b_second", "a_first"]
    assert [d.name for d in report.find_results(tmp_path)] == ["a_first", "b_second"]


@pytest.mark.parametrize(
    ("value", "text"),
    [(0.089699, "0.0897"), (535.86, "536"), (96454.887, "96,455"), (50, "50"), (50.0, "50"),
     (float("nan"), "–"), (1.5e-5, "1.50e-05"), (999.6, "1,000"), (True, "yes")],
)  # fmt: skip
def test_numbers_have_three_significant_digits(value: object, text: str) -> None:
    assert rh.fmt_num(value) == text


def test_p_values_and_intervals() -> None:
    assert rh.fmt_p(0.0123) == "0.012" and rh.fmt_p(0.0004) == "<0.001" and rh.fmt_p(None) == "–"
    assert rh.fmt_ci(0.66712, 0.61234, 0.7012) == "0.667 [0.612, 0.701]"
    assert rh.fmt_ci(2.0, float("nan"), float("nan")) == "2 (no CI)"
    assert rh.fmt_text("0.6671 [nan, nan]") == "0.667 (no CI)"


def test_the_report_leads_with_the_reference_and_sets_the_fresh_run_beside_it(
    tmp_path: Path,
) -> None:
    """The committed reference comes first, counted as distinct tests, with its machine and
    date; a fresh run's claims say how many agree in direction with it."""
    import shutil

    from ipclab.paths import REPO_ROOT

    ref = REPO_ROOT / "data/runs/reference/shafabakhsh-full-local/results"
    fresh = tmp_path / "shafabakhsh"
    shutil.copytree(ref, fresh)
    claims = pd.read_csv(fresh / "claims.csv")
    claims.loc[0, "measured_ratio"] = 1 / claims.loc[0, "measured_ratio"]  # one disagrees
    claims.to_csv(fresh / "claims.csv", index=False)
    html = report.render_html([fresh], references={"shafabakhsh": ref})
    assert html.index('study-title">R1. Reference') < html.index('study-title">1. ')
    assert "distinct tests" in html and "cores)" in html
    known = int((claims["measured_ratio"].notna()).sum())
    assert f"on {known - 1} of {known} claims" in html


def test_machine_and_date_finds_runs_one_experiment_folder_deeper(tmp_path: Path) -> None:
    """A study of several experiments keeps its runs in <experiment>/<run>/; the reference
    summary still names the machine and the dates (it said "not recorded" before)."""
    base = tmp_path / "johansson-full-local"
    (base / "results").mkdir(parents=True)
    env = {"cpu_model": "Test CPU", "cpu_cores_logical": 2}
    for exp, start in (("thesis", "2026-11-23T19:53:00"), ("saturation", "2026-11-23T09:25:00")):
        run = base / exp / "run-r1"
        run.mkdir(parents=True)
        doc = {"started_at": start, "environment": env}
        (run / "manifest.json").write_text(json.dumps(doc))
    text = report._machine_and_date(base / "results")
    assert text == "2 runs on Test CPU (2 cores), 2026-11-23T09:25 to 2026-11-23T19:53 UTC"
