"""The report PDF: every study's results folder rendered to HTML, printed by headless Chromium.

:func:`build_report` takes results folders (``study.json`` and its CSVs, see
:mod:`ipclab.results`) and, optionally, the run log of ``ipclab reproduce``. The
PDF has a title page with the environment manifest; per study its parameters, deviations,
figures, in-report tables and claims with verdicts, and what was skipped; then one table of
all claims with counts per verdict, and how the report was made. The HTML (images embedded)
is kept next to the PDF.

    python -m ipclab.report --results out/results --out out/report.pdf
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ipclab import runstore
from ipclab.claims import FACT, NOT_REPRODUCED, REPRODUCED, RULES, VERDICTS, tally
from ipclab.findings import findings_lines
from ipclab.paths import from_repo
from ipclab.report import html as rh
from ipclab.report.pdf import ChromiumMissing, find_chromium, html_to_pdf
from ipclab.results import read_results
from ipclab.runs import utcnow

KEY_LIBRARIES = (
    "ipclab", "aiohttp", "uvicorn", "grpcio", "protobuf", "aio-pika", "locust", "pandas",
    "numpy", "scipy", "matplotlib", "papermill", "docker",
)  # fmt: skip
STATUS_CLASSES = {"ok": "v-ok", "failed": "v-bad", "skipped": "v-unk"}


# --------------------------------------------------------------------------- one study


@dataclass
class Counter:
    """Running figure and table numbers across the whole report."""

    figures: int = 0
    tables: int = 0
    problems: list[str] = field(default_factory=list)

    def figure(self) -> int:
        self.figures += 1
        return self.figures

    def table(self) -> int:
        self.tables += 1
        return self.tables


def _within(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.resolve())


def _resolve(directory: Path, path: str, fallback_dir: str | None = None) -> Path | None:
    """A file a study names, found only inside its results folder (or, by its bare name, in
    its figures folder): an absolute path or one leading out (``..``, a symlink) is never
    read, so a planted study.json cannot put any other file into the report."""
    p = Path(path)
    candidates = [directory / p.name] if p.is_absolute() else [directory / p, directory / p.name]
    roots = [directory]
    if fallback_dir:
        candidates.append(from_repo(fallback_dir) / p.name)
        roots.append(from_repo(fallback_dir))
    return next((c for c in candidates if c.is_file() and any(_within(c, r) for r in roots)), None)


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _figure_html(directory: Path, fig: dict[str, Any], fallback_dir: str | None, n: Counter) -> str:
    num = n.figure()
    cap = rh.caption("Figure", num, fig.get("caption", fig.get("name", "")))
    png = _resolve(directory, fig.get("png", ""), fallback_dir)
    if png is None:
        n.problems.append(f"Figure {num} ({fig.get('name')}): file {fig.get('png')} not found")
        return f'<div class="missing">Missing: figure file {rh.esc(fig.get("png"))} not found.'\
               f"<div>{cap}</div></div>"  # fmt: skip
    raw = png.read_bytes()
    if not raw.startswith(PNG_MAGIC):
        n.problems.append(f"Figure {num} ({fig.get('name')}): {png.name} is not a PNG")
        return f'<div class="missing">Missing: figure file {rh.esc(png.name)} is not a PNG.'\
               f"<div>{cap}</div></div>"  # fmt: skip
    data = base64.b64encode(raw).decode("ascii")
    return (
        f'<figure><img src="data:image/png;base64,{data}" alt="{rh.esc(fig.get("name", ""))}">'
        f"<figcaption>{cap}</figcaption></figure>"
    )


def _read_csv(directory: Path, name: str, what: str, n: Counter) -> pd.DataFrame | None:
    path = _resolve(directory, name)
    if path is None:
        n.problems.append(f"{what}: {directory / name} not found")
        return None
    try:
        return pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as e:
        n.problems.append(f"{what}: {path} unreadable ({e})")
        return None


def _in_report(t: dict[str, Any]) -> bool:
    return str(t.get("in_report", True)).strip().lower() not in ("false", "0", "no")


def _bullets(items: Sequence[str], prefix: str = "") -> str:
    lis = "".join(f"<li>{prefix}{rh.esc(i)}</li>" for i in items)
    return f"<ul>{lis}</ul>"


def _parameters_html(params: dict[str, Any]) -> str:
    if not params:
        return '<p class="quiet">None recorded in the results folder.</p>'
    items = [
        (k, v if isinstance(v, str | int | float | bool) or v is None else json.dumps(v))
        for k, v in params.items()
    ]
    return rh.kv_table(items, "kv params")


def study_section(
    index: int,
    directory: Path,
    meta: dict[str, Any],
    claims: pd.DataFrame | None,
    not_run: Sequence[str],
    n: Counter,
    prefix: str = "",
    reference: pd.DataFrame | None = None,
) -> str:
    """One study: title, parameters, deviations, skipped items, figures, tables, claims, and
    beside the committed reference's claims (``reference``) when there is one.

    ``not_run``: lines about this study's notebook from the run log (skipped or failed)."""
    title = meta.get("title") or meta.get("study") or directory.name
    problems_before = len(n.problems)
    out = [
        f'<section class="study"><h1 class="study-title">{prefix}{index}. {rh.esc(title)}</h1>',
        f'<p class="quiet">Results folder <code>{rh.esc(directory)}</code>'
        f"{', updated ' + rh.esc(meta['updated_at']) if meta.get('updated_at') else ''}.</p>",
        "<h2>Parameters</h2>",
        _parameters_html(meta.get("parameters") or {}),
        "<h2>Deviations from the original setup</h2>",
        _bullets(meta.get("deviations") or []) if meta.get("deviations")
        else '<p class="quiet">None recorded.</p>',
    ]  # fmt: skip
    skipped = [*(f"Skipped: {s}" for s in meta.get("skipped") or []), *not_run]
    if skipped:
        failed = any(x.startswith("FAILED") for x in skipped)
        out += [f"<h2>Skipped{' and failed' if failed else ''}</h2>", '<ul class="skipped">'] + [
            f"<li>{rh.esc(s)}</li>" for s in skipped
        ] + ["</ul>"]  # fmt: skip
    figures = meta.get("figures") or []
    if figures:
        out.append("<h2>Figures</h2>")
        out += [_figure_html(directory, f, meta.get("figures_dir"), n) for f in figures]
    claims_name = meta.get("claims")
    tables = [t for t in meta.get("tables") or [] if t.get("csv") != claims_name]
    shown = [t for t in tables if _in_report(t)]
    heading = "<h2>Measured against published</h2>" if shown else ""
    for t in shown:
        df = _read_csv(directory, t.get("csv", ""), f"table {t.get('name')}", n)
        if df is not None:
            cap = rh.caption("Table", n.table(), t.get("caption", t.get("name", "")))
            out.append(rh.frame_table(df, cap, heading))
            heading = ""
    out.append(heading)  # when no table could be read: the heading, then the Missing list
    out.append("<h2>Claims and verdicts</h2>")
    if claims is None:
        out.append('<p class="missing">No claims table in this results folder.</p>')
    else:
        out.append(f"<p>{rh.esc(_tally_text(claims))}.</p>")
        if "verdict" in claims and len(claims):
            out.append(rh.markdown_lines_html(findings_lines(claims, "the claims table below")))
        cap = rh.caption(
            "Table", n.table(), f"Claims of {title}: published statements (source and quote), "
            "the comparison tested, the published and measured effect (ratio a/b with 95% CI; "
            "below it the measured a vs b and runs per side), p-value, Cliff's delta, verdict "
            "and its reason.",
        )  # fmt: skip
        out.append(rh.claims_table(claims, cap))
        if reference is not None and "measured_ratio" in claims:
            out.append(agreement_html(claims, reference, n))
    hidden = [t for t in tables if not _in_report(t)]
    if hidden:
        out.append('<p class="quiet">Also in the results folder, not printed: ')
        out.append("; ".join(
            f"<code>{rh.esc(t.get('csv'))}</code> ({rh.esc(t.get('caption', ''))})"
            for t in hidden
        ) + ".</p>")  # fmt: skip
    new_problems = n.problems[problems_before:]
    if new_problems:
        out += ['<h2>Missing</h2><ul class="skipped">'] + [
            f"<li>Missing: {rh.esc(p)}</li>" for p in new_problems
        ] + ["</ul>"]  # fmt: skip
    out.append("</section>")
    return "\n".join(out)


