"""The report's HTML printed to PDF by headless Chromium, with Chromium's sandbox on.

Chromium refuses to run as root unless its sandbox is turned off. Rather than turn it off, a
root harness runs Chromium as ``nobody`` (``setpriv``), on a copy of the HTML (self-contained:
figures are inlined) in a directory only that user and root can reach. As another user,
Chromium runs as is. Only where the sandbox cannot start at all (no user namespaces and no
setuid helper) does ``IPCLAB_CHROMIUM_NO_SANDBOX=1`` turn it off, and only when asked.
The site's test loads the site the same way (:func:`headless_command`, :func:`hand_over`).

What Chromium wrote is read back through one descriptor (:func:`read_output`): the folder
``nobody`` owns sits in one of root's (0711) that ``nobody`` cannot rename it out of, and
the PDF is opened there with ``O_NOFOLLOW`` and ``O_NONBLOCK``, checked on that descriptor
(a regular file, one link, Chromium's user's, at most :data:`MAX_PDF` bytes), and read
through it. A link, a FIFO, a hard link or a file swapped between a check and a copy
(what ``nobody`` could plant there, issue 48) is refused with its reason, and nothing of it
is copied.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
NOBODY = 65534  # uid and gid Chromium runs as when the harness is root
MAX_PDF = 512 << 20  # bytes: a report is a few MB; anything larger is not Chromium's print


class UnsafeOutput(RuntimeError):
    """What Chromium's folder holds is not a file Chromium wrote: not read."""


class ChromiumMissing(RuntimeError):
    """No Chromium binary: the report cannot be printed."""


def find_chromium() -> str:
    """The Chromium binary: ``$IPCLAB_CHROMIUM`` or the first on PATH."""
    env = os.environ.get("IPCLAB_CHROMIUM")
    for c in ([env] if env else []) + list(CHROMIUM_CANDIDATES):
        path = shutil.which(c)
        if path:
            return path
    raise ChromiumMissing(
        "the report PDF is printed by headless Chromium, and none is installed: "
        "install Debian's package with `apt-get install chromium` (as root), or set "
        "IPCLAB_CHROMIUM to a Chromium or Chrome binary"
    )


def headless_command(exe: str, workdir: Path, as_root: bool, *args: str) -> list[str]:
    """Headless Chromium with ``args``, its profile in ``workdir``; as root, prefixed by a
    drop to ``nobody``. Never ``--no-sandbox`` unless ``IPCLAB_CHROMIUM_NO_SANDBOX=1``."""
    prefix: list[str] = []
    if as_root:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            raise RuntimeError("running Chromium as root needs setpriv (util-linux)")
        prefix = [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                  "env", f"HOME={workdir}"]  # fmt: skip
    sandbox = ["--no-sandbox"] if os.environ.get("IPCLAB_CHROMIUM_NO_SANDBOX") == "1" else []
    return [
        *prefix, exe, "--headless", *sandbox, "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={workdir / 'profile'}",
        *args,
    ]  # fmt: skip


def chromium_command(exe: str, workdir: Path, html: Path, pdf: Path, as_root: bool) -> list[str]:
    """The command line that prints ``html`` to ``pdf`` (see :func:`headless_command`)."""
    return headless_command(
        exe, workdir, as_root, f"--print-to-pdf={pdf}", "--no-pdf-header-footer", html.as_uri()
    )


@contextmanager
def chromium_workdir() -> Iterator[tuple[Path, bool]]:
    """A temporary directory for Chromium's profile and the files it reads, and whether the
    harness is root; call :func:`hand_over` once the files are in. It is ``work`` inside a
    folder of this user's (0711: entered, not listed, not written by others), so once
    ``work`` is ``nobody``'s, ``nobody`` can change what is in it but not put another folder
    or a link in its place."""
    with tempfile.TemporaryDirectory(prefix="ipclab-chromium-") as tmp:
        outer = Path(tmp)
        outer.chmod(0o711)
        work = outer / "work"
        work.mkdir(mode=0o700)
        yield work, os.geteuid() == 0


