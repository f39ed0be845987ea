"""``python -m ipclab.fuzz``: the fuzzing campaign over every stack (``ipclab.fuzzing``;
docs/fuzzing.md). ``--stacks`` limits it, ``--count`` sets the inputs per target."""

from __future__ import annotations

from ipclab.fuzzing import ClassResult, campaign, exited, main, page_ok, row, table

__all__ = ["ClassResult", "campaign", "exited", "main", "page_ok", "row", "table"]

if __name__ == "__main__":
    raise SystemExit(main())
