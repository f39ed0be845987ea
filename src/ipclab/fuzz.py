"""A bounded fuzzing campaign against real stacks on 127.0.0.1 (issue 13).

For each style: malformed HTTP to the gateway front over raw sockets (random and overlong
paths and queries, invalid UTF-8 and percent-encoding, unicode digits, huge and duplicated
headers, bodies on GET, partial requests that stall, random bytes), then the services'
own transport directly (random bytes to every gRPC method; AMQP messages with wrong or
missing correlation id, reply_to or content type, random and oversized bodies; raw HTTP to
each REST service). Bounded in count and time; every target is on 127.0.0.1.

Outcome per input class: the answers (status class or transport status), answers later
than the deadline, and crashes (a stack process that exited). After each class the stack
must still serve a correct page. ``python -m ipclab.fuzz --count N --out docs/fuzzing.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from ipclab.backends import StackOptions, get_backend
from ipclab.backends.local import LocalStack
from ipclab.stacks import resolve

HOST = "127.0.0.1"  # never anything else
DEADLINE_S = 2.0  # the gateway's call timeout
GRACE_S = 3.0  # an answer is due within deadline + grace
UNICODE_DIGITS = "²³¹٣٤۵߁०१২੩૪୫௬౭೮൯๑໒༣၄႕០᠑१𝟏𝟙１"


# --- HTTP inputs -------------------------------------------------------------------------
def _q(raw: bytes) -> bytes:
    return b"".join(b"%%%02X" % c for c in raw)


def _req(target: bytes, headers: list[bytes] | None = None, body: bytes = b"") -> bytes:
    head = [b"GET " + target + b" HTTP/1.1", b"Host: 127.0.0.1", *(headers or [])]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def _random_path(r: random.Random) -> bytes:
    alphabet = b"abcxyz0123456789/-._~!$&'()*+,;=:@%?#"
    return _req(b"/" + bytes(r.choice(alphabet) for _ in range(r.randint(0, 60))))


def _overlong(r: random.Random) -> bytes:
    if r.random() < 0.5:
        return _req(b"/product/" + b"9" * r.randint(20, 200_000))
    fields = b"&".join(b"f%d=%d" % (i, i) for i in range(r.randint(17, 20_000)))
    return _req(b"/product/1?" + fields)


def _bad_encoding(r: random.Random) -> bytes:
    pick = r.choice(
        [b"%zz", b"%C3", b"%FF%FE", b"%", b"%%", b"\xff\xfe", b"\xc3(", b"%00", b"%E2%82"]
    )
    return _req(b"/product/" + pick + (b"?customer_id=" + pick if r.random() < 0.5 else b""))


def _unicode_digits(r: random.Random) -> bytes:
    digits = "".join(r.choice(UNICODE_DIGITS) for _ in range(r.randint(1, 4)))
    if r.random() < 0.5:
        return _req(b"/product/" + _q(digits.encode()))
    return _req(b"/product/1?customer_id=" + _q(digits.encode()))


def _huge_headers(r: random.Random) -> bytes:
    return _req(b"/product/1", [b"X-Big: " + b"a" * r.randint(8_000, 300_000)])


def _dup_headers(r: random.Random) -> bytes:
    kind = r.randint(0, 2)
    if kind == 0:
        return _req(b"/product/1", [b"Host: evil"] * r.randint(1, 50))
    if kind == 1:
        return _req(b"/product/1", [b"Content-Length: 3", b"Content-Length: 7"], b"abc")
    return _req(b"/product/1", [b"X-A: %d" % i for i in range(r.randint(100, 3000))])


def _body_on_get(r: random.Random) -> bytes:
    body = r.randbytes(r.randint(1, 5000))
    if r.random() < 0.5:
        return _req(b"/product/1", [b"Content-Length: %d" % len(body)], body)
    return _req(b"/product/1", [b"Transfer-Encoding: chunked"], b"%x\r\n" % len(body) + body)


def _random_bytes(r: random.Random) -> bytes:
    return r.randbytes(r.randint(1, 2000))


def _partial_stall(r: random.Random) -> bytes:
    full = _req(b"/product/1?customer_id=2")
    return full[: r.randint(1, len(full) - 1)]


HTTP_CLASSES: dict[str, tuple[Callable[[random.Random], bytes], float]] = {
    # name: (generator, share of the count)
    "random path": (_random_path, 0.16),
    "overlong path/query": (_overlong, 0.08),
    "invalid UTF-8 / percent-encoding": (_bad_encoding, 0.14),
    "unicode digits": (_unicode_digits, 0.14),
    "huge headers": (_huge_headers, 0.06),
    "duplicated headers": (_dup_headers, 0.12),
    "body on GET": (_body_on_get, 0.12),
    "random bytes": (_random_bytes, 0.14),
    "partial request, stalled": (_partial_stall, 0.04),
}


@dataclass
class ClassResult:
    style: str
    target: str
    name: str
    inputs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    late: int = 0  # answered (or hung) beyond deadline + grace
    crashes: int = 0
    page_ok_after: bool = False
    seconds: float = 0.0


async def _http_one(port: int, payload: bytes, stall: bool) -> tuple[str, float]:
    t0 = time.monotonic()
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(HOST, port), GRACE_S)
    except (OSError, TimeoutError):
        return "connect refused", time.monotonic() - t0
    try:
        writer.write(payload)
        await writer.drain()
        if stall:
            try:  # the client stalls; the server may answer (408/400) or wait
                data = await asyncio.wait_for(reader.read(64), 0.5)
            except TimeoutError:
                return "no answer while stalled (client left)", time.monotonic() - t0
        else:
            data = await asyncio.wait_for(reader.read(64), DEADLINE_S + GRACE_S)
    except TimeoutError:
        return "no answer", time.monotonic() - t0
    except OSError:
        return "connection reset", time.monotonic() - t0
    finally:
        writer.close()
    took = time.monotonic() - t0
    if not data:
        return "closed, no answer", took
    if data.startswith(b"HTTP/1.1 ") and data[9:12].isdigit():
        return f"{data[9:10].decode()}xx", took
    return "other bytes", took


async def fuzz_http(
    res: ClassResult,
    port: int,
    gen: Callable[[random.Random], bytes],
    n: int,
    seed: int,
    stall: bool = False,
) -> None:
    r = random.Random(seed)
    sem = asyncio.Semaphore(16)

    async def one() -> None:
        async with sem:
            outcome, took = await _http_one(port, gen(r), stall)
        res.outcomes[outcome] += 1
        res.late += outcome == "no answer" or took > DEADLINE_S + GRACE_S + 0.5
        res.inputs += 1

    await asyncio.gather(*(one() for _ in range(n)))


async def _each_port(
    res: ClassResult, ports: list[int], gen: Callable[[random.Random], bytes], n: int, seed: int
) -> None:
    await asyncio.gather(*(fuzz_http(res, p, gen, n, seed) for p in ports))


# --- gRPC inputs -------------------------------------------------------------------------
async def fuzz_grpc(res: ClassResult, stack: LocalStack, n: int, seed: int) -> None:
    import grpc
    from ipclab_services.domains.shop import build_services

    r = random.Random(seed)
    defs = build_services()
    targets = [
        (d.name, f"/{d.proto_service}/{op.capitalize()}") for d in defs.values() for op in d.ops
    ]
    channels = {name: grpc.aio.insecure_channel(f"{HOST}:{stack.ports[name]}") for name in defs}
    sem = asyncio.Semaphore(32)

    async def one() -> None:
        name, method = r.choice(targets)
        call = channels[name].unary_unary(method)
        body = r.randbytes(r.randint(0, 4096))
        async with sem:
            t0 = time.monotonic()  # the call's own time, not its wait for a slot
            try:
                await call(body, timeout=DEADLINE_S)
                outcome = "OK (bytes parsed as a valid request)"
            except grpc.aio.AioRpcError as e:
                outcome = e.code().name
            res.late += time.monotonic() - t0 > DEADLINE_S + GRACE_S
        res.outcomes[outcome] += 1
        res.inputs += 1

    try:
        await asyncio.gather(*(one() for _ in range(n)))
    finally:
        for c in channels.values():
            await c.close()


# --- AMQP inputs -------------------------------------------------------------------------
AMQP_CLASSES = (
    "random body",
    "valid JSON, wrong shape",
    "no reply_to",
    "no correlation id",
    "wrong content type",
    "oversized body (1-4 MiB)",
)


async def fuzz_amqp(res: ClassResult, stack: LocalStack, n: int, seed: int) -> None:
    import aio_pika
    from ipclab_services.transports.amqp import queue_name

    assert stack.broker is not None and stack.broker.host == HOST
    r = random.Random(seed)
    connection = await aio_pika.connect(stack.broker.url)
    replies: dict[str, asyncio.Future[bytes]] = {}
    anonymous: list[bytes] = []
    try:
        channel = await connection.channel()
        reply_queue = await channel.declare_queue(exclusive=True)

        async def on_reply(message: Any) -> None:
            future = replies.pop(message.correlation_id or "", None)
            if future is not None and not future.done():
                future.set_result(message.body)
            else:
                anonymous.append(message.body)

        await reply_queue.consume(on_reply, no_ack=True)
        services = [s for s in stack.spec.services]
        kind = res.name

        async def one(i: int) -> None:
            body = _amqp_body(kind, r)
            cid = None if kind == "no correlation id" else f"fuzz-{i}"
            reply_to = None if kind == "no reply_to" else reply_queue.name
            ctype = "text/x-garbage" if kind == "wrong content type" else "application/json"
            future: asyncio.Future[bytes] | None = None
            if cid is not None and reply_to is not None:
                future = asyncio.get_running_loop().create_future()
                replies[cid] = future
            t0 = time.monotonic()
            await channel.default_exchange.publish(
                aio_pika.Message(body, correlation_id=cid, reply_to=reply_to, content_type=ctype),
                routing_key=queue_name(r.choice(services)),
            )
            if future is None:
                res.outcomes["sent, no reply expected"] += 1
            else:
                try:
                    answer = orjson.loads(await asyncio.wait_for(future, DEADLINE_S + GRACE_S))
                    res.outcomes["error reply" if "error" in answer else "result reply"] += 1
                except TimeoutError:
                    replies.pop(cid or "", None)
                    res.outcomes["no reply"] += 1
                    res.late += 1
                res.late += time.monotonic() - t0 > DEADLINE_S + GRACE_S
            res.inputs += 1

        sem = asyncio.Semaphore(8 if kind.startswith("oversized") else 64)

        async def bounded(i: int) -> None:
            async with sem:
                await one(i)

        await asyncio.gather(*(bounded(i) for i in range(n)))
        await asyncio.sleep(0.5)
        if anonymous:
            res.outcomes["reply without its correlation id"] += len(anonymous)
    finally:
        await connection.close()


def _amqp_body(kind: str, r: random.Random) -> bytes:
    if kind.startswith("oversized"):
        return r.randbytes(r.randint(1 << 20, 4 << 20))
    if kind == "valid JSON, wrong shape":
        return orjson.dumps(
            r.choice(
                [
                    {"op": "nope", "request": {}},
                    {"op": "get"},
                    {"op": "get", "request": {"product_id": "²"}},
                    {"op": "get", "request": {"product_id": 2**63 - 1}},
                    {"op": "get", "request": {"product_id": -1}},
                    {"op": "get", "request": None},
                    [1, 2, 3],
                    "text",
                ]
            )
        )
    if r.random() < 0.5 and kind != "random body":
        return orjson.dumps({"op": "get", "request": {"product_id": r.randint(0, 2000)}})
    return r.randbytes(r.randint(0, 2000))


# --- the campaign ------------------------------------------------------------------------
def page_ok(stack: LocalStack) -> bool:
    try:
        url = f"{stack.gateway_url}/product/7?customer_id=3"
        with urllib.request.urlopen(url, timeout=10) as resp:
            doc = orjson.loads(resp.read())
        return resp.status == 200 and doc["product"]["product_id"] == 7 and doc["cart"] is not None
    except Exception:  # noqa: BLE001 - any failure is "not serving"
        return False


def exited(stack: LocalStack) -> int:
    """How many of the stack's processes have exited (crashed: nothing stops them here)."""
    return sum(p.poll() is not None for p in stack.procs.values())


