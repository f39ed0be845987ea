"""Issue 48, item 5: the Java roles' Maven artifacts pinned by committed checksums.

A build runs only on a local repository whose every artifact the lock names with the same
sha256 (``protoc`` included), fetched from Central by the harness and checked before it is
put in place; Maven then runs offline. Altered, unlisted or linked artifacts and a missing
lock stop the build before Maven runs.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ipclab import javabuild, mavenlock

PROTOC = "com/google/protobuf/protoc/4.36.2/protoc-4.36.2-linux-x86_64.exe"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    repo = tmp_path / "repo"
    files = {"g/a/1/a-1.jar": b"jar", "g/a/1/a-1.pom": b"<project/>", "g/p/1/p-1-x.exe": b"\x7fELF"}
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    (repo / "g/a/1/_remote.repositories").write_text("a-1.jar>central=\n")
    (repo / "g/a/1/a-1.jar.sha1").write_text("0" * 40)
    (repo / "g/a/maven-metadata-central.xml").write_text("<metadata/>")
    return repo, {name: _digest(data) for name, data in files.items()}


def test_the_committed_lock_pins_every_plugin_and_protoc() -> None:
    lock = mavenlock.read_lock()
    assert PROTOC in lock, "the native protoc the protobuf plugin runs is locked"
    needed = (
        "kr/motd/maven/os-maven-plugin/1.7.1/os-maven-plugin-1.7.1.jar",
        "org/xolstice/maven/plugins/protobuf-maven-plugin/0.6.1/protobuf-maven-plugin-0.6.1.jar",
        "io/quarkus/quarkus-maven-plugin/3.33.2/quarkus-maven-plugin-3.33.2.jar",
        "org/eclipse/californium/californium-core/3.11.0/californium-core-3.11.0.jar",
        "com/google/protobuf/protobuf-java/4.36.2/protobuf-java-4.36.2.jar",
    )
    assert set(needed) <= set(lock), set(needed) - set(lock)
    assert not [n for n in lock if mavenlock.bookkeeping(Path(n).name)]


def test_a_repository_as_the_lock_says_passes_and_bookkeeping_is_left_out(tmp_path: Path) -> None:
    repo, lock = _repo(tmp_path)
    assert mavenlock.problems(repo, lock) == []


@pytest.mark.parametrize("change", ["altered", "unlisted", "link", "group-writable"])
def test_what_the_lock_does_not_allow_stops_the_check(change: str, tmp_path: Path) -> None:
    repo, lock = _repo(tmp_path)
    if change == "altered":
        (repo / "g/p/1/p-1-x.exe").write_bytes(b"\x7fELF, another one")
    elif change == "unlisted":
        (repo / "g/b/2").mkdir(parents=True)
        (repo / "g/b/2/b-2.jar").write_bytes(b"not locked")
    elif change == "link":
        (repo / "g/a/1/a-1.jar").unlink()
        (repo / "g/a/1/a-1.jar").symlink_to(tmp_path / "elsewhere.jar")
    else:
        (repo / "g/a/1").chmod(0o775)
    with pytest.raises(mavenlock.LockMismatch, match="no build runs"):
        mavenlock.check(repo, lock)


def test_no_lock_no_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mavenlock, "LOCK", tmp_path / "maven.lock")
    with pytest.raises(mavenlock.LockMismatch, match="is missing"):
        mavenlock.read_lock(mavenlock.LOCK)


@contextlib.contextmanager
def _central(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A local stand-in for Maven Central serving ``folder``."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setattr(mavenlock, "CENTRAL", f"http://127.0.0.1:{server.server_port}/")
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


def test_fetch_puts_in_place_only_what_matches_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    served, lock = _repo(tmp_path)
    lock["g/p/1/p-1-x.exe"] = _digest(b"the protoc that was locked")  # Central sends another
    target = tmp_path / "local"
    with _central(served, monkeypatch), pytest.raises(mavenlock.LockMismatch, match="p-1-x.exe"):
        mavenlock.fetch(target, lock)
    assert not (target / "g/p/1/p-1-x.exe").exists()
    assert not list(target.rglob("*.part")), "a refused download leaves nothing behind"
    assert (target / "g/a/1/a-1.jar").read_bytes() == b"jar"
    mavenlock.check(target, {k: v for k, v in lock.items() if "p-1-x" not in k})


def test_a_network_failure_is_tried_again_and_a_checksum_that_differs_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resolver's blip ("Temporary failure in name resolution", seen on a fresh clone)
    must not fail a build: the files that failed on the network are fetched again after a
    pause; a file whose checksum differs is refused at once."""
    calls: list[str] = []

    def flaky(repo: Path, name: str, digest: str) -> str | None:
        calls.append(name)
        if name == "blip" and calls.count("blip") == 1:
            return f"{name}: <urlopen error [Errno -3] Temporary failure in name resolution>"
        if name == "other":
            return f"{name}: {mavenlock.MISMATCH} 00, the lock says 11"
        (repo / name).write_bytes(b"x")
        return None

    monkeypatch.setattr(mavenlock, "_fetch_one", flaky)
    monkeypatch.setattr(mavenlock, "RETRY_PAUSES_S", (0.0, 0.0))
    tmp_path.joinpath("r").mkdir()
    assert mavenlock.fetch(tmp_path / "r", {"blip": "d", "ok": "d"}) == ["blip", "ok"]
    assert calls == ["blip", "ok", "blip"]
    calls.clear()
    with pytest.raises(mavenlock.LockMismatch, match="other"):
        mavenlock.fetch(tmp_path / "r2", {"other": "d"})
    assert calls == ["other"]


