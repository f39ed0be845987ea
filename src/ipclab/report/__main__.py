"""``python -m ipclab.report``: the report PDF and its site (see :mod:`ipclab.report.build`)."""

from ipclab.report.build import main

raise SystemExit(main())
