"""An independent recomputation of the committed claims tables under docs/statistics.md.

This module imports nothing from ``ipclab``: it reads the tables as files and applies the
document's rules as written, in code of its own, so that a rule the package applies
differently from the text shows as a difference (issue 47). :func:`problems` lists every
difference for one claims table; ``tests/test_recompute.py`` requires none on every
committed table. The rules checked:

- §3 Holm: each family's adjusted p-values are Holm over its distinct tests' raw ones;
- §3 the design check: each test's smallest reachable p (``p_floor``) and its level
  (``p_level``, alpha over the family's distinct tests), recomputed from its method and
  runs; an undecided test whose floor is not below its level is underpowered by design;
- §4 the verdict of every tested row from its interval, adjusted p-value, kind, size word
  and band (the table of §4; constant samples; fewer than 3 runs);
- §4 "about N": a number the sentence gives as approximate takes the standard band;
- §4 an interval for every reproduced verdict (or inconclusive);
- §7 the 25-run cap: an undecided test whose ``power.csv`` row needs more than 25 runs
  per cell is underpowered;
- §1 and §7, where a reference's per-run table is known (``RUN_TABLES``): each two-cell
  comparison's estimate, interval, raw p and method recomputed from the runs, within
  sittings where they span several (the stated rule: no pooled fallback);
- §1 the serialisation benchmark's replicate is a process; §3 the GC shift test's interval
  recomputed from its per-run table;
- §4 a ``value`` on constant runs is not reproduced outside its band and inconclusive
  inside it, and no raw p is 0;
- §6 availability: A over every run of method 1, censored ones included; every MTTF test
  states its model check, the exponential model only where every compared cell has a
  failure, the test on runs recomputed from the reference's cycles; an outage claim at the
  exact test's floor says that the runs set its p.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "data" / "runs" / "reference"
ALPHA = 0.05
MIN_RUNS = 3
MAX_RUNS = 25
EQUAL = (0.8, 1.25)
P_KINDS = ("direction", "interaction", "ratio", "differ")
SITTING_GAP_H = 6.0
EXACT = ("permutation", "mannwhitney")
DECIDED = ("reproduced", "not reproduced")


def claims_tables(root: Path = REFERENCE) -> list[Path]:
    """Every committed claims table (claims about ipclab's own code apart)."""
    return sorted(p for p in root.glob("*/results/claims*.csv") if p.name != "claims_code.csv")


def _f(x: object) -> float:
    try:
        return float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan


# --------------------------------------------------------------------------- §3


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment (NaN stays NaN), written from its definition."""
    out = np.full(len(p), np.nan)
    idx = [i for i in range(len(p)) if np.isfinite(p[i])]
    m, running = len(idx), 0.0
    for rank, i in enumerate(sorted(idx, key=lambda j: p[j])):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def exact_floor(n_a: int, n_b: int) -> float:
    """The smallest two-sided p of the exact permutation test: the observed labelling (and
    its mirror with equal cells) over C(n_a + n_b, n_a); the random test's 1 / 20,001
    beyond 10^6 labellings."""
    total = math.comb(n_a + n_b, n_a)
    if total > 1_000_000:
        return 1 / 20_001
    return (2 if n_a == n_b else 1) / total


def tests_of(table: pd.DataFrame) -> pd.DataFrame:
    ev = table["evidence"].fillna("test") if "evidence" in table.columns else "test"
    return table[ev == "test"]


def family_sizes(table: pd.DataFrame) -> dict[str, int]:
    t = tests_of(table)
    return t.groupby(t["family"].fillna(""))["test_key"].nunique().to_dict()


def check_holm(table: pd.DataFrame) -> list[str]:
    out = []
    t = tests_of(table)
    for fam, g in t.groupby(t["family"].fillna("")):
        d = g.drop_duplicates("test_key")
        want = holm(d["p_raw"].to_numpy(float))
        got = d["p_value"].to_numpy(float)
        for cid, w, x in zip(d["claim_id"], want, got, strict=True):
            if np.isfinite(w) and not math.isclose(w, x, rel_tol=1e-9):
                out.append(f"{cid}: Holm p {x:.6g}, recomputed {w:.6g} (family {fam!r})")
    return out


def floor_of(row: pd.Series) -> float:
    """A test's smallest reachable p from its method and runs (NaN: not knowable here)."""
    method, n_a, n_b = str(row["p_method"]), int(row["n_a"]), int(row["n_b"])
    if method in EXACT:
        return exact_floor(n_a, n_b)
    if method.startswith("t (") or method == "welch":
        return 0.0
    shifts = re.search(r"circular shift.*\((\d+) offsets\)", method)
    if shifts:
        return min(1.0, 2.0 * float(shifts.group(1)) ** -n_a)
    return math.nan


def check_design(table: pd.DataFrame, base: dict[str, str]) -> list[str]:
    """The design columns and the verdict they imply (§3)."""
    if "p_floor" not in table.columns:
        return ["no design columns (p_floor, p_level, design)"]
    out, sizes = [], family_sizes(table)
    for _, r in tests_of(table).iterrows():
        if r["test"] not in P_KINDS or not isinstance(r["p_method"], str) or r["p_method"] in (
            "none", "fact"
        ):  # fmt: skip
            continue
        level = ALPHA / sizes.get(r["family"] if isinstance(r["family"], str) else "", 1)
        got_floor, got_level = _f(r["p_floor"]), _f(r["p_level"])
        if not math.isclose(got_level, level, rel_tol=1e-9):
            out.append(f"{r['claim_id']}: p_level {got_level:.6g}, recomputed {level:.6g}")
        want = floor_of(r)
        if r["p_method"] == "permutation (by sitting)":  # strata only raise the floor
            want = got_floor if got_floor >= exact_floor(int(r["n_a"]), int(r["n_b"])) else -1
        if np.isfinite(want) and not math.isclose(got_floor, want, rel_tol=1e-9, abs_tol=0):
            out.append(f"{r['claim_id']}: p_floor {got_floor:.6g}, recomputed {want:.6g}")
        floor = want if np.isfinite(want) else got_floor
        cannot = np.isfinite(floor) and floor >= level
        if (
            cannot
            and base.get(r["claim_id"]) == "inconclusive"
            and not (r["verdict"] == "underpowered" and "by design" in str(r["reason"]))
        ):
            out.append(f"{r['claim_id']}: its runs cannot pass {level:.2g} (floor "
                       f"{floor:.2g}) but the verdict is {r['verdict']}")  # fmt: skip
    return out


# --------------------------------------------------------------------------- §4


def _band(r: pd.Series) -> tuple[float, float]:
    return _f(r["band_low"]), _f(r["band_high"])


def base_verdict(r: pd.Series) -> str | None:
    """The verdict of one tested row by §4 from its numbers, before section 7 (None: not
    recomputable here: a fact, a code measure)."""
    if str(r.get("evidence", "test")) not in ("test", "nan"):
        return None
    est, lo, hi, p = (_f(r[c]) for c in ("measured_ratio", "ci_low", "ci_high", "p_value"))
    n = [int(r["n_a"])] + ([int(r["n_b"])] if r["test"] != "value" else [])
    if not isinstance(r["measured"], str) or not r["measured"]:
        return "inconclusive"  # not measured
    if min(n) < MIN_RUNS:
        return "inconclusive"
    up = r["relation"] == ">"
    point = lo == hi == est or (math.isnan(lo) and math.isnan(hi) and math.isnan(est))
    off = math.isnan(est) or est == 1 or (est < 1 if up else est > 1)
    if point and r["test"] in ("direction", "interaction") and off:
        return "not reproduced"  # constant samples off the claimed side (0 against 0 too)
    if math.isnan(lo) or math.isnan(hi) or math.isnan(est):
        return "inconclusive"
    bl, bh = _band(r)
    inside, outside = bl <= lo and hi <= bh, hi < bl or lo > bh
    sig, side = np.isfinite(p) and p < ALPHA, (est > 1 if up else est < 1)
    kind, word = (
        r["test"],
        str(r.get("magnitude", "") if isinstance(r.get("magnitude"), str) else ""),
    )
    if kind == "value" and point:  # §4: constant runs, no spread: outside, or undecided
        return "not reproduced" if outside else "inconclusive"
    if kind in ("equal", "value"):
        return "reproduced" if inside else "not reproduced" if outside else "inconclusive"
    if kind == "differ":
        return "reproduced" if sig and outside else "not reproduced" if inside else "inconclusive"
    if kind == "ratio":
        return "not reproduced" if outside else "reproduced" if sig and side else "inconclusive"
    return _direction(sig, side, word, inside, outside, lo, hi, up)


def _direction(sig: bool, side: bool, word: str, inside: bool, outside: bool, lo: float,
               hi: float, up: bool) -> str:  # fmt: skip
    """§4's direction rows; a decided direction's interval lies on its side of 1."""
    claimed = lo > 1 if up else hi < 1
    other = hi < 1 if up else lo > 1
    if sig and not side:
        return "not reproduced" if other else "inconclusive"
    if word == "considerable" and inside:
        return "not reproduced"
    if not sig or not claimed:
        return "inconclusive"
    if word == "slight":
        return "reproduced" if inside else "not reproduced" if outside else "inconclusive"
    if word == "considerable":
        return "reproduced" if outside else "inconclusive"
    return "reproduced"


def check_verdicts(table: pd.DataFrame, base: dict[str, str]) -> list[str]:
    out = []
    for _, r in tests_of(table).iterrows():
        want = base.get(r["claim_id"])
        if want is None or r["verdict"] == want:
            continue
        if (r["verdict"], want) == ("underpowered", "inconclusive") and str(r["reason"]).startswith(
            "underpowered"
        ):
            continue  # section 7 (checked by check_design and check_cap)
        out.append(f"{r['claim_id']}: verdict {r['verdict']}, section 4 gives {want} "
                   f"({r['measured']}, p = {r['p_value']})")  # fmt: skip
    return out


APPROXIMATE = re.compile(
    r"\b(?:about|approximately|around|roughly|nearly|almost)\s+(?P<n>\d+(?:\.\d+)?|one|two|"
    r"three|four|five|six|seven|eight|nine|ten)\b", re.IGNORECASE)  # fmt: skip
NAMES = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
WORDS = dict(zip(NAMES, map(str, range(1, 11)), strict=True))


def check_about(table: pd.DataFrame) -> list[str]:
    """§4 'about N': the standard equivalence band for an approximate number."""
    out = []
    for _, r in table.iterrows():
        if r["test"] not in ("equal", "value") or not isinstance(r["quote"], str):
            continue
        numbers = set(re.findall(r"\d+(?:\.\d+)?", str(r["published_value"])))
        said = {WORDS.get(m.group("n").lower(), m.group("n")) for m in
                APPROXIMATE.finditer(r["quote"])}  # fmt: skip
        if numbers & said and _band(r) != EQUAL:
            out.append(f"{r['claim_id']}: 'about {sorted(numbers & said)[0]}' judged on "
                       f"{_band(r)}, not the standard {EQUAL}")  # fmt: skip
    return out


def check_intervals(table: pd.DataFrame) -> list[str]:
    """§4: a reproduced verdict has an interval (or the claim is inconclusive)."""
    t = tests_of(table)
    bad = t[(t["verdict"] == "reproduced") & (t["ci_low"].isna() | t["ci_high"].isna())]
    return [f"{cid}: reproduced with no interval" for cid in bad["claim_id"]]


# --------------------------------------------------------------------------- §7


NEED = re.compile(r"(?P<n>\d[\d,]*) runs per cell,? (?:for 80% power|more than|\d)")


def check_cap(table: pd.DataFrame, power: pd.DataFrame, base: dict[str, str]) -> list[str]:
    """§7: an undecided test needing more than 25 runs per cell (or more than 1,000: a blank
    need) is underpowered. The need from ``power`` (the table's own power.csv rows) and from
    each row's reason ("46 runs per cell for 80% power ...")."""
    out = []
    for _, r in tests_of(table).iterrows():
        m = NEED.search(str(r["reason"]))
        need = int(m["n"].replace(",", "")) if m else 0
        if (
            need > MAX_RUNS
            and base.get(r["claim_id"]) == "inconclusive"
            and (r["verdict"] != "underpowered")
        ):
            out.append(f"{r['claim_id']}: its reason needs {need} runs per cell (> {MAX_RUNS}) "
                       f"but it is {r['verdict']}")  # fmt: skip
    if power.empty or "runs_needed" not in power.columns:
        return out
    key = dict(zip(table["claim_id"], table["test_key"], strict=True))
    for _, p in power.iterrows():
        if p["claim_id"] not in key:
            continue
        need = _f(p["runs_needed"])
        if np.isfinite(need) and need <= MAX_RUNS:
            continue
        rows = table[table["test_key"] == key[p["claim_id"]]]
        if "family" in power.columns and isinstance(p["family"], str):
            rows = rows[rows["family"] == p["family"]]
        for _, r in rows.iterrows():
            if base.get(r["claim_id"]) == "inconclusive" and r["verdict"] != "underpowered":
                out.append(f"{r['claim_id']}: needs {need:g} runs per cell (> {MAX_RUNS}) "
                           f"but is {r['verdict']}")  # fmt: skip
    return out


# --------------------------------------------------------------------------- §1, §3, §7 from runs

#: the per-run tables the claims of a reference were judged on: file, the rows a claims
#: table reads, the column that is the claims' load
RUN_TABLES = {
    "nyflott-full-docker": ("runs.csv", lambda t: t[t["adapters"] == "python"], "delay_ms"),
    "johansson-full-local": ("thesis_runs.csv", lambda t: t[~t["sequential"].astype(bool)],
                             "users"),
    "johansson-full-docker": ("thesis_runs.csv", lambda t: t[~t["sequential"].astype(bool)],
                              "users"),
    "shafabakhsh-full-local": ("runs.csv", lambda t: t[t["think_time_s"].astype(float) == 0],
                               "users"),
    "shafabakhsh-full-docker": ("runs.csv", lambda t: t[t["think_time_s"].astype(float) == 0],
                                "users"),
}  # fmt: skip
COMPARISON = re.compile(
    r"^(?P<metric>\w+): (?P<a>[\w.+-]+)@(?P<ua>\d+) (?P<rel>[<>]|~=|!=) "
    r"(?P<b>[\w.+-]+)@(?P<ub>\d+)$"
)


def sittings(started: pd.Series) -> np.ndarray:
    """§7: runs sorted by start; more than 6 hours between two starts begins a new sitting;
    a run without a start is in none (-1)."""
    t = pd.to_datetime(started, utc=True, errors="coerce")
    out = np.full(len(t), -1)
    order = [i for i in np.argsort(t.to_numpy()) if pd.notna(t.iloc[i])]
    current, last = 0, None
    for i in order:
        if last is not None and (t.iloc[i] - last).total_seconds() / 3600 > SITTING_GAP_H:
            current += 1
        out[i], last = current, t.iloc[i]
    return out


def permutation_p(strata: list[tuple[np.ndarray, np.ndarray]]) -> float:
    """The exact two-sided permutation test of two means, labels permuted within strata;
    the statistic sum over strata of n_a n_b / n x (mean a - mean b)."""
    per = []
    for a, b in strata:
        x = np.concatenate([a, b])
        k, n = len(a), len(x)
        per.append([k * (n - k) / n * (x[list(c)].mean() - np.delete(x, list(c)).mean())
                    for c in itertools.combinations(range(n), k)])  # fmt: skip
    obs = sum(len(a) * len(b) / (len(a) + len(b)) * (a.mean() - b.mean()) for a, b in strata)
    tol = 1e-12 * max(1.0, max(float(np.abs(np.concatenate(s)).max()) for s in strata))
    hits = total = 0
    for combo in itertools.product(*per):
        total += 1
        hits += abs(sum(combo)) >= abs(obs) - tol
    return hits / total


def log_ratio_t(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """§2-3: the t interval and test of log(mean a / mean b), delta method, Welch df."""
    ma, mb = a.mean(), b.mean()
    parts = [(x.var(ddof=1) / len(x) / m**2, len(x)) for x, m in ((a, ma), (b, mb))]
    v = sum(c for c, _ in parts)
    df = v**2 / sum(c**2 / (k - 1) for c, k in parts if c > 0)
    q, se, est = sps.t.ppf(0.975, df), math.sqrt(v), math.log(ma / mb)
    return {"estimate": ma / mb, "low": math.exp(est - q * se), "high": math.exp(est + q * se),
            "p": 2 * sps.t.sf(abs(est) / se, df)}  # fmt: skip


def by_sitting_t(a: np.ndarray, la: np.ndarray, b: np.ndarray, lb: np.ndarray,
                 common: list[int]) -> dict[str, float]:  # fmt: skip
    """§7: per common sitting log(mean a / mean b), each cell's squared CV pooled over all
    its sittings, inverse-variance weights, Welch-Satterthwaite df over the pooled CVs."""
    pooled = []
    for x, lab in ((a, la), (b, lb)):
        num = dfs = 0.0
        for s in set(lab.tolist()) - {-1}:
            xs = x[lab == s]
            if len(xs) >= 2 and xs.mean() > 0:
                num, dfs = num + (len(xs) - 1) * xs.var(ddof=1) / xs.mean() ** 2, dfs + len(xs) - 1
        pooled.append((num / dfs if dfs else math.nan, dfs))
    logs, w, coef = [], [], []
    for s in common:
        xa, xb = a[la == s], b[lb == s]
        logs.append(math.log(xa.mean() / xb.mean()))
        coef.append((1 / len(xa), 1 / len(xb)))
        w.append(1 / (pooled[0][0] / len(xa) + pooled[1][0] / len(xb)))
    weights = np.array(w) / sum(w)
    est = float(np.dot(weights, logs))
    parts = [(pooled[i][0] * sum(weights[k] ** 2 * coef[k][i] for k in range(len(common))),
              pooled[i][1]) for i in (0, 1)]  # fmt: skip
    v = sum(c for c, _ in parts)
    df = v**2 / sum(c**2 / d for c, d in parts if c > 0)
    q, se = sps.t.ppf(0.975, df), math.sqrt(v)
    return {"estimate": math.exp(est), "low": math.exp(est - q * se),
            "high": math.exp(est + q * se), "p": 2 * sps.t.sf(abs(est) / se, df)}  # fmt: skip


def _exact_case(a: np.ndarray, b: np.ndarray, same_strata: list) -> str | None:
    """§3's exact case: one side 0 in every run and the other not, or no spread in any
    cell (per sitting); None otherwise."""
    signed = len(a) >= 2 and len(b) >= 2 and (a >= 0).all() and (b >= 0).all()
    if signed and ((not a.any() and b.any()) or (a.any() and not b.any())):
        return "zero"
    if all(np.ptp(x) == 0 for s in same_strata for x in s if len(x)):
        return "constant"
    return None


def recompute_two_cells(a: np.ndarray, la: np.ndarray, b: np.ndarray,
                        lb: np.ndarray) -> dict[str, object]:  # fmt: skip
    """§3 and §7 for one load a side: the method, and its estimate, interval and raw p."""
    every = (set(la.tolist()) | set(lb.tolist())) - {-1}
    if len(every) <= 1:
        strata = [(a, b)]
        case = _exact_case(a, b, strata)
        method = "permutation" if case else "t (log ratio)"
    else:
        common = sorted((set(la.tolist()) & set(lb.tolist())) - {-1})
        if not common:
            return {"method": "none"}
        strata = [(a[la == s], b[lb == s]) for s in common]
        case = _exact_case(np.concatenate([x for x, _ in strata]),
                           np.concatenate([y for _, y in strata]), strata)  # fmt: skip
        if not case:
            return {"method": "t (log ratio, by sitting)", **by_sitting_t(a, la, b, lb, common)}
        method = "permutation (by sitting)"
    if not case:
        return {"method": method, **log_ratio_t(a, b)}
    xa, xb = np.concatenate([x for x, _ in strata]), np.concatenate([y for _, y in strata])
    est = xa.mean() / xb.mean() if xb.mean() else math.inf if xa.mean() else math.nan
    return {"method": method, "estimate": est, "low": est, "high": est,
            "p": permutation_p(strata), "n_a": len(xa), "n_b": len(xb)}  # fmt: skip


def check_runs(folder: str, table: pd.DataFrame) -> list[str]:
    """Each two-cell comparison of a reference whose per-run table is known, recomputed
    from its runs (§1: the run the unit; §3; §7 within sittings)."""
    if folder not in RUN_TABLES:
        return []
    name, select, load = RUN_TABLES[folder]
    runs = select(pd.read_csv(REFERENCE / folder / "results" / name))
    runs = runs.assign(_s=sittings(runs["started_at"]))
    out = []
    for _, r in tests_of(table).iterrows():
        m = COMPARISON.match(str(r["comparison"]))
        if not m or r["test"] == "interaction" or m["metric"] not in runs.columns:
            continue
        cells = []
        for s, u in ((m["a"], m["ua"]), (m["b"], m["ub"])):
            c = runs[(runs["style"] == s) & (runs[load].astype(float) == float(u))]
            x = pd.to_numeric(c[m["metric"]], errors="coerce")
            cells.append((x[x.notna()].to_numpy(float), c.loc[x.notna(), "_s"].to_numpy()))
        if min(len(x) for x, _ in cells) < MIN_RUNS or r["p_method"] in ("fact",):
            continue
        out += _compare(r, recompute_two_cells(cells[0][0], cells[0][1], *cells[1]))
    return out


def _compare(r: pd.Series, got: dict[str, object]) -> list[str]:
    cid, method = r["claim_id"], str(r["p_method"])
    if got["method"] != method:
        return [f"{cid}: p-method {method!r}, recomputed {got['method']!r}"]
    if got["method"] == "none":
        return [] if r["verdict"] == "inconclusive" else [f"{cid}: no estimate but {r['verdict']}"]
    out = []
    for col, key in (("p_raw", "p"), ("measured_ratio", "estimate"), ("ci_low", "low"),
                     ("ci_high", "high")):  # fmt: skip
        want, have = float(got[key]), _f(r[col])  # type: ignore[arg-type]
        same = (math.isinf(want) and want == have) or math.isclose(
            want, have, rel_tol=1e-6, abs_tol=1e-300
        )
        if not same:
            out.append(f"{cid}: {col} {have:.6g}, recomputed from the runs {want:.6g}")
    for col in ("n_a", "n_b"):
        if col in got and int(r[col]) != got[col]:
            out.append(f"{cid}: {col} {r[col]}, recomputed {got[col]}")
    return out


# --------------------------------------------------------------------------- study tests


def check_serialisation(folder: str, table: pd.DataFrame) -> list[str]:
    """§1: the serialisation benchmark's replicates are processes, not rounds."""
    path = REFERENCE / folder / "results" / "serialisation_rounds.csv"
    if not path.exists():
        return []
    rounds = pd.read_csv(path)
    per = rounds.groupby(["style", "rows"])["process"].nunique() if "process" in rounds else 1
    most = int(np.max(per)) if not isinstance(per, int) else per
    t = tests_of(table)
    t = t[t["family"] == "serialisation micro-benchmark"]
    over = t[(t["n_a"] > most) | (t["n_b"] > most)]
    return [f"{cid}: {n} replicates from {most} process(es)" for cid, n in
            zip(over["claim_id"], over["n_a"], strict=True)]  # fmt: skip


def gc_interval(observed: np.ndarray, expected: np.ndarray) -> tuple[float, float, float]:
    """§3 the GC shift test's interval: mean observed / mean expected over runs, the t
    interval of its log by the delta method with the pairs' covariance, n - 1 df."""
    mo, me, n = observed.mean(), expected.mean(), len(observed)
    c = np.cov(observed, expected)
    v = (c[0, 0] / mo**2 + c[1, 1] / me**2 - 2 * c[0, 1] / (mo * me)) / n
    q, est = sps.t.ppf(0.975, n - 1), mo / me
    if v <= 0:
        return est, est, est
    return est, est * math.exp(-q * math.sqrt(v)), est * math.exp(q * math.sqrt(v))


def check_gc(folder: str, table: pd.DataFrame) -> list[str]:
    path = REFERENCE / folder / "results" / "gc_shift_runs.csv"
    if not path.exists():
        return []
    per = pd.read_csv(path)
    per = per[per["requests_set"] == "each run's slowest 0.021%"]
    out = []
    for cid, side in (("N29a", "extremes"), ("N30a", "gcs")):
        rows = table[table["claim_id"] == cid]
        if rows.empty:
            continue
        ok = per[[f"{side}_observed", f"{side}_expected"]].dropna()
        want = gc_interval(*(ok[c].to_numpy(float) for c in ok.columns))
        r = rows.iloc[0]
        have = (_f(r["measured_ratio"]), _f(r["ci_low"]), _f(r["ci_high"]))
        if not all(math.isclose(w, h, rel_tol=1e-6) for w, h in zip(want, have, strict=True)):
            out.append(f"{cid}: {have}, recomputed from gc_shift_runs.csv {want}")
    return out


# --------------------------------------------------------------------------- §6 availability

#: every availability reference (local, docker; kubernetes once committed: issue 51)
AVAILABILITY = tuple(sorted(p.name for p in REFERENCE.glob("availability-full-*") if p.is_dir()))


def method1_runs(folder: str) -> pd.DataFrame:
    """§6: method 1's runs from the reference's cycles: each run's time (its first cycle's
    up time: to its failure, or to the cap) and its A, up over its whole observation;
    start-up failures apart (a run with nothing else gives none)."""
    path = REFERENCE / folder / "results" / "cycles.csv"
    if not path.exists():
        return pd.DataFrame()
    c = pd.read_csv(path)
    c = c[c["method"] == "until_failure"]
    if "kind" in c.columns:  # start-up failures apart: a run's time is its first other cycle
        c = c[~c["kind"].fillna("").astype(str).str.startswith("start")]
    rows = []
    for (style, users, run), g in c.groupby(["style", "users", "run"]):
        g = g.sort_values("index")
        failed = g["status"] != "censored"
        down = pd.to_numeric(g["ttr_s"], errors="coerce").fillna(0.0)[failed].sum()
        up = float(g["ttf_s"].sum())
        rows.append({"style": style, "users": int(users), "run": run,
                     "ttf_s": float(g["ttf_s"].iloc[0]), "failed": bool(failed.iloc[0]),
                     "availability": up / (up + down)})  # fmt: skip
    return pd.DataFrame(rows)


def check_availability(folder: str, table: pd.DataFrame) -> list[str]:
    """§6: A over every run, censored ones included (1 for a run that outlived the cap); each
    MTTF test states its model check, uses the exponential model only where every compared
    cell has a failure, and on runs is the exact permutation test of the mean time to
    failure restricted to the cap; an outage claim at its exact floor says the runs set it."""
    if folder not in AVAILABILITY:
        return []
    out, runs = judged_runs(folder), method1_runs(folder)
    for _, r in tests_of(table).iterrows():
        m = COMPARISON.match(str(r["comparison"]))
        if (
            r["p_method"] == "permutation"
            and math.isclose(
                _f(r["p_raw"]), exact_floor(int(r["n_a"]), int(r["n_b"])), rel_tol=1e-9
            )
            and "not their spread" not in str(r["reason"])
            and "outage" in str(r["comparison"])
        ):
            out.append(f"{r['claim_id']}: p at the exact floor, the reason does not say so")
        if not m or r["family"] != "until failure":
            continue
        if runs.empty:  # no run of the current method: no claim of method 1 is evidence
            if r["verdict"] != "inconclusive":
                out.append(f"{r['claim_id']}: {r['verdict']} with no run of the current method")
            if m["metric"] == "availability" and [int(r["n_a"]), int(r["n_b"])] != [0, 0]:
                out.append(f"{r['claim_id']}: A over {r['n_a']} + {r['n_b']} runs, not [0, 0]")
            continue
        cells = [runs[(runs["style"] == s) & (runs["users"] == int(u))]
                 for s, u in ((m["a"], m["ua"]), (m["b"], m["ub"]))]  # fmt: skip
        if m["metric"] == "availability":  # a cell with no run of the current method: 0
            n = [len(c) for c in cells]
            if [int(r["n_a"]), int(r["n_b"])] != n:
                out.append(f"{r['claim_id']}: A over {r['n_a']} + {r['n_b']} runs, not {n}")
        if m["metric"] == "mttf_s":
            sides = [(m["a"], int(m["ua"])), (m["b"], int(m["ub"]))]
            predicted = r["verdict"] == "underpowered" and "predicted censored" in str(r["reason"])
            out += _check_predicted(folder, r, sides, runs) if predicted else _check_mttf(r, cells)
    return out


def judged_runs(folder: str) -> list[str]:
    """§6: method 1's runs the claims may read and do: the reference's run table
    (``until_failure_runs.csv``) against the runs its cycles come from. Only runs of the
    current method are judged; a superseded run never is."""
    path = REFERENCE / folder / "results" / "until_failure_runs.csv"
    cycles = REFERENCE / folder / "results" / "cycles.csv"
    if not path.exists() or not cycles.exists():
        return []
    t = pd.read_csv(path)
    c = pd.read_csv(cycles)
    used = set(c.loc[c["method"] == "until_failure", "run"])
    current = set(t.loc[t["judged"].str.startswith("current"), "run"])
    wrong = sorted(used - current) + sorted(current - used)
    return [f"method 1's judged runs differ from the current ones: {wrong}"] if wrong else []


def _check_predicted(
    folder: str, r: pd.Series, sides: list[tuple[str, int]], runs: pd.DataFrame
) -> list[str]:
    """§6, a direction no run can decide: an MTTF direction said underpowered as predicted
    censored needs each cell observed with every run outliving the cap or predicted to (its
    style's every current run outlived the cap, with no start-up failure; its highest load
    at or above the cell's, whose runs' recorded Little's law cannot time calls out), one
    cell at least predicted."""
    table = pd.read_csv(REFERENCE / folder / "results" / "until_failure_runs.csv")
    table = table[table["judged"].str.startswith("current")]
    why, predicted = [], 0
    for style, users in sides:
        own = runs[runs["style"] == style]
        cell = own[own["users"] == users]
        if len(cell):
            why += [f"{style}@{users} has a failed run"] if cell["failed"].any() else []
            continue
        predicted += 1
        listed = table[table["style"] == style]
        if own.empty or own["failed"].any() or (listed["startup"] > 0).any():
            why.append(f"{style}: a current run failed, or none was made")
        elif own["users"].max() < users:
            why.append(f"{style}@{users}: above the style's highest load run")
        for run in own.loc[own["users"] == own["users"].max(), "run"]:
            little = json.loads((REFERENCE / folder / run / "manifest.json").read_text())
            little = little["parameters"].get("little") or {}
            if not little.get("response_s", math.inf) <= little.get("call_timeout_s", 0.0):
                why.append(f"{run}: Little's law does not rule timeouts out")
    if not predicted:
        why.append("no cell predicted")
    return [f"{r['claim_id']}: predicted censored, but {'; '.join(why)}"] if why else []


def _check_mttf(r: pd.Series, cells: list[pd.DataFrame]) -> list[str]:
    if any(c.empty for c in cells):  # no time: start-up failures, or only superseded runs
        said = ("start-up", "no run of the current method")
        if not any(w in str(r["reason"]) for w in said) or r["verdict"] != "inconclusive":
            return [f"{r['claim_id']}: a cell with no time to failure, not said so"]
        return []
    check = str(r.get("model_check", ""))
    if not check.startswith("exponential model"):
        return [f"{r['claim_id']}: no model check stated"]
    if r["p_method"] == "exact (Poisson rates)":
        if min(int(c["failed"].sum()) for c in cells) == 0 or "not rejected" not in check:
            return [f"{r['claim_id']}: the exponential model used where the runs cannot support it"]
        return []
    if r["p_method"] != "permutation":
        return [f"{r['claim_id']}: an MTTF direction by {r['p_method']}"]
    a, b = (c["ttf_s"].clip(upper=900.0).to_numpy(float) for c in cells)
    p = permutation_p([(a, b)])
    if not math.isclose(p, _f(r["p_raw"]), rel_tol=1e-9):
        return [f"{r['claim_id']}: p on runs {_f(r['p_raw']):.6g}, recomputed {p:.6g}"]
    return []


def check_no_zero_p(table: pd.DataFrame) -> list[str]:
    """§3: no p-value of exactly 0 from a degenerate case (constant samples)."""
    t = tests_of(table)
    return [f"{cid}: a raw p of 0" for cid, p in zip(t["claim_id"], t["p_raw"], strict=True)
            if _f(p) == 0.0]  # fmt: skip


# --------------------------------------------------------------------------- all


def _power_of(path: Path, table: pd.DataFrame) -> pd.DataFrame:
    """The reference's power.csv where it is this table's: claims.csv's, or a further
    table's whose families claims.csv does not hold (a family split into its own file);
    a table of the same families on other runs (Buono's encoders) has its needs in its
    reasons only."""
    power_path = path.parent / "power.csv"
    if not power_path.exists():
        return pd.DataFrame()
    if path.name != "claims.csv":
        main = pd.read_csv(path.parent / "claims.csv")
        if set(table["family"].dropna()) & set(main["family"].dropna()):
            return pd.DataFrame()
    return pd.read_csv(power_path)


def problems(path: Path) -> list[str]:
    """Every difference between a committed claims table and docs/statistics.md's rules."""
    table = pd.read_csv(path)
    folder = path.parent.parent.name
    power = _power_of(path, table)
    base = {r["claim_id"]: v for _, r in table.iterrows() if (v := base_verdict(r)) is not None}
    out = check_holm(table) + check_verdicts(table, base) + check_design(table, base)
    out += check_cap(table, power, base) + check_about(table) + check_intervals(table)
    out += check_runs(folder, table) if path.name == "claims.csv" else []
    out += check_serialisation(folder, table) + check_gc(folder, table)
    out += check_availability(folder, table) + check_no_zero_p(table)
    return [f"{folder}/{path.name}: {p}" for p in out]
