#!/usr/bin/env bash
# Install the Debian packages ipclab needs, if missing (idempotent).
#
#   rabbitmq-server  the AMQP stacks' broker (ipclab starts private nodes; the system one is
#                    not used)
#   postgresql       the SQL database of the data-bundle stacks (ipclab starts private
#                    clusters with initdb; the system cluster is not used)
#   chromium         turns the HTML report into PDF (headless)
#   poppler-utils    pdftotext/pdftoppm: the report's tests read the PDF back
#   nginx            the native HTTP/1.1 protocol adapters (services/adapters/native.py)
#   nghttp2-proxy    nghttpx: the native h2c protocol adapters (same)
#   mariadb-server   the SQL store of Shafabakhsh's shipping service (ipclab starts private servers
#                    with mariadb-install-db, --no-defaults; the system server is not used)
#   openjdk-17-jdk-headless, maven
#                    the native CoAP protocol adapters (Eclipse Californium, built by
#                    ipclab.javabuild from services/java/californium)
#   ethtool          the docker backend turns segmentation offloads off on each host
#                    container's eth0 (run from the host, nsenter -n), so its interface
#                    counters count packets as on the wire (docs/docker.md)
#
# Not root: prints the apt-get command instead. The Docker engine: scripts/docker-engine.sh.
set -euo pipefail
PACKAGES=(rabbitmq-server postgresql chromium poppler-utils fonts-dejavu-core nginx nghttp2-proxy ethtool
          openjdk-17-jdk-headless maven mariadb-server)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]})) || { echo "system-deps: all present"; exit 0; }

if [[ $(id -u) -ne 0 ]]; then
  echo "system-deps: missing ${missing[*]}; install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts a system RabbitMQ node, a system PostgreSQL cluster and nginx on port 80 where
# an init system runs; ipclab never uses them (the native adapters start their own nginx).
# The nginx this script installed is stopped and disabled (none runs here: no init, and
# policy-rc.d forbids starting daemons in containers).
if [[ " ${missing[*]} " == *" nginx "* && -d /run/systemd/system ]]; then
  systemctl disable --now nginx >/dev/null 2>&1 || true
fi
# likewise the system MariaDB server the package starts under systemd
if [[ " ${missing[*]} " == *" mariadb-server "* && -d /run/systemd/system ]]; then
  systemctl disable --now mariadb >/dev/null 2>&1 || true
fi
