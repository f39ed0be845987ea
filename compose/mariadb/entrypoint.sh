#!/bin/bash
# The MariaDB container's command: at first boot, the data directory made by
# mariadb-install-db (no option file read; bootstrap.sql: the installer's accounts removed,
# the services' user and the admin's made), then the domain's SQL (data.sql) run as the
# services' user on a server listening on no address (a private socket); then the server
# serves on the project network, with the settings the local backend gives it (server.args).
set -euo pipefail
files=/run/ipclab
data=/var/lib/ipclab-mariadb
mapfile -t settings < "$files/server.args"
common=(--no-defaults "--datadir=$data/data" "--tmpdir=$data/tmp"
        "--secure-file-priv=$data/files" "--pid-file=$data/run/mariadb.pid" "${settings[@]}")
if [ ! -e "$data/seeded" ]; then
  mkdir -p -m 0700 "$data/tmp" "$data/files" "$data/run"
  mariadb-install-db --no-defaults "--datadir=$data/data" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve "--extra-file=$files/bootstrap.sql" "--tmpdir=$data/tmp" \
    >/dev/null
  mariadbd "${common[@]}" --skip-networking "--socket=$data/run/seed.sock" &
  server=$!
  cnf="$data/run/services.cnf"
  ( umask 077; printf '[client]\nuser=ipclab\npassword=%s\nsocket=%s\n' \
      "$(cat "$files/services.pw")" "$data/run/seed.sock" > "$cnf" )
  for _ in $(seq 1200); do
    mariadb "--defaults-file=$cnf" -e 'SELECT 1' ipclab >/dev/null 2>&1 && break
    kill -0 "$server" 2>/dev/null || { echo "ipclab-mariadb: the server exited" >&2; exit 1; }
    sleep 0.1
  done
  if [ -s "$files/data.sql" ]; then
    mariadb "--defaults-file=$cnf" --batch ipclab < "$files/data.sql"
  fi
  rm -f "$cnf"
  kill -TERM "$server"
  wait "$server" || true
  touch "$data/seeded"
fi
exec mariadbd "${common[@]}" --bind-address=0.0.0.0 --port=3306 "--socket=$data/run/mariadb.sock"
