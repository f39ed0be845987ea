"""What is fuzzed, derived from the stack registry (``ipclab.stacks.all_stacks``): every stack
gets the gateway-front target (HTTP/1.1, plus its front's or domain's own classes); every
listener between the gateway and the services gets the fuzzer of the protocol it speaks,
chosen by the transport's kind, never by the stack's name. A stack added to the registry is
therefore in the plan without an edit here; a transport of a kind no fuzzer speaks stops the
plan (``UnfuzzedTransport``) rather than being skipped."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ipclab.fuzzing import amqp, coap, fronts, grpc, h2c, http1
from ipclab.stacks import EGRESS, INGRESS, StackSpec

# a transport's wire protocol, as a listener speaks it ("http1": the services' own HTTP/1.1)
KIND_OF_TRANSPORT = {
    "rest": "http1",
    "http1": "http1",
    "h2c": "h2c",
    "grpc": "grpc",
    "amqp": "amqp",
    "coap": "coap",
}
# each kind's input classes: name -> share of a target's count
CLASSES_OF_KIND: dict[str, dict[str, float]] = {
    "http1": {c: http1.CLASSES[c][1] for c in http1.SERVICE_CLASSES},
    "h2c": {c: share for c, (_, share) in h2c.CLASSES.items()},
    "coap": {c: share for c, (_, share) in coap.CLASSES.items()},
    "grpc": dict(grpc.CLASSES),
    "amqp": dict(amqp.CLASSES),
}
GATEWAY = "gateway front"


class UnfuzzedTransport(ValueError):
    pass


@dataclass(frozen=True)
class Target:
    stack: str
    name: str  # GATEWAY, "services (<kind>)", "ingress adapters (<kind>)", "egress adapter (http1)"
    kind: str  # the protocol the inputs speak
    roles: tuple[str, ...]  # the listeners the inputs go to (none for AMQP: the queues)
    classes: tuple[tuple[str, int], ...]  # (input class, inputs)


def kind_of(transport: str) -> str:
    try:
        return KIND_OF_TRANSPORT[transport]
    except KeyError:
        raise UnfuzzedTransport(
            f"transport {transport!r} has no fuzzer: add its kind to "
            "ipclab.fuzzing.plan.KIND_OF_TRANSPORT (and a module for a new wire protocol)"
        ) from None


def split(count: int, shares: Mapping[str, float]) -> tuple[tuple[str, int], ...]:
    """``count`` inputs over the classes by their shares, rounded up (each at least one)."""
    total = sum(shares.values())
    return tuple((name, max(1, math.ceil(count * s / total))) for name, s in shares.items())


def gateway_classes(spec: StackSpec) -> dict[str, float]:
    shares = {name: share for name, (_, share) in http1.CLASSES.items()}
    shares.update({name: share for name, (_, share) in fronts.extra_classes(spec).items()})
    return shares


def targets(spec: StackSpec, count: int) -> list[Target]:
    """Every target of one stack, ``count`` inputs each."""
    kind = kind_of(spec.transport)
    out = [
        Target(spec.name, GATEWAY, "http1", (spec.gateway,), split(count, gateway_classes(spec)))
    ]
    if spec.adapters:  # the transport runs between the adapters; the services speak HTTP/1.1
        ingress = tuple(s + INGRESS for s in spec.services)
        out.append(Target(spec.name, f"ingress adapters ({kind})", kind, ingress,
                          split(count, CLASSES_OF_KIND[kind])))  # fmt: skip
        out.append(Target(spec.name, "egress adapter (http1)", "http1", (EGRESS,),
                          split(count, CLASSES_OF_KIND["http1"])))  # fmt: skip
    else:
        roles = () if kind == "amqp" else spec.services
        out.append(Target(spec.name, f"services ({kind})", kind, roles,
                          split(count, CLASSES_OF_KIND[kind])))  # fmt: skip
    return out


def plan(stacks: Mapping[str, StackSpec], count: int) -> list[Target]:
    return [t for spec in stacks.values() for t in targets(spec, count)]


FEATURES = ("transport", "domain", "front", "adapters")


def features(spec: StackSpec) -> set[tuple[str, str]]:
    adapter = spec.adapter_runtime
    return {(f, str(getattr(spec, f))) for f in FEATURES} | {
        ("runtime", spec.runtime.name),
        ("adapter_runtime", adapter.name if adapter else ""),
    }


def cover(stacks: Iterable[StackSpec]) -> list[str]:
    """The fewest stacks (greedy, in registry order) that together have every transport,
    domain, front, adapter set, runtime and adapters' runtime (the JVM's Californium) of
    the registry: the short version in
    ``make test`` fuzzes these, so a stack that brings anything new is among them."""
    specs = list(stacks)
    missing = set().union(*(features(s) for s in specs)) if specs else set()
    chosen: list[str] = []
    while missing:
        best = max(specs, key=lambda s: len(features(s) & missing))
        chosen.append(best.name)
        missing -= features(best)
    return chosen
