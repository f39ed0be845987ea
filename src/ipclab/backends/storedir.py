"""The private directory of a local store (FerretDB, MariaDB): its data, socket, secrets
and log, made fresh for each instance and removed with it.

A store's directory is ``<tmp>/ipclab-<kind>-<port>-<random>/``, made by ``mkdtemp`` (so
new, this user's, 0700) and marked with the harness that made it (``orphans.mark_workdir``):
after a ``kill -9`` of the harness its server dies by the parent-death signal every
``procs.spawn`` sets, and the next ``orphans.sweep`` (every local stack's start, or
``ipclab sweep``) removes the directory, exactly as it removes a stack's workdir. A
detached instance's directory carries no mark (``ipclab down`` removes it, by its state).

A root harness runs a server that refuses root (MariaDB) as that server's OS user
(``server_user``): the directory is then 0711 (the server passes through it, lists nothing)
and its ``data/`` that user's. Files with secrets are 0600, never written through a link.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from ipclab import orphans

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


def ids_of(user: str | None) -> tuple[int, int] | None:
    """(uid, gid) of an OS user, None for the harness's own."""
    if user is None:
        return None
    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid


def make(kind: str, port: int, user: str | None, detached: bool) -> Path:
    """A new store directory with an empty ``data/`` (``user``'s when given)."""
    d = Path(tempfile.mkdtemp(prefix=f"{orphans.WORKDIR_PREFIX}{kind}-{port}-"))
    if not detached:
        orphans.mark_workdir(d)
    data = d / "data"
    data.mkdir(mode=0o700)
    if (ids := ids_of(user)) is not None:
        d.chmod(0o711)
        os.chown(data, *ids, follow_symlinks=False)
    return d


def write_private(path: Path, text: str, user: str | None = None) -> None:
    """A new 0600 file (never an existing one, never through a link), ``user``'s if given."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if (ids := ids_of(user)) is not None:
            os.fchown(f.fileno(), *ids)
        f.write(text)


def is_store_dir(path: Path, kind: str) -> bool:
    """``path`` is a directory ``make`` made for ``kind``: directly under the temp
    directory, named by its prefix, a real directory of this user's (not a link)."""
    try:
        st = path.lstat()
    except OSError:
        return False
    return (
        path.parent.resolve() == Path(tempfile.gettempdir()).resolve()
        and path.name.startswith(f"{orphans.WORKDIR_PREFIX}{kind}-")
        and stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.getuid()
    )


def remove(path: Path | None, kind: str) -> None:
    """Remove a store directory (only one ``make`` made; ``rmtree`` follows no link)."""
    if path is not None and is_store_dir(path, kind):
        shutil.rmtree(path, ignore_errors=True)


def version_line(argv: list[str]) -> str:
    """The first line a ``--version`` command prints ("" when it cannot run)."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if lines else ""
