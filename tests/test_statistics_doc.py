"""docs/statistics.md's worked examples, evaluated against the code (issue 47: the document
is the rule and the code applies it; neither can drift from the other).

Every fenced block of the document marked ``example`` holds lines ``call -> result``: a call
of one of the names below (each a thin door into the code that applies the rule) and the
result the document states. A number is compared to the digits printed (0.0079 is anything
that rounds to it), a list element by element, True/False exactly, and a text by each of its
comma-separated parts appearing in the code's answer."""

from __future__ import annotations

import ast
import csv
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as C
from ipclab.paths import REPO_ROOT
from ipclab.published import Claim, PublishedDataError
from ipclab.published import claims as load_claims
from ipclab.stats import design, holm, log_ratio_interval, permutation_p, t_interval

DOC = REPO_ROOT / "docs" / "statistics.md"
BLOCK = re.compile(r"^[ \t]*```example[ \t]*\n(?P<body>.*?)^[ \t]*```", re.S | re.M)


def examples(text: str) -> list[tuple[str, str, str]]:
    """(section, call, stated result) of every line of every ``example`` block."""
    out = []
    for m in BLOCK.finditer(text):
        before = text[: m.start()]
        heads = re.findall(r"^## (.+)$", before, re.M)
        section = heads[-1] if heads else ""
        for line in m.group("body").splitlines():
            if line.strip():
                call, sep, result = line.strip().rpartition("->")
                assert sep, f"{section}: an example line needs 'call -> result': {line!r}"
                out.append((section, call.strip(), result.strip()))
    return out


# --------------------------------------------------------------------------- the doors


def _claim(test: str, rel: str, value: str = "", quote: str = "q", own: tuple | None = None,
           magnitude: str = "") -> Claim:  # fmt: skip
    lo, hi = own or (None, None)
    b = ("", ()) if test == "value" else ("b", (1,))
    return Claim("X01a", "X01", "thesis", "1", "1", quote, "performance", "m", test, rel, "a",
                 (1,), b[0], b[1], None, None, value, "min" if test == "value" else "", "",
                 None, lo, hi, "", magnitude)  # fmt: skip


def band_of_claim(test: str, value: str, quote: str, own: tuple | None = None) -> list[float]:
    rel = {"equal": "=", "value": "=", "ratio": ">", "differ": "!="}[test]
    return list(C.band_of(_claim(test, rel, value, quote, own), C.Rules()))


def loader_accepts(test: str, value: str, quote: str, own: tuple | None = None) -> bool:
    import tempfile

    header = ["claim_id", "statement_id", "document", "section", "page", "quote", "scope",
              "metric", "test", "relation", "a_style", "a_users", "b_style", "b_users",
              "from_users", "to_users", "published_value", "published_unit", "table_value",
              "published_ratio", "band_low", "band_high", "note", "magnitude"]  # fmt: skip
    row = dict.fromkeys(header, "")
    row.update(claim_id="X01a", statement_id="X01", document="thesis", section="1", page="1",
               quote=quote, scope="performance", metric="rps", test=test,
               relation={"equal": "=", "ratio": ">", "differ": "!="}[test], a_style="a",
               a_users="1", b_style="b", b_users="1", published_value=value,
               band_low=str(own[0]) if own else "",
               band_high=str(own[1]) if own else "")  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x_claims.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, header)
            w.writeheader()
            w.writerow(row)
        try:
            load_claims(path, ("a", "b"))
        except PublishedDataError:
            return False
    return True


def can_pass(method: str, n_a: int, n_b: int, family: int) -> bool:
    return design.design(method, n_a, n_b, 0.05, family).can_pass


def _runs(a: Any, b: Any, days: bool = False) -> pd.DataFrame:
    """Per-run rows of cells a@1 and b@1 (``days``: a and b given per sitting)."""
    day = ("2026-11-25T12:00Z", "2026-11-27T12:00Z")
    rows = []
    for style, cell in (("a", a), ("b", b)):
        groups = cell if days else [cell]
        for s, xs in enumerate(groups):
            rows += [{"style": style, "users": 1, "m": float(v), **({"started_at": day[s]}
                      if days else {})} for v in xs]  # fmt: skip
    return pd.DataFrame(rows)


def judge(test: str, rel: str, a: list[float], b: list[float], magnitude: str = "") -> str:
    """The verdict of one claim on cells a and b (a family of one)."""
    row = C.evaluate_claims(_runs(a, b), [_claim(test, rel, magnitude=magnitude)]).iloc[0]
    return str(row["verdict"])


def within_sittings(a: list[list[float]], b: list[list[float]]) -> str:
    """A direction a > b on runs of two sittings: its p-value and method, or why not."""
    row = C.evaluate_claims(_runs(a, b, days=True), [_claim("direction", ">")]).iloc[0]
    if row["verdict"] == C.INCONCLUSIVE and not np.isfinite(row["p_raw"]):
        return f"inconclusive: {row['reason']}"
    return f"p {row['p_raw']:.2g}, method {row['p_method']}"


