"""Analysis: cycles, estimators per style and load, thesis table 5.4 beside the measured
values, the outage table and the claims."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.availability.classify import run_cycles
from ipclab.availability.estimators import availability_summary
from ipclab.availability.model import STARTUP, Cycle
from ipclab.availability.outage import CLASSES, classify_requests, outage_table
from ipclab.availability.recovery import START_PARTS, decompose
from ipclab.published import Claim
from ipclab.runs import Run
from ipclab.stats.intervals import interval_text
from ipclab.stats.plausibility_runs import annotate
from ipclab.studies.shafabakhsh import published
from ipclab.studies.shafabakhsh.availability import pricing, until_failure
from ipclab.studies.shafabakhsh.availability.profiles import (
    RESTARTS_ITSELF,
    STYLES,
    AvailabilityRuns,
    profile,
)
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
    """Every cycle of every run as it counts (``ipclab.availability.classify``: a failure of
    no injected fault that no request of its own shows is not one), with the run's style,
    method, users and repetition."""
    rows = [{**_run_info(r), **c.as_row()} for r in runs for c in run_cycles(r)]
    return pd.DataFrame(rows)


def _cycles(runs: list[Run]) -> dict[tuple[str, int], list[Cycle]]:
    out: dict[tuple[str, int], list[Cycle]] = {}
    for r in runs:
        info = _run_info(r)
        out.setdefault((info["style"], info["users"]), []).extend(run_cycles(r))
    return out


def summary_table(runs: list[Run], confidence: float = 0.95) -> pd.DataFrame:
    """MTTF, MTTR and A with intervals per style and users, cycles pooled over runs; start-up
    failures (before the load was fully up) apart: counted (``startup_failures``), never in
    the estimators, and a cell whose every failure was one has no value."""
    rows = []
    for (style, users), cycles in sorted(_cycles(runs).items()):
        timed = [c for c in cycles if c.kind != STARTUP]
        startup = sum(1 for c in cycles if c.failed and c.kind == STARTUP)
        s = availability_summary(timed, confidence=confidence)
        row = {"style": style, "users": users, "runs": 0, **s.as_row()}
        if startup:
            note = f"{startup} start-up failure(s) apart, not times to failure"
            row["notes"] = "; ".join(n for n in (note, row["notes"]) if n)
        if not timed:  # nothing observed under the full load: no value, not A = 1
            row.update(availability=None, availability_censored=True, time_availability=None)
        rows.append({**row, "startup_failures": startup})
    df = pd.DataFrame(rows)
    if len(df):
        info = pd.DataFrame([_run_info(r) for r in runs])  # runs per (style, users) cell
        n = info.groupby(["style", "users"]).size()
        keys = pd.MultiIndex.from_frame(df[["style", "users"]])
        df["runs"] = n.reindex(keys).fillna(0).astype(int).to_numpy()
        df["masked_faults"] = df["faults_injected"] - df["failures"].where(
            df["faults_injected"] > 0, 0
        )
        little = little_cells(runs)
        for col in ("predicted_response_s", "call_timeout_s") if little else ():
            df[col] = [little.get((r.style, r.users), {}).get(col) for r in df.itertuples()]
        df = df.sort_values(["users", "style"], key=_style_key).reset_index(drop=True)
    return df


def little_cells(runs: list[Run]) -> dict[tuple[str, int], dict[str, Any]]:
    """Each (style, users) cell's Little's-law prediction as its runs recorded it (the
    ``little`` parameter of method 1's runs, ``ipclab.availability.little``): the lowest
    response time the load can hold, N / X_max, and the call timeout; none for runs made
    before it was recorded."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for run in runs:
        little = run.parameters.get("little") or {}
        if little.get("response_s") is None:
            continue
        info = _run_info(run)
        out.setdefault(
            (str(info["style"]), info["users"]),
            {
                "predicted_response_s": little["response_s"],
                "call_timeout_s": little.get("call_timeout_s"),
            },
        )
    return out


def _little_text(summary: pd.DataFrame) -> list[str]:
    return [
        "no prediction"
        if r.predicted_response_s is None or pd.isna(r.predicted_response_s)
        else f"{float(r.predicted_response_s):.2f} (call timeout {float(r.call_timeout_s):g})"
        for r in summary.itertuples()
    ]


def _style_key(col: pd.Series) -> pd.Series:
    return col.map({s: i for i, s in enumerate(STYLES)}) if col.name == "style" else col


def _fmt_est(v: Any, lo: Any, hi: Any, digits: int, censored: bool = False) -> str:
    def f(x: Any) -> str:
        return "-" if x is None or pd.isna(x) else f"{float(x):.{digits}f}"

    if censored or v is None or pd.isna(v):
        return f"censored, > {f(lo)}" if lo is not None and not pd.isna(lo) else "no value"
    return interval_text(v, lo, hi, f, no_interval=None, open_ends=True)  # a missing end: "-"


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
    if "predicted_response_s" in summary:  # beside the MTTF (runs that recorded it)
        out.insert(list(out.columns).index("MTTF s (chi2 CI)") + 1, "N / X_max s (Little)",
                   _little_text(summary))  # fmt: skip
    return out


def claims_rows(until_failure_runs: list[Run], outage: list[Run]) -> pd.DataFrame:
    """Per-run values for :func:`ipclab.claims.evaluate_claims`, the run being the unit:
    method 1 runs give their time to failure or to the cap (``ttf_s``, ``failed``),
    ``mttf_s`` (failed runs), ``mttr_s`` (the thesis's: restart to recovery) and
    ``availability`` (up / (up + down) over the run, a run that outlived its cap all up:
    1; ``until_failure.run_rows``); outage runs give ``outage_failure_fraction``."""
    rows = until_failure.run_rows(until_failure_runs)
    info = pd.DataFrame([_run_info(r) for r in until_failure_runs])
    if len(rows):
        rows.insert(1, "stack", info["stack"].to_numpy())
        rows.insert(2, "method", info["method"].to_numpy())
    out = [
        {**_run_info(r), "outage_failure_fraction": np.nan if frac is None else frac}
        for r in outage
        for frac in [r.summary.get("outage_failure_fraction")]
    ]
    return pd.concat([rows, pd.DataFrame(out)], ignore_index=True)


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


def recovery_cycles(runs: list[Run]) -> pd.DataFrame:
    """Every recovered cycle's parts (``ipclab.availability.recovery.decompose``, from each
    run's cycles as they count and its events), with the run's style, method, users,
    repetition, backend, reconnect setting, the kind of component restarted and ``kill``:
    the how-many-th kill of that component in its run (a container killed again within 10
    min waits out the kubelet's back-off). Runs without ``recovery.csv`` (made before the
    harness copied the components' ready lines into the events) are left out."""
    frames = []
    for r in runs:
        if not (r.path / "recovery.csv").exists():
            continue
        cycles, events = run_cycles(r), r.events()
        parts = decompose(cycles, events)
        if parts.empty:
            continue
        nth = _kill_numbers(cycles, events)
        mode = (r.parameters.get("options") or {}).get("reconnect") or "default"
        frames.append(
            parts.assign(
                **_run_info(r), backend=r.manifest.get("backend"), reconnect=mode,
                kill=parts["cycle"].map(nth),
            )
        )  # fmt: skip
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    df["kind"] = df["component"].map(_kind)
    return df


def _kill_numbers(cycles: list[Cycle], events: list[dict[str, Any]]) -> dict[int, int]:
    """Each restarted cycle's how-many-th kill of its component in the run: its ``kill``
    events up to the detection (a kill the probe never saw, masked, counts too: the kubelet
    restarted the container all the same); without kill events, its restarted cycles."""
    kills = [(float(e["t"]), e.get("role")) for e in events if e.get("event") == "kill"]
    out: dict[int, int] = {}
    seen: dict[Any, int] = {}
    for c in sorted(cycles, key=lambda c: c.index):
        if c.t_restart is None:
            continue
        seen[c.component] = seen.get(c.component, 0) + 1
        until = c.t_fail_detected if c.t_fail_detected is not None else c.t_restart
        by_event = sum(1 for t, role in kills if role == c.component and t <= until)
        out[c.index] = by_event if kills else seen[c.component]
    return out


def recovery_table(runs: list[Run]) -> pd.DataFrame:
    """Recovery decomposed (``ipclab.availability.recovery``) per style, reconnect setting
    and kind of component restarted: the mean of each part over the recovered cycles as
    they count (:func:`recovery_cycles`; each run's ``recovery.csv`` has the cycles as
    recorded), and how many runs and cycles it rests on."""
    df = recovery_cycles(runs)
    if df.empty:
        return df
    cols = ["detection_s", "reaction_s", "start_s", "reconnect_s", "restart_to_recovery_s"]
    # the start split by the orchestrator's record (kubernetes), where a run has it: the
    # local and compose tables keep their columns
    cols += [c for c in START_PARTS if c in df and df[c].notna().any()]
    df[cols] = df[cols].apply(pd.to_numeric, errors="coerce")
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
    # method 1's runs, one row each: the current ones and the superseded (never judged)
    until_failure_runs: pd.DataFrame = field(default_factory=pd.DataFrame)
    # the recovery decomposition per style beside other backends' references (``beside``):
    # only where the rebuild sets it (the kubernetes reference beside local and docker)
    recovery_backends: pd.DataFrame = field(default_factory=pd.DataFrame)


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


def _until_failure_effects(
    runs: AvailabilityRuns, rows: pd.DataFrame, users_map: dict[int, int], confidence: float
) -> tuple[dict[str, claims_mod.Effect], dict[str, until_failure.Judged]]:
    """The method-1 family's study-computed effects: the MTTF claims on every run's time to
    failure (``until_failure.mttf_effects``: the model check and the test it chose), the
    MTTR and A claims whose cells have runs but no value (why), or, where method 1 did not
    run, why no claim of the family is measured. A claim one of whose cells has only
    superseded runs (made before the current method) is not measured and says so: old
    and current runs are never judged together."""
    claims = family_claims("until failure")
    old = until_failure.superseded_effects(claims, rows, runs.superseded, users_map)
    if not runs.until_failure:
        why = claims_mod.Effect.unmeasured(NOT_RUN)
        return {**{c.claim_id: why for c in claims}, **old}, {}
    effects, model = until_failure.mttf_effects(claims, rows, users_map, confidence)
    missing = until_failure.missing_values(claims, rows, users_map)
    return {**missing, **effects, **old}, model


def with_model_check(table: pd.DataFrame, model: dict[str, until_failure.Judged]) -> pd.DataFrame:
    """The until-failure claims with the check that chose each MTTF test's model: a column
    (``model_check``) and the end of the reason."""
    text = table["claim_id"].map(lambda c: model[c].text if c in model else "")
    reason = table["reason"].astype(str)
    return table.assign(
        model_check=text,
        reason=[f"{r}; {t}" if t else r for r, t in zip(reason, text, strict=True)],
    )


def predicted_underpowered(
    table: pd.DataFrame, runs: AvailabilityRuns, crow: pd.DataFrame, umap: dict[int, int]
) -> pd.DataFrame:
    """The until-failure claims with the directions no run could decide, as predicted
    (``until_failure.predicted_censored``), underpowered by design, their reason first (what
    the claim said before follows it: the cells' superseded runs, the runs the published
    MTTFs would need):
    method 1's rows of ``crow`` (its runs of the current method) with each run's recorded
    Little's-law prediction."""
    little = {r.path.name: r.parameters.get("little") or {} for r in runs.until_failure}
    if table.empty or crow.empty or "run" not in crow:
        return table
    m1 = crow[crow["run"].isin(little)]
    pred = [little[r] for r in m1["run"]]
    m1 = m1.assign(
        judged=until_failure.CURRENT,
        predicted_response_s=[d.get("response_s", np.nan) for d in pred],
        call_timeout_s=[d.get("call_timeout_s", np.nan) for d in pred],
    )
    said = until_failure.predicted_censored(family_claims("until failure"), m1, umap)
    out = table.copy()
    undecided = out["verdict"].isin((claims_mod.INCONCLUSIVE, claims_mod.UNDERPOWERED))
    rows = out["claim_id"].isin(said) & undecided
    out.loc[rows, "verdict"] = claims_mod.UNDERPOWERED
    out.loc[rows, "reason"] = out.loc[rows, "claim_id"].map(said) + "; " + out.loc[rows, "reason"]
    return out


def outage_floor_note(table: pd.DataFrame) -> pd.DataFrame:
    """The outage claims decided by a complete separation (one side 0 in every run, the
    other not): the runs, not their spread, set the p-value; the reason says so, with the
    exact test's floor at these runs and at one run fewer per cell (docs/statistics.md
    section 3)."""
    if table.empty:
        return table
    out = table.copy()
    tests = claims_mod.distinct_tests(out)
    family = max(int((tests["evidence"] == claims_mod.TEST).sum()), 1)
    for i, r in out.iterrows():
        na, nb, p = int(r["n_a"]), int(r["n_b"]), float(r["p_raw"])
        if r["p_method"] != "permutation" or min(na, nb) < 2 or not np.isfinite(p):
            continue
        floor = (2.0 if na == nb else 1.0) / math.comb(na + nb, na)
        if not math.isclose(p, floor, rel_tol=1e-9):
            continue
        fewer = (2.0 if na == nb else 1.0) / math.comb(na + nb - 2, na - 1)
        holm_floor, holm_fewer = min(1.0, family * floor), min(1.0, family * fewer)
        out.loc[i, "reason"] = (
            f"{r['reason']}; the runs, not their spread, set this p: the two sides' runs do "
            f"not overlap, and {na} + {nb} runs allow no p below 2 / C({na + nb}, {na}) = "
            f"{floor:.2g} (Holm over {family} tests: {holm_floor:.2g}); with {na - 1} + "
            f"{nb - 1} runs the same separation gives {fewer:.2g} (Holm {holm_fewer:.2g})"
        )
    return out


#: the until-failure family's reason where method 1 did not run (the local reference)
NOT_RUN = (
    "method 1 (until failure) not run here: a time to failure needs a run under load until "
    "it fails (the docker reference); fault injection's up times are its injection schedule, "
    "and its MTTR is judged in the fault-injection claims"
)

#: the outage families' reason where the outage experiment cannot run (Kubernetes: the
#: kubelet restarts a killed container at once, so no fixed outage window is kept)
OUTAGE_NOT_RUN = (
    "the outage experiment not run here: the orchestrator restarts a killed container at "
    "once, so no fixed outage window can be kept (fault injection's MTTR is judged in the "
    "fault-injection claims)"
)


def outage_effects(
    runs: AvailabilityRuns, claims: list[Claim], family: str
) -> dict[str, claims_mod.Effect] | None:
    """Why the outage families' claims are not measured where no outage run could be made
    (every run's backend restarts a killed container by itself); None elsewhere."""
    made = [*runs.all(), *runs.tuned]
    backends = {r.manifest.get("backend") for r in made}
    if family not in ("outage", "outage recovery") or runs.outage or not made:
        return None
    if not backends <= set(RESTARTS_ITSELF):
        return None
    why = claims_mod.Effect.unmeasured(OUTAGE_NOT_RUN)
    return {c.claim_id: why for c in claims}


#: how a censored MTTF value claim is measured (the claims table's p_method)
CENSORED_METHOD = until_failure.CENSORED_METHOD


def family_claims(family: str) -> list[Claim]:
    """The availability claims one experiment tests (``FAMILY_METRICS``)."""
    metrics = FAMILY_METRICS[family]
    return [c for c in published.claims(scope="availability") if c.metric in metrics]


def family_size(claims: list[Claim]) -> int:
    """A family's number of distinct tests (its Holm level's divisor; code claims apart)."""
    return len({claims_mod.test_key(c) for c in claims if c.test != "compare"}) or 1


def _users_map(users: tuple[int, ...]) -> dict[int, int]:
    return {pub: u for pub, u in zip((200, 300, 400), users, strict=False) if pub != u}


def judge(
    runs: AvailabilityRuns,
    crow: pd.DataFrame,
    cyc: pd.DataFrame,
    umap: dict[int, int],
    confidence: float,
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Every family's claims table and the power table: each family judged on its own runs,
    method 1's MTTF tests by the model its runs support (``model_check``), the outage
    tests' floor stated, every test's missing runs priced per cell at that cell's own runs
    (``hours_more``) and marked underpowered at that price."""
    every = runs.all()  # each claim names the cells the plausibility check flags
    fi_rows, outage_rows = (annotate(fault_injection_rows(cyc, m), every)
                            for m in ("fault_injection", "outage"))  # fmt: skip
    evaluated = {
        "until failure": (crow, umap),
        "outage": (crow, {}),
        "fault injection": (fi_rows, _fi_users_map(cyc)),
        "outage recovery": (outage_rows, _fi_users_map(cyc, "outage")),
    }
    made_by = {
        "until failure": runs.until_failure, "outage": runs.outage,
        "fault injection": runs.fault_injection, "outage recovery": runs.outage,
    }  # fmt: skip
    effects, model = _until_failure_effects(runs, crow, umap, confidence)
    tables, powers = {}, []
    for fam, (rows, m) in evaluated.items():
        claims = family_claims(fam)
        table = claims_mod.evaluate_claims(
            rows, claims, scope="availability", users_map=m, family=fam,
            effects=effects if fam == "until failure" else outage_effects(runs, claims, fam),
        )  # fmt: skip
        power = claims_mod.repetitions(claims, rows, users_map=m).assign(family=fam)
        if fam == "until failure":  # its MTTF tests: by the test their model check chose
            metric = {c.claim_id: c.metric for c in claims}
            power = power[power["claim_id"].map(metric) != "mttf_s"] if len(power) else power
            if runs.until_failure:
                mttf = until_failure.mttf_power(claims, rows, m, model, family_size(claims))
                power = pd.concat([power, mttf], ignore_index=True)
        power = pricing.price(power, claims, made_by[fam], m)
        table = pricing.mark_underpowered(table, power)
        if fam == "until failure":
            table = predicted_underpowered(with_model_check(table, model), runs, crow, umap)
        tables[fam] = outage_floor_note(table) if fam == "outage" else table
        powers.append(power)
    power = pd.concat([p for p in powers if len(p)], ignore_index=True)
    first = ["family", "claim_id", "comparison", "users", "published_ratio", "measured_ratio",
             "runs_per_cell", "runs_needed", "alpha", "hours_more"]  # fmt: skip
    return tables, power[[c for c in first if c in power] + [c for c in power if c not in first]]


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
    crow = annotate(claims_rows(runs.until_failure, runs.outage), runs.all())  # flags named
    tables, power = judge(runs, crow, cyc, umap, conf)
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
        until_failure_runs=until_failure.run_table(runs.until_failure, runs.superseded),
    )
