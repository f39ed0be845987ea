"""Method 1's P14 verdicts as docs/statistics.md section 6 and docs/availability.md's design
check say (issue 46, must-show 3): synthetic runs through the claims (``analysis.judge``),
censored ones never evidence, early failures able to decide either way; runs of a
superseded method never judged, nor mixed with current ones; the subset that makes the
confirmation at 400 users, and the doc's block of the next sittings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from ipclab import compare
from ipclab.availability import runner
from ipclab.availability.model import Cycle, CycleStatus
from ipclab.availability.tracker import LOAD, Criteria, CycleLog
from ipclab.findings import GENERATED
from ipclab.paths import REPO_ROOT
from ipclab.studies.shafabakhsh.availability import analysis, plan, profiles, until_failure
from ipclab.studies.shafabakhsh.availability.__main__ import main as cli
from ipclab.studies.shafabakhsh.availability.profiles import AvailabilityRuns, experiments

DOCKER = REPO_ROOT / "data/runs/reference/availability-full-docker"
CAP = 900.0
LEVEL = 0.05 / 17  # the until-failure family's strictest Holm step


def cell(style: str, users: int, times: list[float]) -> list[dict[str, object]]:
    """One run per time: a time below the cap failed then (10 s to recover), the cap is a
    censored run (the run_rows columns the claims read)."""
    out = []
    for i, t in enumerate(times, 1):
        failed = t < CAP
        out.append({
            "style": style, "users": users, "repetition": i, "run": f"{style}-u{users}-r{i}",
            "ttf_s": t, "failed": failed, "cap_s": CAP, "startup": 0,
            "mttf_s": t if failed else np.nan, "mttr_s": 10.0 if failed else np.nan,
            "availability": t / (t + 10.0) if failed else 1.0,
        })  # fmt: skip
    return out


def judged(*cells: list[dict[str, object]]) -> pd.DataFrame:
    """The until-failure claims table of these runs, by the study's own judging."""
    rows = pd.DataFrame([r for c in cells for r in c]).assign(outage_failure_fraction=np.nan)
    made = SimpleNamespace(manifest={}, parameters={}, path=Path("made"))  # the family ran
    runs = AvailabilityRuns(until_failure=[made])  # type: ignore[list-item]
    tables, _ = analysis.judge(runs, rows, pd.DataFrame(), {}, 0.95)
    return tables["until failure"].set_index("claim_id")


def test_all_censored_is_underpowered_never_evidence() -> None:
    t = judged(cell("rest", 200, [CAP] * 3), cell("rest", 300, [CAP] * 3))
    p14a = t.loc["P14a"]
    assert p14a["verdict"] == "underpowered" and p14a["p_method"] == until_failure.RESTRICTED_METHOD
    assert "no failure in" in p14a["model_check"] and "cannot pass" in p14a["design"]
    design = plan.p14_design(profiles.profile("full"), LEVEL)
    assert design["outcome"].iloc[0].startswith("underpowered by design (censored)")


def test_failures_at_one_load_only_are_underpowered() -> None:
    """Every run of the higher load failing at once, the lower's all censored: no failure to
    check the model on in one cell, the test on runs (floor 0.1): underpowered either way."""
    for hi, lo in (([5.0, 8.0, 12.0], [CAP] * 3), ([CAP] * 3, [5.0, 8.0, 12.0])):
        t = judged(cell("rest", 300, hi), cell("rest", 200, lo))
        assert t.loc["P14a", "verdict"] == "underpowered", (hi, lo)


@pytest.mark.parametrize(
    ("hi", "lo", "verdict"),
    [
        ([6.0, 20.0, 45.0], [700.0, CAP, CAP], "reproduced"),
        ([700.0, CAP, CAP], [6.0, 20.0, 45.0], "not reproduced"),
    ],
)
def test_early_failures_decide_either_way(hi: list[float], lo: list[float], verdict: str) -> None:
    """Every run of one load failing within 45 s of the ramp's end (inside the design
    check's 52 s at the strictest step), one of the other's: the exponential model not
    rejected, the exact Poisson test decides, on the claimed side or against it."""
    t = judged(cell("grpc", 400, hi), cell("grpc", 300, lo))
    p14d = t.loc["P14d"]
    assert p14d["p_method"] == until_failure.POISSON_METHOD, p14d["model_check"]
    assert p14d["verdict"] == verdict, p14d["reason"]


