"""Nyfløtt's Californium fix (issue 52): the adapters' logging switch (thesis vs fixed), the
claim N33a "the fix doubles throughput" judged both ways, the fix experiment's cells, and
Fig. 9's hotspot share with its interval from the profiling testbed (--config)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as claims_mod
from ipclab.studies.nyflott import experiment, hotspot, profiling, published, tables, verdicts

QUOTE = (
    "The performance impact was measured to double the throughput capacity on the master "
    "branch of Californium by one of the maintainers."
)


# --------------------------------------------------------------------------- the switch


@pytest.mark.skipif(shutil.which("java") is None or shutil.which("mvn") is None,
                    reason="no JDK and Maven")  # fmt: skip
def test_thesis_logging_builds_each_message_text_and_fixed_none() -> None:
    """The adapters' Logging interceptor (Logging.java): the thesis configuration builds
    every sent and received message's log text (its toString through StringBuilder.append),
    the fixed one builds none."""
    from ipclab import javabuild

    lib = javabuild.classpath("californium")
    out = subprocess.run(["java", "-cp", f"{lib}/*", "ipclab.coap.Logging"], check=True,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    counts = json.loads(out.stdout)
    assert counts["thesis"]["built"] == 4  # send/receive of a request and a response
    assert counts["thesis"]["chars"] > 100  # each message's whole text, not a constant
    assert counts["fixed"] == {"built": 0, "chars": 0}


def test_logging_options_set_the_adapters_environment() -> None:
    base = experiment.StackOptions(extra_env={"IPCLAB_JVM_OPTIONS": "-Xmx1g"})
    opts = experiment.logging_options("thesis", base)
    assert opts.extra_env == {"IPCLAB_JVM_OPTIONS": "-Xmx1g", experiment.LOGGING_ENV: "thesis"}
    assert base.extra_env == {"IPCLAB_JVM_OPTIONS": "-Xmx1g"}  # not changed in place
    with pytest.raises(ValueError, match="thesis, fixed"):
        experiment.logging_options("verbose")


def test_fix_experiment_interleaves_thesis_and_fixed(tmp_path: Path) -> None:
    exp = experiment.fix_experiment("full", "docker", tmp_path, repetitions=4, measured_s=60)
    assert exp.stacks == (experiment.FIX_STACK,) and exp.users == (experiment.USERS,)
    levels = exp.levels()
    assert {k: v.extra_env[experiment.LOGGING_ENV] for k, v in levels.items()} == {
        "thesis": "thesis", "fixed": "fixed"}  # fmt: skip
    assert all(v.delay_ms == 0 for v in levels.values())
    cells = exp.cells()
    assert len(cells) == 8
    for rep in range(1, 5):  # both configurations in every repetition
        assert {c.variant for c in cells if c.repetition == rep} == {"thesis", "fixed"}
    assert exp.directory == tmp_path / "nyflott-full-docker" / experiment.FIX_EXPERIMENT
    with pytest.raises(SystemExit):
        experiment.main(["--profile", "full"])  # --californium-fix is required


# --------------------------------------------------------------------------- the claim


def _n40a() -> published.Claim:
    return next(c for c in published.claims() if c.claim_id == "N33a")


def test_claim_row_parses_with_the_thesis_words() -> None:
    c = _n40a()
    assert c.quote == QUOTE and c.section == "4.2.5" and c.page == "47-51"
    assert (c.test, c.relation, c.metric) == ("ratio", ">", "rps")
    assert (c.a_style, c.b_style) == ("californium-fixed", "californium-thesis")
    assert (c.published_ratio, c.band_low, c.band_high) == (2.0, 1.5, 2.5)
    assert verdicts.is_fix(c)
    main, gaps, gc = verdicts.split(published.claims())
    assert c not in main and c not in gaps and c not in gc


def _fix_rows(ratio: float, n: int = 6, cv: float = 0.03, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    thesis = 100 * (1 + cv * rng.standard_normal(n))
    fixed = 100 * ratio * (1 + cv * rng.standard_normal(n))
    return pd.DataFrame({
        "run": [f"r{i}" for i in range(2 * n)],
        "style": ["californium-thesis"] * n + ["californium-fixed"] * n,
        "delay_ms": 0.0, "rps": [*thesis, *fixed],
    })  # fmt: skip


def _verdict(fix: pd.DataFrame | None) -> pd.Series:
    rows = pd.DataFrame({"style": ["coap"], "delay_ms": [0.0], "rps": [1.0]})
    table = verdicts.evaluate(rows, claims=[_n40a()], fix=fix)
    return table.set_index("claim_id").loc["N33a"]


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [(2.0, claims_mod.REPRODUCED), (1.8, claims_mod.REPRODUCED),
     (1.05, claims_mod.NOT_REPRODUCED), (3.5, claims_mod.NOT_REPRODUCED)],
)  # fmt: skip
def test_fix_claim_decides_both_ways(ratio: float, expected: str) -> None:
    row = _verdict(_fix_rows(ratio))
    assert row["verdict"] == expected, row["reason"]
    assert row["family"] == verdicts.FIX_FAMILY


def test_fix_claim_without_runs_is_not_measured() -> None:
    row = _verdict(None)
    assert row["verdict"] == claims_mod.INCONCLUSIVE and "not measured" in row["reason"]


def test_fix_rows_style_is_the_runs_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeRun:
        def __init__(self, name: str, variant: str) -> None:
            self.path = Path("/x/californium-fix") / name
            self.parameters = {"variant": variant}

    runs = [FakeRun("a-r1-thesis", "thesis"), FakeRun("a-r1-fixed", "fixed")]
    monkeypatch.setattr(tables, "run_rows", lambda rs, w: pd.DataFrame(
        {"run": [tables.run_label(r) for r in rs], "style": "coap", "rps": [1.0, 2.0]}
    ))  # fmt: skip
    out = verdicts.fix_rows(runs, 10.0)  # type: ignore[arg-type]
    assert list(out["style"]) == ["californium-thesis", "californium-fixed"]


# --------------------------------------------------------------------------- Fig. 9's share


def test_samples_needed_for_five_points() -> None:
    assert hotspot.samples_needed(0.5, 0.05) == 385
    assert hotspot.samples_needed(0.3, 0.05) == 323
    assert hotspot.samples_needed(0.5, 0.05, design_effect=2.0) == 769
    with pytest.raises(ValueError):
        hotspot.samples_needed(0.5, 0.0)


def test_hotspot_frames() -> None:
    thesis = ("java/lang/Thread.run;ipclab/coap/Logging.sendResponse;ipclab/coap/Logging.eager;"
              "java/lang/StringBuilder.append;java/lang/String.valueOf")  # fmt: skip
    assert hotspot.in_hotspot(thesis)
    assert hotspot.in_hotspot("a.b;org/eclipse/californium/core/coap/Response.toString;x.y")
    assert not hotspot.in_hotspot("java/lang/StringBuilder.append;java/lang/String.valueOf")
    assert not hotspot.in_hotspot("org/eclipse/californium/core/coap/OptionSet.toStringX")


def test_share_interval_widens_with_clustered_samples() -> None:
    even = pd.DataFrame({"samples": [10] * 40, "hot": [3] * 40})
    clustered = pd.DataFrame({"samples": [10] * 40, "hot": [0, 6] * 20})
    a, b = hotspot.share_of(even), hotspot.share_of(clustered)
    assert a.share == b.share == pytest.approx(0.3)
    assert a.design_effect == 1.0 and b.design_effect > 2
    assert a.low < 0.3 < a.high and b.half_width > a.half_width
    assert a.half_width < 0.05  # 400 samples: about +-4.5 points
    t = hotspot.share_table({"thesis": b, "fixed": a})
    assert list(t["config"]) == ["thesis", "fixed"] and not t["enough"].iloc[0]


def test_batches_count_hot_samples_per_5_s() -> None:
    s = pd.DataFrame({"t_s": [0.1, 4.9, 5.0, 12.0], "hot": [True, False, True, True]})
    b = hotspot.batches(s)
    assert list(b["t0_s"]) == [0.0, 5.0, 10.0]
    assert list(b["samples"]) == [2, 1, 1] and list(b["hot"]) == [1, 1, 1]


def test_profiling_cli_takes_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen = {}

    def fake(plan: profiling.ProfilePlan, out: Path) -> Path:
        seen["plan"] = plan
        out.mkdir()
        pd.DataFrame({"t0_s": [0.0, 5.0], "samples": [200, 200], "hot": [80, 90]}).to_csv(
            out / "hotspot.csv", index=False)  # fmt: skip
        return out

    monkeypatch.setattr(profiling, "run_profile", fake)
    assert profiling.main(["--out", str(tmp_path / "p"), "--config", "thesis"]) == 0
    assert seen["plan"].config == "thesis"
    with pytest.raises(SystemExit):
        profiling.main(["--out", str(tmp_path / "q"), "--config", "verbose"])
    assert "42.5% of 400 samples" in profiling.hotspot_summary(tmp_path / "p", "thesis")


def test_jfr_print_keeps_whole_stacks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """jfr print's own default keeps 5 frames, too few to see the log building under
    sendResponse: the tables ask for JFR's whole recorded depth."""
    seen = {}

    def fake_run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
        seen["args"] = args
        return subprocess.CompletedProcess(args, 0, '{"recording": {"events": []}}', "")

    monkeypatch.setattr(profiling, "_jdk_tool", lambda name: name)
    monkeypatch.setattr(profiling.subprocess, "run", fake_run)
    assert profiling._jfr_events(tmp_path / "x.jfr", "jdk.ExecutionSample") == []
    i = seen["args"].index("--stack-depth")
    assert int(seen["args"][i + 1]) == profiling.STACK_DEPTH >= 64
