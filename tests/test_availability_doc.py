"""docs/statistics.md's availability rules (section 6, and section 4's constant `value`),
evaluated against the code: every fenced block marked ``availability-example`` holds lines
``call -> result``, a call of one of the doors below (each a thin door into the code that
applies the rule) and what the document states. A number compares to the digits printed,
a list element by element, a text by each of its comma-separated parts appearing in the
code's answer (issue 47: the document is the rule, the code applies it)."""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ipclab import claims as C
from ipclab.availability import survival
from ipclab.availability.model import Cycle, CycleStatus
from ipclab.paths import REPO_ROOT
from ipclab.published import Claim
from ipclab.studies.shafabakhsh.availability import plan, pricing
from ipclab.studies.shafabakhsh.availability.profiles import superseded_dirs

DOC = REPO_ROOT / "docs" / "statistics.md"
BLOCK = re.compile(r"^[ \t]*```availability-example[ \t]*\n(?P<body>.*?)^[ \t]*```", re.S | re.M)


def examples(text: str) -> list[tuple[str, str, str]]:
    out = []
    for m in BLOCK.finditer(text):
        heads = re.findall(r"^## (.+)$", text[: m.start()], re.M)
        for line in m.group("body").splitlines():
            if line.strip():
                call, sep, result = line.strip().rpartition("->")
                assert sep, f"an example line needs 'call -> result': {line!r}"
                out.append((heads[-1] if heads else "", call.strip(), result.strip()))
    return out


# --------------------------------------------------------------------------- the doors


def _cell(times: list[float], failed: list[int], cap: float = 900.0) -> survival.CellTimes:
    return survival.CellTimes.of("x@200", times, [bool(f) for f in failed], cap)


def exponential_check(times: list[float], failed: list[int]) -> str:
    c = survival.exponential_check([_cell(times, failed)])
    return "not used" if not np.isfinite(c.p_value) else "not rejected" if c.supported else (
        "rejected")  # fmt: skip


def model_free_lower(times: list[float], failed: list[int], cap: float) -> float:
    return survival.model_free_bounds(_cell(times, failed, cap), 300.0)[1]


def runs_all_surviving_to_refute(mttf: float, cap: float) -> float:
    return plan.survivors_needed(mttf, cap)


def restricted_test(a: list[float], b: list[float], b_failed: list[int]) -> str:
    r = survival.restricted_test(_cell(a, [1] * len(a)), _cell(b, b_failed))
    return f"p {r.p_value:.2g}, ratio {r.ratio:.2g}, interval [{r.low:g}, {r.high:g}]"


def run_availability(up: float, down: float) -> float:
    cycles = [Cycle(0, CycleStatus.CENSORED if not down else CycleStatus.RECOVERED, 0.0, up,
                    ttr_s=down or None)]  # fmt: skip
    return survival.run_outcome(cycles, 900.0).availability


def outage_floor(runs: int, family: int) -> list[float]:
    floor = survival.exact_floor(runs, runs)
    return [floor, min(1.0, family * floor)]


def runs_needed_exponential(mttf_a: float, mttf_b: float, cap: float, alpha: float) -> float:
    return survival.runs_needed_exponential(mttf_a, mttf_b, cap, alpha)


def hours_more(need: int, have: list[int], hours: list[float]) -> float:
    claim = _claim("direction", "")
    cells = {("a", 1): have[0], ("b", 1): have[1]}
    price = {("a", 1): hours[0], ("b", 1): hours[1]}
    return pricing.hours_more(claim, need, cells, price, None, math.nan)


def reference_hours(users: int | None) -> list[float]:
    """The committed docker reference's method-1 runs: the range of the per-cell mean wall
    times at ``users``, or (None) the mean over all of them."""
    from ipclab.runs import read_run

    root = REPO_ROOT / "data/runs/reference/availability-full-docker"
    runs = [read_run(d) for d in superseded_dirs(root)]  # the committed, probe-judged
    if users is None:
        return [C.run_hours([r.manifest for r in runs])]
    hours = pricing.cell_hours(runs)
    at = [h for (_, u), h in hours.items() if u == users]
    return [min(at), max(at)]


