#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine (idempotent; needs root).
#
#   scripts/docker-engine.sh          install what is missing, start dockerd if none runs, wait
#   scripts/docker-engine.sh --check  exit 0 when an engine answers, 1 otherwise (changes nothing)
#
# Installs Debian's docker.io (engine 20.10), docker-compose (Compose v1.29), iproute2 (tc/netem
# on the host side, for diagnostics) and debootstrap (the offline base image, see docs/docker.md).
# dockerd is started in the background with its log in $IPCLAB_DOCKERD_LOG; it keeps running
# after this script exits (containers started by ipclab are removed by ipclab itself).
set -euo pipefail

LOG=${IPCLAB_DOCKERD_LOG:-/var/log/ipclab-dockerd.log}
WAIT_S=${IPCLAB_DOCKERD_WAIT_S:-60}
PACKAGES=(docker.io docker-compose iproute2 debootstrap)

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

if [[ "${1:-}" == "--check" ]]; then
  engine_answers
  exit $?
fi

if command -v docker >/dev/null 2>&1 && engine_answers; then
  echo "docker-engine: an engine already answers ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "docker-engine: no engine answers and this is not root; start dockerd or run as root" >&2
  exit 1
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "docker-engine: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  # A stale pid file or socket from a killed engine stops dockerd from starting.
  if [[ -f /var/run/docker.pid ]] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
    rm -f /var/run/docker.pid
  fi
  if ! pgrep -x containerd >/dev/null 2>&1 && [[ -f /run/docker/containerd/containerd.pid ]]; then
    rm -f /run/docker/containerd/containerd.pid
  fi
  echo "docker-engine: starting dockerd (log: $LOG)"
  mkdir -p "$(dirname "$LOG")"
  nohup setsid dockerd >>"$LOG" 2>&1 </dev/null &
fi

for ((i = 0; i < WAIT_S * 2; i++)); do
  if engine_answers; then
    echo "docker-engine: engine answers ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
    exit 0
  fi
  sleep 0.5
done
echo "docker-engine: dockerd did not answer within ${WAIT_S}s; last log lines:" >&2
tail -n 30 "$LOG" >&2 || true
exit 1
