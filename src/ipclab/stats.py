"""Statistics of load runs: tidy per-run tables, per-cell CIs, pairwise tests, Little's law,
saturation.

The unit of replication is the run: a cell (style x users x think time) is repeated, each run
gives one value per metric (its mean latency, its p95, its throughput...), and confidence
intervals and tests are over those per-run values, never over the requests of one run (they
are not independent). Every random step takes a ``seed``.
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from ipclab.paths import repo_relative
from ipclab.runs import Run

#: Per-run metrics that :func:`cell_summary` reports by default.
CELL_METRICS = ("rps", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "failure_rate")
#: Columns that identify a cell in a per-run table.
CELL_KEYS = ("style", "users", "think_time_s")

ArrayLike = Sequence[float] | np.ndarray | pd.Series


# --------------------------------------------------------------------------- per-run table


def _style_of(stack: str | None) -> str | None:
    if not stack:
        return None
    try:
        from ipclab.stacks import resolve

        return resolve(stack).style
    except Exception:  # unknown stack: fall back to the name's last part
        return stack.rsplit("-", 1)[-1]


_NUM = r"[0-9]*\.?[0-9]+"


def parse_seconds(value: Any) -> float | None:
    """Seconds from a number, ``"30s"``, ``"2m"``, ``"1h"``, ``"1m30s"``; None if absent."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, int | float):
        return float(value)
    s = str(value).strip().lower()
    if not s:
        return None
    try:
        return float(s)
    except ValueError:
        pass
    parts = re.findall(rf"({_NUM})\s*(ms|h|m|s)", s)
    if not parts or "".join(n + u for n, u in parts) != s.replace(" ", ""):
        raise ValueError(f"cannot read a duration from {value!r}")
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def parse_think_time(value: Any) -> float:
    """Mean think time in seconds from a number, ``[lo, hi]``, ``{"min": lo, "max": hi}``,
    ``"1-2"``, ``"1-2s"``, ``"between(1, 2)"`` or ``"1.5s"``; 0 when absent."""
    if value is None or value == "":
        return 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        lo = value.get("min", value.get("low", value.get("lo")))
        hi = value.get("max", value.get("high", value.get("hi")))
        if lo is None or hi is None:
            raise ValueError(f"cannot read a think time from {value!r}")
        return (float(lo) + float(hi)) / 2
    if isinstance(value, list | tuple):
        if len(value) == 1:
            return float(value[0])
        if len(value) == 2:
            return (float(value[0]) + float(value[1])) / 2
        raise ValueError(f"cannot read a think time from {value!r}")
    nums = re.findall(_NUM, str(value))
    if len(nums) == 1:
        return float(parse_seconds(str(value).replace("constant", "").strip("() ")) or 0.0)
    if len(nums) == 2:
        return (float(nums[0]) + float(nums[1])) / 2
    raise ValueError(f"cannot read a think time from {value!r}")


_THINK_KEYS = ("think_time_s", "think_time", "wait_time", "wait")
_REP_KEYS = ("repetition", "rep", "repeat", "replicate")


#: summary.json's machine state of a run (see ipclab.summary.machine_load)
MACHINE_COLUMNS = ("stack_cpu_ms_per_request", "other_cpu_percent", "steal_percent")


def run_metrics(
    run: Run, warmup_s: float = 0.0, cooldown_s: float = 0.0, latency_of: str = "all"
) -> dict[str, Any]:
    """One run's row of :func:`runs_table`.

    The analysed window is ``[first request + warmup_s, end of last request - cooldown_s]``;
    requests are counted by their start time. ``latency_of`` is ``"all"`` (as Locust and
    JMeter report, failures included) or ``"ok"``. Without request records the summary's
    numbers are used and the warm-up cannot be discarded (``source == "summary"``).
    """
    if latency_of not in ("all", "ok"):
        raise ValueError("latency_of must be 'all' or 'ok'")
    row = _run_identity(run)
    row.update(warmup_s=float(warmup_s), cooldown_s=float(cooldown_s))
    summary = run.summary
    row["loadgen_saturated"] = summary.get("loadgen_saturated")
    for key in MACHINE_COLUMNS:  # runs written before these existed give None
        row[key] = summary.get(key)
    req = run.requests()
    if len(req):
        row.update(_window_metrics(run, req, warmup_s, cooldown_s, latency_of))
    else:
        row.update(_summary_metrics(summary, run.parameters))
    reqs, fails = row.get("requests"), row.get("failures")
    row["failure_rate"] = fails / reqs if reqs and fails is not None else np.nan
    return row


