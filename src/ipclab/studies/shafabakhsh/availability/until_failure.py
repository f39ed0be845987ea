"""Method 1's claims with the run as the unit (docs/statistics.md section 6): each run's
time to failure or to its cap, start-up failures apart, its A over its whole observation
(a run that outlived its cap: all of it up); the MTTF tests on those runs, the exponential
model used only where the runs support it (``ipclab.availability.survival``), and what
decided stated per test (the claims table's ``model_check``); their power with censoring
and their machine-hours priced per cell from that cell's own runs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.availability import survival
from ipclab.availability.classify import ramp_end_of, run_cycles
from ipclab.availability.estimators import mttf_bounds, mttf_ratio, mttf_value_p
from ipclab.availability.little import LittlePrediction
from ipclab.paths import from_repo
from ipclab.published import Claim
from ipclab.runs import Run
from ipclab.stats import Interval

#: how a censored MTTF value claim is measured under the exponential model (p_method)
CENSORED_METHOD = "exact (Poisson), censored runs included"
#: the direction test under the exponential model, and without it: section 3's exact
#: permutation test of two means, on each run's time to failure restricted to the cap (its
#: values are said in the claims table's ``model_check``; its floor is the permutation
#: test's, so the design check knows it by this name)
POISSON_METHOD = "exact (Poisson rates)"
RESTRICTED_METHOD = "permutation"
DEFAULT_CAP_S = 900.0


def _info(run: Run) -> dict[str, Any]:
    p = run.parameters
    return {
        "style": run.manifest.get("style"),
        "users": int(p.get("users", 0)),
        "repetition": int(p.get("repetition", 1)),
        "run": run.path.name,
    }


def cap_of(run: Run) -> float:
    """The run's cap: its plan's, else its criteria's, else the full profile's 900 s."""
    p = run.parameters
    criteria = (p.get("common") or {}).get("criteria") or {}
    return float((p.get("plan") or {}).get("cap_s") or criteria.get("cap_s") or DEFAULT_CAP_S)


def ramp_end(run: Run) -> float | None:
    """When the load was fully up, by the detector's own rule
    (:func:`ipclab.availability.classify.ramp_end_of`: the run's ``ramp_end`` event, else its
    ``load_start`` plus users / spawn rate plus one detector window); None without a
    ``load_start``."""
    return ramp_end_of(run)


def run_rows(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per method-1 run (the unit): ``ttf_s`` (to its failure, or to its cap when
    ``failed`` is False; none when every failure was a start-up one), ``startup`` (start-up
    failures, apart), ``mttf_s`` (failed runs only), ``mttr_s`` (restart to recovery) and
    ``availability`` (up / (up + down) over the run: 1 for a run that outlived its cap)."""
    rows = []
    for r in runs:
        o = survival.run_outcome(run_cycles(r), cap_of(r), ramp_end(r))
        rows.append({
            **_info(r), "ttf_s": np.nan if o.time_s is None else o.time_s,
            "failed": o.failed, "cap_s": o.cap_s, "startup": o.startup,
            "mttf_s": o.time_s if o.failed else np.nan,
            "mttr_s": np.nan if o.restart_to_recovery_s is None else o.restart_to_recovery_s,
            "availability": o.availability if o.time_s is not None else np.nan,
        })  # fmt: skip
    return pd.DataFrame(rows)


def cell_times(rows: pd.DataFrame, style: str, users: int) -> survival.CellTimes | None:
    """A cell's runs with a time to failure (None: no run of the cell at all)."""
    if rows.empty:
        return None
    sel = rows[(rows["style"] == style) & (rows["users"] == users)]
    if sel.empty:
        return None
    sel = sel[pd.to_numeric(sel["ttf_s"], errors="coerce").notna()]
    return survival.CellTimes.of(
        f"{style}@{users}", sel["ttf_s"].to_numpy(float), sel["failed"].to_numpy(bool),
        sel["cap_s"].to_numpy(float),
    )  # fmt: skip


def _startup_note(rows: pd.DataFrame, cells: Sequence[tuple[str, int]]) -> str:
    if rows.empty or "startup" not in rows:
        return ""
    said = []
    for s, u in cells:
        sel = rows[(rows["style"] == s) & (rows["users"] == u)]
        k = int(sel["startup"].sum())
        if k:
            said.append(f"{s}@{u}: {k} start-up failure(s) set apart")
    return "; ".join(said)