def _claim(test: str, value: str) -> Claim:
    """A claim on cell a@1 (and b@1 for a direction); a value in minutes of ``mttf_s``."""
    b, rel, unit = (("", ()), "=", "min") if test == "value" else (("b", (1,)), ">", "")
    return Claim("X01a", "X01", "thesis", "1", "1", "q", "availability", "mttf_s", test, rel,
                 "a", (1,), b[0], b[1], None, None, value, unit, "", None, None, None, "",
                 "")  # fmt: skip


def _value_row(runs: list[float], stated: float) -> pd.Series:
    rows = pd.DataFrame([{"style": "a", "users": 1, "mttf_s": v} for v in runs])
    claim = _claim("value", f"{stated / 60:g}")
    assert claim.published_number == pytest.approx(stated)
    return C.evaluate_claims(rows, [claim], scope="availability").iloc[0]


def judge_value(runs: list[float], stated: float) -> str:
    row = _value_row(runs, stated)
    return f"{row['verdict']}: {row['reason']}"


def p_of_value(runs: list[float], stated: float) -> float:
    return float(_value_row(runs, stated)["p_raw"])


NAMES: dict[str, Callable[..., Any]] = {
    "exponential_check": exponential_check,
    "model_free_lower": model_free_lower,
    "runs_all_surviving_to_refute": runs_all_surviving_to_refute,
    "restricted_test": restricted_test,
    "floor_runs": survival.floor_runs,
    "run_availability": run_availability,
    "outage_floor": outage_floor,
    "runs_needed_exponential": runs_needed_exponential,
    "hours_more": hours_more,
    "reference_hours": reference_hours,
    "judge_value": judge_value,
    "p_of_value": p_of_value,
}


# --------------------------------------------------------------------------- comparing


def _close(got: float, stated: str) -> bool:
    text = stated.replace(",", "")
    if text == "nan":
        return math.isnan(got)
    want = float(text)
    if not math.isfinite(got):
        return False
    decimals = len(text.split(".")[1]) if "." in text else 0
    return round(got, decimals) == pytest.approx(want, abs=10 ** -(decimals + 6))


def matches(got: Any, stated: str) -> bool:
    if stated.startswith("["):
        parts = [p.strip() for p in stated.strip("[]").split(",")]
        return len(parts) == len(got) and all(
            _close(float(g), p) for g, p in zip(got, parts, strict=True)
        )
    if re.fullmatch(r"-?[\d,]*\.?\d+|nan", stated):
        return _close(float(got), stated)
    return all(part.strip() in str(got) for part in stated.split(","))


DOC_EXAMPLES = examples(DOC.read_text(encoding="utf-8"))


def test_the_availability_rules_have_worked_examples() -> None:
    sections = {s.split(".")[0] for s, _, _ in DOC_EXAMPLES}
    assert {"4", "6"} <= sections, sections
    assert len(DOC_EXAMPLES) >= 15


@pytest.mark.parametrize(
    ("section", "call", "stated"), DOC_EXAMPLES, ids=[c[:48] for _, c, _ in DOC_EXAMPLES]
)
def test_a_worked_example_is_what_the_code_gives(section: str, call: str, stated: str) -> None:
    tree = ast.parse(call, mode="eval")
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Name)}  # fmt: skip
    assert called <= set(NAMES), f"{section}: unknown name(s) {called - set(NAMES)} in {call}"
    got = eval(compile(tree, "<docs/statistics.md>", "eval"), {"__builtins__": {}}, dict(NAMES))
    assert matches(got, stated), f"docs/statistics.md {section}: {call} gives {got!r}, not {stated}"


def test_the_comparison_is_strict_enough_to_fail() -> None:
    assert matches(263.2, "263") and not matches(264.0, "263")
    assert matches([0.0079, 0.016], "[0.0079, 0.016]") and not matches(
        [0.029, 0.016], "[0.0079, 0.016]"
    )
    assert matches("not rejected", "not rejected") and not matches("rejected", "not rejected")
    assert matches(math.nan, "nan") and not matches(0.0, "nan")
