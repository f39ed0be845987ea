"""The sections around the studies: the title page with the environment, the table of all
claims with counts per verdict, and how the report was made."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from ipclab.claims import FACT, KINDS_SECTION, VERDICTS, kinds_table
from ipclab.report import html as rh
from ipclab.report.context import Counter
from ipclab.report.runlog import fmt_seconds, not_run_items, notebooks
from ipclab.report.study import bullets, tally_text

KEY_LIBRARIES = (
    "ipclab", "aiohttp", "uvicorn", "grpcio", "protobuf", "aio-pika", "locust", "pandas",
    "numpy", "scipy", "matplotlib", "papermill", "docker",
)  # fmt: skip
STATUS_CLASSES = {"ok": "v-ok", "failed": "v-bad", "skipped": "v-unk"}
ALL_CLAIMS_ID = "all-claims"  # the table the site's filter acts on


def _gib(x: Any) -> str:
    try:
        return f"{float(x) / 2**30:.1f} GiB"
    except (TypeError, ValueError):
        return "unknown"


def environment_html(env: dict[str, Any], profile: str, backend: str, date: str) -> str:
    git = env.get("git") or {}
    rev = git.get("revision") or "unknown"
    dirty = git.get("dirty")
    dirty_s = "unknown" if dirty is None else ("yes: uncommitted changes" if dirty else "no")
    cores = f"{env.get('cpu_cores_logical')} logical, {env.get('cpu_cores_physical')} physical"
    items: list[tuple[str, object]] = [
        ("Date", date),
        ("Profile", profile),
        ("Backend", backend),
        ("Git revision", rev),
        ("Working tree dirty", dirty_s),
        ("Python", f"{env.get('python')} ({env.get('implementation', '')})"),
        ("OS", env.get("os")),
        ("CPU", env.get("cpu_model")),
        ("Cores", cores),
        ("Memory", _gib(env.get("memory_bytes"))),
        ("Host", env.get("host")),
    ]
    libs = env.get("libraries") or {}
    key = [(k, libs.get(k) or "not installed") for k in KEY_LIBRARIES if k in libs]
    other = [(k, v) for k, v in libs.items() if k not in KEY_LIBRARIES and v]
    lib_rows = ", ".join(f"{k} {v}" for k, v in [*key, *other])
    items.append(("Libraries", lib_rows or "unknown"))
    return rh.kv_table(items, "kv env")


def title_page(
    studies: Sequence[tuple[str, pd.DataFrame | None, str]],
    env: dict[str, Any],
    profile: str,
    backend: str,
    run_log: dict[str, Any] | None,
    date: str,
    environment: bool = True,
) -> str:
    """``studies``: per section its title, claims and anchor (each title links to it); the
    environment follows unless ``environment`` is false (then it is in the appendices)."""
    rows = []
    for i, (title, claims, anchor) in enumerate(studies, 1):
        link = f'<a href="#{rh.esc(anchor)}">{i}. {rh.esc(title)}</a>'
        if claims is None or "verdict" not in claims:
            rows.append(f"<li>{link}: no claims table</li>")
            continue
        rows.append(f"<li>{link}: {tally_text(claims)}</li>")
    missing = not_run_items(run_log)
    status = (
        '<ul class="skipped">' + "".join(f"<li>{rh.esc(m)}</li>" for m in missing) + "</ul>"
        if missing
        else ""
    )
    env_html = ""
    if environment:
        env_html = f"<h2>Environment</h2>{environment_html(env, profile, backend, date)}"
    return f"""
<section class="title-page">
  <p class="kicker">ipclab</p>
  <h1 class="title">Inter-service communication styles and microservice performance</h1>
  <p class="subtitle">Reproduction report: every experiment rerun, measured against the
  published numbers, each published claim judged by computed rules.</p>
  <h2>Studies in this report</h2>
  <ul class="studies">{"".join(rows) or "<li>none</li>"}</ul>
  {status}
  {env_html}
