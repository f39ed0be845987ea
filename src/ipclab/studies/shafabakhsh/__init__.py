"""Shafabakhsh 2020 (KTH thesis and QuASoQ paper): REST vs gRPC vs RabbitMQ behind a
product-page gateway; performance (``performance``), availability (``availability``) and
the language factor (``languages``: the same matrix on the Go stacks), TLS
(``encryption``: the matrix in the clear and with every hop or the edge encrypted) and the
thesis's own runtime (``runtimes``: the matrix on the Node.js stacks, the thesis's claims
judged per runtime); and on Kubernetes beside docker compose (``orchestrators``, a section
of the performance notebook)."""

from __future__ import annotations

from ipclab.studies import Notebook, Section, Study
from ipclab.studies.shafabakhsh.stacks import STACKS

STUDY = Study(
    name="shafabakhsh",
    title="Shafabakhsh 2020: REST vs gRPC vs RabbitMQ",
    stacks=STACKS,
    # Kubernetes beside docker compose (issue 33): a section of notebook 01, run when its
    # parameter ``orchestrators`` is set (docker and a cluster, ~50 min on the full profile)
    sections=(
        Section(
            "orchestrators",
            "01_shafabakhsh_performance.ipynb",
            part=".protocol:Orchestrators",
            title="Shafabakhsh 2020 on Kubernetes beside docker compose (50 users, one sitting)",
        ),
    ),
    notebooks=(
        Notebook(
            "01_shafabakhsh_performance.ipynb",
            "shafabakhsh",
            needs=("rabbitmq",),
            reference="shafabakhsh-full-local",
            # the matrix on docker (issue 27); one cell per style on Kubernetes and compose (33)
            also_references=("shafabakhsh-full-docker", "shafabakhsh-orchestrators-full"),
            part=".protocol:Performance",
            title="Shafabakhsh 2020: REST vs gRPC vs RabbitMQ (performance)",
        ),
        Notebook(
            "02_shafabakhsh_availability.ipynb",
            "availability",
            needs=("rabbitmq",),
            reference="availability-full-local",
            also_references=("availability-full-docker",),  # method 1 and Fig. 4 by load
            part=".protocol:Availability",
            title="Shafabakhsh 2020: availability of REST, gRPC and RabbitMQ",
        ),
        # the language factor (issue 18): the performance matrix again on the Go stacks
        Notebook(
            "06_shafabakhsh_languages.ipynb",
            "languages",
            needs=("rabbitmq", "go"),
            reference="shafabakhsh-go-full-local",
            part=".protocol:Languages",
            title="Shafabakhsh 2020 in Python and Go: the language factor",
        ),
        # TLS as a factor (issues 32, 50): the matrix in the clear, with --tls and with
        # --tls-hops edge, interleaved (the reference: the two-level sitting until remeasured)
        Notebook(
            "07_shafabakhsh_tls.ipynb",
            "tls",
            needs=("rabbitmq",),
            reference="shafabakhsh-tls-full-local",
            part=".protocol:Encryption",
            title="Shafabakhsh 2020 with TLS on every hop: what encryption costs each style",
        ),
        # the thesis's own runtime (issue 50): the matrix on the Node.js stacks beside the
        # Python and Go ones, the thesis's claims per runtime; its reference
        # (shafabakhsh-node-full-local) is named here once measured and committed
        Notebook(
            "08_shafabakhsh_node.ipynb",
            "runtimes",
            needs=("rabbitmq", "go", "node"),
            part=".protocol:Runtimes",
            title="Shafabakhsh 2020 on Node.js, Python and Go: the thesis's claims per runtime",
        ),
    ),
)
