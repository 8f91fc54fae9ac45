"""Pages that print a time with its zone name the zone the time is rendered in (TIME_ZONE), not
a fixed " UTC": the share link's answer, the shared page's note and the print-ready report."""
from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from django.test import Client, override_settings

from campaigns import roles
from campaigns.api.throttling import throttle_reset
from tests.helpers.users import make_user
from tests.helpers.worlds import make_world, share_link_create, share_link_url

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _share_buckets_refilled() -> Iterator[None]:
    throttle_reset()
    yield
    throttle_reset()


@pytest.mark.parametrize("zone, names", [("Asia/Tokyo", ("JST",)), ("UTC", ("UTC",))])
def test_times_name_the_zone_they_are_shown_in(zone, names):
    world = make_world()
    page = Client()
    page.force_login(make_user(roles.OPERATOR, "zone-op"))
    stamp = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d (\w+)")
    with override_settings(TIME_ZONE=zone):
        made = share_link_create(page, world["query"], shows="report")
        answer = made.content.decode().split("Copy it now", 1)[1].split("</p>", 1)[0]
        shared = Client().get(share_link_url(made)).content.decode()
        note = shared.split('data-testid="shared-note"', 1)[1].split("</p>", 1)[0]
        report = page.get(f"/compare/report/?{world['query']}").content.decode()
        generated = report.split("generated", 1)[1].split("by benchapp", 1)[0]
    for text in (answer, note, generated):
        found = stamp.search(text)
        assert found and found.group(1) in names, (zone, text)