def underpowered_by_power(need: int, have: int, run_hours: float, cells: int = 2) -> bool:
    table = pd.DataFrame([{"claim_id": "A01a", "test_key": "k", "test": "direction",
                           "verdict": C.INCONCLUSIVE, "reason": "not significant",
                           "family": "f"}])  # fmt: skip
    if cells == 4:
        table["test"] = "interaction"
    power = pd.DataFrame([{"claim_id": "A01a", "runs_per_cell": have, "runs_needed": need,
                           "alpha": 0.01, "family": "f"}])  # fmt: skip
    return C.mark_underpowered(table, power, run_hours).iloc[0]["verdict"] == C.UNDERPOWERED


def ratio_interval(a: list[float], b: list[float]) -> list[float]:
    r = log_ratio_interval([(1, [a]), (-1, [b])])
    return [r.low, r.high]


def gc_ratio_interval(observed: list[float], expected: list[float]) -> list[float]:
    from ipclab.studies.nyflott.gcshift import ratio_interval as gc

    r = gc(observed, expected)
    return [r.estimate, r.low, r.high]


NAMES: dict[str, Callable[..., Any]] = {
    "exact_floor": design.exact_floor,
    "labellings": design.labellings,
    "holm_level": design.holm_level,
    "runs_that_could": design.runs_to_reach,
    "can_pass": can_pass,
    "band_of_claim": band_of_claim,
    "loader_accepts": loader_accepts,
    "within_sittings": within_sittings,
    "underpowered_by_power": underpowered_by_power,
    "judge": judge,
    "ratio_interval": ratio_interval,
    "gc_ratio_interval": gc_ratio_interval,
    "t_interval": lambda x: [t_interval(x).low, t_interval(x).high],
    "holm": lambda p: list(holm(p)),
    "permutation_p": permutation_p,
    "standard_band": lambda word: list(
        {"equal": C.EQUAL_BAND, "slight": C.EQUAL_BAND, "considerable": C.CONSIDERABLE_BAND}[word]
    ),
}


# --------------------------------------------------------------------------- comparing


def _close(got: float, stated: str) -> bool:
    """``got`` printed to ``stated``'s digits gives ``stated``."""
    text = stated.replace(",", "")
    want = float(text)
    if not math.isfinite(got):
        return False
    if "e" in text.lower():
        digits = len(text.lower().split("e")[0].replace("-", "").replace(".", "").lstrip("0"))
        return float(f"{got:.{max(digits, 1) - 1}e}") == want
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(got, decimals) == pytest.approx(want, abs=10 ** -(decimals + 6))


def matches(got: Any, stated: str) -> bool:
    if stated in ("True", "False"):
        return bool(got) is (stated == "True")
    if stated.startswith("["):
        parts = [p.strip() for p in stated.strip("[]").split(",")]
        return len(parts) == len(got) and all(
            _close(float(g), p) for g, p in zip(got, parts, strict=True)
        )
    if re.fullmatch(r"-?[\d,]*\.?\d+(e-?\d+)?", stated):
        return _close(float(got), stated)
    return all(part.strip() in str(got) for part in stated.split(","))


DOC_EXAMPLES = examples(DOC.read_text(encoding="utf-8"))


def test_the_document_has_worked_examples_in_every_rule_section() -> None:
    sections = {s.split(".")[0] for s, _, _ in DOC_EXAMPLES}
    assert {"2", "3", "4", "7"} <= sections, sections


@pytest.mark.parametrize(
    ("section", "call", "stated"),
    DOC_EXAMPLES,
    ids=[f"{s[:2]}{c[:40]}" for s, c, _ in DOC_EXAMPLES],
)
def test_a_worked_example_is_what_the_code_gives(section: str, call: str, stated: str) -> None:
    tree = ast.parse(call, mode="eval")
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Name)}  # fmt: skip
    assert called <= set(NAMES), f"{section}: unknown name(s) {called - set(NAMES)} in {call}"
    got = eval(compile(tree, "<docs/statistics.md>", "eval"), {"__builtins__": {}}, dict(NAMES))
    assert matches(got, stated), f"docs/statistics.md {section}: {call} gives {got!r}, not {stated}"


def test_the_comparison_is_strict_enough_to_fail() -> None:
    assert matches(0.00794, "0.0079") and not matches(0.0081, "0.0079")
    assert matches([0.8, 1.25], "[0.8, 1.25]") and not matches([0.85, 1.15], "[0.8, 1.25]")
    assert matches(184756, "184756") and not matches(184757, "184756")
    assert not matches(True, "False")
    assert matches("p 0.0079, method permutation (by sitting)", "p 0.0079, method permutation")
    assert not matches("p 0.36, method t (log ratio)", "method permutation (by sitting)")
