"""A bounded fuzzing campaign against every stack of the registry, on 127.0.0.1 (issues 13, 28).

- ``plan``: the targets, derived from the stack registry (a stack's gateway front, and each
  listener between gateway and services by the protocol it speaks);
- ``http1``, ``h2c``, ``coap``, ``grpc``, ``amqp``: one module per wire protocol, its input
  classes and its sender; ``fronts``: a front's or domain's own HTTP inputs (GraphQL, the
  bundle's REST, the payload bodies, AcmeAir's forms and relayed headers);
- ``pages``: each stack's own known-good page, checked after every class;
- ``campaign``: start, send, check, and the table (``python -m ipclab.fuzz``).
"""

from ipclab.fuzzing.campaign import campaign, exited, fuzz_stack, main
from ipclab.fuzzing.pages import page_ok
from ipclab.fuzzing.plan import cover, targets
from ipclab.fuzzing.results import ClassResult, row, table

__all__ = [
    "ClassResult",
    "campaign",
    "cover",
    "exited",
    "fuzz_stack",
    "main",
    "page_ok",
    "row",
    "table",
    "targets",
]