def hand_over(work: Path, as_root: bool) -> None:
    """As root, give ``work`` and all in it to ``nobody``, closed to everyone else: the
    unprivileged Chromium reads the files and writes its output there only."""
    if not as_root:
        return
    for path in [work, *work.rglob("*")]:
        os.chown(path, NOBODY, NOBODY, follow_symlinks=False)
    work.chmod(0o700)


def read_output(work: Path, name: str, owner: int, limit: int = MAX_PDF) -> bytes:
    """The file ``name`` Chromium wrote in ``work``, read through one descriptor opened
    without following a link (nor blocking on a FIFO) and checked on it: a regular file
    with one link, owned by ``owner``, at most ``limit`` bytes; else :class:`UnsafeOutput`."""
    folder = os.open(work, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        try:
            fd = os.open(
                name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=folder
            )
        except FileNotFoundError:
            raise
        except OSError as e:  # ELOOP: a symbolic link
            raise UnsafeOutput(f"{work / name}: not opened ({e.strerror}); not read") from e
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        why = _unsafe(st, owner, limit)
        if why:
            raise UnsafeOutput(f"{work / name}: {why}; not read")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise UnsafeOutput(f"{work / name}: grew past {limit} bytes while read; not read")
    return data


def _unsafe(st: os.stat_result, owner: int, limit: int) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_nlink != 1:
        return f"{st.st_nlink} links to it (a hard link to another file)"
    if st.st_uid != owner:
        return f"owned by uid {st.st_uid}, not Chromium's {owner}"
    if st.st_size > limit:
        return f"{st.st_size} bytes, more than {limit}"
    return None


def html_to_pdf(html_file: Path, out_pdf: Path, timeout_s: float = 180.0) -> Path:
    exe = find_chromium()
    out_pdf.parent.mkdir(parents=True, exist_ok=True)
    with chromium_workdir() as (work, as_root):
        html = work / "report.html"
        shutil.copyfile(html_file, html)
        tmp_pdf = work / "report.pdf"
        hand_over(work, as_root)
        cmd = chromium_command(exe, work, html, tmp_pdf, as_root)
        try:
            r = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(f"chromium did not print the report within {timeout_s:.0f} s") from e
        try:
            data = read_output(work, tmp_pdf.name, NOBODY if as_root else os.geteuid())
        except FileNotFoundError:
            data = b""
        if data[:5] != b"%PDF-":
            hint = ""
            if "sandbox" in r.stderr.lower():
                hint = (
                    "\nChromium's sandbox could not start here; to print without it, set "
                    "IPCLAB_CHROMIUM_NO_SANDBOX=1 (the report's HTML is generated by ipclab)"
                )
            raise RuntimeError(
                f"chromium exited {r.returncode} without a PDF: {r.stderr.strip()[-1500:]}{hint}"
            )
        out_pdf.write_bytes(data)
    return out_pdf


APPENDICES_HEADING = "Appendices"  # the first line of the page the main body ends before


def page_counts(pdf: Path) -> tuple[int, int]:
    """The printed report's main body and appendix page counts: the appendices start on the
    page whose first line is their heading (``pdftotext``, from poppler-utils)."""
    exe = shutil.which("pdftotext")
    if exe is None:
        raise RuntimeError("counting the report's pages needs pdftotext (poppler-utils)")
    text = subprocess.run([exe, "-layout", str(pdf), "-"], capture_output=True, text=True,
                          check=True, stdin=subprocess.DEVNULL).stdout  # fmt: skip
    pages = text.split("\f")
    if pages and not pages[-1].strip():
        pages = pages[:-1]
    for i, page in enumerate(pages):
        first = next((ln.strip() for ln in page.splitlines() if ln.strip()), "")
        if first == APPENDICES_HEADING:
            return i, len(pages) - i
    return len(pages), 0
