"""What an operator watches benchapp with: metrics and health. The request id, the log formats and
the Sentry set-up are wiring of the project, in benchapp/ (requestid.py, logs.py, sentry.py): settings use them.

    middleware  the request id (benchapp/requestid.py) and the request-latency histogram
    metrics     the Prometheus series: request latency (multi-process) and benchapp's own, read from PostgreSQL
                and Redis at scrape time
    health      readiness checks (PostgreSQL, the cache's Redis, the broker, a live `all` worker), and the worker's
                and beat's own (manage.py worker_health, beat_health)
"""
