"""The report's first page (the answer), rendered from the committed references: its verdict
counts are the claims tables' own, every finding it names is a row of a claims table with
the estimate and interval that row holds and links to that row, and the agreement chart is
there. Read from the HTML the PDF is printed from and the site shows (one body)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from ipclab.claims import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, UNDERPOWERED, tally
from ipclab.paths import REPO_ROOT
from ipclab.report import html as rh
from ipclab.report.answer import ANSWER_ID, REVERSED, verdict_counts
from ipclab.report.document import render_body
from ipclab.studies import all_studies

REFERENCES = REPO_ROOT / "data" / "runs" / "reference"


def references() -> dict[str, Path]:
    return {
        d.parent.name: d
        for d in sorted(REFERENCES.glob("*/results"))
        if (d / "study.json").exists()
    }


class Page(HTMLParser):
    """The answer section's text, its links, and every id of the body."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (href, link text) inside the answer
        self.items: list[str] = []  # the text of each <li> inside the answer
        self._depth = 0  # >0 inside the answer section
        self._href: str | None = None
        self._li: list[str] | None = None
        self._link_text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "section":
            self._depth += 1 if (self._depth or a.get("id") == ANSWER_ID) else 0
        if self._depth and tag == "a":
            self._href, self._link_text = str(a.get("href")), []
        if self._depth and tag == "li":
            self._li = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self._depth:
            self._depth -= 1
        if tag == "a" and self._href is not None:
            self.links.append((self._href, "".join(self._link_text)))
            self._href = None
        if tag == "li" and self._li is not None:
            self.items.append(" ".join("".join(self._li).split()))
            self._li = None

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._link_text.append(data)
        if self._li is not None:
            self._li.append(data)


@pytest.fixture(scope="module")
def page() -> tuple[Page, str]:
    refs = references()
    if not refs:
        pytest.skip("no committed references")
    body = render_body([], None, {"python": "test"}, refs)
    return Page(body), body


def test_verdict_counts_are_the_claims_tables_tallies(page: tuple[Page, str]) -> None:
    p, _ = page
    refs = references()
    checked = 0
    for name, folder in refs.items():
        claims_csv = folder / "claims.csv"
        if not claims_csv.exists():
            continue
        c = tally(pd.read_csv(claims_csv))
        said = next(i for i in p.items if i.startswith(f"{name}: "))
        numbers = dict(
            (w, int(n))
            for n, w in re.findall(r"(\d+) (reproduced|reversed|not reproduced|underpowered|"
                                   r"inconclusive)", said.split(":", 1)[1])
        )  # fmt: skip
        assert numbers[REPRODUCED] == c.get(REPRODUCED, 0), said
        assert numbers[REVERSED] + numbers[NOT_REPRODUCED] == c.get(NOT_REPRODUCED, 0), said
        assert numbers[UNDERPOWERED] == c.get(UNDERPOWERED, 0), said
        assert numbers[INCONCLUSIVE] == c.get(INCONCLUSIVE, 0), said
        assert said.split(":", 1)[1].strip().startswith(f"{sum(c.values())} tests"), said
        checked += 1
    assert checked >= 5


def test_each_finding_is_a_claim_row_with_its_interval_and_links_to_it(
    page: tuple[Page, str],
) -> None:
    p, _ = page
    tables = {n: pd.read_csv(f / "claims.csv") for n, f in references().items()
              if (f / "claims.csv").exists()}  # fmt: skip
    findings = [(h, t) for h, t in p.links if h.startswith("#claim-")]
    assert len(findings) >= 10
    for href, text in findings:
        assert href[1:] in p.ids, f"{href}: no such claim row"
        claim_id, rest = text.split(": ", 1)
        item = next(i for i in p.items if i.startswith(text.strip()))
        name = item.rsplit("(", 1)[1].rstrip(")")  # the reference it comes from
        row = tables[name].set_index("claim_id").loc[claim_id]
        assert rest.startswith(str(row["comparison"])), text
        est = rh.fmt_ci(row["measured_ratio"], row["ci_low"], row["ci_high"])
        assert f"a/b = {est}, " in " ".join(text.split()), (text, est)
        verdict = text.rsplit(", ", 1)[1]
        want = {REVERSED: NOT_REPRODUCED}.get(verdict, verdict)
        assert row["verdict"] == want, (text, row["verdict"])
        assert verdict in (REPRODUCED, REVERSED, NOT_REPRODUCED)


def test_the_first_page_has_both_charts_and_comes_first(page: tuple[Page, str]) -> None:
    _, body = page
    assert body.lstrip().startswith(f'<section class="answer" id="{ANSWER_ID}">')
    answer = body.split("</section>", 1)[0]
    assert 'id="verdict-chart"' in answer and 'id="agreement-chart"' in answer


