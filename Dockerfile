# One image for web, worker and beat, in two stages: `build` has the compilers, the -dev headers, node and npm, and
# makes the venv and the front end; `runtime`, the last stage and so what `docker build` and both compose files
# (docker-compose.yml for a developer, deploy/compose/production.yml) give, has only what runs: the venv and the
# collected static files copied in, sysbench, the libraries mysqlclient loads, bubblewrap and sudo for the sandbox.
# tests/test_compose_production.py checks that the last stage installs no compiler, -dev package, node or npm.
#
# The base is pinned by version (not by digest: digests could not be looked up where this was written); both stages
# use the same one, so that the venv's compiled modules find the same Python and glibc. The layout inside /app mirrors
# a checkout after scripts/setup.sh: the venv is /app/.venv, so scripts/*.sh run unchanged.
FROM python:3.11.12-slim-bookworm AS build

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# The -dev packages, pkg-config and build-essential build mysqlclient; node and npm build the front end.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        default-libmysqlclient-dev pkg-config build-essential nodejs npm \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, so that a code change does not reinstall them.
COPY requirements.txt ./
# Every file checked against the hash locked in requirements.txt (scripts/lock.sh).
RUN python -m venv .venv && .venv/bin/pip install --require-hashes -r requirements.txt

COPY frontend/package.json frontend/package-lock.json frontend/
RUN cd frontend && npm ci --no-audit --no-fund

COPY . .
# scripts/setup.sh's step 5, then Django's static tree (hashed names and their manifest) made once, here: web serves it
# from the image (whitenoise), so no container writes it and no volume holds it. The settings need a secrets file to
# load; this one is made for the command and deleted, so that no secret stays in a layer.
RUN node frontend/build.mjs \
    && rm -rf frontend/node_modules \
    && BENCHAPP_SECRETS_FILE=/tmp/build-secrets.env .venv/bin/python manage.py collectstatic --noinput \
    && rm -f /tmp/build-secrets.env


FROM python:3.11.12-slim-bookworm AS runtime

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# sysbench is what the worker runs (it brings libmariadb3, libpq5 and LuaJIT); libmariadb3 is also what mysqlclient
# loads (psycopg brings its own libpq: psycopg-binary); bubblewrap and sudo build the box every sysbench runs in
# (campaigns/sysbench/sandbox.py; setpriv and prlimit are util-linux's, in the base already).
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        sysbench libmariadb3 bubblewrap sudo ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# The code and the venv belong to root, read-only to the user that runs them; that user owns only what it writes.
COPY --from=build /app /app
WORKDIR /app
# benchapp runs web, worker and beat; benchapp-sandbox runs each sysbench, switched to through the one sudo rule
# (scripts/sandbox-user.sh, as on every other install). uid 1000 as before, so a volume made by an older image stays
# readable.
RUN useradd --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin --uid 1000 benchapp \
    && bash scripts/sandbox-user.sh --run-as benchapp \
    && install -d -o benchapp -g benchapp -m 0711 /app/var \
    && install -d -o benchapp -g benchapp -m 0700 /app/var/prometheus /app/var/workloads /secrets /postgres-secrets \
    && install -d -o benchapp -g benchapp -m 0711 /app/var/hosttests
# var/ and var/hosttests are passable (0711, not readable) for the sandbox's user, which writes fileio's files in a
# job's directory there (campaigns/execution/hostjobs.py). /secrets and /postgres-secrets are where
# deploy/compose/production.yml mounts its two secrets volumes: a new volume takes the owner and mode of the directory
# it is mounted on, so the one-shot service `secrets` (user benchapp) can write into them. docker-compose.yml mounts
# its `secrets` volume on /app/var instead.
USER benchapp

# The commit, for /metrics' benchapp_build_info (the image has no .git); deploy/compose/production.yml passes its tag.
ARG BENCHAPP_COMMIT=""
ENV BENCHAPP_COMMIT=${BENCHAPP_COMMIT} \
    BENCHAPP_BIND_HOST=0.0.0.0 \
    BENCHAPP_PORT=8000
EXPOSE 8000
# `docker run benchapp:dev client` (with the host's own issued DATABASE_URL and REDIS_URL, never the field key:
# docs/client-hosts.md) is a client host;
# web, worker and beat are the other modes (scripts/docker/entrypoint.sh); any other command runs as given.
ENTRYPOINT ["bash", "scripts/docker/entrypoint.sh"]
CMD ["web"]
