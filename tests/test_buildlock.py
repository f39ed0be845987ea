"""ipclab.buildlock: one builder at a time per build folder, threads and processes alike (the
two workers of `make test` start stacks that need the same Go, Node.js or Java build)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ipclab import buildlock, gobuild


def test_threads_hold_a_folder_one_at_a_time_and_other_folders_are_free(tmp_path: Path) -> None:
    inside: list[int] = []
    overlaps: list[list[int]] = []

    def build(i: int) -> None:
        with buildlock.held(tmp_path / "a"):
            inside.append(i)
            if len(inside) > 1:
                overlaps.append(list(inside))
            with buildlock.held(tmp_path / "b"):  # another folder's lock, taken inside
                time.sleep(0.02)
            inside.remove(i)

    threads = [threading.Thread(target=build, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert overlaps == [] and inside == []


def test_a_thread_may_take_a_folder_it_holds_again(tmp_path: Path) -> None:
    with buildlock.held(tmp_path), buildlock.held(tmp_path):
        pass
    with buildlock.held(tmp_path):  # released whole: taken again at once
        pass


def test_another_process_waits_until_the_lock_is_released(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from ipclab import buildlock\n"
        "with buildlock.held(Path(sys.argv[1])):\n    print('in', flush=True)\n"
    )
    with buildlock.held(tmp_path):
        other = subprocess.Popen(
            [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True
        )
        time.sleep(1.0)
        assert other.poll() is None, "the other process got in while the lock was held"
    out, _ = other.communicate(timeout=30)
    assert out.strip() == "in" and other.returncode == 0


def test_a_build_finished_by_another_harness_while_waiting_is_not_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """go_binary checks for the binary again once it holds the lock."""
    monkeypatch.setattr(gobuild, "BUILD_DIR", tmp_path)
    monkeypatch.setattr(gobuild, "toolchain_missing", lambda module: None)
    monkeypatch.setattr(gobuild.shutil, "which", lambda name: "/usr/bin/go")
    out = tmp_path / gobuild.sources_hash() / gobuild.BINARY
    built: list[Path] = []

    def build(go: str, args: object, cwd: Path, target: Path, env: object) -> None:
        built.append(target)
        target.write_text("binary")

    monkeypatch.setattr(gobuild, "build", build)
    with buildlock.held(tmp_path):  # another harness builds meanwhile
        waiting = threading.Thread(target=gobuild.go_binary)
        waiting.start()
        time.sleep(0.3)
        out.parent.mkdir(parents=True)
        out.write_text("built by the other harness")
    waiting.join(timeout=30)
    assert built == [] and out.read_text() == "built by the other harness"
