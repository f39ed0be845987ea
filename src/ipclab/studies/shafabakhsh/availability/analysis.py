"""Analysis: cycles, estimators per style and load, thesis table 5.4 beside the measured
values, the outage table and the claims."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.availability.estimators import (
    availability_summary,
    failures_needed,
    mttf_bounds,
    mttf_ratio,
    mttf_value_p,
)
from ipclab.availability.outage import CLASSES, classify_requests, outage_table
from ipclab.availability.tracker import Cycle, read_cycles
from ipclab.published import Claim
from ipclab.runs import Run
from ipclab.stats import Interval
from ipclab.studies.shafabakhsh import published
from ipclab.studies.shafabakhsh.availability.profiles import STYLES, AvailabilityRuns, profile
from ipclab.studies.shafabakhsh.availability_published import (
    compare_published_availability,
    load_published_availability,
)


def _run_info(run: Run) -> dict[str, Any]:
    p = run.parameters
    return {
        "style": run.manifest.get("style"),
        "stack": run.manifest.get("stack"),
        "method": p.get("method"),
        "users": int(p.get("users", 0)),
        "repetition": int(p.get("repetition", 1)),
        "run": run.path.name,
    }


def cycles_frame(runs: list[Run]) -> pd.DataFrame:
    """Every cycle of every run, with the run's style, method, users and repetition."""
    rows = [{**_run_info(r), **c.as_row()} for r in runs for c in read_cycles(r.path)]
    return pd.DataFrame(rows)


def _cycles(runs: list[Run]) -> dict[tuple[str, int], list[Cycle]]:
    out: dict[tuple[str, int], list[Cycle]] = {}
    for r in runs:
        info = _run_info(r)
        out.setdefault((info["style"], info["users"]), []).extend(read_cycles(r.path))
    return out


def summary_table(runs: list[Run], confidence: float = 0.95) -> pd.DataFrame:
    """MTTF, MTTR and A with intervals per style and users, cycles pooled over runs."""
    rows = []
    for (style, users), cycles in sorted(_cycles(runs).items()):
        s = availability_summary(cycles, confidence=confidence)
        rows.append({"style": style, "users": users, "runs": 0, **s.as_row()})
    df = pd.DataFrame(rows)
    if len(df):
        info = pd.DataFrame([_run_info(r) for r in runs])  # runs per (style, users) cell
        n = info.groupby(["style", "users"]).size()
        keys = pd.MultiIndex.from_frame(df[["style", "users"]])
        df["runs"] = n.reindex(keys).fillna(0).astype(int).to_numpy()
        df["masked_faults"] = df["faults_injected"] - df["failures"].where(
            df["faults_injected"] > 0, 0
        )
        df = df.sort_values(["users", "style"], key=_style_key).reset_index(drop=True)
    return df


def _style_key(col: pd.Series) -> pd.Series:
    return col.map({s: i for i, s in enumerate(STYLES)}) if col.name == "style" else col


def _fmt_est(v: Any, lo: Any, hi: Any, digits: int, censored: bool = False) -> str:
    def f(x: Any) -> str:
        return "-" if x is None or pd.isna(x) else f"{float(x):.{digits}f}"

    if censored or v is None or pd.isna(v):
        return f"censored, > {f(lo)}" if lo is not None and not pd.isna(lo) else "no value"
    return f"{f(v)} [{f(lo)}, {f(hi)}]"