def test_a_reversal_is_counted_apart_from_the_other_not_reproduced() -> None:
    rows = [
        {"claim_id": "A", "relation": ">", "measured_ratio": 0.5, "p_value": 0.001,
         "verdict": NOT_REPRODUCED, "evidence": "test"},
        {"claim_id": "B", "relation": ">", "measured_ratio": 1.01, "p_value": 0.4,
         "verdict": NOT_REPRODUCED, "evidence": "test"},
        {"claim_id": "C", "relation": ">", "measured_ratio": 1.5, "p_value": 0.001,
         "verdict": REPRODUCED, "evidence": "test"},
        {"claim_id": "D", "relation": ">", "measured_ratio": 1.0, "p_value": float("nan"),
         "verdict": REPRODUCED, "evidence": "fact"},
    ]  # fmt: skip
    c = verdict_counts(pd.DataFrame(rows))
    assert c == {REPRODUCED: 1, REVERSED: 1, NOT_REPRODUCED: 1, UNDERPOWERED: 0,
                 INCONCLUSIVE: 0}  # fmt: skip


MAIN_BODY_MAX_PAGES = 40


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The PDF of the committed references with a fresh results folder beside one of them
    (as ``make reproduce`` builds it): its path and its text."""
    import shutil
    import subprocess

    from ipclab.report import build_report, pdf

    try:
        pdf.find_chromium()
    except pdf.ChromiumMissing as e:
        pytest.skip(str(e))
    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext (poppler-utils) is not installed")
    root = tmp_path_factory.mktemp("answer")
    fresh = root / "results" / "shafabakhsh"
    shutil.copytree(REFERENCES / "shafabakhsh-full-local" / "results", fresh)
    refs = {"shafabakhsh": REFERENCES / "shafabakhsh-full-local" / "results"}
    refs |= {f"shafabakhsh@{k}": v for k, v in references().items() if v not in refs.values()}
    out = build_report([fresh], root / "out" / "report.pdf", references=refs)
    text = subprocess.run(["pdftotext", "-layout", str(out), "-"], capture_output=True,
                          text=True, check=True).stdout  # fmt: skip
    return out, text


def test_the_main_body_is_at_most_40_pages_and_the_appendices_hold_the_rest(
    printed: tuple[Path, str],
) -> None:
    from ipclab.report.pdf import page_counts

    out, text = printed
    main_body, appendices = page_counts(out)
    assert 3 <= main_body <= MAIN_BODY_MAX_PAGES, main_body
    assert appendices > 0
    pages = text.split("\f")
    body = " ".join(" ".join(pages[:main_body]).split())
    rest = " ".join(" ".join(pages[main_body:]).split())
    assert "Reference results (committed)" in rest and "Provenance:" in rest
    assert "Claims in full" in rest and "Detail: " in rest
    assert "1. Shafabakhsh 2020 (full profile, local)" in rest  # this run, beside the reference
    assert "R1. Reference:" in rest and "Provenance:" not in body
    # one short section per study, its references grouped under it (not one per reference)
    assert "R1. Reference:" not in body and "Study 1 of 4." in body and "Study 4 of 4." in body
    for study in all_studies().values():
        assert study.title in body, study.title


def test_the_pdf_opens_on_the_answer(printed: tuple[Path, str], page: tuple[Page, str]) -> None:
    pages = printed[1].split("\f")
    first = " ".join(pages[0].split())
    assert first.startswith("IPCLAB The answer") and "What matters most" in first
    findings = [t for h, t in page[0].links if h.startswith("#claim-")]
    assert all(" ".join(t.split()) in first for t in findings[:3]), findings[:3]
    # the page after the answer is the first study's section, not an empty page
    second = " ".join(pages[1].split())
    assert len(second) > 400 and "Study 1 of 4." in second, second[:200]


def test_the_command_builds_the_site_of_the_references_alone(tmp_path: Path) -> None:
    from ipclab.report import main

    site = tmp_path / "site"
    args = ["--references", "--no-pdf", "--results", str(tmp_path / "none"), "--site", str(site)]
    assert main(args) == 0
    assert (site / "claims.html").is_file() and len(list((site / "runs").glob("*.html"))) >= 5
    assert f'id="{ANSWER_ID}"' in (site / "index.html").read_text()
    assert main(["--results", str(tmp_path / "none"), "--site", str(tmp_path / "other")]) == 2


def test_tls_is_one_pair_plain_vs_tls_on_the_first_page(page: tuple[Page, str]) -> None:
    """The TLS reference's claims judged on its plain and its TLS runs are one row of the
    agreement chart, and its table is what the study's code computes from those runs."""
    from ipclab.report.answer import agreement_rows
    from ipclab.studies.shafabakhsh import encryption

    results = REFERENCES / "shafabakhsh-tls-full-local" / "results"
    if not results.is_dir():
        pytest.skip("no committed TLS reference")
    rows = [label for label, _ in agreement_rows(REFERENCES) if "tls" in label.lower()]
    assert rows == ["shafabakhsh-tls-full-local: tls: plain vs tls"], rows
    committed = pd.read_csv(results / f"{encryption.AGREEMENT}.csv")
    computed = encryption.agreement(pd.read_csv(results / "runs.csv"))
    assert list(committed["claim_id"]) == list(computed["claim_id"])
    assert list(committed["explanation"]) == list(computed["explanation"])
    chart = page[1].split('id="agreement-chart"', 1)[1].split("</svg>", 1)[0]
    assert chart.count("plain vs tls: ") == 1
