"""How far a job's prepare has got: rows loaded, read as MAX(id) of each table (exact, from the primary key,
never the server's row estimate), polled while sysbench or benchapp's loader runs.

The figures go to the job (Job.prepare_progress, shown by the API and the run page) and to the prepared
dataset (PreparedDataset.rows_loaded, which says how far a prepare that stopped had got). An uploaded workload's
prepare makes tables of its own, which benchapp does not know: its progress is the time it has run, and says so
(never "0 of 1 rows" of an sbtest1 it does not have).
"""
from __future__ import annotations

import logging
import time
from typing import Any

from django.conf import settings
from django.utils import timezone

from campaigns.durations import duration_text
from campaigns.models import Job, PreparedDataset
from campaigns.probes import ProbeError, tables_max_id
from campaigns.sysbench.command import Connection
from campaigns.sysbench.ddl import row_bytes_on_disk, table_names

log = logging.getLogger(__name__)


def progress_text(progress: dict[str, Any]) -> str:
    """'preparing sbtest1: 1,234,567,890 of 4,000,000,000 rows (30.9 %), 52 MB/s, about 3 h 10 min left'."""
    loaded, total = progress["rows_loaded"], progress["rows_total"]
    where = progress["table"] if progress["tables"] == 1 else (
        f"{progress['tables']} tables ({progress['tables_done']} done, now {progress['table']})")
    verb = "prepared" if progress.get("done") else "preparing"
    pct = 100 * loaded / total if total else 100.0
    # One decimal as a rule; a 4e9-row table spends its first 4 million rows below 0.1 %, which still moves.
    pct_text = f"{pct:.1f}" if pct >= 1 or loaded == 0 else f"{pct:.2g}"
    text = f"{verb} {where}: {loaded:,} of {total:,} rows ({pct_text} %)"
    if progress.get("bytes_per_s") and not progress.get("done"):
        text += f", {progress['bytes_per_s'] / 1e6:.0f} MB/s"
    if progress.get("eta_s") is not None and not progress.get("done"):
        text += f", about {duration_text(progress['eta_s'], estimate=True)} left"
    if progress.get("resumed_from_rows"):
        text += f" (resumed at {progress['resumed_from_rows']:,} rows)"
    return text


class PrepareProgress:
    """Reads the tables' MAX(id) at most every BENCHAPP_PREPARE_PROGRESS_S and records it."""

    def __init__(self, *, job: Job, conn: Connection, prepared: PreparedDataset, wide: bool,
                 counted: bool = True) -> None:
        self.job, self.conn, self.prepared = job, conn, prepared
        self.counted = counted  # False: the workload's own tables, whose rows are not counted
        self.names = table_names(job.tables)
        self.row_bytes = row_bytes_on_disk(driver=conn.driver, wide=wide)
        self.started = time.monotonic()
        self.last_poll = 0.0
        self.rows_at_start: int | None = None

    def rows_by_table(self) -> dict[str, int] | None:
        try:
            found = tables_max_id(self.conn, self.names)
        except ProbeError as exc:
            # A progress reading that fails is no reason to stop the prepare: the next one may work.
            log.warning("prepare progress of job %s not read: %s", self.job.pk, exc)
            return None
        return {name: min(found.get(name, 0), self.job.table_size) for name in self.names}

    def poll(self, *, force: bool = False, done: bool = False) -> dict[str, Any] | None:
        now = time.monotonic()
        if not force and now - self.last_poll < settings.BENCHAPP_PREPARE_PROGRESS_S:
            return None
        self.last_poll = now
        if not self.counted:
            return self._uncounted(now, done=done)
        rows = self.rows_by_table()
        if rows is None:
            return None
        loaded = sum(rows.values())
        if self.rows_at_start is None:
            self.rows_at_start, self.started = loaded, now
        total = self.job.tables * self.job.table_size
        elapsed_s = now - self.started
        rate = (loaded - self.rows_at_start) / elapsed_s if elapsed_s > 0 and loaded > self.rows_at_start else None
        unfinished = [name for name in self.names if rows[name] < self.job.table_size]
        progress: dict[str, Any] = {
            "table": unfinished[0] if unfinished else self.names[-1], "tables": len(self.names),
            "tables_done": len(self.names) - len(unfinished),
            "rows_loaded": loaded, "rows_total": total, "pct": round(100 * loaded / total, 4) if total else 100.0,
            "rows_per_s": round(rate) if rate else None,
            "bytes_per_s": round(rate * self.row_bytes) if rate else None,
            "eta_s": round((total - loaded) / rate) if rate else None,
            "resumed_from_rows": self.rows_at_start, "done": done,
            "updated_at": timezone.now().isoformat(),
        }
        progress["text"] = progress_text(progress)
        Job.objects.filter(pk=self.job.pk).update(prepare_progress=progress)
        PreparedDataset.objects.filter(pk=self.prepared.pk).update(rows_loaded=loaded)
        return progress

    def _uncounted(self, now: float, *, done: bool) -> dict[str, Any]:
        """The progress of a prepare whose tables are the workload's own: how long it has run."""
        elapsed_s = now - self.started
        verb = "prepared" if done else "preparing"
        text = (f"{verb} with the workload's own prepare command: {duration_text(elapsed_s)} "
                f"{'in all' if done else 'so far'} (its tables are its own: rows not counted)")
        progress: dict[str, Any] = {"counted": False, "elapsed_s": round(elapsed_s, 1), "done": done,
                                    "updated_at": timezone.now().isoformat(), "text": text}
        Job.objects.filter(pk=self.job.pk).update(prepare_progress=progress)
        return progress
