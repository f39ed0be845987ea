"""A toy fifth study, kept outside ``src/ipclab/studies`` (tests/test_toy_study.py): one
folder holds all of it, its declaration (here: one stack of existing services), its
part of the study protocol with a small analysis (``protocol``), its Locust user
(``users``) and its notebook (``toy.ipynb``). Found through ``IPCLAB_STUDIES_PATH``."""

from __future__ import annotations

from ipclab_services.domains.shop import SERVICES

from ipclab.stackspec import StackSpec
from ipclab.studies import Notebook, Study

# the product page over REST: the shop's services, front and transport, declared once more
STACK = StackSpec(
    "toy-shop-rest",
    domain="shop",
    front="http_json",
    transport="rest",
    services=SERVICES,
    users="ipclab.studies.toy.users",
    probe_paths=("/product/1?customer_id=1",),
    probe_required=("product", "reviews", "recommendations", "shipping", "cart"),
    description="toy study: the product page, gateway -> 5 services over HTTP/1.1 + JSON",
)

STUDY = Study(
    name="toy",
    title="Toy 2026: one stack under two loads",
    stacks=(STACK,),
    notebooks=(Notebook("toy.ipynb", "toy", part=".protocol:Toy"),),
)
