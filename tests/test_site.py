"""The report as a web page: a site built from a small results tree, then loaded in headless
Chromium.

Without a browser: the site is self-contained (its results tree is deleted and the site
moved before anything is read; every relative link and image is a file inside it, nothing
is fetched from elsewhere, figures are SVG), and a rebuild replaces only a site ipclab
wrote. In Chromium (skipped, saying why, without one): the page renders (a screenshot that
is not blank), every link and image of the DOM Chromium built resolves in the site, and the
claims filter set from the URL's fragment or query shows exactly the matching rows.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, quote_plus, unquote, urlsplit

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from ipclab.report import build, build_site, main, pdf
from ipclab.report.overview import ALL_CLAIMS_ID
from ipclab.report.site import SITE_MARKER, SiteRefused
from tests.test_report import FIGURE_CAPTION, TABLE_CAPTION, _results

ENVIRONMENT = {"python": "3.11", "os": "test", "git": {"revision": "test"}}
SECOND = "Second study"
# the claims of the two studies: the demo's from tests/test_report.py, the second's changed
SECOND_VERDICTS = {"Z01a": "not reproduced", "Z01b": "not reproduced", "Z02a": "inconclusive"}


class Dom(HTMLParser):
    """What the tests read of a page: every href and src, every id, the text, and per row
    of the all-claims table its study, verdict and whether it is hidden."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []  # (tag, href or src)
        self.ids: set[str] = set()
        self.rows: list[tuple[str, str, bool]] = []
        self.text: list[str] = []
        self._claims = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.links += [(tag, str(a[k])) for k in ("href", "src") if a.get(k) is not None]
        if a.get("id"):
            self.ids.add(str(a["id"]))
        if tag == "table":
            self._claims = a.get("id") == ALL_CLAIMS_ID
        if tag == "tr" and self._claims and "data-verdict" in a:
            self.rows.append((str(a["data-study"]), str(a["data-verdict"]), "hidden" in a))

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._claims = False

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def shown(self) -> list[tuple[str, str]]:
        return [(study, verdict) for study, verdict, hidden in self.rows if not hidden]


def unresolved(dom: Dom, site: Path) -> list[str]:
    """Every link or image of ``dom`` that is not a file inside ``site`` (or an anchor of
    the page), and every one that would fetch anything from elsewhere."""
    bad = []
    for tag, link in dom.links:
        parts = urlsplit(link)
        if parts.scheme or parts.netloc or link.startswith("/"):
            bad.append(f"<{tag}> {link}: not relative")
        elif not parts.path:
            if parts.fragment not in dom.ids:
                bad.append(f"<{tag}> {link}: no element with this id")
        else:
            target = (site / unquote(parts.path)).resolve()
            if not (target.is_relative_to(site.resolve()) and target.is_file()):
                bad.append(f"<{tag}> {link}: no such file in the site")
    return bad


def _second_study(first: Path) -> Path:
    second = first.parent / "second"
    shutil.copytree(first, second)
    meta = json.loads((second / "study.json").read_text())
    meta.update(study="second", title=SECOND, directory=str(second))
    (second / "study.json").write_text(json.dumps(meta))
    claims = pd.read_csv(second / "claims.csv")
    claims["verdict"] = claims["claim_id"].map(SECOND_VERDICTS)
    claims.to_csv(second / "claims.csv", index=False)
    return second


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two studies' site, built, then moved away from a results tree that is deleted."""
    root = tmp_path_factory.mktemp("site")
    first = _results(root)
    plt.close("all")
    second = _second_study(first)
    index = build_site([first, second], root / "built" / "site", environment=ENVIRONMENT)
    moved = root / "moved" / "site"
    moved.parent.mkdir()
    shutil.move(index.parent, moved)
    for d in ("results", "figures", "built"):
        shutil.rmtree(root / d)
    return moved


