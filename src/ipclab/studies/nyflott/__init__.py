"""Nyfløtt 2017 (NTNU master thesis): HTTP/1.1 vs h2c vs CoAP between an API gateway and
its services, under added network delay (issue 14). So far: the AcmeAir stacks, published
Tables 2 and 3 and the claims of chapters 4 and 5, the load matrix, Table 2 analysis,
per-host CPU and network per run (``hosts``) and the claims' verdicts (``verdicts``); no
notebook yet (docs/acmeair.md)."""

from __future__ import annotations

from ipclab.studies import Study
from ipclab.studies.nyflott.stacks import STACKS

STUDY = Study(
    name="nyflott",
    title="Nyfløtt 2017: HTTP/1.1 vs h2c vs CoAP",
    stacks=STACKS,
    notebooks=(),
)