def campaign(styles: list[str], count: int, seed: int = 1) -> list[ClassResult]:
    """``count`` malformed inputs per style against the gateway, and ``count`` against the
    services' transport directly."""
    results: list[ClassResult] = []
    backend = get_backend("local")
    for stack_name in styles:
        spec = resolve(stack_name)
        stack = backend.start(spec, StackOptions(call_timeout_s=DEADLINE_S))
        assert isinstance(stack, LocalStack)
        try:
            style = spec.transport
            jobs: list[tuple[ClassResult, Any]] = []
            gw = stack.ports[spec.gateway]
            for name, (gen, share) in HTTP_CLASSES.items():
                res = ClassResult(style, "gateway front", name)
                n = max(1, round(count * share))
                stall = name.startswith("partial")
                jobs.append((res, partial(fuzz_http, res, gw, gen, n, seed, stall)))
            if style == "grpc":
                res = ClassResult(style, "services (gRPC)", "random bytes per method")
                jobs.append((res, partial(fuzz_grpc, res, stack, count, seed)))
            elif style == "amqp":
                for kind in AMQP_CLASSES:
                    res = ClassResult(style, "services (AMQP)", kind)
                    share = 0.005 if kind.startswith("oversized") else 0.199
                    n = max(1, round(count * share))
                    jobs.append((res, partial(fuzz_amqp, res, stack, n, seed)))
            elif style == "rest":
                ports = [stack.ports[s] for s in spec.services]
                for name in ("random path", "random bytes", "duplicated headers", "body on GET"):
                    res = ClassResult(style, "services (REST)", name)
                    per = count // 4 // len(ports)
                    gen = HTTP_CLASSES[name][0]
                    jobs.append((res, partial(_each_port, res, ports, gen, per, seed)))
            for res, job in jobs:
                t0 = time.monotonic()
                asyncio.run(job())
                res.seconds = time.monotonic() - t0
                res.crashes = exited(stack)
                res.page_ok_after = page_ok(stack)
                results.append(res)
                print(_row(res), flush=True)
        finally:
            stack.stop()
    return results


