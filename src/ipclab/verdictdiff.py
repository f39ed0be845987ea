"""Every verdict that changed between a git revision and the working tree, per committed
reference: ``python -m ipclab.verdictdiff REV [--markdown FILE]``.

It reads each reference's claims tables (``data/runs/reference/*/results/claims*.csv``) as
the revision has them (``git show``) and as they are now, and lists each claim row whose
verdict differs, with the row's estimate, interval and p now. A table new since the
revision lists every row (before: none)."""

from __future__ import annotations

import argparse
import io
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ipclab.paths import REPO_ROOT
from ipclab.stats.intervals import interval_text

REFERENCES = Path("data/runs/reference")
NOW = ("verdict", "measured_ratio", "ci_low", "ci_high", "p_value")


def _at(revision: str, path: Path) -> pd.DataFrame:
    done = subprocess.run(["git", "show", f"{revision}:{path.as_posix()}"], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        return pd.DataFrame(columns=["claim_id", "scope", "verdict"])
    return pd.read_csv(io.StringIO(done.stdout))


def changes(revision: str, root: Path = REFERENCES) -> pd.DataFrame:
    """One row per claim row whose verdict differs: ``reference, table, claim_id, scope,
    before, after`` and the row's estimate now."""
    rows = []
    for csv in sorted((REPO_ROOT / root).glob("*/results/claims*.csv")):
        rel = csv.relative_to(REPO_ROOT)
        old, new = _at(revision, rel), pd.read_csv(csv)
        key = ["claim_id"] + (["scope"] if {"scope"} <= set(old.columns) & set(new.columns) else [])
        m = old.reindex(columns=[*key, "verdict"]).merge(
            new.reindex(columns=[*key, *NOW]), on=key, how="outer", suffixes=("_before", "")
        )
        m = m[m["verdict_before"].fillna("-") != m["verdict"].fillna("-")]
        for _, r in m.iterrows():
            rows.append({"reference": csv.parents[1].name, "table": csv.name,
                         **{k: r[k] for k in key}, "before": r["verdict_before"],
                         "after": r["verdict"], **{k: r[k] for k in NOW[1:]}})  # fmt: skip
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame, revision: str) -> str:
    if table.empty:
        return f"No verdict changed since {revision}.\n"
    out = [f"# Verdicts changed since {revision}", ""]
    for (ref, name), g in table.groupby(["reference", "table"], sort=True):
        out += [f"## {ref}: {name} ({len(g)})", ""]
        out += ["| claim | before | after | ratio [95% CI] | p |", "|---|---|---|---|---|"]
        for r in g.itertuples():
            est = interval_text(r.measured_ratio, r.ci_low, r.ci_high, ".3g", no_interval=None,
                                open_ends=True)  # fmt: skip
            p = "-" if pd.isna(r.p_value) else f"{r.p_value:.2g}"
            out.append(f"| {r.claim_id} | {r.before if isinstance(r.before, str) else '-'} "
                       f"| {r.after} | {est} | {p} |")  # fmt: skip
        out.append("")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("revision")
    p.add_argument("--markdown", type=Path, help="write the list here too")
    a = p.parse_args(argv)
    table = changes(a.revision)
    text = markdown(table, a.revision)
    if a.markdown:
        a.markdown.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