</section>"""


def summary_section(all_claims: pd.DataFrame, n: Counter) -> str:
    out = [f'<section class="summary" id="{ALL_CLAIMS_ID}-section">'
           '<h1 class="study-title">All claims</h1>']  # fmt: skip
    if all_claims.empty or "verdict" not in all_claims:
        out.append('<p class="quiet">No study produced a claims table.</p></section>')
        return "\n".join(out)
    counted = all_claims.copy()
    if "evidence" in counted:  # facts apart (docs/statistics.md section 5)
        fact = counted["evidence"] == FACT
        counted.loc[fact, "verdict"] = "fact: " + counted.loc[fact, "verdict"].astype(str)
    counts = rh.verdict_counts(counted, VERDICTS)
    out.append(rh.counts_table(counts, rh.caption("Table", n.table(), "Claims per verdict.")))
    cap = rh.caption(
        "Table", n.table(), "Every claim of every study with its measured effect (ratio a/b, "
        "95% CI), p-value and verdict; the reasons are in each study's claims table.",
    )  # fmt: skip
    out.append(rh.all_claims_table(all_claims, cap, ALL_CLAIMS_ID))
    out.append("</section>")
    return "\n".join(out)


def _run_log_html(run_log: dict[str, Any]) -> list[str]:
    items = [
        (k, run_log[k])
        for k in ("profile", "backend", "started_at", "ended_at")
        if run_log.get(k) is not None
    ]
    if run_log.get("seconds") is not None:
        items.append(("time until the report build", fmt_seconds(run_log["seconds"])))
    extra = [
        (k, v if isinstance(v, str | int | float | bool) else json.dumps(v))
        for k, v in run_log.items()
        if k not in ("profile", "backend", "started_at", "ended_at", "seconds", "notebooks",
                     "environment")
    ]  # fmt: skip
    out = [
        "<p><code>ipclab reproduce</code> ran every notebook top to bottom with papermill "
        "(executed copies are build outputs), each writing a results folder; this report "
        "is built from those folders alone.</p>",
        rh.kv_table([*items, *extra], "kv"),
    ]
    rows = ""
    for e in notebooks(run_log):
        st = str(e.get("status", ""))
        rows += (
            f'<tr><td class="txt">{rh.esc(e.get("notebook", ""))}</td>'
            f'<td class="txt">{rh.esc(e.get("results", ""))}</td>'
            f'<td class="verdict {STATUS_CLASSES.get(st, "v-other")}">{rh.esc(st)}</td>'
            f'<td class="num">{rh.esc(fmt_seconds(e.get("seconds")))}</td>'
            f'<td class="txt long">{rh.esc(e.get("reason") or "")}</td></tr>'
        )
    if rows:
        out.append(
            '<table class="tbl runlog" style="font-size:8pt"><thead><tr><th>notebook</th>'
            "<th>results</th><th>status</th><th>time</th><th>reason</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    return out


def made_section(
    run_log: dict[str, Any] | None, problems: Sequence[str], built_at: str, environment: str = ""
) -> str:
    out = ['<section class="made"><h1 class="study-title">How this report was made</h1>']
    if environment:
        out += ["<h2>Environment</h2>", environment]
    if run_log is None:
        out.append(
            "<p>Built from existing results folders (<code>python -m ipclab.report</code>); "
            "no run log was given, so which notebooks ran and for how long is not recorded "
            "here.</p>"
        )
    else:
        out += _run_log_html(run_log)
    if problems:
        out += ["<h2>Missing from the results</h2>", bullets(problems, "Missing: ")]
    out.append(f'<p class="quiet">Report HTML built {rh.esc(built_at)}.</p>')
    out.append(f'<h2>How verdicts are computed</h2><div class="rules">{_rules_html()}</div>')
    out.append("</section>")
    return "\n".join(out)


def _rules_html() -> str:
    """docs/statistics.md's table of sentence kinds, quoted as written (the document is the
    rule, and the report restates nothing of it), with where the rest of the rules are."""
    rows = kinds_table()
    intro = (
        "Every verdict is computed from runs by the rules of <code>docs/statistics.md</code> "
        "(the unit of replication, intervals, tests and the family for Holm's adjustment, "
        "counting, availability, repetitions, agreement, plausibility); its table of kinds "
        f"({rh.esc(KINDS_SECTION.lstrip('# '))}) as written:"
    )
    if not rows:
        return f"<p>{intro} <i>(docs/statistics.md not found)</i></p>"
    head = "".join(f"<th>{rh.inline_md(c)}</th>" for c in rows[0])
    body = "".join(
        "<tr>" + "".join(f'<td class="txt">{rh.inline_md(c)}</td>' for c in r) + "</tr>"
        for r in rows[1:]
    )
    return f"<p>{intro}</p><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
