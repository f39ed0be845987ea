#!/usr/bin/env bash
# Install the Debian packages the local Kubernetes cluster needs, if missing (idempotent;
# docs/kubernetes.md). Only packages: ipclab starts its own private containerd, and a
# system containerd that the package may start is never used (its socket, root and state
# are elsewhere).
#
#   containerd                   1.6 (Debian 12): the container runtime, run as a private
#                                instance; 1.6 because it honours restrict_oom_score_adj for
#                                pod sandboxes (this machine lacks CAP_SYS_RESOURCE)
#   runc                         what containerd runs containers with
#   containernetworking-plugins  bridge, host-local, loopback, firewall (in /usr/lib/cni)
#   conntrack                    kube-proxy's cleanup of UDP flows, and debugging
#   iptables, iproute2           kube-proxy's rules, the CNI bridge
#
# Not root: prints the apt-get command instead. Go (to build the node binary once) is
# docs/go.md's; the Python kubernetes client is `pip install -e '.[k8s]'`.
set -euo pipefail
PACKAGES=(containerd runc containernetworking-plugins conntrack iptables iproute2)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || { echo "k8s-deps: all present"; exit 0; }

if [[ $(id -u) -ne 0 ]]; then
  echo "k8s-deps: missing ${missing[*]}; install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "k8s-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Where an init system runs, Debian starts the system containerd; ipclab never uses it
# (its own instance has its own socket, root, state and runc root). Left as it is.
