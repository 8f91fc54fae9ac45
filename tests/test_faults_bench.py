"""bench/faults.py's pure parts: its table, the jobs it asks for, the spans of missing seconds. The harness itself
runs for an hour against a stack of its own: it is run by hand, never by the test suite."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import faults  # noqa: E402  (bench/ is not a package: its scripts import each other by name)


def _row(**changes: object) -> faults.Row:
    values: dict[str, object] = {
        "fault": "target_restart", "status": "succeeded", "succeeded": 12, "jobs": 12, "attempts": 1,
        "stored": 132, "expected": 132, "earlier": 4, "recovery_s": 9.25, "message": "—"}
    values.update(changes)
    return faults.Row(**values)  # type: ignore[arg-type]


def test_it_prints_one_markdown_row_per_fault_with_its_verdict() -> None:
    lines = faults.table_lines([_row(), _row(fault="redis_restart", status="failed", succeeded=0, stored=40,
                                             earlier=0, recovery_s=None, message="client lost")])

    assert lines[0].startswith("| fault ") and "what the user saw" in lines[0]
    assert set(lines[1]) <= {"|", "-"}
    first, second = (cells(line) for line in lines[2:4])
    assert first == ["target_restart", "succeeded", "12 / 12", "1", "132 / 132 (+4 earlier)", "9.2 s", "yes", "—"]
    assert second == ["redis_restart", "failed", "0 / 12", "1", "40 / 132", "—", "NO", "client lost"]
    assert len({len(line) for line in lines[:4]}) == 1  # columns aligned


def test_a_long_message_is_cut_in_the_table_and_given_whole_below_with_the_notes() -> None:
    message = "12× sysbench failed: " + "error 2013 " * 20
    lines = faults.table_lines([_row(message=message, notes=["mariadb down 1.6 s"])], message_width=40)

    assert cells(lines[2])[-1] == message[:39] + "…"
    assert f"- target_restart (0 s): {message}" in lines
    assert "    · mariadb down 1.6 s" in lines


def test_a_run_passes_only_when_every_job_succeeded_and_no_counted_second_is_missing() -> None:
    assert _row().passed()
    assert not _row(stored=131).passed()
    assert not _row(status="partially_succeeded", succeeded=11).passed()


def test_a_cancel_passes_when_the_run_ended_cancelled_soon_with_every_stored_second_kept() -> None:
    cancel = {"fault": "cancel_worker_dead", "status": "cancelled", "succeeded": 0, "attempts": 0, "stored": 5,
              "expected": 5, "earlier": 0, "recovery_s": 3.1, "expect": "cancelled"}
    assert _row(**cancel).passed()
    assert not _row(**{**cancel, "stored": 4}).passed(), "a second stored before the cancel was lost"
    assert not _row(**{**cancel, "recovery_s": None}).passed(), "never ended"
    assert not _row(**{**cancel, "recovery_s": faults.CANCEL_BOUND_S + 1}).passed()
    assert not _row(**{**cancel, "status": "running (timed out)"}).passed()
    assert not _row(status="cancelled", succeeded=0).passed(), "a run that should have succeeded"


def test_it_asks_for_exactly_the_jobs_wanted_with_one_to_four_threads() -> None:
    assert faults.threads_and_repetitions(12) == ([1, 2, 3, 4], 3)
    assert faults.threads_and_repetitions(4) == ([1, 2, 3, 4], 1)
    assert faults.threads_and_repetitions(6) == ([1, 2, 3], 2)
    assert faults.threads_and_repetitions(5) == ([1], 5)


def test_missing_seconds_are_shown_as_spans() -> None:
    assert faults._spans([5, 6, 7, 10]) == "5–7, 10"
    assert faults._spans([]) == ""


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip("|").split("|")]
