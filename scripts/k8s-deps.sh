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
# Pinned by version (issue 48): each package's Debian 12 (bookworm) upstream version and
# Debian revision, with any later stable/security update of that revision (`+deb12uN`,
# `+bN`: the archive keeps only the newest, so an exact pin would stop installing once an
# update lands). An installed package of another version is named and the script fails
# (a downgrade or an upgrade of the host's runtime is its administrator's call). On
# another release, set IPCLAB_K8S_UNPINNED=1 to install the release's own versions.
#
# Not root: prints the apt-get command instead. Go (to build the node binary once) is
# docs/go.md's; the Python kubernetes client is `pip install -e '.[k8s]'`.
set -euo pipefail
PINS=(
  "containerd=1.6.20~ds1-1+deb12u*"
  "runc=1.1.5+ds1-1+deb12u*"
  "containernetworking-plugins=1.1.1+ds1-3*"
  "conntrack=1:1.4.7-1*"
  "iptables=1.8.9-2*"
  "iproute2=6.1.0-3*"
)

missing=() wrong=()
for pin in "${PINS[@]}"; do
  p=${pin%%=*} want=${pin#*=}
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    [[ ${IPCLAB_K8S_UNPINNED:-} == 1 ]] && missing+=("$p") || missing+=("$pin")
    continue
  fi
  have=$(dpkg-query -W -f='${Version}' "$p")
  # shellcheck disable=SC2053  # $want is a glob on purpose
  [[ ${IPCLAB_K8S_UNPINNED:-} == 1 || $have == $want ]] || wrong+=("$p $have (pinned: $want)")
done
if ((${#wrong[@]})); then
  printf 'k8s-deps: installed at another version than pinned:\n' >&2
  printf '  %s\n' "${wrong[@]}" >&2
  echo "  (IPCLAB_K8S_UNPINNED=1 accepts them; docs/kubernetes.md)" >&2
  exit 1
fi
((${#missing[@]})) || { echo "k8s-deps: all present at their pinned versions"; exit 0; }

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
