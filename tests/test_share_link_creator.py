"""A share link speaks for its creator: it stops opening (the same plain 404 as a revoked one) once the
creator is deactivated or holds no role any more, and opens again when the account is given back."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Group
from django.test import Client

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


def test_a_link_ends_with_its_creators_account_and_comes_back_with_it():
    world = make_world()
    creator = make_user(roles.OPERATOR, "link-maker")
    page = Client()
    page.force_login(creator)
    comparison = share_link_url(share_link_create(page, world["query"]))
    report = share_link_url(share_link_create(page, world["query"], shows="report"))
    anonymous = Client()
    assert anonymous.get(comparison).status_code == 200 and anonymous.get(report).status_code == 200

    creator.is_active = False
    creator.save()
    for url in (comparison, report, comparison + "comparison.csv"):
        answer = anonymous.get(url)
        assert (answer.status_code, answer.content) == (404, b"Not found.\n"), url

    creator.is_active = True
    creator.save()
    assert anonymous.get(comparison).status_code == 200
    creator.groups.clear()  # every role taken away, the account still active
    assert anonymous.get(comparison).status_code == 404
    creator.groups.add(Group.objects.get_or_create(name=roles.VIEWER)[0])  # any role: they can read it again
    assert anonymous.get(comparison).status_code == 200
    creator.groups.clear()
    creator.is_superuser = True
    creator.save()
    assert anonymous.get(report).status_code == 200
