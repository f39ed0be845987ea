"""Issue 48, item 7: the root harness reads back the PDF from the folder ``nobody`` owns
through one descriptor, opened without following links, checked on that descriptor.

Chromium is replaced by a script that plants, as the user Chromium runs as (``nobody`` when
the harness is root), what a local attacker would: a link to a file only root may read, a
FIFO, a file larger than any report. Each is refused and nothing of it reaches the report.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipclab.report import pdf

SECRET = b"%PDF-1.7 root's secret, readable by root alone\n"

PLANTS = {
    "a link to a file only root reads": 'ln -s "$SECRET" "$OUT"',
    "a FIFO": 'mkfifo "$OUT"',
    "a PDF Chromium wrote, then replaced by a link": (
        'printf "%%PDF-1.7 real" > "$OUT"; (sleep 0.05; rm -f "$OUT"; ln -s "$SECRET" "$OUT") &'
        " sleep 0.2"
    ),
}


@pytest.fixture
def fake_chromium(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder (0755, outside root's private ones) for a fake Chromium script."""
    folder = Path(tempfile.mkdtemp(prefix="ipclab-fake-chromium-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _script(folder: Path, body: str, secret: Path) -> Path:
    script = folder / "chromium"
    script.write_text(
        "#!/bin/sh\n"
        "for a; do case $a in --print-to-pdf=*) OUT=${a#--print-to-pdf=};; esac; done\n"
        f"SECRET={secret}\n"
        f"{body}\n"
    )
    script.chmod(0o755)
    return script


@pytest.mark.parametrize("plant", list(PLANTS), ids=list(PLANTS))
def test_what_chromiums_user_plants_in_place_of_the_pdf_is_never_copied(
    plant: str, tmp_path: Path, fake_chromium: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On main's code the link was followed: root copied the secret into the report."""
    if os.geteuid() != 0:
        pytest.skip("the harness is not root: Chromium runs as this user, not nobody")
    secret = tmp_path / "secret"  # tmp_path is root's 0700: nobody cannot read it
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    monkeypatch.setenv("IPCLAB_CHROMIUM", str(_script(fake_chromium, PLANTS[plant], secret)))
    html, out = tmp_path / "r.html", tmp_path / "out" / "report.pdf"
    html.write_text("<p>report</p>")
    with pytest.raises(RuntimeError):
        pdf.html_to_pdf(html, out, timeout_s=30)
    assert not out.exists() or SECRET not in out.read_bytes()


def test_a_pdf_chromium_wrote_is_read_back(
    tmp_path: Path, fake_chromium: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = _script(fake_chromium, 'printf "%%PDF-1.7 made" > "$OUT"', tmp_path / "none")
    monkeypatch.setenv("IPCLAB_CHROMIUM", str(script))
    html, out = tmp_path / "r.html", tmp_path / "report.pdf"
    html.write_text("<p>report</p>")
    assert pdf.html_to_pdf(html, out, timeout_s=30).read_bytes() == b"%PDF-1.7 made"


@pytest.mark.parametrize("kind", ["link", "fifo", "hard link", "other owner", "too large"])
def test_read_output_refuses_what_is_not_a_file_chromium_wrote(kind: str, tmp_path: Path) -> None:
    me = os.geteuid()
    target = tmp_path / "target"
    target.write_bytes(SECRET)
    work = tmp_path / "work"
    work.mkdir()
    name, owner, limit = "report.pdf", me, pdf.MAX_PDF
    if kind == "link":
        (work / name).symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(work / name)
    elif kind == "hard link":
        os.link(target, work / name)
    else:
        (work / name).write_bytes(SECRET)
        owner, limit = (me + 1, limit) if kind == "other owner" else (me, 8)
    with pytest.raises(pdf.UnsafeOutput):
        pdf.read_output(work, name, owner, limit)
