"""Johansson 2017 (Umeå): a REST gateway against a GraphQL gateway over the same four data
services and a SQL database. The stacks so far; the notebook, published data and claims
come next (issue 15)."""

from __future__ import annotations

from ipclab.studies import Study
from ipclab.studies.johansson.stacks import STACKS

STUDY = Study(
    name="johansson",
    title="Johansson 2017: REST vs GraphQL",
    stacks=STACKS,
    notebooks=(),
)
