"""A client host's Celery worker, started without Celery's command line (scripts/worker.sh, BENCHAPP_WORKER_ROLE=client).

`celery worker` loads Celery's whole command line before the worker: every subcommand, and with `celery shell` and
`celery amqp` click-repl, prompt_toolkit and pygments, 9 MB that a client host's worker (under 80 MB in
all) would carry for nothing. This starts the same worker, `app.Worker` (what `celery worker` builds and starts),
with the few options scripts/worker.sh gives it, without mingle and gossip; everything else comes from the CELERY_* settings as for
`celery worker` (the pool: settings.BENCHAPP_WORKER_POOL).

    python -m benchapp.client_worker [-Q QUEUES] [--concurrency N] [--loglevel LEVEL] [-n HOSTNAME] [-E]
"""
from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchapp.client_worker", description=__doc__.splitlines()[0])
    parser.add_argument("-Q", "--queues", default="", help="comma-separated queues (default: the shared queue)")
    parser.add_argument("-c", "--concurrency", type=int, default=None, help="tasks at once (default: the cores)")
    parser.add_argument("-l", "--loglevel", default="INFO")
    parser.add_argument("-n", "--hostname", default=None, help="the worker's node name (default: celery@HOST)")
    parser.add_argument("-E", "--task-events", action="store_true", help="send task events (monitors read them)")
    args = parser.parse_args(argv)
    if args.concurrency is not None and args.concurrency < 1:
        parser.error("--concurrency: at least 1")

    from benchapp.celery import app

    # No mingle and no gossip: both talk to every other worker (mingle's hello is a remote-control broadcast, which a
    # client host's Redis user may not PUBLISH: campaigns.services.client_access.redis_acl_rules), and a client host
    # needs neither the others' revoked tasks nor their events.
    worker = app.Worker(hostname=args.hostname, loglevel=args.loglevel, concurrency=args.concurrency,
                        queues=[q for q in args.queues.split(",") if q] or None,
                        task_events=args.task_events or None, without_mingle=True, without_gossip=True)
    worker.start()
    return int(worker.exitcode or 0)


if __name__ == "__main__":
    raise SystemExit(main())