def test_the_design_rows_agree_with_the_poisson_test() -> None:
    """A row that cannot pass has its best p above the loosest Holm step; a row that can
    names the strictest step's bound and the loosest's, in that order."""
    d = plan.p14_design(profiles.profile("full"), LEVEL).iloc[2:]
    for r in d.itertuples():
        if r.outcome == "cannot pass":
            assert r.best_p >= 0.05
        else:
            assert r.runs.startswith("3 of 3") and "at the loosest Holm step, 0.05" in r.outcome
    strict = [int(o.split("within ")[1].split(" s")[0]) for o in d["outcome"] if "if the" in o]
    assert strict == [91, 66, 52]


# --------------------------------------------------------------------------- superseded


def current_run(root: Path, style: str, users: int, rep: int) -> Path:
    """A method-1 run of the current method (users' requests, a ramp) that outlived its cap
    (Little's law's expectation at these loads)."""
    d = root / f"until_failure-shop-{style}-u{users}-r{rep}"
    d.mkdir(parents=True)
    t0, ramp_s = 1000.0, users / 10 + 6
    crit = Criteria(cap_s=CAP, await_restart="always", failure_source=LOAD).as_dict()
    little = {"users": users, "call_timeout_s": 15.0, "response_s": 0.67,
              "verdict": "the load alone cannot make calls time out"}  # fmt: skip
    params = {"method": "until_failure", "users": users, "repetition": rep,
              "plan": {"spawn_rate": 10.0, "cap_s": CAP, "users": users},
              "common": {"criteria": crit}, "ramp": {"users": users, "ramp_s": ramp_s},
              "little": little}  # fmt: skip
    manifest = {"status": "complete", "kind": "availability", "style": style,
                "stack": f"shop-{style}",
                "backend": "docker", "parameters": params}  # fmt: skip
    (d / "manifest.json").write_text(json.dumps(manifest))
    events = [("ramp_start", t0), ("load_start", t0), ("start", t0 + 2), ("ramp_end", t0 + ramp_s)]
    (d / "events.jsonl").write_text("".join(json.dumps({"event": e, "t": t}) + "\n"
                                            for e, t in events))  # fmt: skip
    summary = {"ramp": {"users_up_s": users / 10 + 1.4, "late": False},
               "little": {"observed": {"x_rps": 500.0, "response_s": users / 500}}}  # fmt: skip
    (d / "summary.json").write_text(json.dumps(summary))
    up = t0 + ramp_s
    log = CycleLog(d)
    log.append(Cycle(0, CycleStatus.CENSORED, up, CAP, t_end=up + CAP))
    log.close()
    return d


def test_a_run_records_its_time_to_failure_from_the_ramps_end(tmp_path: Path) -> None:
    """What the runner writes into a method-1 run's summary (``time_to_failure``), as the
    claims read it: here censored at the cap, counted from the ramp_end mark."""
    d = current_run(tmp_path, "rest", 400, 1)
    assert runner.time_to_failure(d, CAP) == {
        "ttf_s": CAP, "failed": False, "cap_s": CAP, "startup_failures": 0, "t_ramp_end": 1046.0,
    }  # fmt: skip


