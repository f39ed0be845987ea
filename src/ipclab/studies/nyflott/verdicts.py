"""Nyfløtt 2017's claims (``data/published/nyflott2017_claims.csv``) judged on measured runs.

The verdicts are ``ipclab.claims``'s, under the rules of docs/statistics.md; this module
shapes the experiment's per-run table for them and runs the two tests no claim kind
expresses. The claims' loads are the added delays in ms (the thesis runs 10 users
throughout), so each run's ``delay_ms`` becomes the ``users`` column the claims machinery
selects cells by. A claim whose metric the table lacks is inconclusive, with the reason
"metric ... not measured".

Three kinds of test, two families (docs/statistics.md section 3: one family per
experiment):

* **the delay experiment** (family :data:`FAMILY`): every comparison of cells, one
  ``evaluate_claims`` call, Holm over its distinct tests; with it the two **size gaps** of
  N32 (R2: "the major observed difference ... was the bandwidth usage": is the bytes per
  request gap between h2c and HTTP/1.1 larger than the response-time gap, and than the
  throughput gap?), which compare the sizes of two effects, a statistic no claim kind
  computes: :func:`size_gap` gives its delta-method t test, and ``evaluate_claims`` takes
  it as a given effect, so the two join the family's Holm adjustment (:func:`evaluate`);
* **the Californium fix** (family :data:`FIX_FAMILY`, N33a: "the fix doubles
  throughput"): the fix experiment's own runs (``experiment.fix_experiment``, thesis against
  fixed logging, :func:`fix_rows`), an experiment of its own, so a family of its own;
* **GC coincidence** (family :data:`GC_FAMILY`, N29a and N30a): whether extremes and major
  GCs meet more often than each run's own GC schedule shifted in time would
  (``gcshift``): a randomisation test inside runs, a different kind of test from the
  comparisons of cells, so a family of its own (Holm over its two tests).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from ipclab import claims as claims_mod
from ipclab.planner import Need, needs_of
from ipclab.published import Claim
from ipclab.runs import Run
from ipclab.stats import Interval, holm
from ipclab.stats.design import Design
from ipclab.studies.nyflott import gcshift, hosts, published, tables

FAMILY = "delay experiment"
GC_FAMILY = "GC coincidence"
FIX_FAMILY = "Californium fix"
#: the Californium fix's cells (experiment.fix_experiment): a run's style is
#: ``californium-<its variant>``, the adapters' logging (thesis or fixed)
FIX_STYLES = ("californium-thesis", "californium-fixed")

#: the GC claims' metrics -> the share each counts (``gcshift.SIDES``)
GC_METRICS = {"extremes_with_gc_share": "extremes", "gcs_with_extreme_share": "gcs"}
#: N32's statistics -> (the metric whose gap is claimed the larger, the metric it is
#: compared with): exp(|log r_a| - |log r_b|), r = h2c / HTTP/1.1 of each
SIZE_GAPS = {
    "gap_bytes_over_mean_ms": ("bytes_per_request", "mean_ms"),
    "gap_bytes_over_rps": ("bytes_per_request", "rps"),
}


def per_run(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """Every metric the claims read, one row per run: Table 2's and Fig. 16's
    (``tables.run_rows``) beside the per-host CPU and network (``hosts.host_rows``)."""
    rows = tables.run_rows(runs, warmup_s)
    if rows.empty:
        return rows
    return rows.merge(hosts.host_rows(runs, warmup_s), on="run", how="left")


def case_metric(test_case: str) -> str:
    """The per-run column of a test case's minimum response time (N07, N20), e.g.
    ``min_ms_query_flight``."""
    return "min_ms_" + test_case.lower().replace(" ", "_")


def with_test_cases(rows: pd.DataFrame, cases_runs: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with each run's minimum response time per test case (Fig. 10's cases,
    ``tables.per_test_case``) as columns :func:`case_metric`."""
    need = {"run", "test_case", "min_ms"}
    if rows.empty or cases_runs.empty or not need <= set(cases_runs.columns):
        return rows
    wide = cases_runs.pivot_table(index="run", columns="test_case", values="min_ms")
    wide.columns = [case_metric(str(c)) for c in wide.columns]
    return rows.drop(columns=list(wide.columns), errors="ignore").merge(
        wide.reset_index(), on="run", how="left"
    )


