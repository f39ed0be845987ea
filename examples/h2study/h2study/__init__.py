"""An example fifth study kept outside ipclab (docs/adding-a-study.md): HTTP/1.1 against
h2c on the shop, two cells, two claims.

The whole study is this folder: the declaration below, its part of the study protocol
(``part``: two named cells, an analysis returning the core's ``Analysis``), its claims
(``claims.csv``: two hypotheses of its own, from no publication) and its notebook
(``h2study.ipynb``). It declares no stack: the shop over HTTP/1.1 (``shop-rest``) and
over h2c (``shop-h2c``) are stacks ipclab already has. Installed (``pip install
examples/h2study``), its entry point (``pyproject.toml``, group ``ipclab.studies``) makes
ipclab list it, run it and report it; nothing in ipclab names it.
"""

from __future__ import annotations

from ipclab.studies import Notebook, Study

STUDY = Study(
    name="h2study",
    title="HTTP/1.1 against h2c on the shop (an example study)",
    stacks=(),
    notebooks=(Notebook("h2study.ipynb", "h2study", part=".part:H2Study"),),
)
