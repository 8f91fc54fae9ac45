"""What execution.dispatch would have published, recorded instead (dispatch._send patched): the tests that check
which task a change sends, with what, to which queue, without a broker."""
from __future__ import annotations

from typing import Any


class SentTasks:
    """Every task dispatch._send was asked to publish: (task name, args, queue), in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, list[Any], str | None]] = []

    def __call__(self, task_name: str, **options: Any) -> None:
        self.sent.append((task_name, list(options.get("args") or []), options.get("queue")))

    @property
    def messages(self) -> list[tuple[list[Any], str | None]]:
        """(args, queue) of each task sent."""
        return [(args, queue) for _, args, queue in self.sent]

    @property
    def tasks(self) -> list[tuple[str, list[Any]]]:
        """(task name, args) of each task sent."""
        return [(name, args) for name, args, _ in self.sent]
