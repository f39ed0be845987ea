"""A study kept outside ipclab, declared through an entry point: one stack, the shop over
REST, that declares the ``fakekv`` infrastructure (a plugin of this package too)."""

from __future__ import annotations

from ipclab_services.domains.shop import SERVICES

from ipclab.stackspec import StackSpec
from ipclab.studies import Study

STACK = StackSpec(
    "fake-shop",
    domain="shop",
    front="http_json",
    transport="rest",
    services=SERVICES,
    users="ipclab.studies.shafabakhsh.users",
    probe_paths=("/product/1?customer_id=1",),
    probe_required=("product", "reviews", "recommendations", "shipping", "cart"),
    infrastructure=("fakekv",),
    description="the shop over REST, beside a fake key-value store",
)

STUDY = Study("fakestudy", "A study from outside the tree", stacks=(STACK,), notebooks=())
