#!/usr/bin/env bash
# deploy/compose/production.yml's one-shot service `db-role`: benchapp's own PostgreSQL role and database, made or
# put back as they should be on every start (idempotent), in the postgres image (its psql), as root (the two 0600
# files).
#
#   POSTGRES_USER           the superuser (default postgres)
#   POSTGRES_PASSWORD_FILE  its password (the volume `postgres-secrets`)
#   BENCHAPP_SECRETS_FILE   the application's secrets file, whose BENCHAPP_DB_PASSWORD the role gets
#                           (scripts/docker/secrets.sh made it)
#   PGHOST, PGPORT          the server (default postgres:5432)
#   BENCHAPP_DB_NAME        the role's and the database's name (default benchapp; tests use another)
#
# The role: LOGIN with that password (scram-sha-256, the server's password_encryption) and nothing more: NOSUPERUSER
# NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS, said each time, so that an attribute given by hand since is taken
# back. It owns its database, and with it the schema public (pg_database_owner), which is all `migrate` needs; PUBLIC
# loses CONNECT and TEMPORARY on it. Not CREATEROLE: that is what issuing client hosts needs
# (campaigns/services/client_access.py), and this file serves none (no database port is published); on PostgreSQL 15
# CREATEROLE is almost a superuser's power (it may grant itself any non-superuser role). Passwords never reach a
# command line: psql reads the statement from standard input, written by bash's own printf, and the superuser's
# password from PGPASSWORD.
set -euo pipefail

die() { printf 'pg-role: ERROR: %s\n' "$*" >&2; exit 1; }

name=${BENCHAPP_DB_NAME:-benchapp}
[[ $name =~ ^[a-z_][a-z0-9_]{0,62}$ ]] || die "BENCHAPP_DB_NAME $name: lower-case letters, digits and _ only"
secrets_file=${BENCHAPP_SECRETS_FILE:?the application secrets file}
superuser_file=${POSTGRES_PASSWORD_FILE:?the PostgreSQL superuser password file}
export PGHOST=${PGHOST:-postgres} PGPORT=${PGPORT:-5432} PGCONNECT_TIMEOUT=${PGCONNECT_TIMEOUT:-10}

[[ -r $secrets_file ]] || die "cannot read $secrets_file (the service secrets makes it first)"
password=$(sed -n 's/^BENCHAPP_DB_PASSWORD=//p' "$secrets_file" | tail -n 1)
# URL-safe (secrets.token_urlsafe), which also keeps it a plain SQL string literal.
[[ $password =~ ^[A-Za-z0-9_-]{16,}$ ]] || die "no usable BENCHAPP_DB_PASSWORD in $secrets_file"
[[ -s $superuser_file ]] || die "no superuser password in $superuser_file"

as_superuser() {
    PGPASSWORD=$(<"$superuser_file") psql -X -w -q -At -v ON_ERROR_STOP=1 -U "${POSTGRES_USER:-postgres}" -d postgres "$@"
}

printf "DO \$\$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%s') THEN
        CREATE ROLE \"%s\";
    END IF;
END \$\$;
ALTER ROLE \"%s\" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS PASSWORD '%s';\n" \
    "$name" "$name" "$name" "$password" | as_superuser -f - >/dev/null || die "could not make the role $name"
if [[ $(as_superuser -c "SELECT 1 FROM pg_database WHERE datname = '$name'") != 1 ]]; then
    as_superuser -c "CREATE DATABASE \"$name\" OWNER \"$name\"" >/dev/null
fi
as_superuser -c "ALTER DATABASE \"$name\" OWNER TO \"$name\"" \
    -c "REVOKE CONNECT, TEMPORARY ON DATABASE \"$name\" FROM PUBLIC" >/dev/null

PGPASSWORD=$password psql -X -w -q -At -v ON_ERROR_STOP=1 -U "$name" -d "$name" -c 'SELECT 1' >/dev/null ||
    die "the role $name cannot log in to $PGHOST:$PGPORT with its password"
echo "pg-role: role $name (LOGIN, not a superuser, no CREATEDB, no CREATEROLE) owns the database $name"
