"""AcmeAir, as a small stand-in: a gateway and the auth, flight, booking and customer
services of IBM's AcmeAir microservices benchmark.

What the measurements depend on is kept: a form-urlencoded login answering ``text/plain``
"logged in" with session cookies, ``queryflights`` answering several KB of JSON, bookings
and profiles, and every authenticated request validated by a call to auth over HTTP/1.1.
Data: ``data.py``; routes: ``gateway.py``; services: ``services.py``.
"""

from __future__ import annotations

import os

from ipclab_services.domains.acmeair import data, services, validator
from ipclab_services.domains.acmeair.gateway import handler as gateway_handler
from ipclab_services.domains.acmeair.services import Validate
from ipclab_services.transports.base import ServiceDef

SERVICES = ("auth", "flight", "booking", "customer")
__all__ = ["SERVICES", "build_services", "gateway_handler"]


def build_services(validate: Validate | None = None) -> dict[str, ServiceDef]:
    """The four services on the environment's data; booking and customer validate
    sessions with ``validate``, by default over HTTP/1.1 at ``IPCLAB_HTTP_ADDR_AUTH``."""
    check = validate if validate is not None else validator.from_env(os.environ)
    return services.build(data.AcmeAirConfig.from_env(), check)