def readable(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary as text: estimate [interval] per column, censoring spelled out."""
    if summary.empty:
        return summary
    out = pd.DataFrame(
        {
            "style": summary["style"],
            "users": summary["users"],
            "cycles": summary["n_cycles"],
            "failures": summary["failures"],
            "censored": summary["censored"],
            "MTTF s (chi2 CI)": [
                _fmt_est(r.mttf_s, r.mttf_s_lo, r.mttf_s_hi, 1, bool(r.mttf_s_censored))
                for r in summary.itertuples()
            ],
            "MTTR s (bootstrap CI)": [
                _fmt_est(r.mttr_s, r.mttr_s_lo, r.mttr_s_hi, 2) for r in summary.itertuples()
            ],
            "A (bootstrap CI)": [
                _fmt_est(r.availability, r.availability_lo, r.availability_hi, 4)
                for r in summary.itertuples()
            ],
            "restart to recovery s": pd.to_numeric(
                summary["restart_to_recovery_s"], errors="coerce"
            )
            .fillna(
                pd.to_numeric(
                    summary.get("full_restart_to_first_good_s", pd.Series(np.nan)),
                    errors="coerce",
                )
            )
            .round(2),
            "notes": summary["notes"],
        }
    )
    return out


def claims_rows(until_failure: list[Run], outage: list[Run]) -> pd.DataFrame:
    """Per-run values for :func:`ipclab.claims.evaluate_claims`: method 1 runs give
    ``mttf_s`` (none when censored), ``mttr_s`` (the thesis's: restart to recovery) and
    ``availability``; outage runs give ``outage_failure_fraction``."""
    rows = []
    for r in until_failure:
        info = _run_info(r)
        cyc = [c for c in read_cycles(r.path) if c.failed]
        c = cyc[0] if cyc else None
        rec = c is not None and c.recovered and c.ttr_s is not None
        rows.append(
            {
                **info,
                "mttf_s": c.ttf_s if c is not None else np.nan,
                "mttr_s": c.restart_to_recovery_s if rec and c is not None else np.nan,
                "availability": (
                    c.ttf_s / (c.ttf_s + c.ttr_s) if rec and c is not None and c.ttr_s else np.nan
                ),
            }
        )
    for r in outage:
        frac = r.summary.get("outage_failure_fraction")
        rows.append({**_run_info(r), "outage_failure_fraction": np.nan if frac is None else frac})
    return pd.DataFrame(rows)


def classified_outage(run: Run) -> pd.DataFrame:
    """Every request of an outage run, classed (from the run directory alone)."""
    s = run.summary
    late = float(run.parameters.get("plan", {}).get("late_ms", 1000.0))
    df = classify_requests(run.requests(), s["t_outage_start"], s["t_outage_end"], late)
    info = _run_info(run)
    return df.assign(style=info["style"], repetition=info["repetition"])


def fault_injection_rows(cycles: pd.DataFrame, method: str = "fault_injection") -> pd.DataFrame:
    """One row per run of ``method`` (the run is the unit of replication): its style, its own
    users and its mean MTTR after the restart over its cycles (fault injection: its injected
    faults; the outage experiment: its one stop and restart)."""
    cols = ["style", "users", "run", "mttr_s"]
    if not len(cycles):
        return pd.DataFrame(columns=cols)
    fi = cycles[cycles["method"] == method]
    per_run = fi.groupby(["style", "users", "run"], as_index=False)["restart_to_recovery_s"]
    return per_run.mean().rename(columns={"restart_to_recovery_s": "mttr_s"})[cols]


def _fi_users_map(cycles: pd.DataFrame, method: str = "fault_injection") -> dict[int, int]:
    """The thesis's 200 users stand for the load ``method`` ran at (its own label)."""
    if not len(cycles):
        return {}
    loads = sorted(set(cycles.loc[cycles["method"] == method, "users"].astype(int)))
    return {200: loads[0]} if len(loads) == 1 else {}


def _kind(component: Any) -> str:
    return component if component in ("gateway", "broker") else "service"


def recovery_table(runs: list[Run]) -> pd.DataFrame:
    """Recovery decomposed (``ipclab.availability.recovery``) per style, reconnect setting
    and kind of component restarted: the mean of each part over the recovered cycles, and
    how many runs and cycles it rests on. Runs without ``recovery.csv`` (made before it was
    written) are left out."""
    frames = []
    for r in runs:
        f = r.path / "recovery.csv"
        if not f.exists():
            continue
        parts = pd.read_csv(f)
        if parts.empty:
            continue
        mode = (r.parameters.get("options") or {}).get("reconnect") or "default"
        frames.append(parts.assign(**_run_info(r), reconnect=mode))
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    df["kind"] = df["component"].map(_kind)
    cols = ["detection_s", "reaction_s", "start_s", "reconnect_s", "restart_to_recovery_s"]
    keys = ["method", "style", "reconnect", "kind"]
    out = df.groupby(keys)[cols].mean().reset_index()
    out.insert(4, "runs", df.groupby(keys)["run"].nunique().to_numpy())
    out.insert(5, "cycles", df.groupby(keys).size().to_numpy())
    return out.sort_values(["method", "kind", "reconnect", "style"], key=_style_key).reset_index(
        drop=True
    )


def configuration_share(recovery: pd.DataFrame) -> pd.DataFrame:
    """How much of each style's MTTR (restart to recovery) is client configuration: per
    style and kind of component restarted, fault injection's mean at the default reconnect
    settings against the tuned run's, and the share the tuning took away (1 - tuned /
    default; the tuned run has the first default run's schedule)."""
    if recovery.empty or "tuned" not in set(recovery["reconnect"]):
        return pd.DataFrame()
    fi = recovery[recovery["method"] == "fault_injection"]
    wide = fi.pivot_table(
        index=["style", "kind"], columns="reconnect", values="restart_to_recovery_s"
    )
    cycles = fi.pivot_table(index=["style", "kind"], columns="reconnect", values="cycles")
    out = pd.DataFrame(
        {
            "default_s": wide.get("default"),
            "tuned_s": wide.get("tuned"),
            "cycles_default": cycles.get("default"),
            "cycles_tuned": cycles.get("tuned"),
        }
    ).reset_index()
    out["configuration_share"] = 1 - out["tuned_s"] / out["default_s"]
    return out.sort_values(["kind", "style"], key=_style_key).reset_index(drop=True)


def outage_summary(outage_runs: list[Run]) -> pd.DataFrame:
    """Requests per class, per style and phase, summed over repetitions; every request
    issued is in exactly one class (asserted by :func:`ipclab.availability.outage.outage_table`)."""
    if not outage_runs:
        return pd.DataFrame()
    if all(len(r.requests()) for r in outage_runs):
        allreq = pd.concat([classified_outage(r) for r in outage_runs], ignore_index=True)
        table = outage_table(allreq, by=["style", "phase"]).reset_index()
        total = outage_table(allreq, by=["style"]).reset_index().assign(phase="all")
        table = pd.concat([table, total], ignore_index=True)
    else:  # a committed reference keeps each run's classed table, not its request records
        table = _summed_outage_tables(outage_runs)
    order = {p: i for i, p in enumerate(("before", "during", "after", "all"))}
    table = table.sort_values(
        ["style", "phase"],
        key=lambda c: c.map(order) if c.name == "phase" else _style_key(c),
    ).reset_index(drop=True)
    unmatched = {}
    for r in outage_runs:
        u = r.summary.get("gateway_unmatched_replies")
        st = _run_info(r)["style"]
        if u is not None:
            unmatched[st] = unmatched.get(st, 0) + int(u)
    table["gateway_unmatched_replies"] = table["style"].map(unmatched)
    table["runs"] = table["style"].map(
        pd.Series([_run_info(r)["style"] for r in outage_runs]).value_counts()
    )
    return table[["style", "phase", "runs", *CLASSES, "issued", "gateway_unmatched_replies"]]


def _summed_outage_tables(outage_runs: list[Run]) -> pd.DataFrame:
    """The per-run ``outage.csv`` tables (classes per phase), summed per style and phase."""
    frames = [
        pd.read_csv(r.path / "outage.csv").assign(style=_run_info(r)["style"]) for r in outage_runs
    ]
    summed = pd.concat(frames, ignore_index=True).groupby(["style", "phase"], sort=False)
    return summed[[*CLASSES, "issued"]].sum().reset_index()


def published_table() -> pd.DataFrame:
    rows = load_published_availability()
    return compare_published_availability(rows or [])


def _rows(table: pd.DataFrame, **match: Any) -> pd.DataFrame:
    """The rows of ``table`` whose columns equal ``match`` (none when a method did not run)."""
    if table.empty or not set(match) <= set(table.columns):
        return table.iloc[0:0]
    keep = pd.Series(True, index=table.index)
    for col, value in match.items():
        keep &= table[col] == value
    return table[keep]


def side_by_side(
    formula: pd.DataFrame, until_failure: pd.DataFrame, fault_injection: pd.DataFrame, users: int
) -> pd.DataFrame:
    """Thesis table 5.4 (printed and recomputed A) beside method 1 (at ``users``, the load
    standing in for 200) and method 2."""
    rows = []
    for style in STYLES:
        pub = formula[formula["style"] == style]
        m1 = _rows(until_failure, style=style, users=users)
        m2 = _rows(fault_injection, style=style)
        row: dict[str, Any] = {"style": style}
        if len(pub):
            p = pub.iloc[0]
            row.update(
                published_mttf_s=p["mttf_s"],
                published_mttr_s=p["mttr_s"],
                published_a_printed=p["printed_a"],
                published_a_formula=round(float(p["computed_a"]), 4),
            )
        for prefix, m in (("until_failure", m1), ("fault_injection", m2)):
            if len(m):
                r = m.iloc[0]
                row[f"{prefix}_mttf_s"] = _fmt_est(
                    r["mttf_s"], r["mttf_s_lo"], r["mttf_s_hi"], 1, bool(r["mttf_s_censored"])
                )
                row[f"{prefix}_mttr_s"] = _fmt_est(r["mttr_s"], r["mttr_s_lo"], r["mttr_s_hi"], 2)
                r2r = r["restart_to_recovery_s"]
                if (r2r is None or pd.isna(r2r)) and "full_restart_to_first_good_s" in r:
                    r2r = r["full_restart_to_first_good_s"]  # censored: the restart still timed
                row[f"{prefix}_restart_to_recovery_s"] = r2r
                row[f"{prefix}_a"] = _fmt_est(
                    r["availability"], r["availability_lo"], r["availability_hi"], 4
                )
            else:
                row[f"{prefix}_a"] = "not run"
        rows.append(row)
    return pd.DataFrame(rows)


@dataclass
class Analysis:
    profile: str
    until_failure: pd.DataFrame  # summary per style and users
    fault_injection: pd.DataFrame  # summary per style
    cycles: pd.DataFrame  # every cycle
    formula: pd.DataFrame  # compare_published_availability
    side_by_side: pd.DataFrame
    outage: pd.DataFrame
    claims_runs: pd.DataFrame
    claims: pd.DataFrame
    claims_fault_injection: pd.DataFrame
    users_map: dict[int, int]
    # T20/P15 on the outage runs' restart to recovery (one stop and restart of a service)
    claims_mttr_outage: pd.DataFrame = field(default_factory=pd.DataFrame)
    # detection, reaction, start and reconnect per style, reconnect setting and component
    recovery: pd.DataFrame = field(default_factory=pd.DataFrame)
    power: pd.DataFrame = field(default_factory=pd.DataFrame)  # per family, where runs allow


#: One Holm family per experiment (docs/statistics.md section 3), each with the metrics its
#: runs measure: method 1 (until failure) gives MTTF, MTTR and A per run; the outage
#: experiment the share of requests failed in the outage; fault injection (method 2) the
#: MTTR after the restart, one value per run, standing in for the thesis's; the outage
#: experiment's restart of the stopped service the same, a family of its own.
FAMILY_METRICS = {
    "until failure": ("mttf_s", "mttr_s", "availability"),
    "outage": ("outage_failure_fraction",),
    "fault injection": ("mttr_s",),
    "outage recovery": ("mttr_s",),
}


def mttf_effects(
    claims: list[Claim], cells: pd.DataFrame, users_map: dict[int, int], confidence: float
) -> dict[str, claims_mod.Effect]:
    """The effects of the single-load MTTF claims from each cell's failures and time on test,
    runs that survived their cap included (a lower bound on their time to failure;
    docs/statistics.md section 6): a ``value`` against the number its sentence states (the
    time-terminated chi-square interval, the exact Poisson p), a ``direction`` between two
    cells (the conditional test of two Poisson rates, ``mttf_ratio``)."""

    def cell(style: str, users: int) -> tuple[Any, int]:
        u = users_map.get(users, users)
        found = _rows(cells, style=style, users=u)
        return (None if found.empty else found.iloc[0]), u

    out: dict[str, claims_mod.Effect] = {}
    for c in claims:
        if c.metric != "mttf_s" or c.test not in ("value", "direction") or len(c.a_users) != 1:
            continue
        a, ua = cell(c.a_style, c.a_users[0])
        if c.test == "value":
            if a is None:
                out[c.claim_id] = claims_mod.Effect.unmeasured(f"no runs for {c.a_style}@{ua}")
                continue
            number = float(c.published_number or math.nan)
            est, lo, hi = mttf_bounds(float(a["up_s"]), int(a["failures"]), confidence)
            p = mttf_value_p(float(a["up_s"]), int(a["failures"]), number)
            out[c.claim_id] = claims_mod.value_effect(
                c, est, lo, hi, int(a["runs"]), p, CENSORED_METHOD, users=str(ua)
            )
            continue
        if len(c.b_users) != 1:
            continue
        b, ub = cell(c.b_style, c.b_users[0])
        empty = [f"{s}@{u}" for s, u, r in ((c.a_style, ua, a), (c.b_style, ub, b)) if r is None]
        if empty:
            out[c.claim_id] = claims_mod.Effect.unmeasured(f"no runs for {', '.join(empty)}")
            continue
        est, lo, hi, p = mttf_ratio(
            int(a["failures"]), float(a["up_s"]), int(b["failures"]), float(b["up_s"]), confidence
        )
        if np.isnan(est):
            bounds = " and ".join(
                f"{s}@{u} > {mttf_bounds(float(r['up_s']), 0, confidence)[1]:.0f} s"
                for s, u, r in ((c.a_style, ua, a), (c.b_style, ub, b))
            )
            out[c.claim_id] = claims_mod.Effect.unmeasured(
                f"no failure in any run of either cell (MTTF {bounds}): no ratio to test"
            )
            continue
        na, nb = int(a["runs"]), int(b["runs"])
        out[c.claim_id] = claims_mod.Effect(
            Interval(est, lo, hi, min(na, nb), confidence, "exact"),
            mttf_bounds(float(a["up_s"]), int(a["failures"]), confidence)[0],
            mttf_bounds(float(b["up_s"]), int(b["failures"]), confidence)[0],
            min(na, nb), na, nb, p, "exact (Poisson rates)",
            users=str(ua) if ua == ub else f"{ua} vs {ub}", open_ended=True,
        )  # fmt: skip
    return out


def down_share() -> float:
    """The published Table 5.4's mean down share, 1 - MTTF / (MTTF + MTTR)."""
    t = published_table()
    return float((1 - t["computed_a"]).mean())


def mttf_ratio_of(metric: str, ratio: float) -> float:
    """The MTTF ratio a published ratio of ``metric`` stands for: itself for MTTF; for A, by
    the delta method, exp(ln R_A / the published down share)."""
    return math.exp(math.log(ratio) / down_share()) if metric == "availability" else ratio


def mttf_power(claims: list[Claim], cells: pd.DataFrame, users_map: dict[int, int]) -> pd.DataFrame:
    """The runs per cell each MTTF or A comparison of method 1 needs (the power table's
    columns, docs/statistics.md section 7): the failures the exact test of two Poisson
    rates needs to detect the published ratio at the family's strictest Holm level, a run
    giving at most one; A's ratio by the delta method, ln A moving with ln MTTF times the
    published down share (so its ratio 1.02 needs an MTTF ratio near 1.4)."""
    keys = {claims_mod.test_key(c) for c in claims if c.test != "compare"}
    alpha = claims_mod.Rules().alpha / max(len(keys), 1)
    rows, seen = [], set()
    for c in claims:
        if c.metric not in ("mttf_s", "availability") or c.test != "direction":
            continue
        if len(c.a_users) != 1 or len(c.b_users) != 1 or claims_mod.test_key(c) in seen:
            continue
        if c.published_ratio is None or not np.isfinite(c.published_ratio):
            continue
        seen.add(claims_mod.test_key(c))
        need = failures_needed(mttf_ratio_of(c.metric, float(c.published_ratio)), alpha)
        ua, ub = (users_map.get(u, u) for u in (c.a_users[0], c.b_users[0]))
        have = [_rows(cells, style=s, users=u) for s, u in ((c.a_style, ua), (c.b_style, ub))]
        rows.append(
            {
                "family": "until failure",
                "claim_id": c.claim_id,
                "comparison": c.describe(),
                "users": str(ua) if ua == ub else f"{ua} vs {ub}",
                "published_ratio": c.published_ratio,
                "measured_ratio": np.nan,
                "runs_per_cell": min(int(h["runs"].iloc[0]) if len(h) else 0 for h in have),
                "runs_needed": need if np.isfinite(need) else np.nan,
                "alpha": alpha,
            }
        )
    return pd.DataFrame(rows)


def _until_failure_effects(
    runs: AvailabilityRuns, m1: pd.DataFrame, users_map: dict[int, int], confidence: float
) -> dict[str, claims_mod.Effect]:
    """The method-1 family's study-computed effects: the MTTF claims on every run's time on
    test, or, where method 1 did not run, why no claim of the family is measured."""
    claims = family_claims("until failure")
    if not runs.until_failure:
        why = claims_mod.Effect.unmeasured(NOT_RUN)
        return {c.claim_id: why for c in claims}
    return mttf_effects(claims, m1, users_map, confidence)


#: the until-failure family's reason where method 1 did not run (the local reference)
NOT_RUN = (
    "method 1 (until failure) not run here: a time to failure needs a run under load until "
    "it fails (the docker reference); fault injection's up times are its injection schedule, "
    "and its MTTR is judged in the fault-injection claims"
)

#: how a censored MTTF value claim is measured (the claims table's p_method)
CENSORED_METHOD = "exact (Poisson), censored runs included"


def family_claims(family: str) -> list[Claim]:
    """The availability claims one experiment tests (``FAMILY_METRICS``)."""
    metrics = FAMILY_METRICS[family]
    return [c for c in published.claims(scope="availability") if c.metric in metrics]


def _users_map(users: tuple[int, ...]) -> dict[int, int]:
    return {pub: u for pub, u in zip((200, 300, 400), users, strict=False) if pub != u}


def analyse(runs: AvailabilityRuns, profile_name: str) -> Analysis:
    p = profile(profile_name)
    conf = p.common.confidence
    m1 = summary_table(runs.until_failure, conf)
    if len(m1):  # a full restart's recovery, timed even when no failure came (censored)
        full = pd.DataFrame(
            [
                {**_run_info(r), "s": r.summary.get("restart_to_first_good_s")}
                for r in runs.until_failure
            ]
        )
        full["s"] = pd.to_numeric(full["s"], errors="coerce")
        mean = full.groupby(["style", "users"])["s"].mean()
        m1["full_restart_to_first_good_s"] = [
            mean.get((st, u), np.nan) for st, u in zip(m1["style"], m1["users"], strict=True)
        ]
    m2 = summary_table(runs.fault_injection, conf)
    cyc = cycles_frame(runs.all())
    formula = published_table()
    umap = _users_map(p.until_failure_users)
    crow = claims_rows(runs.until_failure, runs.outage)
    evaluated = {
        "until failure": (crow, umap),
        "outage": (crow, {}),
        "fault injection": (fault_injection_rows(cyc), _fi_users_map(cyc)),
        "outage recovery": (fault_injection_rows(cyc, "outage"), _fi_users_map(cyc, "outage")),
    }
    effects = {"until failure": _until_failure_effects(runs, m1, umap, conf)}
    tables = {
        fam: claims_mod.evaluate_claims(
            rows, family_claims(fam), scope="availability", users_map=m, family=fam,
            effects=effects.get(fam),
        )
        for fam, (rows, m) in evaluated.items()
    }  # fmt: skip
    power = pd.concat(
        [
            *(
                claims_mod.repetitions(family_claims(fam), rows, users_map=m).assign(family=fam)
                for fam, (rows, m) in evaluated.items()
            ),
            # method 1's MTTF and A: where it ran (elsewhere its tests say why not)
            mttf_power(family_claims("until failure"), m1, umap) if len(m1) else pd.DataFrame(),
        ],
        ignore_index=True,
    )
    made_by = {
        "until failure": runs.until_failure,
        "outage": runs.outage,
        "fault injection": runs.fault_injection,
        "outage recovery": runs.outage,
    }
    for fam, made in made_by.items():  # each family's tests at the wall time of its runs
        hours = claims_mod.run_hours([r.manifest for r in made])
        tables[fam] = claims_mod.mark_underpowered(tables[fam], power, hours)
    return Analysis(
        profile=profile_name,
        until_failure=m1,
        fault_injection=m2,
        cycles=cyc,
        formula=formula,
        side_by_side=side_by_side(formula, m1, m2, p.until_failure_users[0]),
        outage=outage_summary(runs.outage),
        claims_runs=crow,
        claims=pd.concat([tables["until failure"], tables["outage"]], ignore_index=True),
        claims_fault_injection=tables["fault injection"],
        claims_mttr_outage=tables["outage recovery"],
        users_map=umap,
        power=power,
        recovery=recovery_table([*runs.all(), *runs.tuned]),
    )
