#!/bin/bash
# The database container's command: at first boot (an empty volume), make the cluster as the
# local backend does (ipclab.backends.postgres: initdb with the superuser's password, the
# services' role by its SCRAM verifier, their schema, then the domain's SQL as that role),
# on a server that listens on no address; then serve on the project network.
set -euo pipefail
files=/run/ipclab
data=/var/lib/ipclab-postgres/data
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
if [ ! -s "$data/PG_VERSION" ]; then
  "$bin/initdb" -D "$data" -U ipclab_admin --auth=scram-sha-256 \
    --pwfile="$files/superuser.pw" --encoding=UTF8 --locale=C --no-sync --no-instructions
  cat "$files/postgresql.conf" >> "$data/postgresql.conf"
  sock=$(mktemp -d)
  # provisioning: the unix socket only, in a private directory, by password
  printf 'local all all scram-sha-256\n' > "$data/pg_hba.conf"
  "$bin/pg_ctl" -D "$data" -w -s -o "-c listen_addresses='' -c unix_socket_directories='$sock'" start
  export PGHOST="$sock" PGDATABASE=postgres
  PGPASSWORD=$(cat "$files/superuser.pw") "$bin/psql" -X -q -w -v ON_ERROR_STOP=1 \
    -U ipclab_admin -f "$files/provision.sql"
  PGPASSWORD=$(cat "$files/superuser.pw") "$bin/psql" -X -q -w -v ON_ERROR_STOP=1 \
    -U ipclab_admin -d ipclab -f "$files/schema.sql"
  PGPASSWORD=$(cat "$files/services.pw") "$bin/psql" -X -q -w -v ON_ERROR_STOP=1 \
    -U ipclab -d ipclab -f "$files/data.sql"
  "$bin/pg_ctl" -D "$data" -w -s -m fast stop
  rmdir "$sock"
  cp "$files/pg_hba.conf" "$data/pg_hba.conf"
fi
exec "$bin/postgres" -D "$data"