def test_superseded_runs_are_listed_never_judged(tmp_path: Path) -> None:
    """The committed probe-judged runs and one new run per style at 400 users: only the new
    ones enter the summary and the claims; a claim on a cell with only superseded runs is
    not measured and names it; every run is listed with how it was judged."""
    exp = experiments("full", "docker", tmp_path, ("until_failure",))
    old = profiles.superseded_dirs(DOCKER)
    if not old:
        pytest.skip("no committed method-1 runs")
    for d in old:  # the confirmation replaced the three at 400 users' first runs
        if "-u400-r1" not in d.name:
            shutil.copytree(d, exp.directory / d.name)
    for style in ("rest", "grpc", "amqp"):
        current_run(exp.directory, style, 400, 1)
    runs = exp.load()
    assert len(runs.until_failure) == 3 and len(runs.superseded) == 24
    a = analysis.analyse(runs, "full")
    assert set(a.until_failure["users"]) == {400} and a.until_failure["runs"].tolist() == [1] * 3
    t = a.claims.set_index("claim_id")
    for cid in ("P14a", "P14d", "P13a"):  # every cell outlived the cap, or is predicted to
        assert t.loc[cid, "verdict"] == "underpowered", t.loc[cid, "reason"]
        assert t.loc[cid, "reason"].startswith(until_failure.PREDICTED)
    assert "grpc@400: its 1 run(s) outlived the cap" in t.loc["P14d", "reason"]
    assert "grpc@300: predicted to outlive the cap" in t.loc["P14d", "reason"]
    assert "rest@200: predicted" in t.loc["P14a", "reason"]
    assert t.loc["P13d", "verdict"] == "inconclusive"  # a stated MTTF: runs could refute it
    assert "no run of the current method in amqp@200" in t.loc["P13d", "reason"]
    runs_t = a.until_failure_runs
    assert len(runs_t) == 27 and (runs_t["judged"] == until_failure.CURRENT).sum() == 3
    new = runs_t[runs_t["judged"] == until_failure.CURRENT].iloc[0]
    assert new["spawn_rate"] == 10.0 and new["ramp_end_s"] == 46.0 and new["users_up_s"] == 41.4
    assert new["ttf_s"] == CAP and not new["failed"] and new["predicted_response_s"] == 0.67
    olds = runs_t[runs_t["judged"] == until_failure.SUPERSEDED]
    assert olds["users_up_s"].notna().all() and (olds["predicted"] == "not recorded").all()
    none = until_failure.cells_without_current_runs(runs_t)
    assert len(none) == 6 and "rest@400" not in none


@pytest.mark.parametrize("spoiler", ["failure", "times out"])
def test_no_prediction_where_the_style_failed_or_littles_law_times_calls_out(
    tmp_path: Path, spoiler: str
) -> None:
    """The prediction can fail: a style whose confirmation run failed, or whose Little's law
    says the load alone times calls out, gets no predicted cell, and its claims on cells
    with no current run stay not measured (the other styles' are still predicted)."""
    exp = experiments("full", "docker", tmp_path, ("until_failure",))
    for style in ("rest", "grpc", "amqp"):
        d = current_run(exp.directory, style, 400, 1)
        if style != "grpc":
            continue
        if spoiler == "failure":
            (d / "cycles.csv").unlink()  # failed 120 s after the ramp's end, back 10 s later
            log = CycleLog(d)
            log.append(Cycle(0, CycleStatus.RECOVERED, 1046.0, 120.0, ttr_s=10.0,
                             t_fail=1166.0, t_fail_detected=1166.5, t_restart=1167.0,
                             t_recovered=1176.0,
                             t_end=1176.0))  # fmt: skip
            log.close()
        else:
            m = json.loads((d / "manifest.json").read_text())
            m["parameters"]["little"]["response_s"] = 30.0  # above the 15 s call timeout
            (d / "manifest.json").write_text(json.dumps(m))
    t = analysis.analyse(exp.load(), "full").claims.set_index("claim_id")
    assert t.loc["P14c", "verdict"] == "inconclusive"  # grpc@300 against grpc@200
    assert t.loc["P14a", "verdict"] == "underpowered"  # rest: still predicted
    for cid in ("P14c", "P13b"):  # grpc@200 in both: no prediction (P13b has a power row)
        assert not str(t.loc[cid, "reason"]).startswith(until_failure.PREDICTED)


def test_only_superseded_runs_judge_nothing() -> None:
    """The committed reference's superseded runs alone (its runs of the current method left
    out): every claim of method 1 not measured, each saying why."""
    if not DOCKER.exists():
        pytest.skip("no docker availability reference")
    runs = experiments("full", "docker", DOCKER.parent, ("until_failure",)).load()
    assert len(runs.superseded) == 27 and len(runs.until_failure) == 3  # the confirmation
    old = AvailabilityRuns(superseded=runs.superseded)
    effects, _ = analysis._until_failure_effects(old, pd.DataFrame(), {}, 0.95)
    assert all("superseded" in e.missing for e in effects.values())