def claim_runs(rows: pd.DataFrame) -> pd.DataFrame:
    """The per-run table the claims read: one row per run with ``style``, ``delay_ms`` and
    metric columns (``tables.run_rows``, plus any per-host columns); ``users`` is set to the
    delay in whole ms (a table's own ``users``, 10 in every run, is kept as ``n_users``)."""
    missing = [c for c in ("style", "delay_ms") if c not in rows.columns]
    if missing:
        raise ValueError(f"the run table lacks {', '.join(missing)}")
    out = rows.copy()
    if "users" in out.columns:
        out = out.rename(columns={"users": "n_users"})
    delay = pd.to_numeric(out["delay_ms"], errors="coerce").to_numpy(dtype=float)
    whole = np.round(delay)
    known = np.isin(whole, published.DELAYS_MS)
    bad = ~np.isfinite(delay) | (np.abs(delay - whole) > 1e-6) | ~known
    if bad.any():
        raise ValueError(
            f"delay_ms {float(delay[bad][0])} is not one of the thesis's {published.DELAYS_MS} ms"
        )
    out["users"] = whole.astype(int)
    return out


@dataclass
class GcRecords:
    """What the GC test reads (the committed per-run tables): the extreme requests
    (``run, t_rel, latency_ms``), the major GCs in each window (``run, t_rel, ms``), and
    each run's window length in s."""

    extremes: pd.DataFrame
    gc_events: pd.DataFrame
    windows: pd.Series = field(default_factory=lambda: pd.Series(dtype=float))


def split(claims: Sequence[Claim]) -> tuple[list[Claim], list[Claim], list[Claim]]:
    """The claims of the delay experiment judged by ``evaluate_claims``, the size gaps (N32)
    and the GC claims (N29a, N30a)."""
    gaps = [c for c in claims if c.metric in SIZE_GAPS]
    gc = [c for c in claims if c.metric in GC_METRICS]
    main = [c for c in claims if c not in gaps and c not in gc and not is_fix(c)]
    return main, gaps, gc


def is_fix(claim: Claim) -> bool:
    """A claim on the Californium fix's cells (N33a), judged on the fix experiment's runs."""
    return claim.a_style in FIX_STYLES or claim.b_style in FIX_STYLES


def fix_rows(runs: Sequence[Run], warmup_s: float) -> pd.DataFrame:
    """The fix experiment's per-run table (``tables.run_rows``), each run's ``style`` its
    logging: ``californium-`` and the run's variant (thesis or fixed)."""
    rows = tables.run_rows(runs, warmup_s)
    if rows.empty:
        return rows
    variant = {tables.run_label(r): str(r.parameters.get("variant", "")) for r in runs}
    return rows.assign(style=rows["run"].map(lambda k: f"californium-{variant[k]}"))


def fix_table(
    claims: Sequence[Claim], fix: pd.DataFrame | None, rules: claims_mod.Rules
) -> pd.DataFrame:
    """The Californium fix's claims judged on the fix experiment's per-run table
    (:func:`fix_rows`; None: no runs, each claim not measured), a family of its own."""
    if not claims:
        return pd.DataFrame()
    if fix is None or fix.empty:
        fix = pd.DataFrame({"style": pd.Series(dtype=str), "delay_ms": pd.Series(dtype=float)})
    return claims_mod.evaluate_claims(claim_runs(fix), claims, rules=rules, scope="performance",
                                      family=FIX_FAMILY)  # fmt: skip