# --------------------------------------------------------------------------- whole document


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


def _profile_backend(
    run_log: dict[str, Any] | None, metas: Sequence[dict[str, Any]]
) -> tuple[str, str]:
    def pick(k: str) -> str:
        if run_log and run_log.get(k):
            return str(run_log[k])
        vals = sorted({str(m["parameters"][k]) for m in metas if k in (m.get("parameters") or {})})
        return ", ".join(vals) if vals else "not recorded"

    return pick("profile"), pick("backend")


def _notebooks(run_log: dict[str, Any] | None) -> list[dict[str, Any]]:
    return list((run_log or {}).get("notebooks") or [])


def not_run_items(run_log: dict[str, Any] | None) -> list[str]:
    """Every notebook of the run log that was skipped or failed, with its reason."""
    out = []
    for e in _notebooks(run_log):
        status = str(e.get("status", ""))
        if status in ("skipped", "failed"):
            word = "Skipped" if status == "skipped" else "FAILED"
            out.append(
                f"{word}: {e.get('notebook')} because {e.get('reason') or 'no reason given'}"
            )
    return out


def _tally_text(claims: pd.DataFrame) -> str:
    """'N distinct tests (a reproduced, b not reproduced, c inconclusive), from M claims'."""
    if "verdict" not in claims:
        return "no verdicts"
    c, f = tally(claims), tally(claims, FACT)
    n = sum(c.values())
    parts = ", ".join(f"{c.get(v, 0)} {v}" for v in VERDICTS)
    facts = (
        f"; and {sum(f.values())} facts fixed by construction ({f.get(REPRODUCED, 0)} as "
        f"claimed, {f.get(NOT_REPRODUCED, 0)} not)"
        if f
        else ""
    )
    return f"{n} distinct tests ({parts}){facts}, from {len(claims)} claims"