# --------------------------------------------------------------------------- the runs

#: how a method-1 run was judged, by whether the current method made it
CURRENT = "current: the users' requests, users spawned on a ramp"
SUPERSEDED = "superseded: the probe's 1 s timeout, every user at once (before issue 46); not used"


def _users_up_s(run: Run) -> float | None:
    """Seconds from the load's start to the first second Locust's history shows every user
    (the run's ``ramp`` summary where it has one; else from its history)."""
    got = ((run.summary or {}).get("ramp") or {}).get("users_up_s")
    if got is not None:
        return float(got)
    start = next((e for e in run.events() if e.get("event") in ("ramp_start", "load_start")),
                 None)  # fmt: skip
    if start is None or not (run.path / "locust_stats_history.csv").exists():
        return None
    h = run.history()
    h = h[h["Name"] == "Aggregated"] if "Name" in h.columns else h
    users = int(run.parameters.get("users", 0))
    full = h.loc[pd.to_numeric(h["User Count"], errors="coerce") >= users, "Timestamp"]
    return float(full.min()) - float(start["t"]) if len(full) else None


def _spawn(run: Run) -> dict[str, Any]:
    """A run's ramp: its spawn rate, when it counted as fully up (from the load's start:
    the run's ``ramp`` summary, else its ``ramp_end`` mark, else the detector's rule) and
    when Locust had every user up."""
    users = int(run.parameters.get("users", 0))
    rate = (run.parameters.get("plan") or {}).get("spawn_rate") or users
    summary = (run.summary or {}).get("ramp") or {}
    start = next((e for e in run.events() if e.get("event") in ("ramp_start", "load_start")),
                 None)  # fmt: skip
    end = ramp_end(run)
    end_s = np.nan if end is None or start is None else end - float(start["t"])
    return {
        "spawn_rate": float(rate) if rate else np.nan,
        "ramp_end_s": summary.get("ramp_end_s", end_s),
        "users_up_s": _users_up_s(run),
        "late": summary.get("late"),
    }


def _little(run: Run) -> dict[str, Any]:
    """The run's Little's-law prediction (its parameters) beside what its users saw under
    the full load (its summary); none for runs made before it was recorded."""
    pred = run.parameters.get("little") or {}
    seen = ((run.summary or {}).get("little") or {}).get("observed") or {}
    return {
        "predicted_response_s": pred.get("response_s"),
        "call_timeout_s": pred.get("call_timeout_s"),
        "predicted": pred.get("verdict") or "not recorded",
        "observed_x_rps": seen.get("x_rps"),
        "observed_response_s": seen.get("response_s"),
    }


def run_table(current: Sequence[Run], superseded: Sequence[Run] = ()) -> pd.DataFrame:
    """Every method-1 run, one row each (the report's ``until_failure_runs``): how it was
    judged (``judged``: the current method, or superseded and not used), its ramp (spawn
    rate; when the load counted as fully up and when Locust had every user up, both from
    the load's start), its time to failure from the ramp's end or to its cap (``ttf_s``,
    ``failed``; start-up failures apart, ``startup``) and Little's-law prediction beside
    what its users saw."""
    out = []
    for runs, judged in ((current, CURRENT), (superseded, SUPERSEDED)):
        rows = run_rows(runs)
        for r, row in zip(runs, rows.to_dict("records"), strict=True):
            out.append({
                **{k: row[k] for k in ("style", "users", "repetition", "run")},
                "judged": judged, **_spawn(r),
                **{k: row[k] for k in ("ttf_s", "failed", "startup", "cap_s")},
                **_little(r),
            })  # fmt: skip
    return pd.DataFrame(out)


def cells_without_current_runs(table: pd.DataFrame) -> list[str]:
    """The cells (``style@users``) of :func:`run_table` whose every run is superseded."""
    if table.empty:
        return []
    current = table["judged"] == CURRENT
    by_cell = current.groupby([table["style"], table["users"]]).any()
    return [f"{s}@{u}" for (s, u), any_current in by_cell.items() if not any_current]


