"""A workload is its creator's: only its owner or an admin adds a version to it, through every way
in (the API's create and versions, the page, a bundle import), and a multipart file name with a folder or '..' is
refused rather than stored under the name Django cut it to. The attack: a second operator POSTed a workload under
the name of someone else's, and it became that workload's latest version."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client as PageClient

from campaigns import roles, services
from campaigns.models import Workload, WorkloadVersion
from campaigns.services.workloads import workload_approve, workload_save
from tests.factories import DatasetFactory, TargetFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db

KV = Path(__file__).resolve().parent / "data" / "workloads" / "kv"
TAKEN = "a workload of that name belongs to another user"


def kv_files() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(KV.glob("*.lua"))}


def edited_files() -> dict[str, str]:
    return {**kv_files(), "kv.lua": kv_files()["kv.lua"].replace('"mixed"}', '"read"}')}


def test_a_second_operator_cannot_version_another_users_workload_by_name_or_by_id():
    owner = client_for(make_user(roles.OPERATOR, "wo-owner"))
    attacker = client_for(make_user(roles.OPERATOR, "wo-attacker"))
    made = owner.post("/api/v1/workloads/", {"name": "orders", "entry": "kv.lua", "files": kv_files(),
                                             "expected_errors_pct": 1.0}, format="json")
    assert made.status_code == 201, made.content
    workload = Workload.objects.get(name="orders")
    # A new workload under the owner's name: a 400 on "name", other files or the same ones, nothing changed.
    for files in (edited_files(), kv_files()):
        refused = attacker.post("/api/v1/workloads/", {"name": "orders", "entry": "kv.lua", "files": files,
                                                       "expected_errors_pct": 50.0}, format="json")
        assert refused.status_code == 400, refused.content
        assert TAKEN in json.dumps(refused.json()["name"]), refused.json()
    # A new version by the workload's id: 403.
    refused = attacker.post(f"/api/v1/workloads/{workload.pk}/versions/",
                            {"entry": "kv.lua", "files": edited_files(), "note": "mine now"}, format="json")
    assert refused.status_code == 403, refused.content
    assert "or an admin may add a version to workload" in refused.json()["detail"]
    workload.refresh_from_db()
    assert list(workload.versions.values_list("number", flat=True)) == [1]
    assert workload.expected_errors_pct == 1.0 and workload.description == ""
    # Its owner and an admin may.
    added = owner.post(f"/api/v1/workloads/{workload.pk}/versions/", {"entry": "kv.lua", "files": edited_files()},
                       format="json")
    assert added.status_code == 201, added.content
    admin = client_for(make_user(roles.ADMIN, "wo-admin"))
    third = {**kv_files(), "kv.lua": kv_files()["kv.lua"].replace('"mixed"}', '"write"}')}
    by_admin = admin.post("/api/v1/workloads/", {"name": "orders", "entry": "kv.lua", "files": third}, format="json")
    assert by_admin.status_code == 201, by_admin.content
    assert sorted(workload.versions.values_list("number", "uploaded_by__username")) == [
        (1, "wo-owner"), (2, "wo-owner"), (3, "wo-admin")]


def test_the_page_refuses_a_version_of_another_users_workload():
    owner = make_user(roles.OPERATOR, "wo-page-owner")
    version = workload_save(user=owner, name="kv", files=kv_files(), entry="kv.lua")
    page = PageClient()
    page.force_login(make_user(roles.OPERATOR, "wo-page-attacker"))
    answer = page.post(f"/workloads/{version.workload_id}/versions/new/", {
        "entry": "kv.lua", "pasted": edited_files()["kv.lua"], "pasted_name": "kv.lua", "note": "mine"})
    assert answer.status_code == 200 and "or an admin may add a version to workload" in answer.content.decode()
    new = page.post("/workloads/new/", {"name": "kv", "entry": "kv.lua", "pasted": edited_files()["kv.lua"],
                                        "pasted_name": "", "description": ""})
    assert new.status_code == 200 and TAKEN in new.content.decode()
    assert WorkloadVersion.objects.count() == 1


def test_a_bundle_reuses_another_users_version_of_the_same_files_but_adds_none_to_it():
    owner = make_user(roles.OPERATOR, "wo-bundle-owner")
    version = workload_save(user=owner, name="kv", files=kv_files(), entry="kv.lua")
    scenario = services.scenario_create(user=owner, name="kv owned", workload_version=version,
                                        dataset=DatasetFactory(name="kv-owned"), options={})
    log = (Path(__file__).parent / "data" / "sysbench" / "mysql_oltp_point_select.txt").read_text()
    run = services.results_import(files=[("a.log", log)], target=TargetFactory(), scenario=scenario)
    bundle = json.loads(services.bundle_json(services.run_export(run=run)))
    importer = make_user(roles.OPERATOR, "wo-bundle-importer")
    bundle["scenarios"][0]["workload"]["expected_errors_pct"] = 40.0
    assert services.bundle_import(bundle=bundle, user=importer).jobs.get().scenario.workload_version == version
    version.workload.refresh_from_db()
    assert version.workload.expected_errors_pct is None  # the owner's setting, not the importer's
    bundle["scenarios"][0]["workload"]["files"] = edited_files()
    with pytest.raises(services.BundleRejected, match=rf"scenarios\[0\]\.workload\.name: {TAKEN}"):
        services.bundle_import(bundle=bundle, user=importer)
    assert WorkloadVersion.objects.count() == 1


# ---------------------------------------------------------------- multipart file names


def _multipart(fields: dict[str, str], files: list[tuple[str, str]]) -> tuple[bytes, str]:
    """A multipart body written by hand: Django's test client keeps only a file's base name, as a browser might not."""
    boundary = "wo-boundary-7d1e"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'
             for name, value in fields.items()]
    parts += [f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{filename}"\r\n'
              f"Content-Type: text/x-lua\r\n\r\n{text}\r\n" for filename, text in files]
    return ("".join(parts) + f"--{boundary}--\r\n").encode(), f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize("sent", ["../kv.lua", "lib/kv.lua", "..\\kv.lua", "/etc/kv.lua"])
def test_a_multipart_file_name_with_a_folder_is_refused_naming_it_not_stored_cut(sent):
    api = client_for(make_user(roles.OPERATOR, "wo-multipart"))
    files = kv_files()
    body, content_type = _multipart({"name": "kv", "entry": "kv.lua"},
                                    [(sent, files["kv.lua"]), ("kv_common.lua", files["kv_common.lua"])])
    answer = api.post("/api/v1/workloads/", data=body, content_type=content_type)
    assert answer.status_code == 400, answer.content
    message = json.dumps(answer.json()["files"])
    assert "may not hold a folder or '..'" in message and json.dumps(repr(sent))[1:-1] in message
    assert not Workload.objects.exists()
    # The same files under their own names are taken.
    body, content_type = _multipart({"name": "kv", "entry": "kv.lua"}, list(files.items()))
    taken = api.post("/api/v1/workloads/", data=body, content_type=content_type)
    assert taken.status_code == 201, taken.content
    assert set(WorkloadVersion.objects.get().files) == {"kv.lua", "kv_common.lua"}


def test_a_multipart_file_named_dot_dot_is_refused_not_dropped():
    api = client_for(make_user(roles.OPERATOR, "wo-dotdot"))
    files = kv_files()
    body, content_type = _multipart({"name": "kv", "entry": "kv.lua"}, [*files.items(), ("..", "x = 1")])
    answer = api.post("/api/v1/workloads/", data=body, content_type=content_type)
    assert answer.status_code == 400 and "'..'" in json.dumps(answer.json()["files"]), answer.content


def test_a_workload_no_scenario_uses_is_deleted_by_its_owner_only_and_one_in_use_is_kept_naming_the_scenario():
    owner = make_user(roles.OPERATOR, "wo-del-owner")
    other = make_user(roles.OPERATOR, "wo-del-other")
    version = workload_save(user=owner, name="kv-del", files=kv_files(), entry="kv.lua")
    workload = version.workload
    workload_approve(user=make_user(roles.ADMIN, "wo-del-admin"), version=version)
    scenario = services.scenario_create(user=owner, name="kv in use", workload_version=version,
                                        dataset=DatasetFactory(name="kv-del"), options={})
    api_owner, api_other = client_for(owner), client_for(other)
    # Another operator: 403 through the API, and the page says so; nothing deleted.
    refused = api_other.delete(f"/api/v1/workloads/{workload.pk}/")
    assert refused.status_code == 403, refused.content
    assert "or an admin may delete workload 'kv-del'" in refused.json()["detail"]
    page = PageClient()
    page.force_login(other)
    assert 'data-testid="workload-delete"' not in page.get(f"/workloads/{workload.pk}/").content.decode()
    said = page.post(f"/workloads/{workload.pk}/delete/", follow=True).content.decode()
    assert "or an admin may delete workload" in said
    # Its owner, while a scenario uses it: 409 naming the scenario.
    in_use = api_owner.delete(f"/api/v1/workloads/{workload.pk}/")
    assert in_use.status_code == 409, in_use.content
    assert "'kv in use'" in in_use.json()["detail"]
    assert Workload.objects.filter(pk=workload.pk).exists() and WorkloadVersion.objects.filter(pk=version.pk).exists()
    # Once the scenario is gone: the page shows the button, and deleting takes the versions and approvals along.
    scenario.delete()
    page.force_login(owner)
    assert 'data-testid="workload-delete"' in page.get(f"/workloads/{workload.pk}/").content.decode()
    done = page.post(f"/workloads/{workload.pk}/delete/", follow=True)
    assert "Workload kv-del is deleted" in done.content.decode()
    assert not Workload.objects.filter(pk=workload.pk).exists()
    assert not WorkloadVersion.objects.filter(workload_id=workload.pk).exists()
    # A viewer may not even ask.
    assert client_for(make_user(roles.VIEWER, "wo-del-viewer")).delete(
        f"/api/v1/workloads/{workload.pk}/").status_code == 403
