"""Password reset links never land in a log: reset is offered only with a real e-mail backend."""
from __future__ import annotations

import logging
import re

import pytest
from django.core import mail

from tests.helpers.users import make_user


@pytest.mark.django_db
@pytest.mark.parametrize("backend", ["django.core.mail.backends.console.EmailBackend",
                                     "django.core.mail.backends.filebased.EmailBackend",
                                     "django.core.mail.backends.locmem.EmailBackend"])
def test_without_a_real_mail_backend_there_is_no_reset_and_nothing_reaches_the_log(client, settings, backend,
                                                                                   caplog, capsys):
    settings.EMAIL_BACKEND = backend
    user = make_user(None, "forgetful")
    user.email = "forgetful@example.com"
    user.save()
    with caplog.at_level(logging.DEBUG):
        for url in ("/accounts/password_reset/", "/accounts/password_reset/done/", "/accounts/reset/done/",
                    "/accounts/reset/MQ/set-password/"):
            assert client.get(url).status_code == 404, url
        assert client.post("/accounts/password_reset/", {"email": "forgetful@example.com"}).status_code == 404
    printed = capsys.readouterr()
    everything = printed.out + printed.err + caplog.text
    # No e-mail was written anywhere (the console backend prints one with its Subject), so no working link.
    assert "Subject:" not in everything and not re.search(r"/accounts/reset/[\w-]+/[\w-]{20,}/", everything)
    assert mail.outbox == []
    login = client.get("/accounts/login/").content.decode()
    assert "/accounts/password_reset/" not in login and "Ask an administrator" in login


@pytest.mark.django_db
def test_with_a_real_mail_backend_the_link_goes_by_mail_only(client, settings, capsys):
    # smtp is what production uses; the test swaps in locmem for the send itself, after the check.
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    login = client.get("/accounts/login/").content.decode()
    assert "/accounts/password_reset/" in login
    assert client.get("/accounts/password_reset/").status_code == 200