def test_the_site_is_self_contained_and_every_link_resolves(site: Path) -> None:
    text = (site / "index.html").read_text()
    dom = Dom(text)
    assert not unresolved(dom, site)
    images = [link for tag, link in dom.links if tag == "img"]
    # per study its figure twice: a headline of its main-body section, and in its full
    # section in the appendices
    assert len(images) == 4 and all(i.endswith(".svg") for i in images)
    assert all((site / unquote(i)).read_text().lstrip().startswith("<?xml") for i in images)
    csvs = [link for tag, link in dom.links if tag == "a" and link.endswith(".csv")]
    assert len(csvs) == 2 * 3  # per study: two tables in the report and its claims
    assert "base64" not in text and "<link" not in text and "<script src" not in text
    assert f"Figure 1. {FIGURE_CAPTION}" in " ".join("".join(dom.text).split())
    assert TABLE_CAPTION in text
    assert [v for _, v, _ in dom.rows].count("not reproduced") == 3


def test_a_rebuild_replaces_the_site_and_no_other_folder(tmp_path: Path) -> None:
    """A site ipclab wrote is rebuilt whole (no stale figure stays); a folder of something
    else is never overwritten."""
    first = _results(tmp_path)
    plt.close("all")
    out = tmp_path / "site"
    build_site([first], out, environment=ENVIRONMENT)
    stale = out / "figures" / "stale.svg"
    stale.write_text("<svg/>")
    build_site([first], out, environment=ENVIRONMENT)
    assert not stale.exists() and (out / SITE_MARKER).is_file()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not a site ipclab wrote"):
        build_site([first], foreign, environment=ENVIRONMENT)
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize("no_pdf", [False, True], ids=["report", "site-only"])
def test_a_foreign_site_folder_fails_the_report_first_in_one_line_and_stays_untouched(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    no_pdf: bool,
) -> None:
    """Refused before the PDF is printed: no report.pdf (nor its HTML) beside a site that
    could not be written, an error of one line and no traceback, the folder left as it was."""
    _results(tmp_path)
    plt.close("all")
    monkeypatch.setattr(build, "find_chromium", lambda: "chromium")  # no Chromium needed:
    monkeypatch.setattr(build, "html_to_pdf", lambda *a: pytest.fail("PDF printed first"))
    foreign = tmp_path / "out" / "site"
    foreign.mkdir(parents=True)
    (foreign / "notes.txt").write_text("mine")
    out = tmp_path / "out" / "report.pdf"
    argv = ["--results", str(tmp_path / "results"), "--out", str(out)]
    assert main(argv + ["--no-pdf"] * no_pdf) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "not a site ipclab wrote" in err and "Traceback" not in err
    assert sorted(p.name for p in out.parent.iterdir()) == ["site"]  # nothing half-written
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]
    assert (foreign / "notes.txt").read_text() == "mine"
    with pytest.raises(SiteRefused):  # and the same from the function reproduce calls
        build.build_report([tmp_path / "results" / "demo"], out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["site"]


# --- in headless Chromium -------------------------------------------------------------


@pytest.fixture(scope="module")
def browser(site: Path) -> Iterator[tuple[str, Path, bool]]:
    """Chromium and a copy of the site it may read: as root, Chromium runs as ``nobody``
    with its sandbox on, as the report's PDF is printed (ipclab.report.pdf)."""
    try:
        exe = pdf.find_chromium()
    except pdf.ChromiumMissing as e:
        pytest.skip(str(e))
    with pdf.chromium_workdir() as (work, as_root):
        shutil.copytree(site, work / "site")
        pdf.hand_over(work, as_root)
        yield exe, work, as_root


def chromium(
    browser: tuple[str, Path, bool], url_tail: str, *args: str, page: str = "index.html"
) -> str:
    exe, work, as_root = browser
    url = (work / "site" / page).as_uri() + url_tail
    cmd = pdf.headless_command(exe, work, as_root, "--window-size=1280,1600", *args, url)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr[-1500:]
    return r.stdout


def test_reproduce_refuses_a_foreign_site_folder_before_any_notebook(tmp_path: Path) -> None:
    from ipclab.reproduce import reproduce

    foreign = tmp_path / "out" / "site"
    foreign.mkdir(parents=True)
    (foreign / "mine.txt").write_text("keep")
    said: list[str] = []
    assert reproduce(out=tmp_path / "out", say=said.append) == 2
    assert len(said) == 1 and "not a site ipclab wrote" in said[0]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["site"]  # nothing ran
    assert (foreign / "mine.txt").read_text() == "keep"


def test_chromium_renders_the_page(browser: tuple[str, Path, bool]) -> None:
    shot = browser[1] / "shot.png"
    chromium(browser, "", f"--screenshot={shot}")
    img = plt.imread(shot)
    assert img.shape[0] >= 800 and img.shape[1] >= 800, img.shape
    assert float(img[..., :3].min()) < 0.5 and float(img[..., :3].max()) > 0.9, "blank page"


def test_filter_by_verdict_from_the_fragment_shows_only_those_rows(
    browser: tuple[str, Path, bool],
) -> None:
    dom = Dom(chromium(browser, "#" + "verdict=" + quote("not reproduced"), "--dump-dom"))
    assert "claim-filter" in dom.ids, "the filter script did not run"
    assert not unresolved(dom, browser[1] / "site")  # the DOM as built, script included
    assert len(dom.rows) == 6
    assert dom.shown() == [("Demo study", "not reproduced"), (SECOND, "not reproduced"),
                           (SECOND, "not reproduced")]  # fmt: skip
    assert "3 of 6 claims shown" in "".join(dom.text)


def test_filter_by_study_and_verdict_from_the_query(browser: tuple[str, Path, bool]) -> None:
    query = f"?study={quote(SECOND)}&verdict=inconclusive"
    dom = Dom(chromium(browser, query, "--dump-dom"))
    assert dom.shown() == [(SECOND, "inconclusive")]
    assert "1 of 6 claims shown" in "".join(dom.text)


def _url_after_choosing_all(browser: tuple[str, Path, bool], keys: list[str], tail: str) -> str:
    """The URL's tail (after the page's name) once the reader set these filters to "all"
    on a page opened at ``tail``: a copy of the page whose last script does so."""
    site = browser[1] / "site"
    clear = (
        "".join(f'f.elements["{k}"].value = ""; ' for k in keys)
        + 'f.dispatchEvent(new Event("change")); o.textContent = location.href;'
    )
    script = (
        '<output id="url-now"></output><script>const f = document.getElementById('
        f'"claim-filter"); const o = document.getElementById("url-now"); {clear}</script>'
    )
    page = f"clear-{'-'.join(keys)}.html"
    text = (site / "index.html").read_text().replace("</body>", script + "</body>")
    (site / page).write_text(text)
    pdf.hand_over(browser[1], browser[2])
    m = re.search(
        r'<output id="url-now">([^<]*)</output>', chromium(browser, tail, "--dump-dom", page=page)
    )
    assert m and m.group(1).startswith((site / page).as_uri()), m
    return m.group(1).removeprefix((site / page).as_uri())


def test_clearing_a_filter_opened_from_the_query_sticks_across_a_reload(
    browser: tuple[str, Path, bool],
) -> None:
    """The query seeds the first load only: once the reader changes the filter the URL holds
    no query, so a reload shows what the reader chose, not the link's filter again."""
    query = f"?study={quote(SECOND)}&verdict=inconclusive"
    tail = _url_after_choosing_all(browser, ["study", "verdict"], query)
    assert tail == ""  # no query left, no fragment: every claim
    assert "6 of 6 claims shown" in "".join(Dom(chromium(browser, tail, "--dump-dom")).text)
    tail = _url_after_choosing_all(browser, ["verdict"], query)
    assert tail == "#study=" + quote_plus(SECOND)  # the study kept, in the fragment only
    dom = Dom(chromium(browser, tail, "--dump-dom"))
    assert {study for study, _ in dom.shown()} == {SECOND} and len(dom.shown()) == 3
