"""Shafabakhsh 2020 (KTH thesis and QuASoQ paper): REST vs gRPC vs RabbitMQ behind a
product-page gateway; performance (``performance``) and availability (``availability``)."""

from __future__ import annotations

from ipclab.studies import Notebook, Study
from ipclab.studies.shafabakhsh.stacks import STACKS

STUDY = Study(
    name="shafabakhsh",
    title="Shafabakhsh 2020: REST vs gRPC vs RabbitMQ",
    stacks=STACKS,
    notebooks=(
        Notebook(
            "01_shafabakhsh_performance.ipynb",
            "shafabakhsh",
            needs=("rabbitmq",),
            reference="shafabakhsh-full-local",
        ),
        Notebook(
            "02_shafabakhsh_availability.ipynb",
            "availability",
            needs=("rabbitmq",),
            reference="availability-full-local",
        ),
    ),
)
