"""Johansson 2017 (Umeå): a REST gateway against a GraphQL gateway over the same four data
services and a SQL database (``experiment``: the profiles and the three experiments;
``tables``: per-run tables; ``cells``, ``ratios``: their summaries over runs; ``verdicts``:
the claims' evaluation; ``analysis``: from runs to results, end to end; ``figures``;
``published``: the thesis's numbers and claims; ``serialisation``: the Tables 5.1/5.2
micro-benchmark)."""

from __future__ import annotations

from ipclab.studies import Notebook, Study
from ipclab.studies.johansson.stacks import STACKS

STUDY = Study(
    name="johansson",
    title="Johansson 2017: REST vs GraphQL",
    stacks=STACKS,
    notebooks=(
        Notebook(
            "04_johansson_graphql.ipynb",
            "johansson",
            needs=("postgres",),
            reference="johansson-full-local",
            also_references=("johansson-full-docker",),  # the thesis test on docker
            part=".protocol:Graphql",
            title="Johansson 2017: REST vs GraphQL gateway",
        ),
    ),
)