def evaluate(
    rows: pd.DataFrame,
    rules: claims_mod.Rules | None = None,
    claims: Sequence[Claim] | None = None,
    gc: GcRecords | None = None,
    fix: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The claims table (one row per claim, in the claims file's order: published and
    measured effect, interval, Holm-adjusted p-value, verdict and reason, family) from a
    per-run table and, for the GC claims, the GC records (without them: inconclusive), and
    for the Californium fix's, the fix experiment's table (:func:`fix_rows`)."""
    rules = rules or claims_mod.Rules()
    cl = list(claims) if claims is not None else published.claims()
    main, gaps, gc_claims = split(cl)
    runs = claim_runs(rows)
    gap_effects = {c.claim_id: size_gap(c, runs, rules) for c in gaps}
    table = claims_mod.evaluate_claims(runs, [*main, *gaps], rules=rules, scope="performance",
                                       family=FAMILY, effects=gap_effects)  # fmt: skip
    parts = [table]
    if gc_claims:
        parts.append(gc_rows(gc_claims, runs, gc, rules))
    parts.append(fix_table([c for c in cl if is_fix(c)], fix, rules))
    out = pd.concat([p for p in parts if len(p)], ignore_index=True)
    order = {c.claim_id: i for i, c in enumerate(cl)}
    return out.sort_values("claim_id", key=lambda s: s.map(order), ignore_index=True)


# --------------------------------------------------------------------------- size gaps (N32)


def _cell(runs: pd.DataFrame, style: str, delay: int, cols: Sequence[str]) -> np.ndarray:
    sel = runs[(runs["style"] == style) & (runs["users"] == delay)]
    x = sel.loc[:, list(cols)].apply(pd.to_numeric, errors="coerce").to_numpy(float)
    return x[np.isfinite(x).all(axis=1)]


def size_gap(claim: Claim, runs: pd.DataFrame, rules: claims_mod.Rules) -> claims_mod.Effect:
    """N32's statistic: with r_x = (x of a averaged over a's delays) / (x of b averaged over
    b's), D = |log r_first| - |log r_second| (``SIZE_GAPS[claim.metric]``), reported as
    exp(D) (> 1: the first metric's gap is the larger). Its variance by the delta method
    over the cells' per-run pairs (the two metrics of a run are correlated: their
    covariance enters), Welch-Satterthwaite degrees of freedom, the t test of D = 0: the
    same construction as ``stats.log_ratio_interval``, for two metrics at once."""
    first, second = SIZE_GAPS[claim.metric]
    lacking = [m for m in (first, second) if m not in runs.columns]
    if lacking:
        return claims_mod.Effect.unmeasured(f"metric {', '.join(map(repr, lacking))} not measured")
    sides = [(claim.a_style, claim.a_users, 1.0), (claim.b_style, claim.b_users, -1.0)]
    cells = [(s, d, sign, _cell(runs, s, d, (first, second))) for s, ds, sign in sides
             for d in ds]  # fmt: skip
    empty = [f"{s}@{d}" for s, d, _, x in cells if not len(x)]
    if empty:
        return claims_mod.Effect.unmeasured(f"no runs for {', '.join(empty)} ({first}, {second})")
    n = [len(x) for *_, x in cells]
    totals = {(s, j): sum(float(x[:, j].mean()) for s2, _, _, x in cells if s2 == s)
              for s, _, _ in sides for j in (0, 1)}  # fmt: skip
    logr = [math.log(totals[(claim.a_style, j)] / totals[(claim.b_style, j)]) for j in (0, 1)]
    sgn = [math.copysign(1.0, v) for v in logr]
    d_est = abs(logr[0]) - abs(logr[1])
    users = "+".join(map(str, claim.a_users))
    nan = float("nan")
    if min(n) < 2:
        return claims_mod.Effect(Interval(math.exp(d_est), nan, nan, min(n), method="none"),
                                 math.exp(abs(logr[0])), math.exp(abs(logr[1])), min(n),
                                 min(n), min(n), nan, "none", users=users)  # fmt: skip
    parts = []
    for s, _, sign, x in cells:
        g = np.array([sign * sgn[j] / totals[(s, j)] * (1 if j == 0 else -1) for j in (0, 1)])
        parts.append((float(g @ np.cov(x, rowvar=False) @ g) / len(x), len(x)))
    var = sum(v for v, _ in parts)
    df = var**2 / sum(v**2 / (k - 1) for v, k in parts) if var > 0 else nan
    se = math.sqrt(var)
    t = sps.t.ppf(0.5 + rules.confidence / 2, df) if var > 0 else nan
    p = float(2 * sps.t.sf(abs(d_est) / se, df)) if var > 0 else nan
    ci = Interval(math.exp(d_est), math.exp(d_est - t * se), math.exp(d_est + t * se), min(n),
                  rules.confidence, "t (delta method)", p)  # fmt: skip
    return claims_mod.Effect(ci, math.exp(abs(logr[0])), math.exp(abs(logr[1])), min(n),
                             min(n), min(n), p, "t (delta method, gap sizes)",
                             users=users)  # fmt: skip


def _row(c: Claim, e: claims_mod.Effect, p: float, verdict: tuple[str, str],
         family: str, d: Design | None = None) -> dict[str, object]:  # fmt: skip
    """A claims-table row for a test this module computes (the columns it can fill; ``d``:
    its design check)."""
    r = e.ratio
    ci = "" if e.missing else (f"{r.estimate:.4g}" if not np.isfinite(r.low) else str(r))
    return {
        "claim_id": c.claim_id, "statement_id": c.statement_id, "source": c.source,
        "document": c.document, "section": c.section, "page": c.page, "quote": c.quote,
        "scope": c.scope, "test": c.test, "relation": c.relation, "comparison": c.describe(),
        "measured_users": e.users,
        "published_value": c.published_value, "published_unit": c.published_unit,
        "published_ratio": c.published_ratio if c.published_ratio is not None else math.nan,
        "published_consistent": claims_mod.published_consistent(c),
        "band_low": math.nan, "band_high": math.nan,
        "measured_a": e.measured_a, "measured_b": e.measured_b, "n_a": e.n_a, "n_b": e.n_b,
        "measured_ratio": r.estimate, "ci_low": r.low, "ci_high": r.high, "measured": ci,
        "p_value": p, "p_raw": e.p_value, "p_method": e.p_method,
        "p_floor": d.floor if d else math.nan, "p_level": d.level if d else math.nan,
        "design": claims_mod.design_column(c, d), "magnitude": c.magnitude,
        "test_key": "|".join(str(x) for x in claims_mod.test_key(c)),
        "verdict": verdict[0], "reason": verdict[1], "evidence": claims_mod.TEST,
        "family": family, "size_word": "", "band": "", "note": c.note,
    }  # fmt: skip


# --------------------------------------------------------------------------- GC (N29a, N30a)


def _gc_runs(c: Claim, runs: pd.DataFrame) -> list[str]:
    sel = runs[(runs["style"] == c.a_style) & runs["users"].isin(c.a_users)]
    return sorted(sel["run"].astype(str))


def gc_effect(
    c: Claim, runs: pd.DataFrame, gc: GcRecords | None, shifts: int = gcshift.SHIFTS
) -> tuple[claims_mod.Effect, gcshift.Combined]:
    """One GC claim's combined shift test over the runs of its cells (``gcshift``)."""
    nan = float("nan")
    empty = gcshift.Combined(0, nan, nan, nan, nan, nan)
    if gc is None or gc.extremes.empty:
        return claims_mod.Effect.unmeasured("no extremes or GC records (role logs)"), empty
    names = [r for r in _gc_runs(c, runs) if r in gc.windows.index]
    if not names:
        return claims_mod.Effect.unmeasured(f"no runs for {c.a_style}@{c.a_users}"), empty
    _, nulls = gcshift.run_nulls(gc.extremes, gc.gc_events, gc.windows, names, shifts)
    comb = gcshift.combine(nulls[GC_METRICS[c.metric]].values())
    users = "+".join(map(str, c.a_users))
    e = claims_mod.Effect(comb.ratio, comb.observed, comb.expected, comb.runs, comb.runs,
                          comb.runs, comb.p_value,
                          f"circular shift of each run's GCs ({shifts} offsets), exact",
                          users=users, p_floor=comb.p_floor)  # fmt: skip
    return e, comb


def gc_verdict(c: Claim, e: claims_mod.Effect, comb: gcshift.Combined, p: float,
               rules: claims_mod.Rules) -> tuple[str, str]:  # fmt: skip
    """A direction claim on the shift test (docs/statistics.md section 3): reproduced when
    significant (two-sided, Holm over the GC family) with the observed share above its mean
    under the shifts and the interval of their ratio over runs entirely above 1, not
    reproduced when significant below it with the interval entirely below 1; otherwise
    inconclusive, also where the interval cannot be computed or lies across 1 while the
    shift test is significant (the two disagree)."""
    if e.missing:
        return claims_mod.INCONCLUSIVE, e.missing
    if comb.runs < rules.min_repetitions:
        return claims_mod.INCONCLUSIVE, (
            f"too few repetitions (n={comb.runs}, need >= {rules.min_repetitions})")  # fmt: skip
    r = e.ratio
    txt = (f"share {comb.observed:.4g} against {comb.expected:.4g} under shifted GC "
           f"schedules over {comb.runs} runs, ratio {r}, p = {p:.4g}")  # fmt: skip
    if not (np.isfinite(p) and p < rules.alpha):
        return claims_mod.INCONCLUSIVE, f"{txt}: not significant at {rules.alpha}"
    if not (np.isfinite(r.low) and np.isfinite(r.high)):
        return claims_mod.INCONCLUSIVE, f"{txt}: no interval over the runs"
    above = comb.observed > comb.expected
    if (r.low > 1) != above or (r.high < 1) == above:
        return claims_mod.INCONCLUSIVE, (
            f"{txt}: the shift test is significant but the interval over runs does not "
            "exclude 1")  # fmt: skip
    if above == (c.relation == ">"):
        return claims_mod.REPRODUCED, f"{txt} < {rules.alpha}"
    return claims_mod.NOT_REPRODUCED, f"{txt}: significant in the opposite direction"


def gc_rows(claims: Sequence[Claim], runs: pd.DataFrame, gc: GcRecords | None,
            rules: claims_mod.Rules | None = None) -> pd.DataFrame:  # fmt: skip
    """The GC family's rows, Holm-adjusted over its distinct tests."""
    rules = rules or claims_mod.Rules()
    done = [gc_effect(c, runs, gc) for c in claims]
    raw = np.array([e.p_value for e, _ in done], dtype=float)
    keys = [claims_mod.test_key(c) for c in claims]
    first: dict[object, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    distinct = raw[list(first.values())]
    adj = holm(distinct) if rules.p_adjust == "holm" else distinct
    by_key = dict(zip(first, adj, strict=True))
    size = len(first) if rules.p_adjust == "holm" else 1
    out = []
    for c, (e, comb), k in zip(claims, done, keys, strict=True):
        p = float(by_key[k])
        d = claims_mod.design_of(e, rules, size)
        v = claims_mod.by_design(c, e, *gc_verdict(c, e, comb, p, rules), d)
        out.append(_row(c, e, p, v, GC_FAMILY, d))
    return pd.DataFrame(out)


def statements(table: pd.DataFrame) -> pd.DataFrame:
    """One verdict per published sentence (every part reproduced, any part not, otherwise
    inconclusive)."""
    return claims_mod.statement_verdicts(table)


def power(
    rows: pd.DataFrame,
    rules: claims_mod.Rules | None = None,
    claims: Sequence[Claim] | None = None,
) -> pd.DataFrame:
    """Runs per cell each single-delay test or interaction of the delay experiment needs to
    detect the published effect (docs/statistics.md section 7) at its family's Holm level
    (the family: the delay experiment's claims with the size gaps; the GC family's
    randomisation test has no such plan), beside the runs there are."""
    cl = list(claims) if claims is not None else published.claims()
    main, gaps, _ = split(cl)
    return claims_mod.repetitions([*main, *gaps], claim_runs(rows), rules)


def needs(primary: pd.DataFrame, table: pd.DataFrame, run_hours: float, prefix: str) -> list[Need]:
    """The delay experiment's undecided tests for the planner (``ipclab.planner``), on the
    primary (python) adapter set the claims read: a cell is one stack at one delay,
    ``<prefix>:delay<d>ms:<stack>@<users>`` (the delay's experiment, then
    ``ipclab.experiments.extend_cell``'s cell)."""
    from ipclab.studies.nyflott.experiment import USERS
    from ipclab.studies.nyflott.stacks import ACMEAIR

    stack_of = {s.style: s.name for s in ACMEAIR if s.adapters == "python"}
    main, gaps, _ = split(published.claims())
    undecided = set(table.loc[table["verdict"] == claims_mod.INCONCLUSIVE, "claim_id"])
    rows = claims_mod.pilot_needs([*main, *gaps], claim_runs(primary), undecided)
    return needs_of(
        "nyflott", rows, table, run_hours, lambda s, u: f"{prefix}:delay{u}ms:{stack_of[s]}@{USERS}"
    )
