"""Paths the harness acts on only when this user alone can write them.

A directory under a shared ``/tmp`` that holds state the harness later acts on (a detached
stack's pids, a crashed cluster's ``postmaster.pid``) is trusted only when it is a real
directory (not a symlink) owned by the harness's uid and not writable by group or others;
otherwise another local user could plant what a root harness then kills or deletes. The
local backend's state files and the PostgreSQL clusters' root use this guard.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class UnsafeState(ValueError):
    """A state file or directory this user does not own alone: never acted upon."""


def owned_alone(st: os.stat_result) -> bool:
    """``st`` (from ``lstat``) is no symlink, owned by this uid, writable by no one else."""
    return not stat.S_ISLNK(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


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
        raise UnsafeState(
            f"{path} is not a directory owned by uid {os.getuid()} and writable only by it; "
            f"ipclab will not trust {trusts} in it ({remedy})"
        )
    return path
