"""Issue 48, item 5: the harness's Python dependencies hash-locked for CI, and the local
Kubernetes cluster's Debian packages pinned by version (the Maven artifacts:
tests/test_maven_lock.py).

``.ci/requirements.lock`` (scripts/python-lock.sh) pins every package CI installs by
version and sha256; ``.ci/run`` and ``make setup`` under CI install it in pip's
hash-checking mode and ipclab itself without resolving anything. ``scripts/k8s-deps.sh``
installs each package at its pinned version and fails on one installed at another.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / ".ci" / "requirements.lock"
EXTRAS = ("dev", "bench", "notebooks")


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _locked() -> dict[str, list[str]]:
    """Package name -> its hashes, from the lock."""
    out: dict[str, list[str]] = {}
    current = ""
    for line in LOCK.read_text().splitlines():
        if m := re.match(r"^([A-Za-z0-9_.-]+)==\S+", line):
            current = m.group(1).lower().replace("_", "-").replace(".", "-")
            out[current] = []
        elif m := re.search(r"--hash=sha256:([0-9a-f]{64})", line):
            out[current].append(m.group(1))
    return out


def test_the_lock_pins_every_direct_requirement_with_hashes() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = list(project["project"]["dependencies"])
    for extra in EXTRAS:
        wanted += project["project"]["optional-dependencies"][extra]
    wanted += project["build-system"]["requires"]
    locked = _locked()
    missing = {_name(r).replace(".", "-") for r in wanted} - set(locked)
    assert not missing, f"not in {LOCK.name}: {sorted(missing)}"
    assert all(hashes for hashes in locked.values()), "a package without a hash"


def test_ci_installs_the_lock_with_hashes_and_ipclab_without_resolving() -> None:
    for text in ((ROOT / ".ci" / "run").read_text(),
                 subprocess.run(["make", "-n", "setup"], cwd=ROOT, env={"CI": "true",
                                "PATH": "/usr/bin:/bin"}, capture_output=True, text=True,
                                check=True).stdout):  # fmt: skip
        assert "pip install -q --require-hashes -r .ci/requirements.lock" in text
        assert "pip install -q --no-deps --no-build-isolation -e ." in text
        assert "[dev" not in text


@pytest.mark.slow
def test_pip_refuses_a_file_whose_hash_is_not_the_locked_one(tmp_path: Path) -> None:
    """One locked package with one of its hashes altered: pip's hash-checking mode refuses
    to download it (PyPI sends the real file); with the locked hashes it is accepted."""
    text = LOCK.read_text()
    block = re.search(r"^idna==\S+ \\\n(?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+", text, re.M)
    assert block is not None, "idna is in the lock (a small package to download)"
    good = block.group(0).rstrip("\\\n") + "\n"
    bad = re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, good)

    def download(lock: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "one.lock").write_text(lock)
        return subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes",
             "-r", str(tmp_path / "one.lock"), "-d", str(tmp_path / "got")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    ok = download(good)
    if ok.returncode != 0 and "HASH" not in ok.stderr.upper():
        pytest.skip(f"PyPI not reached: {ok.stderr.strip()[-300:]}")
    assert ok.returncode == 0, ok.stderr
    refused = download(bad)
    assert refused.returncode != 0 and "DO NOT MATCH THE HASHES" in refused.stderr


def _k8s_deps(tmp_path: Path, versions: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """scripts/k8s-deps.sh with dpkg-query answering ``versions`` (absent: not installed)
    and ``id -u`` saying 1000 (so it installs nothing, only says what it would)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    cases = "".join(f'  {p}) v="{v}";;\n' for p, v in versions.items())
    (bin_dir / "dpkg-query").write_text(
        "#!/bin/bash\np=${@: -1}; v=\ncase $p in\n" + cases + "esac\n"
        "[[ -z $v ]] && exit 1\n"
        '[[ $* == *Status* ]] && printf "install ok installed" || printf "%s" "$v"\n'
    )
    (bin_dir / "id").write_text("#!/bin/sh\necho 1000\n")
    for tool in ("dpkg-query", "id"):
        (bin_dir / tool).chmod(0o755)
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "k8s-deps.sh")], capture_output=True, text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, timeout=60,
    )  # fmt: skip


PINNED = {
    "containerd": "1.6.20~ds1-1+deb12u3", "runc": "1.1.5+ds1-1+deb12u1",
    "containernetworking-plugins": "1.1.1+ds1-3+b5", "conntrack": "1:1.4.7-1+b2",
    "iptables": "1.8.9-2", "iproute2": "6.1.0-3",
}  # fmt: skip


def test_k8s_deps_accepts_the_pinned_versions_and_their_debian_updates(tmp_path: Path) -> None:
    done = _k8s_deps(tmp_path, {**PINNED, "containerd": "1.6.20~ds1-1+deb12u9"})
    assert done.returncode == 0 and "pinned versions" in done.stdout, done.stderr


def test_k8s_deps_refuses_another_version_and_installs_missing_ones_pinned(
    tmp_path: Path,
) -> None:
    done = _k8s_deps(tmp_path / "a", {**PINNED, "containerd": "1.7.24~ds1-1"})
    assert done.returncode == 1 and "containerd 1.7.24~ds1-1 (pinned: 1.6.20" in done.stderr
    missing = dict(PINNED)
    del missing["runc"]
    done = _k8s_deps(tmp_path / "b", missing)
    assert done.returncode == 1 and "apt-get install -y runc=1.1.5+ds1-1+deb12u*" in done.stderr


# ----------------------------------------------------------- the load image's lock (issue 51)

