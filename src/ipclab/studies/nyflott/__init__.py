"""Nyfløtt 2017 (NTNU master thesis): HTTP/1.1 vs h2c vs CoAP between an API gateway and
its services, through protocol adapters, under added network delay (issue 14).

The AcmeAir stacks (``stacks``, ``users``), the thesis's Tables 2 and 3 and the claims of
chapters 4 and 5 (``published``), the load matrix (``experiment``), the per-run tables:
Table 2 and the test cases (``tables``), CPU and network per host (``hosts``), extremes
against major GCs (``extremes``, ``gcevents``), the claims' verdicts (``verdicts``); the
study end to end for notebook 03 (``analysis``, ``figures``) and the committed reference's
rebuilder (``reference``)."""

from __future__ import annotations

from ipclab.studies import Notebook, Study
from ipclab.studies.nyflott.stacks import STACKS

STUDY = Study(
    name="nyflott",
    title="Nyfløtt 2017: HTTP/1.1 vs h2c vs CoAP",
    stacks=STACKS,
    notebooks=(
        # the delays and per-host counters need the docker backend: the reference is a
        # docker run; the quick profile runs on the local backend at 0 ms
        Notebook(
            "03_nyflott_protocols.ipynb",
            "nyflott",
            reference="nyflott-full-docker",
            part=".protocol:Protocols",
        ),
    ),
)