def superseded_effects(
    claims: Sequence[Claim],
    rows: pd.DataFrame,
    superseded: Sequence[Run],
    users_map: Mapping[int, int],
) -> dict[str, claims_mod.Effect]:
    """Method 1's claims one of whose cells has no run of the current method but superseded
    ones: not measured, and why (its superseded runs are never mixed with current ones)."""
    old = pd.DataFrame([_info(r) for r in superseded])
    out = {}
    for c in claims:
        if c.test == "compare":
            continue
        cells = [(c.a_style, users_map.get(u, u)) for u in c.a_users]
        cells += [(c.b_style, users_map.get(u, u)) for u in c.b_users]
        said = [_superseded_cell(rows, old, s, u) for s, u in dict.fromkeys(cells)]
        said = [w for w in said if w]
        if said:
            out[c.claim_id] = claims_mod.Effect.unmeasured("; ".join(said))
    return out


def _superseded_cell(rows: pd.DataFrame, old: pd.DataFrame, style: str, users: int) -> str:
    def count(t: pd.DataFrame) -> int:
        return 0 if t.empty else int(((t["style"] == style) & (t["users"] == users)).sum())

    n = count(old)
    if not n or count(rows):
        return ""
    return (
        f"no run of the current method in {style}@{users}: its {n} committed run(s) were "
        "judged by the probe's 1 s timeout with every user spawned at once (slowness and "
        "start-up, issue 46), superseded and not used"
    )


# --------------------------------------------------------------------------- predicted

#: the verdict's reason where a direction is predicted to see no failure (docs/statistics.md
#: section 6, "A direction no run can decide")
PREDICTED = "underpowered by design (predicted censored)"


