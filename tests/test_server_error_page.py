"""The 500 page: styled like the others and showing the request id its log lines carry, so a user can
quote it."""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import path

handler500 = "benchapp.middleware.server_error"


def _broken(request):
    raise KeyError("workload:newuser-pointsel@v1")


urlpatterns = [path("broken/", _broken)]


@pytest.mark.django_db
def test_a_server_error_answers_a_styled_page_with_the_request_id(settings):
    settings.ROOT_URLCONF = __name__
    answer = Client(raise_request_exception=False).get("/broken/", HTTP_X_REQUEST_ID="req-43-abc")
    page = answer.content.decode()
    assert answer.status_code == 500 and answer["X-Request-ID"] == "req-43-abc"
    assert "campaigns/build/app.css" in page and 'class="card narrow"' in page
    assert '<code data-testid="request-id">req-43-abc</code>' in page
    assert "KeyError" not in page and "newuser-pointsel" not in page
