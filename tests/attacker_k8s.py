"""Run a probe as an unprivileged local user (``nobody``), for the local-attacker tests of the
Kubernetes backend (issue 48; tests/test_kubecluster_hardening.py, tests/kubernetes/).

The helper is the shared one, ``tests/attacker.py`` (a probe is Python source run as
``nobody``/``nogroup`` with no supplementary groups, by ``/usr/bin/python3 -I``, in an
environment of ``PATH`` alone, from ``/``; :func:`probe` returns the JSON document of its
last line; :func:`why_not` says why none can run here); this module keeps the names these
tests import.
"""

from __future__ import annotations

from tests.attacker import PYTHON, USER, probe, run_as_nobody, why_not

__all__ = ["PYTHON", "USER", "probe", "run_as_nobody", "why_not"]
