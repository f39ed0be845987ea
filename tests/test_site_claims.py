"""The site as the place to explore, built from the committed references and read in headless
Chromium (skipped, saying why, without one): one claim followed from the first page to its
row, its figures and its runs; the claims page filtered by runtime and backend from the
URL's fragment; every link of the claims and runs pages resolving inside the site."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pandas as pd
import pytest

from ipclab import catalogue
from ipclab.paths import REPO_ROOT
from ipclab.report import build_site, claimruns, pdf
from ipclab.report.answer import ANSWER_ID
from ipclab.report.claimspage import CLAIMS_PAGE
from tests.test_report_answer import references
from tests.test_site import Dom, chromium


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, bool]]:
    try:
        exe = pdf.find_chromium()
    except pdf.ChromiumMissing as e:
        pytest.skip(str(e))
    refs = references()
    if not refs:
        pytest.skip("no committed references")
    site = build_site([], tmp_path_factory.mktemp("refsite") / "site", references=refs,
                      environment={"python": "test"}).parent  # fmt: skip
    with pdf.chromium_workdir() as (work, as_root):
        shutil.copytree(site, work / "site")
        pdf.hand_over(work, as_root)
        yield exe, work, as_root


def _rows(dom_text: str) -> list[dict[str, str]]:
    """The claims page's rows: their data- attributes, hidden or not, and their links."""
    out = []
    for m in re.finditer(r"<tr ([^>]*data-claim[^>]*)>(.*?)</tr>", dom_text, re.S):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
        attrs["hidden"] = "yes" if re.search(r"\bhidden\b", m.group(1)) else ""
        for cls, href in re.findall(r'<a class="(figure|runs)" href="([^"]*)"', m.group(2)):
            attrs[cls] = href
        out.append(attrs)
    return out


FINDING = re.compile(
    r'<li class="finding[^"]*"><a href="#(claim-[^"]+)">.*?</a>.*?'
    r'<a class="figure" href="#([^"]+)">.*?<a class="runs" href="([^"]+)">.*?\((\S+)\)</span></li>',
    re.S,
)


def _figure_after(index: str, fig: str, site: Path) -> None:
    """The heading ``fig`` is in the report and an SVG of the site follows it."""
    after = index.split(f'id="{fig}"', 1)[1].split("<h2", 1)[0]
    img = re.search(r'<img src="([^"]+)"', after)
    assert img and img.group(1).endswith(".svg"), fig
    assert (site / unquote(img.group(1))).read_text().lstrip().startswith("<?xml")


def test_a_claim_followed_from_the_first_page_to_its_figures_and_runs(
    browser: tuple[str, Path, bool],
) -> None:
    """Issue 53, must show 3: from the first page, a finding's claim row, its figure and
    the runs that decide it (exactly the runs its claims row counted, in its two cells)."""
    site = browser[1] / "site"
    index = chromium(browser, "", "--dump-dom")
    answer = index.split(f'id="{ANSWER_ID}"', 1)[1].split("</section>", 1)[0]
    findings = FINDING.findall(answer)
    assert findings, "the first page links no claim with its figure and runs"
    own = [f for f in findings if "#claim-" in f[2]]
    assert own, "no finding of the first page links to a list of its own runs"
    anchor, fig, runs_href, reference = own[0]
    assert f'id="{anchor}"' in index, f"{anchor}: no such row in the report"
    _figure_after(index, fig, site)
    page, claim = runs_href.split("#")
    runs = chromium(browser, "", "--dump-dom", page=page)
    assert Path(page).stem == reference and "Provenance: " in runs  # in words
    listed = runs.split(f'id="{claim}"', 1)[1].split("</section>", 1)[0]
    paths = re.findall(r"<td[^>]*>(data/runs/reference/[^<]+)</td>", listed)
    row = pd.read_csv(REPO_ROOT / "data/runs/reference" / reference / "results" / "claims.csv")
    row = row.set_index("claim_id").loc[claim.removeprefix("claim-")]
    (ga, la), (gb, lb) = claimruns.cells(row["comparison"])
    base = f"data/runs/reference/{reference}"
    side_a = [p for p in paths if claimruns.in_cell(claimruns.words(p, base), ga, la)]
    side_b = [p for p in paths if claimruns.in_cell(claimruns.words(p, base), gb, lb)]
    assert (len(side_a), len(side_b)) == (int(row["n_a"]), int(row["n_b"])), paths
    assert set(side_a) | set(side_b) == set(paths)
    assert all((REPO_ROOT / p / "manifest.json").is_file() for p in paths)
    # the claims page names the same evidence for it
    claims_dom = chromium(browser, "", "--dump-dom", page=CLAIMS_PAGE)
    mine = next(r for r in _rows(claims_dom) if r["data-claim"] == anchor)
    assert mine["runs"] == runs_href and mine["figure"].startswith("index.html#")
    _figure_after(index, mine["figure"].split("#", 1)[1], site)


def test_the_claims_page_filters_by_runtime_and_backend(browser: tuple[str, Path, bool]) -> None:
    dom = chromium(browser, "#runtime=jvm&backend=docker", "--dump-dom", page=CLAIMS_PAGE)
    rows = _rows(dom)
    shown = [r for r in rows if not r["hidden"]]
    assert shown and len(shown) < len(rows)
    assert all("jvm" in r["data-runtime"].split(", ") for r in shown)
    assert all("docker" in r["data-backend"].split(", ") for r in shown)
    described = {n: catalogue.describe(f.parent) for n, f in references().items()}
    want = {
        n
        for n, d in described.items()
        if "jvm" in d["runtimes"].split(", ") and "docker" in d["backends"].split(", ")
    }
    assert {r["runs"].split("#")[0].removeprefix("runs/").removesuffix(".html")
            for r in shown} <= want  # fmt: skip
    assert f"{len(shown)} of {len(rows)} claims shown" in dom


def test_every_link_of_the_claims_and_runs_pages_resolves(browser: tuple[str, Path, bool]) -> None:
    """Each file a link names is in the site, and each anchor it names is in that file."""
    site = browser[1] / "site"
    ids = {"index.html": Dom((site / "index.html").read_text()).ids}
    pages = [site / CLAIMS_PAGE, *sorted((site / "runs").glob("*.html"))]
    for page in pages:
        dom = Dom(page.read_text())
        for _, link in dom.links:
            path, _, fragment = link.partition("#")
            target = (page.parent / unquote(path)).resolve()
            assert target.is_relative_to(site.resolve()) and target.is_file(), (page, link)
            if fragment and target.name in ids:
                assert fragment in ids[target.name], (page.name, link)
    assert len(pages) >= 5
