"""The seed-text tests (every quote and number against the studies' texts) run on CI: it
points them at ``../shared/seeds`` beside the clone; told where the texts are, a missing one
fails them instead of skipping (tests/seeds.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ipclab.paths import REPO_ROOT
from tests import seeds

CI_RUN = REPO_ROOT / ".ci" / "run"


def test_ci_points_the_seed_text_tests_at_the_texts_beside_the_clone() -> None:
    text = CI_RUN.read_text()
    before_installing = text.split("== system")[0]
    exported = {
        w for line in re.findall(r"^export (.*)$", before_installing, re.M) for w in line.split()
    }
    assert {"CI=true", "IPCLAB_SEEDS=../shared/seeds"} <= exported
    # checked before anything is installed: a missing folder fails at once, not at the tests
    assert text.index('compgen -G "$IPCLAB_SEEDS/*.txt"') < text.index("system-deps.sh")


def test_unset_the_texts_skip_and_say_how_to_run_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(seeds.ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="IPCLAB_SEEDS"):
        seeds.seed_text(seeds.NYFLOTT_THESIS)


def test_set_a_missing_text_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(seeds.ENV, str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=seeds.BUONO_THESIS):
        seeds.seed_text(seeds.BUONO_THESIS)


def test_a_relative_folder_is_taken_from_the_repository(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / seeds.JOHANSSON_THESIS).write_text("Efficient Communication")
    monkeypatch.setenv(seeds.ENV, os.path.relpath(tmp_path, REPO_ROOT))
    assert seeds.seed_text(seeds.JOHANSSON_THESIS) == "Efficient Communication"