def _run_identity(run: Run) -> dict[str, Any]:
    """What a run was: its stack, style, load, think time, repetition, variant."""
    params = run.parameters
    man = run.manifest
    stack = man.get("stack") or params.get("stack")
    think_raw = next((params[k] for k in _THINK_KEYS if k in params), None)
    rep = next((params[k] for k in _REP_KEYS if k in params), None)
    users = params.get("users", params.get("num_users"))
    return {
        "run": run.path.name,
        "path": repo_relative(run.path),
        "status": run.status,
        "stack": stack,
        "style": params.get("style") or _style_of(stack),
        "users": int(users) if users is not None else None,
        "spawn_rate": params.get("spawn_rate"),
        "think_time_s": parse_think_time(think_raw),
        "repetition": int(rep) if rep is not None else None,
        "variant": params.get("variant"),
        "experiment": params.get("experiment"),
        "started_at": man.get("started_at"),
    }


def _window_metrics(
    run: Run, req: pd.DataFrame, warmup_s: float, cooldown_s: float, latency_of: str
) -> dict[str, Any]:
    """Throughput and latency over the analysed window, from the per-request records."""
    t = req["t"].astype(float).to_numpy()
    lat = req["latency_ms"].astype(float).to_numpy()
    ok = req["ok"].astype(bool).to_numpy()
    start = float(t.min()) + warmup_s
    end = float(np.max(t + lat / 1000.0)) - cooldown_s
    if end <= start:
        raise ValueError(
            f"{run.path}: warm-up {warmup_s} s + cool-down {cooldown_s} s leave no window "
            f"(run spans {float(np.max(t + lat / 1000.0) - t.min()):.1f} s)"
        )
    keep = (t >= start) & (t <= end)
    lat_w, ok_w = lat[keep], ok[keep]
    sel = lat_w if latency_of == "all" else lat_w[ok_w]
    n = int(keep.sum())
    window = end - start
    out: dict[str, Any] = {
        "source": "requests",
        "duration_s": window,
        "requests": n,
        "failures": int((~ok_w).sum()),
        "rps": n / window,
        "ok_rps": int(ok_w.sum()) / window,
    }
    if len(sel):
        out.update(
            mean_ms=float(sel.mean()),
            p50_ms=float(np.percentile(sel, 50)),
            p95_ms=float(np.percentile(sel, 95)),
            p99_ms=float(np.percentile(sel, 99)),
            max_ms=float(sel.max()),
        )
    else:
        out.update(mean_ms=np.nan, p50_ms=np.nan, p95_ms=np.nan, p99_ms=np.nan, max_ms=np.nan)
    return out


