"""The API's rough edges: a body over the size limit refused in a user's words, `files` of the
wrong shape refused with a list of messages like every other field, and the job's prepare time."""
from __future__ import annotations

import json

import pytest

from campaigns import roles
from tests.factories import JobFactory
from tests.helpers.users import API, client_for, make_user

pytestmark = pytest.mark.django_db


def test_a_30_mb_json_upload_is_refused_naming_the_limit_not_a_setting():
    client = client_for(make_user(roles.OPERATOR, "big-uploader"))
    body = json.dumps({"name": "big", "entry": "a.lua", "files": {"a.lua": "x" * (30 * 1024 * 1024)}})
    answer = client.post(f"{API}/workloads/", body, content_type="application/json")
    assert answer.status_code == 400 and answer["Content-Type"] == "application/json"
    detail = answer.json()["detail"]
    assert "2.5 MiB" in detail and "multipart" in detail
    assert "settings" not in detail and "DATA_UPLOAD" not in detail


@pytest.mark.parametrize("files", [["a.lua"], "a.lua", {"a.lua": 3}])
def test_files_of_the_wrong_shape_answer_a_list_of_messages(files):
    client = client_for(make_user(roles.OPERATOR, "shape-uploader"))
    answer = client.post(f"{API}/workloads/", {"name": "l", "entry": "a.lua", "files": files}, format="json")
    assert answer.status_code == 400
    messages = answer.json()["files"]
    assert isinstance(messages, list) and "an object of file names and their Lua source" in messages[0]


def test_the_job_api_gives_the_time_its_prepare_took():
    prepared, reused = JobFactory(prepare_wall_s=46.2), JobFactory(run__campaign__name="other", prepare_wall_s=None)
    client = client_for(make_user(roles.VIEWER, "job-reader"))
    assert client.get(f"{API}/jobs/{prepared.pk}/").json()["prepare_wall_s"] == 46.2
    listed = {row["id"]: row["prepare_wall_s"] for row in client.get(f"{API}/jobs/").json()["results"]}
    assert listed == {prepared.pk: 46.2, reused.pk: None}
