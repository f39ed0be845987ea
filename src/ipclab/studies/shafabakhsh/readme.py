"""The reference READMEs' measured parts, generated from the analysis so that no number or
verdict in them is typed by hand.

A README holds marked blocks

    <!-- generated: NAME -->
    ...
    <!-- /generated -->

that :func:`fill` replaces with the text the study computes (tables of cells, the machine
check, the headline); the verdicts themselves are in the findings blocks that
:func:`ipclab.findings.write_findings` fills from the claims tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

LABELS = {"rest": "REST", "grpc": "gRPC", "amqp": "AMQP"}
_BLOCK = re.compile(r"<!-- generated: (?P<name>[\w-]+) -->\n.*?<!-- /generated -->", re.S)


class ReadmeError(ValueError):
    """A README lacks a block the rebuilder fills."""


def fill(readme: Path, blocks: Mapping[str, str]) -> None:
    """Replace each ``<!-- generated: NAME -->`` block of ``readme`` by ``blocks[NAME]``;
    every name of ``blocks`` must have its block."""
    text = readme.read_text()
    missing = set(blocks) - {m.group("name") for m in _BLOCK.finditer(text)}
    if missing:
        raise ReadmeError(f"{readme}: no block '<!-- generated: {sorted(missing)[0]} -->'")

    def repl(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in blocks:
            return m.group(0)
        return f"<!-- generated: {name} -->\n{blocks[name].rstrip()}\n<!-- /generated -->"

    new = _BLOCK.sub(repl, text)
    if new != text:
        readme.write_text(new)


def ci(est: float, lo: float, hi: float, digits: int) -> str:
    """'12.3 [11.0, 13.6]'; the estimate alone without an interval; '-' without a value."""
    if not np.isfinite(est):
        return "-"
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return f"{est:.{digits}f}"
    return f"{est:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def span(values: pd.Series, digits: int) -> str:
    """'a-b' of the finite values (one value alone when they agree)."""
    x = pd.to_numeric(values, errors="coerce").dropna()
    if x.empty:
        return "-"
    lo, hi = f"{x.min():.{digits}f}", f"{x.max():.{digits}f}"
    return lo if lo == hi else f"{lo}-{hi}"


def machine_markdown(machine: pd.DataFrame, what: str) -> str:
    """The machine check as a table and a sentence counting the cells past the limit."""
    lines = [
        "| style | users | CPU ms per request (min-max) | ratio | other CPU max % | comparable |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in machine.iterrows():
        why = f" ({r['why']})" if isinstance(r.get("why"), str) and r["why"] else ""
        lines.append(
            f"| {LABELS.get(r['style'], r['style'])} | {int(r['users'])} | "
            f"{r['cpu_ms_per_request_min']:.2f}-{r['cpu_ms_per_request_max']:.2f} | "
            f"{r['cost_ratio']:.2f} | {r['other_cpu_percent_max']:.0f} | {r['comparable']}{why} |"
        )
    off = machine[machine["comparable"].astype(str) == "False"]
    lines += [
        "",
        f"{len(off)} of {len(machine)} cells of {what} are not comparable across their runs by "
        f"the machine check (the reason beside each); stack CPU per request, slowest run over "
        f"fastest: {span(machine['cost_ratio'], 2)}.",
    ]
    return "\n".join(lines)
