"""Buono & Petrović 2021 (Kristianstad University, bachelor thesis): JSON against Protocol
Buffers between two services: payload sizes, response and processing time, memory under a
400 MB limit, schema evolution.

The published numbers and claims (``published``), the schemas and byte-level checks
(``schemas``, ``sizes``), schema evolution (``evolution``), the payload stack (``stacks``),
the thesis's procedure (``procedure``) and the memory experiment (``memory``), their
analysis (``analysis``, ``figures``) and the study end to end for notebook 05
(``experiment``)."""

from __future__ import annotations

from ipclab.studies import Notebook, Study
from ipclab.studies.buono.stacks import STACKS

STUDY = Study(
    name="buono",
    title="Buono & Petrović 2021: JSON vs Protocol Buffers",
    stacks=STACKS,
    notebooks=(
        # the 400 MB limit needs the docker backend: the reference is a docker run
        Notebook(
            "05_buono_protobuf.ipynb",
            "buono",
            reference="buono-full-docker",
            part=".protocol:Protobuf",
        ),
    ),
)
