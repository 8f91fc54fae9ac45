"""Scenarios: the one way they are created and changed (campaigns.services.rows).

Scenario.clean() checks the options against the sysbench catalogue (an unknown test or option, an unsafe value,
and any connection option: where sysbench connects comes from the target) and stores them canonical."""
from __future__ import annotations

from typing import Any

from campaigns.models import Scenario
from campaigns.services.hosttests import scenario_host_fields
from campaigns.services.rows import row_write


def scenario_create(*, user: Any = None, **fields: Any) -> Scenario:
    return row_write(Scenario(), scenario_host_fields(fields, user=user), user=user)


def scenario_update(*, scenario: Scenario, user: Any = None, **fields: Any) -> Scenario:
    return row_write(scenario, scenario_host_fields(fields, user=user), user=user)
