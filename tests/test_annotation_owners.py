"""A note is changed or deleted by its author or an admin, and its last editor is recorded (API and run
page); a PATCH that leaves `text` out keeps the note; schedules are deleted by admins, as the README says (an
operator pauses them)."""
from __future__ import annotations

import pytest
from django.test import Client

from campaigns import roles
from campaigns.models import Annotation, CampaignSchedule
from tests.factories import CampaignFactory, RunFactory
from tests.helpers.users import client_for, make_user

pytestmark = pytest.mark.django_db


def test_only_the_author_or_an_admin_edits_or_deletes_a_note_and_the_editor_is_recorded():
    run = RunFactory()
    author, other, admin = (make_user(roles.OPERATOR, "author"), make_user(roles.OPERATOR, "other-operator"),
                            make_user(roles.ADMIN, "the-admin"))
    as_author, as_other, as_admin = client_for(author), client_for(other), client_for(admin)
    note = as_author.post("/api/v1/annotations/", {"run": run.pk, "text": "upgraded"}, format="json").json()
    url = f"/api/v1/annotations/{note['id']}/"
    refused = as_other.patch(url, {"text": "someone else's words"}, format="json")
    assert refused.status_code == 403 and "author or an admin" in refused.json()["detail"]
    assert as_other.patch(url, {"text": ""}, format="json").status_code == 403  # refused before validation
    assert as_other.delete(url).status_code == 403
    assert Annotation.objects.get().text == "upgraded" and Annotation.objects.get().edited_by is None
    # The author: a PATCH of the time alone keeps the text (it was a 400 "write the note").
    moved = as_author.patch(url, {"at": "2026-01-02T03:04:05Z"}, format="json")
    assert moved.status_code == 200, moved.content
    assert moved.json()["text"] == "upgraded" and moved.json()["edited_by"] == "author"
    blank = as_author.patch(url, {"text": "  "}, format="json")
    assert blank.status_code == 400 and list(blank.json()) == ["text"]
    # An admin edits anyone's note, and is named as its editor beside its author.
    edited = as_admin.patch(url, {"text": "upgraded to 10.11.6"}, format="json").json()
    assert edited["created_by"] == "author" and edited["edited_by"] == "the-admin" and edited["edited_at"]
    page = Client()
    page.force_login(other)
    assert "(author; edited by the-admin)" in page.get(f"/runs/{run.pk}/").content.decode()
    assert as_author.delete(url).status_code == 204
    # A note benchapp recorded: only an admin changes it.
    auto = Annotation.objects.create(run=run, at=run.created_at, text="version changed", kind=Annotation.Kind.AUTO)
    assert as_author.patch(f"/api/v1/annotations/{auto.pk}/", {"text": "x"}, format="json").status_code == 403
    assert as_admin.delete(f"/api/v1/annotations/{auto.pk}/").status_code == 204


def test_an_operator_pauses_a_schedule_and_an_admin_deletes_it():
    campaign = CampaignFactory()
    operator, admin = client_for(make_user(roles.OPERATOR)), client_for(make_user(roles.ADMIN))
    made = operator.post("/api/v1/schedules/", {"campaign": campaign.pk, "cron": "0 2 * * *"}, format="json")
    url = f"/api/v1/schedules/{made.json()['id']}/"
    assert operator.patch(url, {"enabled": False}, format="json").status_code == 200
    assert operator.delete(url).status_code == 403
    page = Client()
    page.force_login(make_user(roles.OPERATOR, "page-operator"))
    schedule = CampaignSchedule.objects.get()
    assert page.post(f"/schedules/{schedule.pk}/delete/").status_code == 403
    html = page.get(f"/campaigns/{campaign.pk}/").content.decode()
    assert f"/schedules/{schedule.pk}/toggle/" in html and f"/schedules/{schedule.pk}/delete/" not in html
    assert admin.delete(url).status_code == 204 and not CampaignSchedule.objects.exists()