def _machine_and_date(results_dir: Path) -> str:
    """Where and when a reference result was measured: its runs' host and first/last start.

    The runs sit beside ``results/`` or, for a study of several experiments, one folder
    deeper (``<experiment>/<run>/manifest.json``)."""
    manifests = sorted(Path(results_dir).parent.rglob("manifest.json"))
    if not manifests:
        return "machine and date not recorded"
    docs = [json.loads(m.read_text()) for m in manifests]
    env = docs[0].get("environment") or {}
    starts = sorted(str(d.get("started_at", "")) for d in docs if d.get("started_at"))
    cpu = env.get("cpu_model") or env.get("cpu") or "?"
    cores = env.get("cpu_cores_logical") or env.get("cpu_count") or "?"
    when = f"{starts[0][:16]} to {starts[-1][:16]} UTC" if starts else "date not recorded"
    return f"{len(docs)} runs on {cpu} ({cores} cores), {when}"


def _made_by(results_dir: Path) -> str:
    """Which measuring code made a reference's runs, and what of it changed since
    (``runstore.provenance``: a reference is read and rebuilt whatever the current code)."""
    manifests = sorted(Path(results_dir).parent.rglob("manifest.json"))
    groups = runstore.provenance(json.loads(m.read_text()) for m in manifests)
    return runstore.provenance_text(groups, shown=3)


