"""A value that is not one of a field's choices is refused naming the field and, when there are few, its choices,
never echoing what was sent: DRF's own '"{input}" is not a valid choice.' sent back a script or
a password typed into the wrong field. One place does it for every ChoiceField (campaigns.api.fields)."""
from __future__ import annotations

import json

import pytest
from rest_framework import serializers

from campaigns import roles
from tests.factories import ProductFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db

SENT = "<script>alert('pw-Hunter2-sent')</script>"


def test_a_declared_choice_field_names_itself_and_its_choices_not_the_value_sent():
    api = client_for(make_user(roles.ADMIN, "choice-admin"))
    answer = api.post("/api/v1/users/", {"username": "choice-new", "password": "a-long-pass-7731", "role": SENT},
                      format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"role": ["the value is not one of the choices of role: viewer, operator, admin"]}
    assert "Hunter2" not in answer.content.decode() and "script" not in answer.content.decode()


def test_a_model_fields_choices_and_a_long_list_of_choices_are_refused_without_the_value():
    api = client_for(make_user(roles.OPERATOR, "choice-operator"))
    target = api.post("/api/v1/targets/", {"name": "choice t", "product": ProductFactory(name="choice p").pk,
                                           "driver": SENT, "host": "127.0.0.1", "port": 3306, "database": "sbtest",
                                           "user": "root"}, format="json")
    assert target.status_code == 400, target.content
    assert target.json()["driver"] == ["the value is not one of the choices of driver: mysql, pgsql"]
    scenario = api.post("/api/v1/scenarios/", {"name": "choice s", "test": SENT}, format="json")
    assert scenario.status_code == 400, scenario.content
    message = scenario.json()["test"][0]
    assert message.startswith("the value is not one of the ") and "choices of test (/api/schema/ lists them)" in message
    for answer in (target, scenario):
        assert "Hunter2" not in answer.content.decode() and "script" not in answer.content.decode()


def test_a_list_of_choices_names_the_list_for_each_value_it_refuses():
    class Picks(serializers.Serializer):
        one = serializers.MultipleChoiceField(choices=["a", "b"])
        many = serializers.ListField(child=serializers.ChoiceField(choices=[str(n) for n in range(20)]))

    picks = Picks(data={"one": ["a", SENT], "many": ["3", SENT]})
    assert not picks.is_valid()
    assert picks.errors["one"] == ["the value is not one of the choices of one: a, b"]
    assert picks.errors["many"] == {1: ["the value is not one of the 20 choices of many (/api/schema/ lists them)"]}
    assert SENT not in json.dumps(picks.errors)


@pytest.mark.parametrize(("path", "parameter"), [("jobs", "status"), ("runs", "status"), ("targets", "driver")])
def test_a_list_filters_bad_choice_names_the_parameter_not_the_value(path, parameter):
    api = client_for(make_user("viewer", f"filter-{path}-{parameter}"))
    answer = api.get(f"/api/v1/{path}/?{parameter}=ZZ<script>")
    assert answer.status_code == 400, answer.content
    assert "ZZ" not in answer.content.decode() and "script" not in answer.content.decode()
    assert answer.json()[parameter] == [f"the value is not one of the choices of {parameter}"]
