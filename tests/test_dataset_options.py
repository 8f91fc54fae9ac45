"""An option that contradicts the scenario's dataset is refused naming both: a job runs with the
dataset's --tables and --table-size whatever the options say, so {"tables": 2} on a 1-table dataset was saved and
then ignored without a word."""
from __future__ import annotations

import pytest

from campaigns import roles
from campaigns.models import Scenario
from tests.factories import DatasetFactory, ScenarioFactory
from tests.helpers.users import API, client_for, make_user

pytestmark = pytest.mark.django_db


def test_the_api_refuses_tables_that_contradict_the_dataset_naming_both():
    dataset = DatasetFactory(name="one table", tables=1, table_size=1000)
    client = client_for(make_user(roles.OPERATOR, "shape-operator"))
    body = {"name": "two tables?", "test": "oltp_read_only", "dataset": dataset.pk, "options": {"tables": 2}}
    answer = client.post(f"{API}/scenarios/", body, format="json")
    assert answer.status_code == 400, answer.content
    message = answer.json()["options"][0]
    assert "tables=2" in message and "'one table' (1 table × 1,000 rows)" in message
    assert not Scenario.objects.filter(name="two tables?").exists()
    # The same value is harmless, and kept.
    same = client.post(f"{API}/scenarios/", {**body, "name": "one table", "options": {"tables": 1}}, format="json")
    assert same.status_code == 201, same.content
    legacy = client.post(f"{API}/scenarios/", {**body, "name": "legacy", "test": "oltp_legacy/select.lua",
                                               "options": {"oltp-table-size": 5}}, format="json")
    assert legacy.status_code == 400 and "oltp-table-size=5" in legacy.json()["options"][0]


def test_a_dataset_cannot_change_under_a_scenario_whose_options_name_its_old_shape():
    scenario = ScenarioFactory(dataset=DatasetFactory(name="resized", tables=1, table_size=1000),
                               options={"tables": 1, "rate": 200})
    client = client_for(make_user(roles.OPERATOR, "resize-operator"))
    answer = client.patch(f"{API}/datasets/{scenario.dataset.pk}/", {"tables": 3}, format="json")
    assert answer.status_code == 400, answer.content
    assert f"the scenario '{scenario.name}', whose options say tables=1" in answer.json()["tables"][0]
