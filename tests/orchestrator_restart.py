"""A component killed under the availability probe and brought back by the orchestrator (the
swarm's restart policy, the kubelet), not by the harness: the cycle the probe saw. Shared by
the swarm and kubernetes tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ipclab.availability.probe import Probe, read_probe
from ipclab.availability.tracker import Criteria, Cycle, Mark, detect_cycles


def killed_and_restarted(
    stack: Any, directory: Path, role: str, wait_back: Callable[[], None] | None = None
) -> list[Cycle]:
    """Probe the stack, kill ``role``, (``wait_back`` until the orchestrator says it is back,)
    probe until 20 good pages after the fault; the cycles detected. No restart mark: the
    orchestrator restarts it, so recovery is not tied to one."""
    spec = stack.spec
    probe = Probe(stack.gateway_url, directory, spec.probe_paths, spec.probe_required, 20, 0.5)
    probe.start()
    t_start = time.time()
    time.sleep(2)
    t_fault = time.time()
    stack.kill(role)
    if wait_back is not None:
        wait_back()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.5)
        df = read_probe(directory)
        if len(df[(df.t > t_fault + 3) & df.ok]) >= 20:
            break
    probe.stop()
    events = [Mark(t_start, "start"), Mark(t_fault, "fault", role)]
    crit = Criteria(
        window_s=0.5, min_samples=5, max_error_rate=0.5, silence_s=1.0, await_restart=False
    )
    return detect_cycles(read_probe(directory), events, crit)
