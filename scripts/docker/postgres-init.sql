-- Run once by the postgres image on a new data volume (docker-compose.yml mounts it into
-- /docker-entrypoint-initdb.d/). POSTGRES_DB makes `benchapp`, the app's own database; `sbtest` is the demo
-- target database that sysbench fills, as scripts/setup.sh makes it on a developer machine.
CREATE DATABASE sbtest OWNER postgres;
