"""The payload services on the JVM (issue 31, must-show 1): the Java data and edge services
(services/java/payload: Quarkus, Jackson, protobuf-java) serve the Python generator's
records byte for byte in both formats, raw and gzipped; a POST of either format is read and
acknowledged; bad input gets the Python services' statuses and error codes and the service
keeps serving; /healthz describes the JVM (its heap, collectors, flags).

Byte for byte where the format fixes the bytes: Protobuf always (fields in number order,
doubles as 8 bytes), JSON because both write keys in the proto order, no spaces and each
double by its shortest representation (Jackson's fast writer, orjson), gzip because both
compress with zlib at level 6 behind zlib's own header, with the same zlib (Debian's, on
the host and in the image). What may differ is listed in docs/buono.md ("The same services
on the JVM"): the messages of a body that does not decode (Jackson's and protobuf-java's).
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from ipclab_services.domains.payload import codec, data
from ipclab_services.domains.payload.http import zlib_gzip

from ipclab import javabuild, javaprotos
from ipclab.backends import StackOptions, get_backend
from ipclab.backends.base import RunningStack
from ipclab.backends.local import StackStartError
from ipclab.paths import REPO_ROOT
from ipclab.studies.buono import heap
from ipclab.studies.buono.stacks import LIMIT_MB, PAYLOAD_JVM, THESIS_HEAP, jvm_flags, knobs
from tests.test_payload_service import MALFORMED, _bomb

PROTO = REPO_ROOT / "services" / "proto"
SEED = 42  # StackOptions' default, the data seed of every stack


def _code(path: Path) -> list[str]:
    """A .proto file's lines but its comments."""
    return [line for line in path.read_text().splitlines() if not line.startswith("//")]


def test_the_java_build_compiles_the_thesiss_proto_files_but_one_java_name(tmp_path: Path) -> None:
    # one source: the Java build writes services/proto's files into its build directory
    assert not list((REPO_ROOT / "services" / "java").rglob("*.proto"))
    javaprotos.write_protos("payload", tmp_path)
    assert _code(tmp_path / "proto" / "payments.proto") == _code(PROTO / "payments.proto")
    python, java = _code(PROTO / "users.proto"), _code(tmp_path / "proto" / "users.proto")
    differ = [(a, b) for a, b in zip(python, java, strict=True) if a != b]
    assert differ == [
        (
            'option java_outer_classname = "se.espressoshock.models.proto.simple.UsersProtos";',
            'option java_outer_classname = "UsersProtos";',
        )
    ]
    # and an edit to a .proto file rebuilds the project
    assert "users.proto" in javaprotos.PROTO_SOURCES["payload"]


needs_java = pytest.mark.skipif(
    javabuild.toolchain_missing() is not None,
    reason=f"the JVM payload services not tested: {javabuild.toolchain_missing()}",
)


def contract_env() -> dict[str, str]:
    """The stack's settings for these tests: gzip on (a client that asks no gzip gets raw
    answers), small body limits for the malformed inputs."""
    env = dict(knobs(gzip=True, cache=False, json_library="jackson"))
    return env | {"IPCLAB_MAX_BODY_BYTES": str(1 << 20), "IPCLAB_MAX_INFLATED_BYTES": str(4 << 20)}


@pytest.fixture(scope="module")
def stack() -> Iterator[RunningStack]:
    """The JVM payload stack on the local backend (tests/docker/test_payload_jvm_docker.py
    runs the same tests on a docker one)."""
    running = get_backend("local").start(PAYLOAD_JVM, StackOptions(extra_env=contract_env()))
    try:
        yield running
    finally:
        running.stop()


def _get(stack: RunningStack, path: str, gzip: bool = False) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        stack.gateway_url + path, headers={"Accept-Encoding": "gzip" if gzip else "identity"}
    )
    return _send(req)


def _send(req: urllib.request.Request) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as e:
        return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


@needs_java
@pytest.mark.parametrize("structure", data.STRUCTURES)
def test_both_formats_are_the_python_generators_bytes_raw_and_gzipped(
    stack: RunningStack, structure: data.Structure
) -> None:
    for count in (0, 1, 5, 325, 650, *((1000,) if structure == "flat" else ())):
        ds = data.dataset(structure, count, SEED)
        want = {
            "json": codec.encode_json(ds.document),
            "protobuf": codec.encode_protobuf(ds.message),
        }
        for fmt, expected in want.items():
            status, headers, body = _get(stack, f"/{fmt}/{structure}?count={count}")
            assert status == 200, body[:300]
            assert headers["content-type"] == codec.CONTENT_TYPES[fmt]
            assert headers["x-elements"] == str(count)
            assert headers["server-timing"].startswith("ser;dur=")
            assert body == expected, (fmt, structure, count)
            status, headers, body = _get(stack, f"/{fmt}/{structure}?count={count}", gzip=True)
            assert headers["content-encoding"] == "gzip"
            assert "gzip;dur=" in headers["server-timing"]
            assert body == zlib_gzip(expected), (fmt, structure, count, "gzip")