def test_compare_keeps_superseded_runs_apart(tmp_path: Path) -> None:
    old = [d for d in profiles.superseded_dirs(DOCKER) if d.name.endswith("-rest-u400-r2")]
    if not old:
        pytest.skip("no committed method-1 runs")
    shutil.copytree(old[0], tmp_path / old[0].name)
    current_run(tmp_path, "rest", 400, 1)
    cells = compare.cell_statistics(compare.run_set(tmp_path))
    assert set(cells["cell"]) == {
        "until_failure-shop-rest-u400", "until_failure-shop-rest-u400" + compare.SUPERSEDED,
    }  # fmt: skip
    assert (cells["n"] == 1).all()


def test_a_sitting_moves_the_superseded_run_at_its_key_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The confirmation makes rest@400's first run again: the committed run at that key is
    moved into superseded/ (kept and listed, never judged), the new one takes its key."""
    from ipclab.backends import local

    old = [d for d in profiles.superseded_dirs(DOCKER) if d.name.endswith("-rest-u400-r1")]
    if not old:
        pytest.skip("no committed method-1 runs")
    exp = experiments("full", "docker", tmp_path, ("until_failure",), users=(400,), repetitions=1)
    shutil.copytree(old[0], exp.directory / old[0].name)
    monkeypatch.setattr(local, "wait_ready", lambda *a, **k: None)
    monkeypatch.setattr(profiles, "run_until_failure",
                        lambda st, path, *a: current_run(path.parent, "rest", 400, 1))  # fmt: skip
    job = profiles.Job("until_failure", "shop-rest", 400, 1)
    exp._run_job(job, SimpleNamespace(gateway_url="http://x"), lambda _: None)  # type: ignore[arg-type]
    aside = exp.directory / profiles.SUPERSEDED_FOLDER / old[0].name
    assert profiles.superseded_dirs(exp.directory) == [aside]
    runs = exp.load()
    assert [r.path for r in runs.until_failure] == [exp.directory / old[0].name]
    assert [r.path for r in runs.superseded] == [aside]
    (exp.directory / old[0].name / "manifest.json").unlink()  # an unfinished run: made again
    exp._run_job(job, SimpleNamespace(gateway_url="http://x"), lambda _: None)  # type: ignore[arg-type]
    assert profiles.superseded_dirs(exp.directory) == [aside] and len(exp.load().until_failure) == 1


# --------------------------------------------------------------------------- the subset


def test_the_confirmation_is_the_full_profiles_runs(tmp_path: Path) -> None:
    full = experiments("full", "docker", tmp_path, ("until_failure",))
    sub = experiments("full", "docker", tmp_path, ("until_failure",), users=(400,), repetitions=1)
    keys = [j.key for j in sub.order()]
    assert keys == [j.key for j in full.order() if j.users == 400 and j.repetition == 1]
    assert len(keys) == 3 and [j.key for j in sub.todo()] == keys
    assert sub.directory == full.directory  # the report reads the subset's runs
    current_run(sub.directory, "grpc", 400, 1)
    got = full.load().until_failure
    assert [r.path.name for r in got] == ["until_failure-shop-grpc-u400-r1"]
    with pytest.raises(ValueError, match="not \\[250\\]"):
        experiments("full", "docker", tmp_path, ("until_failure",), users=(250,))


def test_the_cli_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--backend", "docker", "--method", "until_failure", "--users", "400", "--runs", "1",
            "--root", str(tmp_path), "--dry-run"]  # fmt: skip
    assert cli(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert "3 runs selected, 0 reused, 3 to make: about 0.83 h" in out[0]
    assert sorted(x.strip() for x in out[1:]) == [
        f"until_failure-shop-{s}-u400-r1" for s in ("amqp", "grpc", "rest")
    ]
    with pytest.raises(SystemExit):
        cli(["--users", "250", "--dry-run", "--root", str(tmp_path)])


def test_the_documented_sittings_are_generated() -> None:
    doc = (REPO_ROOT / "docs/availability.md").read_text()
    blocks = {m.group("name"): m.group(0) for m in GENERATED.finditer(doc)}
    body = plan.m1_sittings_markdown()
    assert body in blocks["availability-m1-sittings"]
    assert (
        "nice -n 10 python -m ipclab.studies.shafabakhsh.availability --backend docker "
        "--method until_failure --users 400 --runs 1 --root data/runs/reference" in body
    )
    assert "3 runs to make: about 50 min" in body and "24 runs to make" in body
