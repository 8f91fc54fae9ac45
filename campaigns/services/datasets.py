"""Datasets: the one way they are created and changed (campaigns.services.rows)."""
from __future__ import annotations

from typing import Any

from campaigns.models import Dataset
from campaigns.services.rows import row_write


def dataset_create(*, user: Any = None, **fields: Any) -> Dataset:
    """A new dataset (tables, rows per table, sizes per spec within the forms' limits). ValidationError by field."""
    return row_write(Dataset(), fields, user=user)


def dataset_update(*, dataset: Dataset, user: Any = None, **fields: Any) -> Dataset:
    return row_write(dataset, fields, user=user)