def _row(r: ClassResult) -> str:
    outcomes = ", ".join(f"{k} {v}" for k, v in r.outcomes.most_common())
    page = "yes" if r.page_ok_after else "NO"
    return (
        f"| {r.style} | {r.target} | {r.name} | {r.inputs} | {outcomes} | {r.late} | "
        f"{r.crashes} | {page} | {r.seconds:.1f} |"
    )


def table(results: list[ClassResult]) -> str:
    head = (
        "| style | target | input class | inputs | outcomes | late | crashes | page after | s |\n"
        "|---|---|---|---:|---|---:|---:|---|---:|"
    )
    return "\n".join([head, *(_row(r) for r in results)])


def main(argv: list[str] | None = None) -> int:
    from ipclab.cli import install_signal_handlers

    install_signal_handlers()
    p = argparse.ArgumentParser(prog="ipclab.fuzz", description=__doc__)
    p.add_argument("--styles", nargs="+", default=["shop-rest", "shop-grpc", "shop-amqp"])
    p.add_argument("--count", type=int, default=10_000, help="inputs per style and target")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out", type=Path, help="write the table into this markdown file")
    a = p.parse_args(argv)
    if not 1 <= a.count <= 200_000:
        p.error("--count must be from 1 to 200000")
    t0 = time.monotonic()
    results = campaign(a.styles, a.count, a.seed)
    text = table(results)
    total = f"\n\n{sum(r.inputs for r in results)} inputs in {time.monotonic() - t0:.0f} s."
    print(text + total)
    if a.out:
        a.out.write_text(
            a.out.read_text().split("<!-- table -->")[0] + "<!-- table -->\n" + text + total + "\n"
            if a.out.exists()
            else text + total + "\n"
        )
    bad = [r for r in results if r.crashes or r.late or not r.page_ok_after]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