@needs_java
@pytest.mark.parametrize("structure", data.STRUCTURES)
def test_a_post_is_read_and_acknowledged_in_both_formats(
    stack: RunningStack, structure: data.Structure
) -> None:
    ds = data.dataset(structure, 50, SEED)
    bodies = {"json": codec.encode_json(ds.document), "protobuf": codec.encode_protobuf(ds.message)}
    for fmt, body in bodies.items():
        for gz in (False, True):
            headers = {"Content-Type": codec.CONTENT_TYPES[fmt]}
            if gz:
                headers["Content-Encoding"] = "gzip"
            req = urllib.request.Request(
                f"{stack.gateway_url}/{fmt}/{structure}",
                data=zlib_gzip(body) if gz else body,
                headers=headers,
                method="POST",
            )
            status, answer_headers, answer = _send(req)
            assert (status, orjson.loads(answer)) == (200, {"received": 50}), answer
            assert "deser;dur=" in answer_headers["server-timing"]
            assert ("gunzip;dur=" in answer_headers["server-timing"]) == gz


@needs_java
def test_malformed_input_gets_the_python_services_statuses_and_it_keeps_serving(
    stack: RunningStack,
) -> None:
    users = data.dataset("flat", 5, SEED)
    whole = codec.encode_protobuf(users.message)
    special = {
        "TRUNCATED": whole[:-1],
        "BOMB": _bomb(1 << 30),
        "HALFGZIP": zlib_gzip(codec.encode_json(users.document))[:40],
        "HUGE": b" " * ((1 << 20) + 1),
    }
    for name, method, path, query, body, headers, want in MALFORMED:
        fmt = path.split("/")[1]
        h = {"Content-Type": codec.CONTENT_TYPES.get(fmt, "application/json"), **headers}
        b = special[body] if isinstance(body, str) else body
        url = f"{stack.gateway_url}{path}" + (f"?{query}" if query else "")
        sent = b if method != "GET" else None
        status, _, answer = _send(urllib.request.Request(url, data=sent, headers=h, method=method))
        assert status == want, (name, status, answer[:300])
        assert orjson.loads(answer)["error"], name
        assert _get(stack, "/protobuf/flat?count=5")[2] == whole, name


@needs_java
def test_healthz_describes_the_jvm(stack: RunningStack) -> None:
    status, _, body = _get(stack, "/healthz")
    doc = orjson.loads(body)
    assert status == 200 and doc["ready"] is True
    data_service = doc["data"]
    assert data_service["implementation"] == "java"
    assert data_service["settings"]["json_library"] == "jackson"
    assert data_service["settings"]["gzip"] is True
    runtime = data_service["runtime"]
    assert runtime["runtime"] == "jvm" and runtime["max_heap_bytes"] > 0
    assert "-XX:+ExitOnOutOfMemoryError" in runtime["flags"]
    assert runtime["collectors"] and runtime["java_version"]
    # the thesis's heap policy reached the JVM's command line (issue 46), and the JVM says
    # what it made of it, as jcmd VM.flags would: the heap's maximum at the 400 MB it sizes
    # itself from, the Serial collector, a full heap ends it
    assert runtime["heap_policy"] == THESIS_HEAP
    assert runtime["flags"] == list(jvm_flags(THESIS_HEAP))
    flags = runtime["vm_options"]
    assert flags["MaxRAM"] == {"value": str(LIMIT_MB * 2**20), "origin": "VM_CREATION"}
    assert flags["MaxRAMPercentage"] == {"value": "100.0", "origin": "VM_CREATION"}
    assert flags["MaxHeapSize"]["value"] == str(LIMIT_MB * 2**20)
    assert flags["UseSerialGC"] == {"value": "true", "origin": "VM_CREATION"}
    assert flags["UseG1GC"]["value"] == "false" and flags["ExitOnOutOfMemoryError"]["value"]
    assert runtime["collectors"] == ["Copy", "MarkSweepCompact"]  # Serial's young and old


@needs_java
def test_the_jvms_gc_log_gives_its_heap(stack: RunningStack) -> None:
    """Each JVM role writes its GC log into its log, which parses into its heap."""
    for _ in range(3):
        assert _get(stack, "/json/flat?count=1000")[0] == 200
    jvm, rows = heap.parse(stack.logs()["data"].splitlines(), "data")
    assert jvm["collector"] == "Serial" and jvm["heap_max_bytes"] == LIMIT_MB * 2**20
    assert len(rows) >= 1 and (rows["source"] == "generations").any()
    assert (rows["committed_after_bytes"] <= jvm["heap_max_bytes"]).all()
    assert (rows["used_after_bytes"] <= rows["committed_after_bytes"]).all()


@needs_java
def test_an_encoder_the_jvm_does_not_have_is_refused_at_start() -> None:
    env = dict(knobs(gzip=False, cache=False, json_library="orjson"))
    with pytest.raises(StackStartError, match="jackson"):  # the data role's log says why
        get_backend("local").start(
            PAYLOAD_JVM, StackOptions(extra_env=env, call_timeout_s=1.0)
        ).stop()
