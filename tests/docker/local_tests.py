"""Load a local-backend test module of tests/ by path, so that a docker module can re-collect
its tests against the docker fixtures (whether or not tests/ is imported as a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType


def load_local_tests(filename: str) -> ModuleType:
    """``tests/<filename>``, as a module of its own (not collected twice under one name)."""
    path = Path(__file__).resolve().parents[1] / filename
    name = f"ipclab_{path.stem}_for_docker"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
