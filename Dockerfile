# One image for web, worker and beat (see docker-compose.yml). The layout inside /app mirrors a checkout after
# scripts/setup.sh: the venv is /app/.venv, so scripts/*.sh run unchanged.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# sysbench is what the worker runs; the -dev packages, pkg-config and build-essential build mysqlclient;
# node and npm build the front end.
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        sysbench default-libmysqlclient-dev pkg-config build-essential nodejs npm \
    && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 benchapp && install -d -o benchapp -g benchapp /app
WORKDIR /app
USER benchapp
# Where the installation's own secrets are made on first start (docker-compose.yml mounts its `secrets` volume
# here, which takes this directory's owner and mode).
RUN install -d -m 0700 /app/var

# Dependencies first, so that a code change does not reinstall them.
COPY --chown=benchapp:benchapp requirements.txt ./
# Every file checked against the hash locked in requirements.txt (scripts/lock.sh).
RUN python -m venv .venv && .venv/bin/pip install --require-hashes -r requirements.txt

COPY --chown=benchapp:benchapp frontend/package.json frontend/package-lock.json frontend/
RUN cd frontend && npm ci --no-audit --no-fund

COPY --chown=benchapp:benchapp . .
RUN node frontend/build.mjs

ENV BENCHAPP_BIND_HOST=0.0.0.0 \
    BENCHAPP_PORT=8000
EXPOSE 8000
# `docker run benchapp:dev client` (with the host's own issued DATABASE_URL and REDIS_URL, never the field key:
# docs/client-hosts.md) is a client host;
# web, worker and beat are the other modes (scripts/docker/entrypoint.sh); any other command runs as given.
ENTRYPOINT ["bash", "scripts/docker/entrypoint.sh"]
CMD ["web"]