@pytest.fixture(scope="module")
def locked_repo() -> Path:
    """The worktree's build/maven, fetched and checked from the committed lock."""
    if why := javabuild.toolchain_missing():
        pytest.skip(why)
    mavenlock.prepare(javabuild.MAVEN_REPO)
    return javabuild.MAVEN_REPO


@pytest.mark.parametrize("what", [PROTOC, "org/eclipse/californium/californium-core/3.11.0/"
                                           "californium-core-3.11.0.jar"])  # fmt: skip
def test_a_build_with_one_artifacts_checksum_altered_refuses_to_run(
    what: str, locked_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of the repository cache with one artifact altered: the build stops before
    Maven runs, naming it; nothing is built (on main's code Maven ran on it)."""
    repo = tmp_path / "maven"
    shutil.copytree(locked_repo, repo, symlinks=True)
    with (repo / what).open("ab") as f:
        f.write(b"\0")
    monkeypatch.setattr(javabuild, "MAVEN_REPO", repo)
    monkeypatch.setattr(javabuild, "BUILD_DIR", tmp_path / "java")
    ran: list[object] = []
    monkeypatch.setattr(javabuild, "_maven", lambda *a: ran.append(a))
    with pytest.raises(mavenlock.LockMismatch, match=Path(what).name):
        javabuild.classpath("californium")
    assert ran == [] and not (tmp_path / "java").exists()


@pytest.mark.slow
def test_the_roles_build_offline_from_the_checked_repository_alone(
    locked_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of the checked repository, Maven offline: both projects build, and Maven
    fetched nothing beyond the lock (the copy holds the same artifacts afterwards)."""
    repo = tmp_path / "maven"
    shutil.copytree(locked_repo, repo, symlinks=True)
    monkeypatch.setattr(javabuild, "MAVEN_REPO", repo)
    monkeypatch.setattr(javabuild, "BUILD_DIR", tmp_path / "java")
    assert (javabuild.classpath("californium") / "ipclab-californium.jar").is_file()
    assert (javabuild.quarkus_app("payload") / "quarkus-run.jar").is_file()
    mavenlock.check(repo)
