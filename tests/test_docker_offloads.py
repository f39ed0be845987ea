"""Segmentation offloads off on a host container's eth0 (``backends/docker/offloads.py``): the
commands, ethtool's output read back, and the refusal without root."""

from __future__ import annotations

import pytest

from ipclab.backends.docker import offloads

ETHTOOL_K = """Features for eth0:
rx-checksumming: on
tx-checksumming: on
scatter-gather: on
tcp-segmentation-offload: off
\ttx-tcp-segmentation: off
generic-segmentation-offload: off
generic-receive-offload: off
large-receive-offload: off [fixed]
"""


def test_the_command_turns_tso_gso_and_gro_off_in_the_containers_namespace() -> None:
    assert offloads.off_command(4242) == [
        "nsenter", "-t", "4242", "-n", "ethtool", "-K", "eth0",
        "tso", "off", "gso", "off", "gro", "off",
    ]  # fmt: skip


def test_ethtools_state_is_read_back() -> None:
    assert offloads.parse_features(ETHTOOL_K) == {"tso": "off", "gso": "off", "gro": "off"}
    on = ETHTOOL_K.replace("generic-segmentation-offload: off", "generic-segmentation-offload: on")
    assert offloads.parse_features(on)["gso"] == "on"


def test_turning_them_off_needs_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(offloads.OffloadError, match="root"):
        offloads.turn_off(1)


def test_a_missing_ethtool_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("shutil.which", lambda name: None if name == "ethtool" else "/x")
    with pytest.raises(offloads.OffloadError, match="system-deps.sh"):
        offloads.turn_off(1)
