#!/usr/bin/env bash
# deploy/compose/production.yml's one-shot service `secrets`: what the two secrets volumes lack, made once; what they
# hold is never changed, so a restart or an upgrade keeps every key.
#
#   BENCHAPP_SECRETS_FILE            the application's file (the volume `secrets`, read-only in web, worker, beat):
#                                    SECRET_KEY, BENCHAPP_FIELD_KEY, BENCHAPP_ADMIN_PASSWORD, BENCHAPP_REDIS_PASSWORD
#                                    (benchapp/local_secrets.py, as on every install), BENCHAPP_DB_PASSWORD (the role
#                                    benchapp's, as scripts/pg-login.sh makes it) and DATABASE_URL with it
#   BENCHAPP_POSTGRES_PASSWORD_FILE  the PostgreSQL superuser's password alone (the volume `postgres-secrets`, which
#                                    only postgres and db-role read: POSTGRES_PASSWORD_FILE)
#   BENCHAPP_DB_HOST                 DATABASE_URL's host (default postgres, the compose service)
#
# Both files 0600. Passwords are URL-safe (secrets.token_urlsafe), so they go into DATABASE_URL and into
# scripts/docker/pg-role.sh's SQL as they are. Nothing secret is printed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

secrets_file=${BENCHAPP_SECRETS_FILE:?the application secrets file}
postgres_file=${BENCHAPP_POSTGRES_PASSWORD_FILE:?the PostgreSQL superuser password file}
db_host=${BENCHAPP_DB_HOST:-postgres}
umask 077

token() { .venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(24))'; }

# The keys every installation has, made the way every benchapp process would make them.
.venv/bin/python -c 'import sys; from pathlib import Path; from benchapp import local_secrets; local_secrets.local_secrets(Path(sys.argv[1]))' \
    "$secrets_file"

password=$(sed -n 's/^BENCHAPP_DB_PASSWORD=//p' "$secrets_file" | tail -n 1)
if [[ -z $password ]]; then
    password=$(token)
    printf 'BENCHAPP_DB_PASSWORD=%s\n' "$password" >>"$secrets_file"
fi
url="postgres://benchapp:$password@$db_host:5432/benchapp"
if ! grep -qxF "DATABASE_URL=$url" "$secrets_file"; then
    sed -i '/^DATABASE_URL=/d' "$secrets_file"
    printf 'DATABASE_URL=%s\n' "$url" >>"$secrets_file"
fi

if [[ ! -s $postgres_file ]]; then
    token >"$postgres_file.new"
    mv -f "$postgres_file.new" "$postgres_file"
fi
chmod 0600 "$secrets_file" "$postgres_file"
echo "secrets: $secrets_file and $postgres_file hold what this installation needs"