LOAD_LOCK = ROOT / "compose" / "locust" / "requirements.lock"
# what shapes the load the pods generate: Locust, its event loop and HTTP client, the recorder's
LOAD_RELEVANT = ("locust", "gevent", "geventhttpclient", "greenlet", "pyarrow")


def _versions(lock: Path) -> dict[str, str]:
    out = {}
    for line in lock.read_text().splitlines():
        if m := re.match(r"^([A-Za-z0-9_.-]+)==([^\s;\\]+)", line):
            out[re.sub(r"[-_.]+", "-", m.group(1)).lower()] = m.group(2)
    return out


def test_the_load_image_runs_the_harness_s_locked_locust() -> None:
    """The load lock is made under .ci/requirements.lock's versions: Locust and what shapes
    its load are the same versions in both, and so is every other package the two share."""
    load, ci = _versions(LOAD_LOCK), _versions(LOCK)
    assert set(LOAD_RELEVANT) <= set(load), (
        f"{LOAD_LOCK.name} lacks {set(LOAD_RELEVANT) - set(load)}"
    )
    differ = {n: (v, ci.get(n)) for n, v in load.items() if ci.get(n) != v}
    assert not differ, f"{LOAD_LOCK} and {LOCK} disagree (load, CI): {differ}"


def test_the_load_lock_is_uv_s_with_hashes_and_the_image_installs_it_checked() -> None:
    from ipclab.backends.docker import recipes

    text = LOAD_LOCK.read_text()
    assert "Generated by scripts/python-lock.sh" in text
    assert "--load" in (ROOT / "scripts" / "python-lock.sh").read_text()
    blocks = re.findall(
        r"^[A-Za-z0-9_.-]+==\S+ \\\n((?:    --hash=sha256:[0-9a-f]{64}.*\n)+)", text, re.M
    )
    assert len(blocks) == len(_versions(LOAD_LOCK)), "every package has its hashes"
    assert recipes.locust_requirements() == [
        f"{n}=={_versions(LOAD_LOCK)[n]}" for n in recipes.LOAD_PACKAGES
    ]
    dockerfile = recipes.LOCUST.dockerfile.read_text()
    assert "--require-hashes -r /etc/ipclab/locust/requirements.lock" in dockerfile
    assert "--no-index" in dockerfile and recipes.LOCUST.network == "none"
    assert "wheels.sha256" not in dockerfile


def test_the_load_image_s_context_holds_the_lock_and_its_wheels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ipclab.backends.docker import recipes

    wheel = tmp_path / "cache" / "tiny-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"wheel")
    seen = []
    monkeypatch.setattr(
        recipes, "download_locked_wheels", lambda lock, dest: seen.append(lock) or [wheel]
    )
    context = tmp_path / "context"
    context.mkdir()
    recipes._locust_build(context)
    assert seen == [recipes.LOCUST_LOCK]
    assert (context / "requirements.lock").read_text() == LOAD_LOCK.read_text()
    assert [p.name for p in (context / "wheels").iterdir()] == [wheel.name]
    assert not (context / "wheels.sha256").exists()
    assert (context / "ipclab" / "load" / "podmaster.py").is_file()


@pytest.mark.slow
def test_the_load_image_s_download_refuses_a_wheel_whose_hash_differs(tmp_path: Path) -> None:
    """One package of the load lock with its hashes replaced: the host's download stops with
    pip's hash error and keeps nothing; with the locked hashes it is accepted."""
    from ipclab.backends.docker import recipes

    text = LOAD_LOCK.read_text()
    pattern = r"^blinker==\S+ \\\n(?:    --hash=sha256:[0-9a-f]{64}(?: \\)?\n)+"
    block = re.search(pattern, text, re.M)
    assert block is not None, "blinker is in the load lock (small, without dependencies)"
    good = block.group(0).rstrip("\\\n") + "\n"
    (tmp_path / "good.lock").write_text(good)
    try:
        wheels = recipes.download_locked_wheels(tmp_path / "good.lock", tmp_path / "good")
    except recipes.RecipeError as e:
        if "HASH" in str(e).upper():
            raise
        pytest.skip(f"PyPI not reached: {str(e)[-300:]}")
    assert [w.name.split("-")[0] for w in wheels] == ["blinker"]
    (tmp_path / "bad.lock").write_text(re.sub(r"sha256:[0-9a-f]{64}", "sha256:" + "0" * 64, good))
    with pytest.raises(recipes.RecipeError, match="DO NOT MATCH THE HASHES"):
        recipes.download_locked_wheels(tmp_path / "bad.lock", tmp_path / "bad")
    assert not list((tmp_path / "bad").iterdir())


@pytest.mark.slow
def test_the_load_lock_is_what_uv_makes_of_the_committed_files(tmp_path: Path) -> None:
    """scripts/python-lock.sh --load, run on copies of its inputs, writes the committed load
    lock byte for byte: the lock is the kept tool's (uv), not edited by hand."""
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        pytest.skip("uv is missing (pip install uv, or UV=/path/to/uv)")
    for path in (
        "scripts/python-lock.sh",
        ".ci/requirements.lock",
        "compose/locust/requirements.in",
    ):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, tmp_path / path)
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "python-lock.sh"), "--load"],
        capture_output=True, text=True, env={**os.environ, "UV": uv}, timeout=300,
    )  # fmt: skip
    if done.returncode != 0 and "fetch" in done.stderr.lower():
        pytest.skip(f"the index not reached: {done.stderr.strip()[-300:]}")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "compose/locust/requirements.lock").read_text() == LOAD_LOCK.read_text()