def _summary_metrics(summary: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """The same numbers from ``summary.json`` (the warm-up already left out at run time)."""
    lat_s = summary.get("latency_ms", {}) or {}
    reqs = summary.get("requests")
    fails = summary.get("failures")
    dur = summary.get("duration_s") or parse_seconds(params.get("duration"))
    rps = summary.get("rps")
    if rps is None and reqs is not None and dur:
        rps = reqs / dur
    return {
        "source": "summary",
        "duration_s": dur,
        "requests": reqs,
        "failures": fails,
        "rps": rps,
        "ok_rps": (reqs - fails) / dur if reqs is not None and fails is not None and dur else None,
        "mean_ms": lat_s.get("mean"),
        "p50_ms": lat_s.get("p50"),
        "p95_ms": lat_s.get("p95"),
        "p99_ms": lat_s.get("p99"),
        "max_ms": lat_s.get("max"),
    }


def runs_table(
    runs: Iterable[Run],
    warmup_s: float = 0.0,
    cooldown_s: float = 0.0,
    latency_of: str = "all",
    complete_only: bool = True,
) -> pd.DataFrame:
    """A tidy table, one row per run: ``run, path, status, stack, style, users, spawn_rate,
    think_time_s, repetition, variant, experiment, started_at, duration_s, requests, failures,
    failure_rate, rps, ok_rps, mean_ms, p50_ms, p95_ms, p99_ms, max_ms, source,
    loadgen_saturated`` and the machine state of :data:`MACHINE_COLUMNS` (see
    :func:`run_metrics` for the window). Runs whose manifest is not ``complete`` are left out
    unless ``complete_only`` is False. Missing repetition numbers are assigned 1, 2, ... by
    start time within each cell.
    """
    rows = [
        run_metrics(r, warmup_s, cooldown_s, latency_of)
        for r in runs
        if r.complete or not complete_only
    ]
    cols = [
        "run",
        "path",
        "status",
        "stack",
        "style",
        "users",
        "spawn_rate",
        "think_time_s",
        "repetition",
        "variant",
        "experiment",
        "started_at",
        "warmup_s",
        "cooldown_s",
        "source",
        "duration_s",
        "requests",
        "failures",
        "failure_rate",
        "rps",
        "ok_rps",
        "mean_ms",
        "p50_ms",
        "p95_ms",
        "p99_ms",
        "max_ms",
        "loadgen_saturated",
        *MACHINE_COLUMNS,
    ]
    df = pd.DataFrame(rows, columns=cols)
    if df.empty:
        return df
    df = df.sort_values(["style", "users", "think_time_s", "started_at"], kind="stable")
    missing = df["repetition"].isna()
    if missing.any():
        order = df.groupby(["style", "users", "think_time_s"], dropna=False).cumcount() + 1
        df.loc[missing, "repetition"] = order[missing]
    df["repetition"] = df["repetition"].astype(int)
    return df.reset_index(drop=True)


# --------------------------------------------------------------------------- intervals
# The interval methods of docs/statistics.md. Per-run values of a cell are means over
# thousands of requests, so close to normal; the intervals below are Student-t based and
# cover at the n used (tests/test_coverage.py simulates n = 3 and 5, normal and lognormal).


# --------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval (NaN bounds when it cannot be computed)."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    method: str = "percentile"
    p_value: float = float("nan")

    def contains(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)

    def __str__(self) -> str:
        return f"{self.estimate:.4g} [{self.low:.4g}, {self.high:.4g}]"


def _clean(x: ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[np.isfinite(a)]


def bootstrap_means(
    samples: Sequence[ArrayLike],
    combine: Callable[[list[np.ndarray]], np.ndarray],
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    method: str = "percentile",
    seed: int = 0,
    null: float | None = None,
) -> Interval:
    """Bootstrap CI of a statistic that is a function of the means of independent samples.

    ``combine`` receives the list of sample means (arrays, vectorised over resamples) and
    returns the statistic, e.g. ``lambda m: m[0] / m[1]`` for a ratio of means. Each sample
    is resampled independently (scipy.stats.bootstrap, ``paired=False``). With ``null``, the
    result's ``p_value`` is the two-sided bootstrap p-value: twice the smaller share of
    resampled statistics on either side of ``null``, counted as (k + 1) / (B + 1) so it is
    never 0 (the p-value of the inverted percentile interval). Samples with fewer than 2
    finite values give NaN bounds.
    """
    xs = [_clean(s) for s in samples]
    if any(len(x) == 0 for x in xs):
        return Interval(
            float("nan"), float("nan"), float("nan"), min(len(x) for x in xs), confidence, method
        )
    est = float(combine([np.asarray(x.mean()) for x in xs]))
    n = min(len(x) for x in xs)
    if n < 2:
        return Interval(est, float("nan"), float("nan"), n, confidence, method)

    def stat(*arrays: np.ndarray, axis: int = -1) -> np.ndarray:
        return combine([a.mean(axis=axis) for a in arrays])

    def run(m: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sps.bootstrap(
                tuple(xs),
                stat,
                confidence_level=confidence,
                n_resamples=n_resamples,
                method=m,
                vectorized=True,
                paired=False,
                rng=np.random.default_rng(seed),
            )

    res = run(method)
    used = method
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if method.lower() == "bca" and not (np.isfinite(lo) and np.isfinite(hi)):
        res, used = run("percentile"), "percentile (BCa degenerate)"
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not np.isfinite(lo) and np.all(res.bootstrap_distribution == est):
        lo = hi = est
    p = float("nan")
    if null is not None:
        d = np.asarray(res.bootstrap_distribution, dtype=float)
        b = len(d)
        tail = min(np.sum(d <= null), np.sum(d >= null))
        p = float(min(1.0, 2 * (tail + 1) / (b + 1)))
    return Interval(est, lo, hi, n, confidence, used, p)


def t_interval(sample: ArrayLike, confidence: float = 0.95) -> Interval:
    """Student-t interval of the mean of per-run values (n >= 2; a constant sample gives
    the point itself)."""
    x = _clean(sample)
    nan = float("nan")
    if len(x) == 0:
        return Interval(nan, nan, nan, 0, confidence, "t")
    m = float(x.mean())
    if len(x) < 2:
        return Interval(m, nan, nan, len(x), confidence, "t")
    se = float(x.std(ddof=1)) / math.sqrt(len(x))
    q = float(sps.t.ppf(0.5 + confidence / 2, len(x) - 1))
    return Interval(m, m - q * se, m + q * se, len(x), confidence, "t")


def log_ratio_interval(
    terms: Sequence[tuple[int, Sequence[ArrayLike]]], confidence: float = 0.95
) -> Interval:
    """Interval and p-value (against 1) of a product of sums of means, on the log scale.

    ``terms`` is ``[(sign, [samples...]), ...]``: the statistic is the product over terms of
    (sum of the samples' means) ** sign, e.g. a ratio of two means ``[(1, [a]), (-1, [b])]``,
    the ratio of averages over loads ``[(1, [a1, a2]), (-1, [b1, b2])]``, or an interaction
    (growth of a over growth of b) ``[(1, [a2]), (-1, [a1]), (-1, [b2]), (1, [b1])]``.
    Delta method: Var(log S) = sum Var(mean_i) / S**2 over the samples of a term; terms add;
    degrees of freedom by Welch-Satterthwaite; the p-value is the t test of log(statistic)
    = 0. Every sample needs n >= 2 (else NaN bounds); when every sample is constant the
    interval is the point and the p-value NaN (an exact permutation test is the test then).
    """
    nan = float("nan")
    groups = [[_clean(s) for s in samples] for _, samples in terms]
    n = min((len(x) for g in groups for x in g), default=0)
    if n == 0:
        return Interval(nan, nan, nan, 0, confidence, "t (log scale)")
    if all(np.ptp(x) == 0 for g in groups for x in g):  # no variance anywhere: the point
        with np.errstate(divide="ignore", invalid="ignore"):
            est = float(np.prod([np.float64(sum(float(x[0]) for x in g)) ** s for (s, _), g in
                                 zip(terms, groups, strict=True)]))  # fmt: skip
        return Interval(est, est, est, n, confidence, "t (log scale)")
    log_est, parts = 0.0, []
    for (sign, _), g in zip(terms, groups, strict=True):
        total = sum(float(x.mean()) for x in g)
        if total <= 0:
            return Interval(nan, nan, nan, n, confidence, "t (log scale)")
        log_est += sign * math.log(total)
        if n >= 2:
            parts += [(float(x.var(ddof=1)) / len(x) / total**2, len(x)) for x in g]
    est = math.exp(log_est)
    if n < 2:
        return Interval(est, nan, nan, n, confidence, "t (log scale)")
    v = sum(c for c, _ in parts)
    if v == 0:
        return Interval(est, est, est, n, confidence, "t (log scale)")
    df = v**2 / sum(c**2 / (k - 1) for c, k in parts if c > 0)
    q = float(sps.t.ppf(0.5 + confidence / 2, df))
    se = math.sqrt(v)
    p = float(2 * sps.t.sf(abs(log_est) / se, df))
    return Interval(
        est, est * math.exp(-q * se), est * math.exp(q * se), n, confidence, "t (log scale)", p
    )


def permutation_p(
    a: ArrayLike, b: ArrayLike, max_exact: int = 1_000_000, seed: int = 0, n_random: int = 20_000
) -> float:
    """Two-sided permutation p-value of the difference of means: the share of relabellings
    whose |difference| is at least the observed one, the observed labelling included (so
    never 0: 3 vs 3 gives at least 2/20 = 0.1). Exact when there are at most ``max_exact``
    labellings (10 against 10 has 184,756), else ``n_random`` random ones, counted as
    (k + 1) / (B + 1)."""
    x, y = _clean(a), _clean(b)
    if len(x) == 0 or len(y) == 0:
        return float("nan")
    pooled = np.concatenate([x, y])
    n, k = len(pooled), len(x)
    observed = abs(x.mean() - y.mean())
    tol = 1e-12 * max(1.0, float(np.abs(pooled).max()))
    total = pooled.sum()
    if math.comb(n, k) <= max_exact:
        combos = itertools.combinations(range(n), k)
        hits = count = 0
        while chunk := list(itertools.islice(combos, 100_000)):
            sa = pooled[np.array(chunk)].sum(axis=1)
            diffs = np.abs(sa / k - (total - sa) / (n - k))
            hits += int(np.sum(diffs >= observed - tol))
            count += len(chunk)
        return hits / count
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((n_random, n)), axis=1)[:, :k]
    sa = pooled[perm].sum(axis=1)
    diffs = np.abs(sa / k - (total - sa) / (n - k))
    return float((np.sum(diffs >= observed - tol) + 1) / (n_random + 1))


def bootstrap_ci(
    sample: ArrayLike,
    statistic: Callable[..., Any] = np.mean,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    method: str = "percentile",
    seed: int = 0,
) -> Interval:
    """Bootstrap CI of ``statistic`` (a numpy reduction taking ``axis``) of one sample.

    ``method`` is ``"percentile"`` or ``"BCa"`` (falls back to percentile when BCa is
    undefined, e.g. for constant data). Fewer than 2 finite values give NaN bounds.
    """
    x = _clean(sample)
    if len(x) == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0, confidence, method)
    est = float(statistic(x, axis=-1))
    if len(x) < 2:
        return Interval(est, float("nan"), float("nan"), len(x), confidence, method)
    if np.ptp(x) == 0:
        return Interval(est, est, est, len(x), confidence, method)

    def run(m: str) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return sps.bootstrap(
                (x,),
                statistic,
                confidence_level=confidence,
                n_resamples=n_resamples,
                method=m,
                vectorized=True,
                rng=np.random.default_rng(seed),
            )

    res, used = run(method), method
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (np.isfinite(lo) and np.isfinite(hi)):
        res, used = run("percentile"), f"percentile ({method} degenerate)"
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Interval(est, lo, hi, len(x), confidence, used)


# --------------------------------------------------------------------------- cells


def cell_summary(
    runs: pd.DataFrame,
    metrics: Sequence[str] = CELL_METRICS,
    by: Sequence[str] = CELL_KEYS,
    *,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    method: str = "t",
    seed: int = 0,
) -> pd.DataFrame:
    """Per cell and metric, over repetitions: ``n, mean, sd, median, min, max, ci_low,
    ci_high, ci_method`` (by default the Student-t interval of the mean of the per-run
    values, docs/statistics.md; ``method`` "percentile" or "BCa" gives a bootstrap one, for
    comparison). Long format: one row per (cell, metric). Keys of ``by`` absent from
    ``runs`` are ignored."""
    keys = [k for k in by if k in runs.columns]
    out = []
    for cell, g in runs.groupby(keys, dropna=False, sort=True):
        cell = cell if isinstance(cell, tuple) else (cell,)
        for m in metrics:
            if m not in g.columns:
                continue
            x = _clean(g[m])
            ci = (
                t_interval(x, confidence)
                if method == "t"
                else bootstrap_ci(
                    x, confidence=confidence, n_resamples=n_resamples, method=method, seed=seed
                )
            )
            out.append(
                {
                    **dict(zip(keys, cell, strict=True)),
                    "metric": m,
                    "n": len(x),
                    "mean": float(x.mean()) if len(x) else np.nan,
                    "sd": float(x.std(ddof=1)) if len(x) > 1 else np.nan,
                    "median": float(np.median(x)) if len(x) else np.nan,
                    "min": float(x.min()) if len(x) else np.nan,
                    "max": float(x.max()) if len(x) else np.nan,
                    "ci_low": ci.low,
                    "ci_high": ci.high,
                    "ci_method": ci.method,
                }
            )
    return pd.DataFrame(out)


def cell_table(summary: pd.DataFrame, metric: str, digits: int = 1) -> pd.DataFrame:
    """A wide view of one metric of :func:`cell_summary`: rows = users, columns = style,
    cells = ``"mean [low, high]"`` text, for a notebook or a report."""
    s = summary[summary["metric"] == metric]

    def fmt(r: pd.Series) -> str:
        if not np.isfinite(r["ci_low"]):
            return f"{r['mean']:.{digits}f} (n={int(r['n'])})"
        return f"{r['mean']:.{digits}f} [{r['ci_low']:.{digits}f}, {r['ci_high']:.{digits}f}]"

    return s.assign(text=s.apply(fmt, axis=1)).pivot_table(
        index="users", columns="style", values="text", aggfunc="first"
    )


# --------------------------------------------------------------------------- pairwise tests


def cliffs_delta(x: ArrayLike, y: ArrayLike) -> float:
    """Cliff's delta: P(X > Y) - P(X < Y) over all pairs, in [-1, 1]."""
    a, b = _clean(x), _clean(y)
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    d = np.sign(a[:, None] - b[None, :])
    return float(d.mean())


def cliffs_delta_ci(
    x: ArrayLike, y: ArrayLike, *, confidence: float = 0.95, n_resamples: int = 9999, seed: int = 0
) -> Interval:
    """Cliff's delta with a percentile bootstrap CI (samples resampled independently)."""
    a, b = _clean(x), _clean(y)
    est = cliffs_delta(a, b)
    if min(len(a), len(b)) < 2:
        return Interval(est, float("nan"), float("nan"), min(len(a), len(b)), confidence)

    def stat(u: np.ndarray, v: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.sign(u[..., :, None] - v[..., None, :]).mean(axis=(-2, -1))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sps.bootstrap(
            (a, b),
            stat,
            confidence_level=confidence,
            n_resamples=n_resamples,
            method="percentile",
            vectorized=True,
            paired=False,
            rng=np.random.default_rng(seed),
        )
    return Interval(
        est,
        float(res.confidence_interval.low),
        float(res.confidence_interval.high),
        min(len(a), len(b)),
        confidence,
    )


@dataclass(frozen=True)
class Comparison:
    """Two samples of per-run values compared."""

    n_a: int
    n_b: int
    mean_a: float
    mean_b: float
    ratio: Interval  # mean_a / mean_b, t interval on the log scale (log_ratio_interval)
    diff: float  # mean_a - mean_b
    mannwhitney_u: float
    mannwhitney_p: float
    welch_t: float
    welch_p: float  # NaN when both samples are constant (no variance: no t test)
    cliffs_delta: Interval  # the estimate; no interval (none covers at n = 3-5)
    permutation_p: float = float("nan")  # exact permutation test of the means

    @property
    def p(self) -> float:
        """The primary p-value (docs/statistics.md): Welch's t, or the exact permutation
        test where Welch's is undefined (constant samples)."""
        return self.welch_p if np.isfinite(self.welch_p) else self.permutation_p


def compare_samples(
    a: ArrayLike, b: ArrayLike, *, confidence: float = 0.95, n_resamples: int = 9999, seed: int = 0
) -> Comparison:
    """Welch's t (two-sided; the primary test), the exact permutation test of the means,
    Mann-Whitney U (two-sided, exact for small samples without ties), Cliff's delta, and
    the ratio of means with its t interval on the log scale. Both samples constant: no t
    test (NaN); the permutation test gives the p-value (never 0)."""
    x, y = _clean(a), _clean(b)
    nan = float("nan")
    u, pu, t, pt = nan, nan, nan, nan
    if len(x) and len(y):
        r = sps.mannwhitneyu(x, y, alternative="two-sided")
        u, pu = float(r.statistic), float(r.pvalue)
    if len(x) > 1 and len(y) > 1 and (np.ptp(x) > 0 or np.ptp(y) > 0):
        r2 = sps.ttest_ind(x, y, equal_var=False)
        t, pt = float(r2.statistic), float(r2.pvalue)
    ratio = log_ratio_interval([(1, [x]), (-1, [y])], confidence)
    return Comparison(
        n_a=len(x),
        n_b=len(y),
        mean_a=float(x.mean()) if len(x) else nan,
        mean_b=float(y.mean()) if len(y) else nan,
        ratio=ratio,
        diff=float(x.mean() - y.mean()) if len(x) and len(y) else nan,
        mannwhitney_u=u,
        mannwhitney_p=pu,
        welch_t=t,
        welch_p=pt,
        cliffs_delta=Interval(cliffs_delta(x, y), nan, nan, min(len(x), len(y)), confidence),
        permutation_p=permutation_p(x, y, seed=seed),
    )


def compare_styles(
    runs: pd.DataFrame,
    metric: str,
    *,
    by: Sequence[str] = ("users", "think_time_s"),
    styles: Sequence[str] | None = None,
    confidence: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
) -> pd.DataFrame:
    """Every pair of styles at every load (and think time): ``n_a, n_b, mean_a, mean_b,
    diff, ratio, ratio_low, ratio_high, mannwhitney_u, mannwhitney_p, welch_t, welch_p,
    cliffs_delta, cliffs_low, cliffs_high``. Pairs are ordered as in ``styles`` (default:
    sorted), a before b."""
    keys = [k for k in by if k in runs.columns]
    order = list(styles) if styles is not None else sorted(runs["style"].dropna().unique())
    out = []
    for cell, g in runs.groupby(keys, dropna=False, sort=True):
        cell = cell if isinstance(cell, tuple) else (cell,)
        for i, sa in enumerate(order):
            for sb in order[i + 1 :]:
                xa = g.loc[g["style"] == sa, metric]
                xb = g.loc[g["style"] == sb, metric]
                if xa.empty or xb.empty:
                    continue
                c = compare_samples(
                    xa, xb, confidence=confidence, n_resamples=n_resamples, seed=seed
                )
                out.append(
                    {
                        **dict(zip(keys, cell, strict=True)),
                        "metric": metric,
                        "a": sa,
                        "b": sb,
                        "n_a": c.n_a,
                        "n_b": c.n_b,
                        "mean_a": c.mean_a,
                        "mean_b": c.mean_b,
                        "diff": c.diff,
                        "ratio": c.ratio.estimate,
                        "ratio_low": c.ratio.low,
                        "ratio_high": c.ratio.high,
                        "mannwhitney_u": c.mannwhitney_u,
                        "mannwhitney_p": c.mannwhitney_p,
                        "welch_t": c.welch_t,
                        "welch_p": c.welch_p,
                        "permutation_p": c.permutation_p,
                        "p": c.p,
                        "cliffs_delta": c.cliffs_delta.estimate,
                        "cliffs_low": c.cliffs_delta.low,
                        "cliffs_high": c.cliffs_delta.high,
                    }
                )
    return pd.DataFrame(out)


def holm(pvalues: ArrayLike) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN)."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full_like(p, np.nan)
    ok = np.isfinite(p)
    q = p[ok]
    m = len(q)
    if m == 0:
        return out
    order = np.argsort(q)
    adj = np.maximum.accumulate((m - np.arange(m)) * q[order])
    res = np.empty(m)
    res[order] = np.minimum(adj, 1.0)
    out[ok] = res
    return out


def repetitions_needed(
    mean_b: float,
    sd_a: float,
    sd_b: float,
    ratio: float,
    alpha: float = 0.05,
    power: float = 0.8,
    n_max: int = 1000,
) -> int | None:
    """Runs per cell that a two-sided t test at ``alpha`` needs to detect a / b = ``ratio``
    (a's mean ``ratio`` x ``mean_b``) with ``power``, given the cells' per-run standard
    deviations (noncentral t, equal n, pooled sd); None when more than ``n_max``."""
    diff = abs(mean_b * (ratio - 1.0))
    s = math.sqrt((sd_a**2 + sd_b**2) / 2)
    if diff == 0 or not np.isfinite(diff) or not np.isfinite(s):
        return None
    if s == 0:
        return 2
    for n in range(2, n_max + 1):
        df = 2 * n - 2
        q = sps.t.ppf(1 - alpha / 2, df)
        ncp = diff / (s * math.sqrt(2 / n))
        got = sps.nct.sf(q, df, ncp) + sps.nct.cdf(-q, df, ncp)
        if got >= power:
            return n
    return None


def repetitions_needed_log_ratio(
    cvs: Sequence[float],
    ratio: float,
    alpha: float = 0.05,
    power: float = 0.8,
    n_max: int = 1000,
) -> int | None:
    """Runs per cell that the t test of a log ratio (:func:`log_ratio_interval`: a ratio of
    means, or an interaction over four cells) needs to detect ``ratio`` with ``power`` at
    two-sided ``alpha``, given each cell's per-run coefficient of variation ``cvs`` (equal n;
    Var(log mean_i) = cv_i^2 / n by the delta method; Welch-Satterthwaite degrees of freedom;
    noncentral t). None when more than ``n_max`` or not computable."""
    c = np.asarray(cvs, dtype=float) ** 2
    effect = abs(math.log(ratio)) if ratio > 0 else float("nan")
    if not (np.isfinite(effect) and np.all(np.isfinite(c))) or effect == 0 or not len(c):
        return None
    if c.sum() == 0:
        return 2
    for n in range(2, n_max + 1):
        df = (n - 1) * c.sum() ** 2 / (c**2).sum()
        q = sps.t.ppf(1 - alpha / 2, df)
        ncp = effect / math.sqrt(c.sum() / n)
        if sps.nct.sf(q, df, ncp) + sps.nct.cdf(-q, df, ncp) >= power:
            return n
    return None


# --------------------------------------------------------------------------- Little's law


@dataclass(frozen=True)
class LittleCheck:
    """Closed-loop Little's law N = X (R + Z) for one run."""

    users: float  # N
    throughput_rps: float  # X
    response_s: float  # R
    think_s: float  # Z, as configured
    implied_users: float  # X (R + Z)
    relative_error: float  # (X (R + Z) - N) / N
    implied_think_s: float  # N / X - R


def littles_law(
    users: float, throughput_rps: float, response_s: float, think_s: float = 0.0
) -> LittleCheck:
    """Check N = X (R + Z). A relative error near 0 means the users were all busy with
    requests or think time; a negative one means fewer were (ramp-up inside the window, a
    generator that could not keep up, or unaccounted waits); ``implied_think_s`` is the
    think time that would close the equation."""
    n, x, r, z = float(users), float(throughput_rps), float(response_s), float(think_s)
    implied = x * (r + z)
    rel = (implied - n) / n if n else float("nan")
    zt = n / x - r if x > 0 else float("nan")
    return LittleCheck(n, x, r, z, implied, rel, zt)


def littles_law_table(
    runs: pd.DataFrame, throughput: str = "rps", response_ms: str = "mean_ms"
) -> pd.DataFrame:
    """:func:`littles_law` on every row of a per-run table (``users``, ``think_time_s``,
    ``rps``, ``mean_ms``); adds ``implied_users``, ``relative_error``, ``implied_think_s``."""
    rows = [
        littles_law(
            r["users"], r[throughput], r[response_ms] / 1000.0, r.get("think_time_s", 0.0) or 0.0
        )
        for _, r in runs.iterrows()
    ]
    return runs.assign(
        implied_users=[c.implied_users for c in rows],
        relative_error=[c.relative_error for c in rows],
        implied_think_s=[c.implied_think_s for c in rows],
    )


# --------------------------------------------------------------------------- saturation


@dataclass(frozen=True)
class Saturation:
    """What saturation means here: between two loads, throughput grows by at most
    ``max_throughput_gain`` while latency grows by at least ``min_latency_growth``; the
    columns of the cells table to read (``group`` is the factor compared, e.g. the style)."""

    group: str = "style"
    load: str = "users"
    throughput: str = "rps"
    latency: str = "mean_ms"
    max_throughput_gain: float = 0.10
    min_latency_growth: float = 0.25


def saturation_steps(cells: pd.DataFrame, rule: Saturation | None = None) -> pd.DataFrame:
    """Between consecutive loads of each group: ``throughput_gain`` = X2/X1 - 1,
    ``latency_growth`` = R2/R1 - 1, ``load_growth`` = N2/N1 - 1, ``scaling_efficiency`` =
    throughput_gain / load_growth (1: throughput grows with load; 0: flat), and
    ``saturated`` = throughput_gain <= max_throughput_gain and latency_growth >=
    min_latency_growth (throughput flat while latency grows). Several rows per (group, load)
    (repetitions) are averaged first."""
    r = rule or Saturation()
    keys = [k for k in (r.group, r.load) if k in cells.columns]
    g = cells.groupby(keys, dropna=False)[[r.throughput, r.latency]].mean().reset_index()
    out = []
    for name, sub in g.groupby(r.group, dropna=False, sort=True):
        sub = sub.sort_values(r.load)
        vals = sub[[r.load, r.throughput, r.latency]].to_numpy(dtype=float)
        for (n1, x1, r1), (n2, x2, r2) in zip(vals[:-1], vals[1:], strict=True):
            tg, lg, ng = x2 / x1 - 1, r2 / r1 - 1, n2 / n1 - 1
            out.append(
                {
                    r.group: name,
                    "from_users": int(n1),
                    "to_users": int(n2),
                    "throughput_from": x1,
                    "throughput_to": x2,
                    "latency_from": r1,
                    "latency_to": r2,
                    "throughput_gain": tg,
                    "latency_growth": lg,
                    "load_growth": ng,
                    "scaling_efficiency": tg / ng if ng else np.nan,
                    "saturated": bool(tg <= r.max_throughput_gain and lg >= r.min_latency_growth),
                }
            )
    return pd.DataFrame(out)


def detect_saturation(cells: pd.DataFrame, rule: Saturation | None = None) -> pd.DataFrame:
    """Per group: ``saturated`` (every step from some load on is saturated, see
    :func:`saturation_steps`), ``onset_users`` (the lowest such load; the system is
    saturated at and above it), ``plateau_rps`` (mean throughput from the onset on),
    ``steps`` (how many consecutive-load steps were seen)."""
    r = rule or Saturation()
    steps = saturation_steps(cells, r)
    means = cells.groupby([r.group, r.load], dropna=False)[r.throughput].mean()
    out = []
    for name, sub in steps.groupby(r.group, dropna=False, sort=True):
        sub = sub.sort_values("from_users")
        flags = sub["saturated"].to_list()
        onset = None
        for i in range(len(flags)):
            if all(flags[i:]):
                onset = int(sub["from_users"].iloc[i])
                break
        plateau = (
            float(means[name][means[name].index >= onset].mean()) if onset is not None else np.nan
        )
        out.append(
            {
                r.group: name,
                "saturated": onset is not None,
                "onset_users": onset,
                "plateau_rps": plateau,
                "steps": len(flags),
            }
        )
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- machine state
@dataclass(frozen=True)
class MachineLimits:
    """When the repetitions of a cell did not run on a comparable machine."""

    max_cost_ratio: float = 1.25  # slowest / fastest stack CPU ms per request within a cell
    max_other_cpu_percent: float = 25.0  # mean busy CPU of other processes (100 = one core)
    max_steal_percent: float = 10.0  # mean CPU taken by the hypervisor


def machine_check(
    runs: pd.DataFrame,
    limits: MachineLimits = MachineLimits(),
    by: Sequence[str] = ("style", "users"),
) -> pd.DataFrame:
    """Per cell, how comparable the machine was across its repetitions.

    A run's stack CPU per request is what one request costs on the machine at that moment;
    repetitions of one cell on a slower or shared host cost more (a 2x difference was seen
    between two sessions' VMs), which moves throughput and latency without any change in
    the system under test. ``comparable`` is False when the cost spread (``cost_ratio``,
    slowest over fastest) or another process's CPU or the VM's steal time passes
    ``limits``; ``None`` when the runs carry no machine state (written before it was
    recorded)."""
    rows = []
    for key, sub in runs.groupby(list(by), dropna=False, sort=True):
        cost = pd.to_numeric(sub["stack_cpu_ms_per_request"], errors="coerce").dropna()
        other = pd.to_numeric(sub["other_cpu_percent"], errors="coerce").dropna()
        steal = pd.to_numeric(sub["steal_percent"], errors="coerce").dropna()
        ratio = float(cost.max() / cost.min()) if len(cost) and cost.min() > 0 else np.nan
        known = len(cost) == len(sub)
        reasons = []
        if known and ratio > limits.max_cost_ratio:
            reasons.append(f"CPU per request varies {ratio:.2f}x")
        if len(other) and other.max() > limits.max_other_cpu_percent:
            reasons.append(f"other processes used up to {other.max():.0f}% CPU")
        if len(steal) and steal.max() > limits.max_steal_percent:
            reasons.append(f"steal time up to {steal.max():.0f}%")
        rows.append(
            {
                **dict(zip(by, key if isinstance(key, tuple) else (key,), strict=True)),
                "runs": len(sub),
                "cpu_ms_per_request_min": float(cost.min()) if len(cost) else np.nan,
                "cpu_ms_per_request_max": float(cost.max()) if len(cost) else np.nan,
                "cost_ratio": ratio,
                "other_cpu_percent_max": float(other.max()) if len(other) else np.nan,
                "steal_percent_max": float(steal.max()) if len(steal) else np.nan,
                "comparable": (not reasons) if known else None,
                "why": "; ".join(reasons),
            }
        )
    return pd.DataFrame(rows)
