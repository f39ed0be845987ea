"""The services image installs its wheels with ``pip --require-hashes`` against the hashes
recorded when they were downloaded: a wheel changed afterwards is refused (issue 13)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

from ipclab.backends.docker.images import HASHES, hashed_requirements


def make_wheel(directory: Path, body: str) -> Path:
    wheel = directory / "tiny_pkg-1.0-py3-none-any.whl"
    info = "tiny_pkg-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("tiny_pkg/__init__.py", body)
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: tiny-pkg\nVersion: 1.0\n")
        z.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        z.writestr(f"{info}/RECORD", "")
    return wheel


def pip_install(wheels: Path, requirements: Path, target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(wheels),
         "--require-hashes", "--disable-pip-version-check", "--target", str(target),
         "-r", str(requirements)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_wheel_changed_after_download_is_refused(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    wheel = make_wheel(wheels, "VALUE = 1\n")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (wheels / HASHES).write_text(f"{digest}  {wheel.name}\n")
    req = tmp_path / "requirements.txt"
    req.write_text(hashed_requirements(wheels))
    assert req.read_text() == f"tiny_pkg==1.0 --hash=sha256:{digest}\n"

    ok = pip_install(wheels, req, tmp_path / "ok")
    assert ok.returncode == 0, ok.stderr
    make_wheel(wheels, "VALUE = 2  # changed in the cache\n")
    bad = pip_install(wheels, req, tmp_path / "bad")
    assert bad.returncode != 0
    assert "do not match the hashes" in bad.stderr.lower(), bad.stderr[-2000:]


def test_no_recorded_hashes_is_a_clear_error(tmp_path: Path) -> None:
    import pytest

    from ipclab.backends.docker.images import ImageError

    with pytest.raises(ImageError, match="SHA256SUMS is missing"):
        hashed_requirements(tmp_path)
