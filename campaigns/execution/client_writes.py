"""A client's writes while its sysbench runs: per-second samples, heartbeats and the live output tail, on a thread
of their own with its own database connection.

sysbench never waits for benchapp's database: its lines go into a buffer that this thread writes. When the
database goes away (a PostgreSQL restart, a dropped connection) the thread reconnects with back-off and writes
what was buffered once it is back; sysbench is stopped only when the job is no longer its to measure (cancelled,
failed elsewhere, this attempt no longer running, or no heartbeat got through for BENCHAPP_STALE_S: by then the
reconciler has declared the client lost) or when the buffer is full (MAX_BUFFERED lines: the database stayed
away far longer than a restart).
"""
from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable

from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError

from campaigns.execution.dbretry import RETRY_FIRST_S, backoff_s, connection_drop, connection_lost
from campaigns.execution.results import DUPLICATE, REFUSED, sample_store
from campaigns.models import Job, JobClient
from campaigns.sysbench import parser

log = logging.getLogger(__name__)

MAX_BUFFERED = 3600      # lines waiting for the database: an hour of 1-second reports
DRAIN_PATIENCE_S = 120.0  # after sysbench exits, how long its last lines may wait for the database
_STOPPED = (Job.Status.CANCELLED, Job.Status.FAILED)


class ClientWrites(threading.Thread):
    """Writes one client's lines and beats for it; should_stop() says when its sysbench must stop, and why."""

    def __init__(self, *, job_id: int, client_id: int, client_index: int, client_attempt: int, attempt: int,
                 beat: Callable[[], str]) -> None:
        super().__init__(name=f"client-writes-{job_id}-{client_index}", daemon=True)
        self.job_id, self.client_id, self.client_index = job_id, client_id, client_index
        self.client_attempt, self.attempt = client_attempt, attempt
        self._beat = beat
        self._lines: deque[parser.Interval] = deque()
        self._tail: str | None = None
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._finish = threading.Event()
        self.stored = self.duplicates = self.refused = 0
        self.seen_status: str = Job.Status.RUNNING  # the job's status at the last heartbeat that got through
        self.last_beat = time.monotonic()
        self.away_since: float | None = None
        self.overflow = False

    # ------------------------------------------------------------ the sysbench side (never touches the database)

    def put(self, interval: parser.Interval) -> None:
        with self._lock:
            if len(self._lines) >= MAX_BUFFERED:
                self.overflow = True
                return
            self._lines.append(interval)
        self._wake.set()

    def put_tail(self, text: str) -> None:
        self._tail = text
        self._wake.set()

    def should_stop(self) -> str:
        """Why this client's sysbench must stop now ("" while it may go on)."""
        if self.seen_status in _STOPPED:
            return f"the job was {self.seen_status} meanwhile"
        if self.refused:
            return "its seconds were refused: the job no longer runs this attempt"
        if self.overflow:
            return (f"benchapp's database has been away for {time.monotonic() - (self.away_since or 0):.0f} s: "
                    f"more than {MAX_BUFFERED} seconds of samples were waiting")
        silent_s = time.monotonic() - self.last_beat
        if silent_s > settings.BENCHAPP_STALE_S:
            return f"no heartbeat got through for {silent_s:.0f} s: the job has been declared lost meanwhile"
        return ""

    def finish(self, *, patience_s: float = DRAIN_PATIENCE_S) -> bool:
        """Writes what is left (waiting up to `patience_s` for the database), then ends; True if nothing was lost."""
        self._finish.set()
        self._wake.set()
        self.join(timeout=patience_s + 5)
        with self._lock:
            left = len(self._lines)
        if left:
            log.error("job %s client %s: %d seconds not written (benchapp's database away)", self.job_id,
                      self.client_index, left)
        return left == 0 and not self.overflow

    # ------------------------------------------------------------ the database side

    def run(self) -> None:
        delay = RETRY_FIRST_S
        next_beat = 0.0
        deadline: float | None = None
        try:
            while True:
                self._wake.wait(timeout=min(0.5, settings.BENCHAPP_CANCEL_POLL_S))
                self._wake.clear()
                if self._finish.is_set() and deadline is None:
                    deadline = time.monotonic() + DRAIN_PATIENCE_S
                try:
                    self._write_lines()
                    if time.monotonic() >= next_beat and not self._finish.is_set():
                        self.seen_status = self._beat()
                        self.last_beat = time.monotonic()
                        next_beat = self.last_beat + settings.BENCHAPP_CANCEL_POLL_S
                        self._write_tail()
                    if self.away_since is not None:
                        log.warning("job %s client %s: benchapp's database is back after %.1f s", self.job_id,
                                    self.client_index, time.monotonic() - self.away_since)
                        self.away_since = None
                    delay = RETRY_FIRST_S
                except (OperationalError, InterfaceError) as exc:
                    if not connection_lost(exc):
                        raise
                    if self.away_since is None:
                        self.away_since = time.monotonic()
                        log.warning("job %s client %s: benchapp's database is away (%s); buffering seconds",
                                    self.job_id, self.client_index, (str(exc).strip().splitlines() or [""])[0])
                    connection_drop()
                    if deadline is not None and time.monotonic() > deadline:
                        return
                    time.sleep(delay)
                    delay = backoff_s(delay)
                    self._wake.set()
                    continue
                if self._finish.is_set():
                    with self._lock:
                        if not self._lines:
                            return
        except DatabaseError:
            log.exception("job %s client %s: writing its seconds failed", self.job_id, self.client_index)
            self.refused += 1  # its sysbench stops: nothing more of it can be stored
        finally:
            connection_drop()

    def _write_lines(self) -> None:
        while True:
            with self._lock:
                if not self._lines:
                    return
                interval = self._lines[0]
            outcome = sample_store(job_id=self.job_id, client_index=self.client_index, attempt=self.attempt,
                                   interval=interval, client_attempt=self.client_attempt)
            with self._lock:
                self._lines.popleft()  # only once written (or refused): a dropped connection keeps it
            if outcome == DUPLICATE:
                self.duplicates += 1
                log.warning("job %s client %s: sysbench printed t = %g s twice; stored once", self.job_id,
                            self.client_index, interval.t)
            elif outcome == REFUSED:
                self.refused += 1
            else:
                self.stored += 1

    def _write_tail(self) -> None:
        tail, self._tail = self._tail, None
        if tail is not None:
            JobClient.objects.filter(pk=self.client_id, attempt=self.client_attempt).update(raw_output=tail)