def censored_confirmations(table: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Per style, its confirmation: the style's current runs at its highest load, when every
    current run of the style (at any load) outlived its cap with no start-up failure and the
    highest load's Little's-law prediction (recorded before each run) says the load alone
    cannot time calls out (N / X_max - Z <= the call timeout). Styles with a failure, a
    start-up failure or no prediction are left out."""
    out: dict[str, dict[str, Any]] = {}
    if table.empty:
        return out
    cur = table[table["judged"] == CURRENT]
    for style, g in cur.groupby("style"):
        top = g[g["users"] == g["users"].max()]
        resp = pd.to_numeric(top["predicted_response_s"], errors="coerce")
        timeout = pd.to_numeric(top["call_timeout_s"], errors="coerce")
        if _outlived(g).all() and resp.notna().all() and (resp <= timeout).all():
            out[str(style)] = {
                "users": int(top["users"].iloc[0]), "runs": len(top),
                "cap_s": float(top["cap_s"].min()), "response_s": float(resp.max()),
                "timeout_s": float(timeout.min()),
            }  # fmt: skip
    return out


def _outlived(runs: pd.DataFrame) -> pd.Series:
    """Per run: it outlived its cap (a time, no failure, no start-up failure)."""
    timed = pd.to_numeric(runs["ttf_s"], errors="coerce").notna()
    return timed & ~runs["failed"].astype(bool) & (runs["startup"] == 0)


def _censored_cell(table: pd.DataFrame, confirmed: Mapping[str, dict[str, Any]],
                   style: str, users: int) -> tuple[bool, str]:  # fmt: skip
    """Whether a cell's every run outlives the cap, observed or predicted, and what says so;
    (False, "") where neither holds."""
    cur = table[(table["judged"] == CURRENT) & (table["style"] == style)
                & (table["users"] == users)]  # fmt: skip
    if len(cur):
        why = f"{style}@{users}: its {len(cur)} run(s) outlived the cap"
        return bool(_outlived(cur).all()), why
    c = confirmed.get(style)
    if c is None or users > c["users"]:
        return False, ""
    return True, (
        f"{style}@{users}: predicted to outlive the cap (no run made): Little's law gives "
        f"{style}@{c['users']} at most {c['response_s']:.2g} s of response against the "
        f"{c['timeout_s']:g} s call timeout (less at {users} users), and its {c['runs']} "
        f"run(s) outlived the {c['cap_s']:g} s cap"
    )


def predicted_censored(
    claims: Sequence[Claim], table: pd.DataFrame, users_map: Mapping[int, int]
) -> dict[str, str]:
    """Method 1's MTTF directions that no number of runs could decide, as predicted
    (docs/statistics.md section 6): a cell with no run of the current method whose style's
    confirmation (:func:`censored_confirmations`) ran at its load or above, and the other
    cell the same or observed with every run censored. Every run of both cells outliving
    the cap, the test on runs gives p = 1 at any number of runs: the claim is underpowered
    by design and its runs are not spent. The reason, per claim id, names each cell's
    evidence."""
    confirmed = censored_confirmations(table)
    out = {}
    for c in claims:
        if c.metric != "mttf_s" or c.test != "direction":
            continue
        if len(c.a_users) != 1 or len(c.b_users) != 1:
            continue
        sides = [(c.a_style, users_map.get(c.a_users[0], c.a_users[0])),
                 (c.b_style, users_map.get(c.b_users[0], c.b_users[0]))]  # fmt: skip
        cells = [_censored_cell(table, confirmed, str(s), int(u)) for s, u in sides]
        predicted = any("predicted" in why for _, why in cells)
        if predicted and all(ok for ok, _ in cells):
            out[c.claim_id] = (
                f"{PREDICTED}: with every run of both cells outliving the cap the test on "
                "runs gives p = 1 at any number of runs, so no run is spent on it; "
                + "; ".join(why for _, why in cells)
            )
    return out


# --------------------------------------------------------------------------- effects


@dataclass(frozen=True)
class Judged:
    """What decided a test's model: whether the exponential model was used, and the
    sentence the claims table's ``model_check`` column and the reason give."""

    exponential: bool
    text: str


def value_effect(
    c: Claim, cell: survival.CellTimes, users: int, confidence: float
) -> tuple[claims_mod.Effect, Judged]:
    """A stated MTTF ("about seven minutes") against one cell's runs: the time-terminated
    chi-square interval and exact Poisson p where the runs support the exponential model,
    else the model-free bound (``survival.model_free_bounds``)."""
    number = float(c.published_number or math.nan)
    check = survival.exponential_check([cell])
    if check.supported:
        est, lo, hi = mttf_bounds(cell.time_on_test, cell.failures, confidence)
        p, method = mttf_value_p(cell.time_on_test, cell.failures, number), CENSORED_METHOD
        used = "so the time-terminated chi-square interval (exponential) decides"
    else:
        est, lo, hi, p, method = survival.model_free_bounds(cell, number, confidence)
        used = (
            "so, with no model, the t interval of the mean decides (every run failed)"
            if cell.failures == cell.n
            else "so the model-free bound decides: MTTF >= cap x the exact lower bound of the "
            f"share of runs that outlived it ({lo:.0f} s), no upper bound"
        )
    e = claims_mod.value_effect(c, est, lo, hi, cell.n, p, method, users=str(users))
    return e, Judged(check.supported, f"{check.text}: {used}")


def direction_effect(
    a: survival.CellTimes,
    b: survival.CellTimes,
    users: str,
    confidence: float,
    n_boot: int = survival.N_BOOT,
) -> tuple[claims_mod.Effect, Judged]:
    """MTTF a against b: the exact test of two Poisson rates where both cells' runs support
    the exponential model, else the exact permutation test of the restricted mean time to
    failure on runs (its interval by inversion, its floor 2 / C(2n, n)); the other beside
    it (``p_permutation``: the test on runs)."""
    check = survival.exponential_check([a, b], n_boot)
    rt = survival.restricted_test(a, b, confidence)
    floor = f"smallest p at {a.n} + {b.n} runs: {rt.floor:.2g}"
    if check.supported:
        est, lo, hi, p = mttf_ratio(a.failures, a.time_on_test, b.failures, b.time_on_test,
                                    confidence)  # fmt: skip
        e = claims_mod.Effect(
            Interval(est, lo, hi, min(a.n, b.n), confidence, "exact"),
            mttf_bounds(a.time_on_test, a.failures, confidence)[0],
            mttf_bounds(b.time_on_test, b.failures, confidence)[0],
            min(a.n, b.n), a.n, b.n, p, POISSON_METHOD, p_permutation=rt.p_value,
            users=users, open_ended=True, p_floor=0.0,
        )  # fmt: skip
        used = (
            f"so the exact test of two Poisson rates decides (the test on runs beside it: "
            f"p = {rt.p_value:.2g}, {floor})"
        )
        return e, Judged(True, f"{check.text}: {used}")
    e = claims_mod.Effect(
        Interval(rt.ratio, rt.low, rt.high, min(a.n, b.n), confidence, "exact (inverted)"),
        rt.mean_a, rt.mean_b, min(a.n, b.n), a.n, b.n, rt.p_value, RESTRICTED_METHOD,
        p_permutation=rt.p_value, users=users, open_ended=True, p_floor=rt.floor,
    )  # fmt: skip
    used = (
        f"so the exact permutation test on runs decides (mean time to failure restricted to "
        f"the {rt.cap_s:.0f} s cap, {floor})"
    )
    return e, Judged(False, f"{check.text}: {used}")


def mttf_effects(
    claims: Sequence[Claim], rows: pd.DataFrame, users_map: Mapping[int, int], confidence: float
) -> tuple[dict[str, claims_mod.Effect], dict[str, Judged]]:
    """The effects of the single-load MTTF claims from the runs (``run_rows``), censored runs
    included, and per claim the model check that chose its test (the claims table's
    ``model_check``)."""
    effects: dict[str, claims_mod.Effect] = {}
    model: dict[str, Judged] = {}
    for c in claims:
        if c.metric != "mttf_s" or c.test not in ("value", "direction") or len(c.a_users) != 1:
            continue
        if c.test == "direction" and len(c.b_users) != 1:
            continue
        sides = [(c.a_style, users_map.get(c.a_users[0], c.a_users[0]))]
        if c.test == "direction":
            sides.append((c.b_style, users_map.get(c.b_users[0], c.b_users[0])))
        cells = [cell_times(rows, s, u) for s, u in sides]
        why = _unmeasured(sides, cells, rows)
        if why:
            effects[c.claim_id] = claims_mod.Effect.unmeasured(why)
            model[c.claim_id] = Judged(False, "exponential model not checked: no runs to check")
            continue
        if c.test == "value":
            e, text = value_effect(c, cells[0], sides[0][1], confidence)  # type: ignore[arg-type]
        else:
            ua, ub = sides[0][1], sides[1][1]
            e, text = direction_effect(cells[0], cells[1], str(ua) if ua == ub else  # type: ignore[arg-type]
                                       f"{ua} vs {ub}", confidence)  # fmt: skip
        note = _startup_note(rows, sides)
        effects[c.claim_id] = e
        model[c.claim_id] = Judged(text.exponential, text.text + (f"; {note}" if note else ""))
    return effects, model


def _unmeasured(
    sides: Sequence[tuple[str, int]], cells: Sequence[survival.CellTimes | None], rows: pd.DataFrame
) -> str:
    """Why a claim's cells give no time to failure ("" when they do)."""
    none = [f"{s}@{u}" for (s, u), c in zip(sides, cells, strict=True) if c is None]
    if none:
        return f"no runs for {', '.join(none)}"
    startup = [
        f"{s}@{u}" for (s, u), c in zip(sides, cells, strict=True) if c is not None and c.n == 0
    ]
    if startup:
        return (
            f"every run of {', '.join(startup)} failed at start-up (before the load was fully "
            "up): no time to failure"
        )
    return ""


def missing_values(
    claims: Sequence[Claim], rows: pd.DataFrame, users_map: Mapping[int, int]
) -> dict[str, claims_mod.Effect]:
    """Claims on a per-run metric (MTTR, A) one of whose cells has runs but no value of it,
    with the reason the runs give (none failed: no repair time; none recovered)."""
    out = {}
    for c in claims:
        if c.metric not in ("mttr_s", "availability") or c.test == "value":
            continue
        cells = [(c.a_style, u) for u in c.a_users] + [(c.b_style, u) for u in c.b_users]
        said = [_why_no_value(rows, c.metric, s, users_map.get(u, u)) for s, u in cells]
        said = [w for w in said if w]
        if said:
            out[c.claim_id] = claims_mod.Effect.unmeasured("; ".join(said))
    return out


def _why_no_value(rows: pd.DataFrame, metric: str, style: str, users: int) -> str:
    if rows.empty:
        return ""
    sel = rows[(rows["style"] == style) & (rows["users"] == users)]
    if sel.empty or pd.to_numeric(sel[metric], errors="coerce").notna().any():
        return ""
    failed = int(sel["failed"].sum())
    what = {"mttr_s": "no repair time", "availability": "no availability"}[metric]
    how = (
        f"none of its {len(sel)} runs failed (each outlived its cap)" if not failed
        else f"{failed} of its {len(sel)} runs failed, none recovered after the restart"
    )  # fmt: skip
    return f"{what} in {style}@{users}: {how}"


# --------------------------------------------------------------------------- power


def published_mttfs() -> dict[str, float]:
    """The thesis's Table 5.4 MTTF per style, in seconds."""
    from ipclab.studies.shafabakhsh.availability_published import (
        compare_published_availability,
        load_published_availability,
    )

    t = compare_published_availability(load_published_availability() or [])
    return {str(s): float(m) for s, m in zip(t["style"], t["mttf_s"], strict=True)}


def runs_needed(
    c: Claim, exponential: bool, alpha: float, cap_s: float, mttfs: Mapping[str, float]
) -> tuple[float, str]:
    """Runs per cell an MTTF direction with a published ratio needs at ``alpha`` with 80%
    power, by the test the model check chose (``exponential``: the Poisson rates), at the
    published MTTFs (b's from Table 5.4, a's the published ratio times it), a capped run
    failing only with probability 1 - exp(-cap / MTTF)."""
    mb = mttfs.get(c.b_style, math.nan)
    ma = mb * float(c.published_ratio or math.nan)
    if exponential:
        n = survival.runs_needed_exponential(ma, mb, cap_s, alpha)
        return n, "exact Poisson rates, censored at the cap (a run fails with 1 - exp(-cap / MTTF))"
    n = survival.runs_needed_restricted(ma, mb, cap_s, alpha)
    return n, "exact test on runs (restricted mean to the cap), at the published MTTFs"


def mttf_power(
    claims: Sequence[Claim], rows: pd.DataFrame, users_map: Mapping[int, int],
    model: Mapping[str, Judged], family_size: int,
) -> pd.DataFrame:  # fmt: skip
    """The power rows of method 1's MTTF directions with a published ratio (the power
    table's columns and ``how``), at the family's strictest Holm level."""
    alpha = claims_mod.Rules().alpha / max(family_size, 1)
    mttfs, out, seen = published_mttfs(), [], set()
    for c in claims:
        key = claims_mod.test_key(c)
        if c.metric != "mttf_s" or c.test != "direction" or key in seen:
            continue
        if c.published_ratio is None or not np.isfinite(c.published_ratio):
            continue
        if len(c.a_users) != 1 or len(c.b_users) != 1:
            continue
        seen.add(key)
        ua, ub = (users_map.get(u, u) for u in (c.a_users[0], c.b_users[0]))
        cells = [cell_times(rows, s, u) for s, u in ((c.a_style, ua), (c.b_style, ub))]
        caps = [float(x.caps.min()) for x in cells if x is not None and x.n]
        judged = model.get(c.claim_id)
        exponential = judged is not None and judged.exponential
        need, how = runs_needed(c, exponential, alpha, min(caps, default=DEFAULT_CAP_S), mttfs)
        out.append({
            "family": "until failure", "claim_id": c.claim_id, "comparison": c.describe(),
            "users": str(ua) if ua == ub else f"{ua} vs {ub}",
            "published_ratio": c.published_ratio, "measured_ratio": np.nan,
            "runs_per_cell": min((x.n if x is not None else 0) for x in cells),
            "runs_needed": need if np.isfinite(need) else np.nan, "alpha": alpha, "how": how,
        })  # fmt: skip
    return pd.DataFrame(out)


#: the performance references method 1's Little's-law prediction reads, by backend
PERFORMANCE_REFERENCE = "shafabakhsh-full-{backend}"


def little_prediction(
    style: str,
    users: int,
    backend: str,
    call_timeout_s: float,
    limited: bool,
    root: Path | None = None,
) -> LittlePrediction:
    """Method 1's Little's-law prediction for one cell: X_max, the style's plateau
    throughput in the same backend's committed performance reference (its
    ``results/saturation.csv``, Shafabakhsh's closed loop with no think time), against the
    gateway's call timeout. That reference ran with no resource limits: under method 1's
    (``limited``) the stack's X_max is at most it, so N / X_max is a lower bound of the
    response time the load can hold (said in ``source``). No reference, no prediction."""
    root = from_repo("data/runs/reference") if root is None else Path(root)
    name = PERFORMANCE_REFERENCE.format(backend=backend)
    path = root / name / "results" / "saturation.csv"
    x_max, source = None, f"no {name} reference (results/saturation.csv): no prediction"
    if path.exists():
        sat = pd.read_csv(path)
        got = sat.loc[sat["style"] == style, "plateau_rps"]
        if len(got) and pd.notna(got.iloc[0]):
            x_max = float(got.iloc[0])
            source = f"{name}: {style}'s plateau throughput (results/saturation.csv)"
            if limited:
                source += (
                    ", measured with no resource limits: under method 1's limits X_max is "
                    "at most this, and N / X_max a lower bound"
                )
        else:
            source = f"{name} has no plateau for {style}: no prediction"
    return LittlePrediction(users, call_timeout_s, x_max, source)
