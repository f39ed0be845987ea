"""RabbitMQ's core applications only, as a plugins folder of links (stdlib only).

The ``rabbit`` application and every application it needs (the closure of the
``applications`` lists of their ``.app`` files) are what a node that enables no plugin boots;
Debian's plugins folder holds 70, and the Erlang code path through all of them took a node
2-4 s more to boot (8-11 s, not 11-15 s). Used twice: by the harness's private node
(``ipclab.backends.broker``, loaded by path) and at the broker image's build
(``python3 core_plugins.py PLUGINS DEST``, then ``RABBITMQ_PLUGINS_DIR=DEST``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path


def core_apps(plugins: Path) -> list[Path]:
    """The ``rabbit`` application's folder in ``plugins`` and those of every application it
    needs; empty when ``plugins`` holds no ``rabbit`` folder."""
    folders = {f.name.rsplit("-", 1)[0]: f for f in plugins.glob("*-*") if f.is_dir()}
    needed: set[str] = set()
    todo = ["rabbit"]
    while todo:
        app = todo.pop()
        if app in needed or app not in folders:
            continue  # an OTP application (kernel, ssl, ...) is not in the plugins folder
        needed.add(app)
        spec = folders[app] / "ebin" / f"{app}.app"
        text = spec.read_text(errors="replace") if spec.is_file() else ""
        for listed in re.findall(r"\{(?:included_)?applications,\s*\[([^\]]*)\]", text):
            todo += [a.strip() for a in listed.split(",") if a.strip()]
    return [folders[a] for a in sorted(needed)] if "rabbit" in needed else []


def link_core(plugins: Path, dest: Path) -> list[Path]:
    """``dest`` made a folder of links to :func:`core_apps` of ``plugins`` (to every entry of
    ``plugins`` when it holds no ``rabbit`` folder, so that ``dest`` always works)."""
    apps = core_apps(plugins) or sorted(plugins.iterdir())
    dest.mkdir(parents=True, exist_ok=True)
    for app in apps:
        (dest / app.name).symlink_to(app)
    return apps


if __name__ == "__main__":
    linked = link_core(Path(sys.argv[1]), Path(sys.argv[2]))
    print(f"{len(linked)} applications linked into {sys.argv[2]}")
