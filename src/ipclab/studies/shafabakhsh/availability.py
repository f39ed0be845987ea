"""Shafabakhsh 2020, availability: MTTF, MTTR and A = MTTF / (MTTF + MTTR), per IPC style.

What a notebook calls: ``run_experiments`` (method 1 until failure, method 2 fault
injection, and the outage experiment; every run an ordinary run directory, finished runs
reused), ``analyse`` (cycles, estimators with intervals, thesis table 5.4 and paper figure 4
beside the measured values, the formula mismatch, the outage table, computed claim
verdicts) and ``write_results`` (tables and figures into a results folder).
See docs/availability.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ipclab import claims as claims_mod
from ipclab.availability.estimators import availability_summary
from ipclab.availability.outage import CLASSES, classify_requests, outage_table
from ipclab.availability.runner import (
    Common,
    FaultInjection,
    Outage,
    UntilFailure,
    run_fault_injection,
    run_outage,
    run_until_failure,
    with_stack,
)
from ipclab.availability.tracker import Criteria, Cycle, read_cycles
from ipclab.backends import RunningStack, StackOptions
from ipclab.paths import from_repo
from ipclab.results import StudyResults
from ipclab.runs import DEFAULT_ROOT, Run, read_run
from ipclab.studies.shafabakhsh import figures as figs
from ipclab.studies.shafabakhsh import published
from ipclab.studies.shafabakhsh.availability_published import (
    compare_published_availability,
    load_published_availability,
)
from ipclab.studies.shafabakhsh.stacks import COMPARED

STACKS = tuple(s.name for s in COMPARED)
STYLES = tuple(s.style for s in COMPARED)
METHODS = ("until_failure", "fault_injection", "outage")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Profile:
    until_failure: UntilFailure
    until_failure_users: tuple[int, ...]
    until_failure_repetitions: int
    fault_injection: FaultInjection
    outage: Outage
    outage_repetitions: int
    common: Common
    call_timeout_s: float = 15.0  # every style, so that queued AMQP requests can be served late
    cpus: float | None = None  # method 1 resource limits (docker backend only)
    memory_mb: int | None = None
    share_stack: bool = False  # one stack per style for all runs (quick) or one per run


PROFILES: dict[str, Profile] = {
    # a few minutes for the three styles on the local backend: short cycles, small loads
    "quick": Profile(
        until_failure=UntilFailure(cap_s=5.0),
        until_failure_users=(20,),
        until_failure_repetitions=1,
        fault_injection=FaultInjection(
            users=10, cycles=3, mean_gap_s=3.0, min_gap_s=2.0, include_broker=False
        ),
        outage=Outage(users=10, before_s=3.0, outage_s=10.0, after_s=8.0),
        outage_repetitions=1,
        common=Common(criteria=Criteria(window_s=2.0, silence_s=4.0), recover_timeout_s=30.0),
        share_stack=True,
    ),
    # the thesis's loads under limits with a cap; >= 10 injected cycles; 3 outage repetitions
    "full": Profile(
        until_failure=UntilFailure(cap_s=900.0),
        until_failure_users=(200, 300, 400),
        until_failure_repetitions=3,
        fault_injection=FaultInjection(users=50, cycles=12, mean_gap_s=15.0, min_gap_s=5.0),
        outage=Outage(users=50, before_s=20.0, outage_s=10.0, after_s=25.0),
        outage_repetitions=3,
        common=Common(),
        cpus=0.5,
        memory_mb=256,
    ),
}

DEVIATIONS = [
    "Failure and recovery are explicit criteria observed by a client-side probe (one product "
    "page every 100 ms, 1 s timeout), not an unstated judgement: failure when more than half "
    "of the probe's answers in a window are bad, or no good answer for a while (window and "
    "silence in the run's parameters); recovery at the first complete five-part page after "
    "the restart.",
    "MTTR in A runs from the failure onset to the recovery (so that up and down times tile "
    "the timeline); the thesis's MTTR, from the restart to the recovery, is reported beside "
    "it and used for the MTTR claims.",
    "Method 1 (the thesis's): the local backend applies no resource limits, so a local stack "
    "is unlikely to fail under load within the cap; such runs are reported as censored "
    "(MTTF greater than the time on test), never given a number. The docker backend applies "
    "per-container cpus and memory limits (full profile: 0.5 CPU, 256 MB) to the gateway and "
    "the five services, the same in every style; the RabbitMQ broker, shared infrastructure "
    "(in the thesis it ran beside the services on 7 GB nodes), is not limited.",
    "Method 2 (fault injection) adds what the thesis lacks: many failure-recovery cycles, "
    "killed components (a service, the gateway or the broker) on a seeded exponential "
    "schedule, restarted through the backend once the probe detected the failure.",
    "Every style runs with a 15 s gateway call timeout (the performance study uses 2 s), so "
    "AMQP requests queued during an outage can be served late; a synchronous call to a dead "
    "service fails at once whatever the timeout.",
    "Components are restarted by the harness through the backend (a process restart for the "
    "local backend, docker restart for docker) instead of a manual Kubernetes cluster "
    "restart; the load keeps running through the restart.",
    "Client-side duplicates cannot occur (the AMQP gateway drops replies that match no "
    "waiting request); the gateway's count of such unmatched replies is reported instead.",
]


def profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile {name!r}; choose {', '.join(PROFILES)}") from None


# --------------------------------------------------------------------------- experiments
@dataclass(frozen=True)
class Job:
    method: str
    stack: str
    users: int
    repetition: int

    @property
    def key(self) -> str:
        return f"{self.method}-{self.stack}-u{self.users}-r{self.repetition}"


def _limits(options: dict[str, Any]) -> tuple[Any, Any]:
    return options.get("cpus"), options.get("memory_mb")


@dataclass
class AvailabilityRuns:
    until_failure: list[Run] = field(default_factory=list)
    fault_injection: list[Run] = field(default_factory=list)
    outage: list[Run] = field(default_factory=list)

    def all(self) -> list[Run]:
        return [*self.until_failure, *self.fault_injection, *self.outage]


@dataclass
class AvailabilityExperiment:
    """Every availability run of one profile and backend, under ``root/name``."""

    profile_name: str
    backend: str = "local"
    root: Path = DEFAULT_ROOT
    stacks: tuple[str, ...] = STACKS
    methods: tuple[str, ...] = METHODS  # a subset runs (and loads) only those methods

    @property
    def profile(self) -> Profile:
        return profile(self.profile_name)

    @property
    def name(self) -> str:
        return f"availability-{self.profile_name}-{self.backend}"

    @property
    def directory(self) -> Path:
        return Path(self.root) / self.name

    def jobs(self, stack: str) -> list[Job]:
        """One style's runs: outage, fault injection, then until failure (which restarts
        every component, so it goes last on a shared stack)."""
        p = self.profile
        out = [Job("outage", stack, p.outage.users, r) for r in range(1, p.outage_repetitions + 1)]
        out.append(Job("fault_injection", stack, p.fault_injection.users, 1))
        out += [
            Job("until_failure", stack, u, r)
            for r in range(1, p.until_failure_repetitions + 1)
            for u in p.until_failure_users
        ]
        return [j for j in out if j.method in self.methods]

    def options(self, job: Job) -> StackOptions:
        p = self.profile
        limits = job.method == "until_failure" and not p.share_stack
        return StackOptions(
            call_timeout_s=p.call_timeout_s,
            cpus=p.cpus if limits else None,
            memory_mb=p.memory_mb if limits else None,
        )

    def plan(self, job: Job) -> UntilFailure | FaultInjection | Outage:
        p = self.profile
        if job.method == "until_failure":
            return replace(p.until_failure, users=job.users, seed=job.repetition)
        if job.method == "fault_injection":
            return p.fault_injection
        return replace(p.outage, seed=job.repetition)

    def _reusable(self, job: Job) -> bool:
        try:
            r = read_run(self.directory / job.key)
        except ValueError:
            return False
        return (
            r.complete
            and r.parameters.get("plan") == asdict(self.plan(job))
            and r.manifest.get("backend") == self.backend
            and _limits(r.parameters.get("options") or {}) == _limits(self.options(job).as_dict())
        )

    def run(self, progress: Progress = print) -> AvailabilityRuns:
        """Run every job not yet done (finished runs are reused); stacks always stopped."""
        self.directory.mkdir(parents=True, exist_ok=True)
        outer = progress

        def progress(message: str) -> None:  # "[...]" marks progress lines for reproduce
            outer(f"[availability] {message}")

        for stack in self.stacks:
            todo = [j for j in self.jobs(stack) if not self._reusable(j)]
            if not todo:
                progress(f"{stack}: every run reused")
                continue
            if self.profile.share_stack:
                with self._stack(stack, self.options(todo[0])) as st:
                    for job in todo:
                        self._run_job(job, st, progress)
            else:
                for job in todo:
                    with self._stack(stack, self.options(job)) as st:
                        self._run_job(job, st, progress)
        return self.load()

    @contextlib.contextmanager
    def _stack(self, stack: str, options: StackOptions) -> Iterator[RunningStack]:
        logs = self.directory / "logs" / stack
        with with_stack(stack, self.backend, options, logs_dir=logs) as st:
            yield st

    def _run_job(self, job: Job, stack: RunningStack, progress: Progress) -> None:
        import shutil

        from ipclab.backends.local import wait_ready

        path = self.directory / job.key
        if path.exists():
            shutil.rmtree(path)  # unfinished or different: redo it
        wait_ready(stack.gateway_url, 60.0)  # a shared stack is healthy before each run
        progress(f"{job.key}: running")
        extra = {"experiment": self.name, "repetition": job.repetition}
        p, plan, opts = self.profile, self.plan(job), self.options(job)
        if isinstance(plan, UntilFailure):
            run_until_failure(stack, path, plan, p.common, opts, progress, extra)
        elif isinstance(plan, FaultInjection):
            run_fault_injection(stack, path, plan, p.common, opts, progress, extra)
        else:
            run_outage(stack, path, plan, p.common, opts, progress, extra)

    def load(self) -> AvailabilityRuns:
        """Every complete run of this experiment, by method."""
        out = AvailabilityRuns()
        for stack in self.stacks:
            for job in self.jobs(stack):
                try:
                    r = read_run(self.directory / job.key)
                except ValueError:
                    continue
                if r.complete:
                    getattr(out, job.method).append(r)
        return out


def experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    methods: tuple[str, ...] = METHODS,
) -> AvailabilityExperiment:
    """Every availability run of a profile; ``methods`` picks a subset of :data:`METHODS`."""
    unknown = set(methods) - set(METHODS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; choose from {METHODS}")
    return AvailabilityExperiment(profile_name, backend, from_repo(root), methods=tuple(methods))


def run_experiments(
    profile_name: str,
    backend: str = "local",
    root: Path = DEFAULT_ROOT,
    progress: Progress = print,
    methods: tuple[str, ...] = METHODS,
) -> AvailabilityRuns:
    return experiments(profile_name, backend, root, methods).run(progress)


# --------------------------------------------------------------------------- analysis
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
        n = pd.Series([_run_info(r)["style"] for r in runs]).value_counts()
        df["runs"] = df["style"].map(n).fillna(0).astype(int)
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


def outage_summary(outage_runs: list[Run]) -> pd.DataFrame:
    """Requests per class, per style and phase, summed over repetitions; every request
    issued is in exactly one class (asserted by :func:`ipclab.availability.outage.outage_table`)."""
    if not outage_runs:
        return pd.DataFrame()
    frames = [classified_outage(r) for r in outage_runs]
    allreq = pd.concat(frames, ignore_index=True)
    table = outage_table(allreq, by=["style", "phase"]).reset_index()
    total = outage_table(allreq, by=["style"]).reset_index().assign(phase="all")
    table = pd.concat([table, total], ignore_index=True)
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
    claims = claims_mod.evaluate_claims(
        crow, published.claims(), scope="availability", users_map=umap
    )
    fi = cyc[(cyc["method"] == "fault_injection")] if len(cyc) else cyc
    fi_rows = pd.DataFrame(
        {
            "style": fi.get("style", pd.Series(dtype=str)),
            "users": 200,
            "mttr_s": fi.get("restart_to_recovery_s", pd.Series(dtype=float)),
        }
    )
    claims_fi = claims_mod.evaluate_claims(
        fi_rows[["style", "users", "mttr_s"]], published.claims(), scope="availability"
    )
    claims_fi = claims_fi[claims_fi["claim_id"].str.startswith("P15")].reset_index(drop=True)
    return Analysis(
        profile=profile_name,
        until_failure=m1,
        fault_injection=m2,
        cycles=cyc,
        formula=formula,
        side_by_side=side_by_side(formula, m1, m2, p.until_failure_users[0]),
        outage=outage_summary(runs.outage),
        claims_runs=crow,
        claims=claims,
        claims_fault_injection=claims_fi,
        users_map=umap,
    )


# --------------------------------------------------------------------------- figures
def _err(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    lo = np.where(np.isfinite(lo), lo, v)
    hi = np.where(np.isfinite(hi), hi, v)
    return np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])


def _col(df: pd.DataFrame, style: str, col: str) -> float:
    hit = df[df["style"] == style] if len(df) else df
    if not len(hit) or col not in hit.columns or hit.iloc[0][col] is None:
        return float("nan")
    return float(pd.to_numeric(hit.iloc[0][col], errors="coerce"))


def figure_availability(a: Analysis) -> plt.Figure:
    """Paper figure 4 beside the measured A: published printed and recomputed A (left);
    measured A with its interval, fault injection and until failure (right)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    x = np.arange(len(STYLES))
    f = a.formula
    printed = [_col(f, s, "printed_a") for s in STYLES]
    formula = [_col(f, s, "computed_a") for s in STYLES]
    left.bar(x - 0.2, printed, 0.4, label="printed (table 5.4)", color="grey")
    left.bar(x + 0.2, formula, 0.4, label="MTTF/(MTTF+MTTR) of its own numbers", color="black")
    left.set_ylim(0.9, 0.96)
    left.set_title("Published, 200 users (thesis table 5.4 / paper fig. 4)")
    for i, (label, df) in enumerate(
        (("fault injection", a.fault_injection), ("until failure", a.until_failure))
    ):
        m1_users = df[df["users"] == df["users"].min()] if len(df) else df
        v = np.array([_col(m1_users, s, "availability") for s in STYLES])
        lo = np.array([_col(m1_users, s, "availability_lo") for s in STYLES])
        hi = np.array([_col(m1_users, s, "availability_hi") for s in STYLES])
        pos = x + (i - 0.5) * 0.4
        right.bar(
            pos,
            np.nan_to_num(v),
            0.4,
            label=label,
            color=[figs.STYLE_COLORS[s] for s in STYLES],
            alpha=1.0 if i == 0 else 0.45,
            edgecolor="black",
        )
        ok = np.isfinite(v)
        if ok.any():
            right.errorbar(
                pos[ok], v[ok], yerr=_err(v, lo, hi)[:, ok], fmt="none", ecolor="black", capsize=3
            )
        for j in np.flatnonzero(~ok):
            right.text(
                pos[j],
                0.02,
                "censored" if len(df) else "not run",
                rotation=90,
                ha="center",
                va="bottom",
                fontsize=8,
            )
    right.set_ylim(0, 1.05)
    right.set_title("Measured A with 95% interval (dark: fault injection; light: until failure)")
    for ax in (left, right):
        ax.set_xticks(x, [figs.STYLE_LABELS[s] for s in STYLES], fontsize=8)
        ax.set_ylabel("Availability A")
        ax.grid(axis="y", alpha=0.3)
    left.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def figure_mttf_mttr(a: Analysis) -> plt.Figure:
    """MTTF and MTTR per style: published (thesis table 5.4), fault injection and until
    failure, with intervals; a censored MTTF is drawn as its lower bound, hatched."""
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    x = np.arange(len(STYLES))
    groups = (
        ("published", None),
        ("fault injection", a.fault_injection),
        ("until failure", a.until_failure),
    )
    for ax, metric, pub_col in zip(axes, ("mttf_s", "mttr_s"), ("mttf_s", "mttr_s"), strict=True):
        for i, (label, df) in enumerate(groups):
            pos = x + (i - 1) * 0.27
            if df is None:
                v = np.array([_col(a.formula, s, pub_col) for s in STYLES])
                ax.bar(pos, v, 0.27, color="grey", label=label)
                continue
            d = df[df["users"] == df["users"].min()] if len(df) else df
            v = np.array([_col(d, s, metric) for s in STYLES])
            lo = np.array([_col(d, s, f"{metric}_lo") for s in STYLES])
            hi = np.array([_col(d, s, f"{metric}_hi") for s in STYLES])
            colors = [figs.STYLE_COLORS[s] for s in STYLES]
            ax.bar(
                pos,
                np.nan_to_num(v),
                0.27,
                color=colors,
                alpha=1.0 if i == 1 else 0.45,
                edgecolor="black",
                label=label,
            )
            ok = np.isfinite(v)
            if ok.any():
                ax.errorbar(
                    pos[ok],
                    v[ok],
                    yerr=_err(v, lo, hi)[:, ok],
                    fmt="none",
                    ecolor="black",
                    capsize=3,
                )
            if metric == "mttf_s":
                cens = ~ok & np.isfinite(lo)
                ax.bar(
                    pos[cens],
                    lo[cens],
                    0.27,
                    color="none",
                    edgecolor="black",
                    hatch="//",
                    label=f"{label}: censored (lower bound)" if cens.any() else None,
                )
        ax.set_xticks(x, [figs.STYLE_LABELS[s] for s in STYLES], fontsize=8)
        ax.set_ylabel("seconds")
        ax.set_yscale("log")
        ax.set_title("MTTF" if metric == "mttf_s" else "MTTR (failure onset to recovery)")
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(frameon=False, fontsize=7)
    fig.tight_layout()
    return fig


