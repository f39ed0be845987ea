"""Paths the harness acts on only when this user alone can write them.

A directory under a shared ``/tmp`` that holds state the harness later acts on (a detached
stack's pids, a crashed cluster's ``postmaster.pid``) is trusted only when it is a real
directory (not a symlink) owned by the harness's uid and not writable by group or others;
otherwise another local user could plant what a root harness then kills or deletes. The
local backend's state files and the PostgreSQL clusters' root use this guard.

Where a file in such a directory is *read* and acted upon (the local Kubernetes cluster's
kubeconfig, whose ``exec:`` plugin a client would run; its state file; its pod logs), the
check is made at every open, not once: :func:`open_private` walks from the directory to the
file by descriptors opened without following any link, checking each folder on the way and
the file itself, so nothing between the check and the read can be swapped.
:func:`check_private` checks a directory and its ancestors (each owned by this user or
root, and writable by no one else unless sticky, as ``/tmp``), for a path another program
will open by name (a socket ``ctr`` connects to, certificates ``ssl`` loads).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class UnsafeState(ValueError):
    """A state file or directory this user does not own alone: never acted upon."""


def owned_alone(st: os.stat_result) -> bool:
    """``st`` (from ``lstat``) is no symlink, owned by this uid, writable by no one else."""
    return not stat.S_ISLNK(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def _unsafe(path: Path, what: str, trusts: str, remedy: str) -> UnsafeState:
    return UnsafeState(
        f"{path} is not {what} owned by uid {os.getuid()} and writable only by it; "
        f"ipclab will not trust {trusts} in it ({remedy})"
    )


def private_dir(path: Path, trusts: str, remedy: str, mode: int = 0o700) -> Path:
    """``path`` as a directory only this user can write, or UnsafeState.

    Made with ``mode`` (exactly, whatever the umask) if new; an existing one is checked,
    never changed. ``trusts`` names what the directory holds and ``remedy`` what to do, for
    the error's message."""
    try:
        path.mkdir(mode=mode, parents=True)
        os.chmod(path, mode)
    except FileExistsError:
        pass
    st = path.lstat()
    if not (stat.S_ISDIR(st.st_mode) and owned_alone(st)):
        raise _unsafe(path, "a directory", trusts, remedy)
    return path


def _safe_ancestor(st: os.stat_result) -> bool:
    """A folder above a private one: root's or ours, and writable by no one else unless
    sticky (then no one else can rename or remove what is ours in it)."""
    owner_ok = st.st_uid in (0, os.getuid())
    return owner_ok and (not st.st_mode & 0o022 or bool(st.st_mode & stat.S_ISVTX))


def check_private(path: Path, trusts: str, remedy: str) -> Path:
    """``path``: an existing directory of this user's alone (:func:`owned_alone`) under
    ancestors nobody else can change (:func:`_safe_ancestor`), else UnsafeState;
    FileNotFoundError when it does not exist. Nothing is made or changed."""
    path = Path(os.path.abspath(path))
    st = path.lstat()
    if not (stat.S_ISDIR(st.st_mode) and owned_alone(st)):
        raise _unsafe(path, "a directory", trusts, remedy)
    for parent in path.parents:
        if not _safe_ancestor(parent.stat()):
            raise UnsafeState(
                f"{parent}, above {path}, may be changed by users other than root and uid "
                f"{os.getuid()}; ipclab will not trust {trusts} under it ({remedy})"
            )
    return path


def open_private_dir(root: Path, relative: str | Path, trusts: str, remedy: str) -> int:
    """A descriptor of the folder ``root/relative`` (``"."``: ``root`` itself): ``root``
    checked as by :func:`check_private`, then each folder below it opened without following
    a link and checked on its descriptor (this user's alone). UnsafeState otherwise;
    FileNotFoundError when one is missing. The caller closes it."""
    root = check_private(root, trusts, remedy)
    relative = Path(relative)
    if relative.is_absolute() or ".." in relative.parts:
        raise ValueError(f"{relative!r}: not a path below {root}")
    fd = os.open(root, _DIR_FLAGS)
    where = root
    try:
        for part in relative.parts:
            where = where / part
            inner = _open_at(part, _DIR_FLAGS, fd, where, trusts, remedy)
            os.close(fd)
            fd = inner
            if not owned_alone(os.fstat(fd)):
                raise _unsafe(where, "a directory", trusts, remedy)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private(root: Path, relative: str | Path, trusts: str, remedy: str) -> int:
    """A read-only descriptor of the file ``root/relative``: the folders as by
    :func:`open_private_dir`, the file opened without following a link and checked on its
    descriptor (a regular file owned by this user, writable by no one else). UnsafeState
    otherwise; FileNotFoundError when a part is missing. The caller closes it."""
    relative = Path(relative)
    if not relative.parts or relative.name in ("", ".", ".."):
        raise ValueError(f"{relative!r}: not a file below {root}")
    folder = open_private_dir(root, relative.parent, trusts, remedy)
    where = Path(os.path.abspath(root)) / relative
    try:
        fd = _open_at(relative.name, _FILE_FLAGS, folder, where, trusts, remedy)
    finally:
        os.close(folder)
    st = os.fstat(fd)
    if not (stat.S_ISREG(st.st_mode) and owned_alone(st)):
        os.close(fd)
        raise _unsafe(where, "a regular file", trusts, remedy)
    return fd


def _open_at(name: str, flags: int, dir_fd: int, path: Path, trusts: str, remedy: str) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):  # a link, or not a folder
            raise _unsafe(path, "a directory or file (not a link)", trusts, remedy) from None
        raise


def read_private(root: Path, relative: str | Path, trusts: str, remedy: str) -> bytes:
    """The bytes of ``root/relative``, read through :func:`open_private`."""
    with os.fdopen(open_private(root, relative, trusts, remedy), "rb") as f:
        return f.read()