def reference_section(
    pairs: Sequence[tuple[Path, dict[str, Any], pd.DataFrame | None]], n: Counter
) -> str:
    """The committed full-profile results, first: what the suite found, and where and when."""
    out = ['<section class="study"><h1 class="study-title">Reference results (committed)</h1>',
           "<p>These are the full-profile results committed with the suite "
           "(<code>data/runs/reference/</code>), analysed under docs/statistics.md. The "
           "sections after them are this run's, placed beside these.</p><ul>"]  # fmt: skip
    for d, meta, claims in pairs:
        title = str(meta.get("title") or d.name)
        tally_txt = _tally_text(claims) if claims is not None else "no claims table"
        out.append(
            f"<li><b>{rh.esc(title)}</b>: {rh.esc(tally_txt)}. "
            f'<span class="quiet">{rh.esc(_machine_and_date(d))}. '
            f"Code: {rh.esc(_made_by(d))}.</span></li>"
        )
    out.append("</ul></section>")
    for i, (d, meta, claims) in enumerate(pairs, 1):
        meta = {**meta, "title": f"Reference: {meta.get('title') or d.name}"}
        out.append(study_section(i, d, meta, claims, [], n, prefix="R"))
    return "\n".join(out)


def agreement(fresh: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Per claim: the reference's and this run's estimate (ratio a/b) and whether they lie
    on the same side of 1."""
    cols = ["claim_id", "comparison", "measured_ratio", "verdict"]
    m = reference[cols].merge(fresh[cols], on=["claim_id", "comparison"], suffixes=("_ref", ""))
    side = np.sign(np.log(m["measured_ratio_ref"].astype(float)))
    fresh_side = np.sign(np.log(m["measured_ratio"].astype(float)))
    m["same_direction"] = np.where(
        np.isfinite(side) & np.isfinite(fresh_side), side == fresh_side, np.nan
    )
    return m.rename(
        columns={
            "measured_ratio_ref": "reference ratio",
            "verdict_ref": "reference verdict",
            "measured_ratio": "this run's ratio",
            "verdict": "this run's verdict",
        }
    )


def agreement_html(fresh: pd.DataFrame, reference: pd.DataFrame, n: Counter) -> str:
    a = agreement(fresh, reference)
    known = a["same_direction"].dropna()
    agree = int((known == True).sum())  # noqa: E712 - an object column of bools
    head = (
        f"<h2>Beside the reference</h2><p>This run's estimate agrees in direction with the "
        f"committed reference on {agree} of {len(known)} claims with an estimate in both.</p>"
    )
    cap = rh.caption("Table", n.table(), "Each claim's ratio a/b in the committed reference "
                     "and in this run, and whether both lie on the same side of 1.")  # fmt: skip
    return head + rh.frame_table(a, cap)


def title_page(
    studies: Sequence[tuple[str, pd.DataFrame | None]],
    env: dict[str, Any],
    profile: str,
    backend: str,
    run_log: dict[str, Any] | None,
    date: str,
) -> str:
    rows = []
    for i, (title, claims) in enumerate(studies, 1):
        if claims is None or "verdict" not in claims:
            rows.append(f"<li>{i}. {rh.esc(title)}: no claims table</li>")
            continue
        rows.append(f"<li>{i}. {rh.esc(title)}: {_tally_text(claims)}</li>")
    missing = not_run_items(run_log)
    status = (
        '<ul class="skipped">' + "".join(f"<li>{rh.esc(m)}</li>" for m in missing) + "</ul>"
        if missing
        else ""
    )
    return f"""
<section class="title-page">
  <p class="kicker">ipclab</p>
  <h1 class="title">Inter-service communication styles and microservice performance</h1>
  <p class="subtitle">Reproduction report: every experiment rerun, measured against the
  published numbers, each published claim judged by computed rules.</p>
  <h2>Studies in this report</h2>
  <ul class="studies">{"".join(rows) or "<li>none</li>"}</ul>
  {status}
  <h2>Environment</h2>
  {environment_html(env, profile, backend, date)}
</section>"""


def summary_section(all_claims: pd.DataFrame, n: Counter) -> str:
    out = ['<section class="summary"><h1 class="study-title">All claims</h1>']
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
    out.append(rh.all_claims_table(all_claims, cap))
    out.append("</section>")
    return "\n".join(out)


def _fmt_seconds(s: Any) -> str:
    try:
        v = float(s)
    except (TypeError, ValueError):
        return "–"
    return f"{v:.0f} s" if v < 120 else f"{v / 60:.1f} min"


def made_section(run_log: dict[str, Any] | None, problems: Sequence[str], built_at: str) -> str:
    out = ['<section class="made"><h1 class="study-title">How this report was made</h1>']
    if run_log is None:
        out.append(
            "<p>Built from existing results folders (<code>python -m ipclab.report</code>); "
            "no run log was given, so which notebooks ran and for how long is not recorded "
            "here.</p>"
        )
    else:
        items = [
            (k, run_log[k])
            for k in ("profile", "backend", "started_at", "ended_at")
            if run_log.get(k) is not None
        ]
        if run_log.get("seconds") is not None:
            items.append(("time until the report build", _fmt_seconds(run_log["seconds"])))
        extra = [
            (k, v if isinstance(v, str | int | float | bool) else json.dumps(v))
            for k, v in run_log.items()
            if k not in ("profile", "backend", "started_at", "ended_at", "seconds", "notebooks",
                         "environment")
        ]  # fmt: skip
        out.append(
            "<p><code>ipclab reproduce</code> ran every notebook top to bottom with papermill "
            "(executed copies are build outputs), each writing a results folder; this report "
            "is built from those folders alone.</p>"
        )
        out.append(rh.kv_table([*items, *extra], "kv"))
        rows = ""
        for e in _notebooks(run_log):
            st = str(e.get("status", ""))
            rows += (
                f'<tr><td class="txt">{rh.esc(e.get("notebook", ""))}</td>'
                f'<td class="txt">{rh.esc(e.get("results", ""))}</td>'
                f'<td class="verdict {STATUS_CLASSES.get(st, "v-other")}">{rh.esc(st)}</td>'
                f'<td class="num">{rh.esc(_fmt_seconds(e.get("seconds")))}</td>'
                f'<td class="txt long">{rh.esc(e.get("reason") or "")}</td></tr>'
            )
        if rows:
            out.append(
                '<table class="tbl runlog" style="font-size:8pt"><thead><tr><th>notebook</th>'
                "<th>results</th><th>status</th><th>time</th><th>reason</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
    if problems:
        out += ["<h2>Missing from the results</h2>", _bullets(problems, "Missing: ")]
    out.append(f'<p class="quiet">Report HTML built {rh.esc(built_at)}.</p>')
    out.append(
        f'<h2>How verdicts are computed</h2><div class="rules">{rh.rst_to_html(RULES or "")}</div>'
    )
    out.append("</section>")
    return "\n".join(out)


def render_html(
    results_dirs: Sequence[Path],
    run_log: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
    references: Mapping[str, Path] | None = None,
) -> str:
    """The whole report as one self-contained HTML document. ``references``: a fresh results
    folder's name -> the committed reference results it is placed beside (they lead)."""
    from ipclab.environment import describe_environment

    dirs = [Path(d) for d in results_dirs]
    metas = [read_results(d) for d in dirs]
    n = Counter()
    env = environment or (run_log or {}).get("environment") or describe_environment()
    profile, backend = _profile_backend(run_log, metas)
    built_at = utcnow()
    by_results: dict[str, list[str]] = {}
    for e in _notebooks(run_log):
        if e.get("status") in ("skipped", "failed") and e.get("results"):
            by_results.setdefault(str(e["results"]), []).extend(not_run_items({"notebooks": [e]}))
    refs = []
    ref_claims: dict[str, pd.DataFrame | None] = {}
    for name, ref in (references or {}).items():
        rmeta = read_results(ref)
        rc = _read_csv(ref, rmeta["claims"], f"reference claims of {name}", n) if rmeta.get(
            "claims") else None  # fmt: skip
        refs.append((Path(ref), rmeta, rc))
        ref_claims[name] = rc
    sections, studies, frames = [], [], []
    if refs:
        sections.append(reference_section(refs, n))
    for i, (d, meta) in enumerate(zip(dirs, metas, strict=True), 1):
        title = str(meta.get("title") or meta.get("study") or d.name)
        claims = (
            _read_csv(d, meta["claims"], f"claims of {title}", n) if meta.get("claims") else None
        )
        sections.append(
            study_section(
                i, d, meta, claims, by_results.get(d.name, []), n,
                reference=ref_claims.get(d.name),
            )
        )  # fmt: skip
        studies.append((title, claims))
        if claims is not None:
            frames.append(claims.assign(study=title))
    all_claims = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    body = "\n".join(
        [
            title_page(
                [(f"Reference: {m.get('title') or d.name}", c) for d, m, c in refs] + studies,
                env,
                profile,
                backend,
                run_log,
                built_at[:10],
            ),  # fmt: skip
            *sections,
            summary_section(all_claims, n),
            made_section(run_log, n.problems, built_at),
        ]
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>ipclab report</title><style>{CSS}</style></head><body>{body}</body></html>"
    )


def build_report(
    results_dirs: Sequence[Path],
    out_pdf: Path,
    run_log: dict[str, Any] | None = None,
    references: Mapping[str, Path] | None = None,
) -> Path:
    """Render the results folders (and the run log) to ``out_pdf``; the HTML is kept beside it.

    Raises :class:`ChromiumMissing` when no Chromium is installed."""
    find_chromium()  # fail before any work when it cannot end in a PDF
    out_pdf = Path(out_pdf)
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    html_file = out_pdf.with_suffix(".html")
    html_file.write_text(render_html(results_dirs, run_log, references=references), "utf-8")
    return html_to_pdf(html_file, out_pdf)


def find_results(root: Path, run_log: dict[str, Any] | None = None) -> list[Path]:
    """Every folder with a ``study.json`` under ``root``, in the run log's notebook order."""
    dirs = sorted(p.parent for p in Path(root).rglob("study.json"))
    order = {str(e.get("results")): i for i, e in enumerate(_notebooks(run_log))}
    return sorted(dirs, key=lambda d: (order.get(d.name, len(order)), str(d)))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ipclab.report", description=__doc__.split("\n")[0])
    ap.add_argument(
        "--results",
        type=Path,
        default=Path("out/results"),
        help="folder searched for results folders (study.json)",
    )
    ap.add_argument("--out", type=Path, default=Path("out/report.pdf"), help="the PDF to write")
    ap.add_argument(
        "--run-log",
        type=Path,
        default=None,
        help="run_log.json of ipclab reproduce (default: <results>/../run_log.json)",
    )
    a = ap.parse_args(argv)  # fmt: skip
    log_path = a.run_log or a.results.parent / "run_log.json"
    run_log = json.loads(log_path.read_text()) if log_path.is_file() else None
    dirs = find_results(a.results, run_log) if a.results.is_dir() else []
    if not dirs:
        print(f"no results folders (study.json) under {a.results}", file=sys.stderr)
        return 2
    try:
        pdf = build_report(dirs, a.out, run_log)
    except ChromiumMissing as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(pdf)
    return 0


CSS = """
@page {
  size: A4; margin: 15mm 14mm 16mm 14mm;
  @bottom-left { content: "ipclab reproduction report"; font: 7pt "DejaVu Sans"; color: #777; }
  @bottom-right { content: "page " counter(page) " of " counter(pages);
                  font: 7pt "DejaVu Sans"; color: #777; }
}
@page wide { size: A4 landscape; margin: 14mm 14mm 14mm 14mm; }
section.landscape { page: wide; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { font-family: "DejaVu Sans", sans-serif; font-size: 9pt; line-height: 1.35; color: #111;
       margin: 0; }
h1 { font-size: 15pt; margin: 0 0 3mm 0; }
h1.study-title { break-before: page; border-bottom: 1pt solid #333; padding-bottom: 1.5mm; }
h2 { font-size: 11pt; margin: 5mm 0 2mm 0; break-after: avoid; }
p, li { orphans: 2; widows: 2; }
ul { margin: 1mm 0 2mm 0; padding-left: 5mm; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 0.9em; overflow-wrap: anywhere; }
.quiet { color: #555; font-size: 8pt; }
.title-page { break-after: page; }
.title-page .kicker { font-size: 10pt; letter-spacing: 0.2em; text-transform: uppercase;
                      color: #555; margin: 18mm 0 1mm 0; }
.title-page h1.title { font-size: 22pt; line-height: 1.2; margin-bottom: 3mm; }
.title-page .subtitle { font-size: 11pt; color: #333; margin-bottom: 8mm; }
ul.studies { list-style: none; padding-left: 0; font-size: 10pt; }
ul.skipped li, .missing { color: #8a1c1c; }
.missing { border: 0.6pt dashed #8a1c1c; padding: 2mm; margin: 2mm 0 4mm 0; }
table.kv { border-collapse: collapse; width: 100%; font-size: 8.5pt; margin-bottom: 4mm; }
table.kv th { text-align: left; vertical-align: top; width: 32mm; padding: 1pt 4pt 1pt 0;
              color: #333; font-weight: bold; }
table.kv td { padding: 1pt 0; overflow-wrap: anywhere; }
table.kv tr { border-bottom: 0.4pt solid #ddd; }
table.kv.params th { width: 45mm; }
figure { break-inside: avoid; margin: 0 0 6mm 0; }
figure img { display: block; max-width: 100%; max-height: 200mm; margin: 0 auto; }
figcaption { font-size: 8.5pt; margin-top: 1.5mm; }
.label { font-weight: bold; }
.table-block { margin: 0 0 6mm 0; }
table.tbl { border-collapse: collapse; max-width: 100%;
            font-family: "DejaVu Sans Condensed", "DejaVu Sans", sans-serif; line-height: 1.25; }
.tcap { font-size: 8.5pt; line-height: 1.35; margin: 0 0 1.5mm 0; break-after: avoid; }
table.tbl th, table.tbl td { padding: 1.2pt 3pt; border-bottom: 0.4pt solid #ccc;
                             vertical-align: top; }
table.tbl thead { display: table-header-group; }
table.tbl th { background: #e9ecef; text-align: left; font-weight: bold;
               border-bottom: 0.8pt solid #555; }
table.tbl tr { break-inside: avoid; }
table.tbl th.num { text-align: right; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.txt { overflow-wrap: break-word; }
td.long { overflow-wrap: anywhere; }
.sub { color: #555; font-size: 0.92em; margin-top: 0.5pt; }
.sub.note { color: #7a4a00; }
td.verdict { font-weight: bold; white-space: nowrap; }
.v-ok { background: #d3ecd9; color: #14532d; }
.v-bad { background: #f6d3d6; color: #7f1d1d; }
.v-unk { background: #fbefc6; color: #6b4e00; }
.v-other { background: #e2e3e5; color: #333; }
table.claims, table.allclaims { width: 100%; table-layout: fixed; }
table.claims td, table.allclaims td { overflow-wrap: anywhere; }
table.claims td.verdict { padding-right: 4pt; }
table.claims td.verdict, table.allclaims td.verdict { overflow-wrap: normal; }
table.claims col.c-id { width: 5%; } table.claims col.c-cmp { width: 18%; }
table.claims col.c-pub { width: 11%; } table.claims col.c-meas { width: 13%; }
table.claims col.c-p { width: 5.5%; } table.claims col.c-d { width: 9.5%; }
table.claims col.c-v { width: 11.5%; } table.claims col.c-why { width: 26.5%; }
table.claims tbody.stmt { break-inside: avoid; }
table.claims tr.quote td { background: #f3f5f9; border-top: 0.8pt solid #888;
                           font-size: 1.05em; padding-top: 2pt; }
table.claims q { font-style: italic; }
table.allclaims th:nth-child(1) { width: 12%; } table.allclaims th:nth-child(2) { width: 6%; }
table.allclaims th:nth-child(3) { width: 17%; } table.allclaims th:nth-child(4) { width: 26%; }
table.allclaims th:nth-child(5) { width: 19%; } table.allclaims th:nth-child(6) { width: 7%; }
table.allclaims th:nth-child(7) { width: 13%; }
table.counts th, table.counts td { padding: 2pt 8pt; }
table.counts tr.total td { font-weight: bold; border-top: 0.8pt solid #555; }
table.runlog { width: 100%; font-family: "DejaVu Sans Condensed", "DejaVu Sans", sans-serif; }
.rules { font-size: 8pt; line-height: 1.35; color: #222; }
"""


if __name__ == "__main__":
    raise SystemExit(main())