OUTCOME_COLORS = {
    "served": "#2ca02c",
    "served_late": "#ff7f0e",
    "failed": "#d62728",
    "lost": "#7f7f7f",
    "duplicated": "#9467bd",
}


def figure_outage_timeline(outage_runs: list[Run]) -> plt.Figure:
    """Requests per second by outcome, by issue time, one panel per style (first
    repetition); the outage window shaded."""
    first = {}
    for r in outage_runs:
        info = _run_info(r)
        if info["repetition"] == 1:
            first[info["style"]] = r
    styles = [s for s in STYLES if s in first]
    fig, axes = plt.subplots(
        len(styles) or 1, 1, figsize=(10, 2.4 * max(len(styles), 1)), sharex=True, squeeze=False
    )
    for ax, style in zip(axes[:, 0], styles, strict=False):
        r = first[style]
        df = classified_outage(r)
        t0 = float(r.summary["t_outage_start"])
        t1 = float(r.summary["t_outage_end"])
        sec = np.floor(df["t"] - t0).astype(int)
        counts = pd.crosstab(sec, df["outcome"]).reindex(columns=list(CLASSES), fill_value=0)
        bottom = np.zeros(len(counts))
        for cls in CLASSES:
            ax.bar(
                counts.index,
                counts[cls],
                1.0,
                bottom=bottom,
                color=OUTCOME_COLORS[cls],
                label=cls.replace("_", " "),
                align="edge",
            )
            bottom += counts[cls].to_numpy()
        ax.axvspan(0, t1 - t0, color="black", alpha=0.1)
        ax.set_ylabel("requests/s")
        ax.set_title(
            f"{figs.STYLE_LABELS[style]}: {r.parameters['plan']['role']} stopped "
            f"for {t1 - t0:.0f} s (shaded)",
            fontsize=9,
        )
    axes[-1, 0].set_xlabel("issue time, s from the outage start")
    axes[0, 0].legend(frameon=False, fontsize=8, ncol=5, loc="upper left")
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- results
_SUMMARY_COLS = [
    "style",
    "users",
    "runs",
    "n_cycles",
    "failures",
    "recoveries",
    "censored",
    "unrecovered",
    "faults_injected",
    "up_s",
    "down_s",
    "mttf_s",
    "mttf_s_lo",
    "mttf_s_hi",
    "mttf_s_censored",
    "mttf_boot_lo",
    "mttf_boot_hi",
    "mttr_s",
    "mttr_s_lo",
    "mttr_s_hi",
    "availability",
    "availability_lo",
    "availability_hi",
    "time_availability",
    "restart_to_recovery_s",
    "notes",
]


