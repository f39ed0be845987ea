"""The JVM payload services' contract and byte tests (tests/test_payload_jvm.py) on the
docker backend (issue 31, must-show 1): the same tests, imported, against the stack in
containers under the thesis's 400 MB limit."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ipclab.backends import StackOptions
from ipclab.backends.base import RunningStack
from ipclab.backends.docker.backend import DockerBackend
from ipclab.studies.buono.stacks import PAYLOAD_JVM
from tests.test_payload_jvm import (  # noqa: F401 - collected here, with this module's stack
    contract_env,
    test_a_post_is_read_and_acknowledged_in_both_formats,
    test_both_formats_are_the_python_generators_bytes_raw_and_gzipped,
    test_healthz_describes_the_jvm,
    test_malformed_input_gets_the_python_services_statuses_and_it_keeps_serving,
    test_the_jvms_gc_log_gives_its_heap,
)


@pytest.fixture(scope="module")
def stack(docker_images: dict[str, str]) -> Iterator[RunningStack]:
    running = DockerBackend().start(
        PAYLOAD_JVM, StackOptions(memory_mb=400, extra_env=contract_env())
    )
    try:
        yield running
    finally:
        running.stop()