def write_results(a: Analysis, runs: AvailabilityRuns, results: StudyResults) -> None:
    """Every table and figure of the availability study into ``results``."""
    p = profile(a.profile)
    results.deviations = list(DEVIATIONS)
    results.parameters.setdefault("criteria", p.common.criteria.as_dict())
    if a.users_map:
        results.deviations.append(
            f"Profile {a.profile!r}: loads {sorted(a.users_map.values())} stand in for the "
            f"published {sorted(a.users_map)} users (users_map {a.users_map})."
        )
    results.table(
        a.side_by_side,
        "table_5_4_side_by_side",
        "Thesis table 5.4 (printed MTTF, MTTR, A, and A recomputed from its own "
        "MTTF/MTTR) beside the measured values: method 1 (until failure) and method 2 "
        "(fault injection); estimate [95% interval], 'censored, > T' when no failure.",
    )
    results.table(
        a.formula,
        "formula_mismatch",
        "The published availabilities against A = MTTF/(MTTF+MTTR) of the published "
        "MTTF and MTTR: the printed 0.95 for RabbitMQ follows from no inputs within "
        "the table's rounding.",
    )
    _method_tables(a, results)
    if len(a.outage):
        results.table(
            a.outage,
            "outage",
            "Outage experiment: every request the load generator issued, classed "
            "(served, served late, failed, lost, duplicated) per style and phase "
            "relative to the outage window; classes sum to the requests issued.",
        )
    results.table(a.cycles, "cycles", "Every failure-recovery cycle.", in_report=False)
    results.claims_table(a.claims)
    results.table(
        a.claims_fault_injection,
        "claims_mttr_fault_injection",
        "Claim P15 (MTTR after the restart) on the fault-injection cycles, one "
        "observation per cycle; verdicts computed by the same rules.",
        in_report=False,
    )
    results.figure(
        figure_availability(a),
        "availability_fig4_side_by_side",
        "Availability per style: published (paper figure 4 / thesis table 5.4, "
        "printed and recomputed) beside the measured A with 95% intervals.",
    )
    results.figure(
        figure_mttf_mttr(a),
        "availability_mttf_mttr",
        "MTTF and MTTR per style: published, fault injection and until failure "
        "(log scale; hatched: censored MTTF, lower bound).",
    )
    if runs.outage:
        results.figure(
            figure_outage_timeline(runs.outage),
            "availability_outage_timeline",
            "Outage experiment: requests per second by outcome and issue time, "
            "one service stopped for 10 s (shaded).",
        )
    plt.close("all")


# (method, summary attribute, caption of its readable table)
_METHOD_TABLES = (
    (
        "fault_injection",
        "Method 2, fault injection: MTTF (chi-square interval, exponential "
        "model), MTTR and A (bootstrap over cycles) per style.",
    ),
    (
        "until_failure",
        "Method 1, until failure (the thesis's): per style and load; a stack "
        "that did not fail within the cap is censored, never given a number.",
    ),
)


def _method_tables(a: Analysis, results: StudyResults) -> None:
    """Per method that ran: its readable estimates, and every estimator column."""
    for method, caption in _METHOD_TABLES:
        summary = getattr(a, method)
        if not len(summary):
            continue
        number = 2 if method == "fault_injection" else 1
        results.table(readable(summary), f"availability_{method}", caption)
        results.table(
            summary.reindex(columns=_SUMMARY_COLS),
            f"summary_{method}",
            f"Method {number}, every estimator column.",
            in_report=False,
        )
