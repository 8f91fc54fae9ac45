"""A campaign's webhook: the URL is a secret (write-only, encrypted, never shown), it cannot
point benchapp at this machine or its private network, in any spelling or through DNS, and a failing receiver
is retried by Celery with back-off from a task of its own."""
from __future__ import annotations

import socket

import pytest
from celery.exceptions import Retry
from django.contrib.auth import get_user_model
from django.test import Client

from campaigns import monitoring, roles, tasks
from campaigns.forms import CampaignForm
from campaigns.models import Campaign, Regression
from campaigns.webhooks import WebhookRefused, webhook_post, webhook_url_check
from tests.factories import CampaignFactory, ScenarioFactory, TargetFactory
from tests.helpers.monitoring import WebhookReceiver, history
from tests.helpers.users import API, client_for, make_user

SECRET_URL = "https://hooks.slack.com/services/T000/B000/s3cr3t-t0k3n"

# Every spelling reaches this machine, its network or the cloud's metadata service.
BAD_URLS = [
    "http://127.0.0.1:6379/", "http://2130706433/", "http://127.1/", "http://0x7f000001/", "http://0177.0.0.1/",
    "http://127.0.0.2/", "http://0.0.0.0:6379/", "http://0/", "http://[::1]/", "http://[::ffff:127.0.0.1]/",
    "http://[::]/", "http://localhost:6379/", "http://LOCALHOST./", "http://169.254.169.254/latest/meta-data/",
    "http://[fe80::1]/", "http://10.0.0.1/", "http://192.168.1.1/", "http://172.16.0.1/", "http://100.64.0.1/",
    "http://[fd00::1]/", "http://224.0.0.1/", "http://240.0.0.1/", "http://255.255.255.255/",
    "http://[2002:7f00:1::]/", "ftp://example.com/", "gopher://127.0.0.1:6379/_FLUSHALL", "file:///etc/passwd",
    "javascript:alert(1)", "http://user:pw@example.com/", "http:///nohost", "http://exa mple.com/",
]


@pytest.fixture
def operator():
    return client_for(make_user(roles.OPERATOR, "webhook-operator"))


@pytest.fixture
def viewer():
    return client_for(make_user(roles.VIEWER, "webhook-viewer"))


# ---------------------------------------------------------------- write-only


@pytest.mark.django_db
def test_the_url_is_stored_encrypted_and_nobody_sees_it_in_the_api_or_the_pages(operator, viewer, role_client):
    created = operator.post(f"{API}/campaigns/", {"name": "nightly", "threads": [1], "webhook_url": SECRET_URL},
                            format="json")
    assert created.status_code == 201, created.content
    assert "webhook_url" not in created.json() and created.json()["has_webhook"] is True
    campaign = Campaign.objects.get(name="nightly")
    assert campaign.get_webhook_url() == SECRET_URL and "s3cr3t" not in campaign.webhook_url_encrypted
    for client in (viewer, operator):
        for url in (f"{API}/campaigns/", f"{API}/campaigns/{campaign.pk}/", "/api/schema/"):
            assert "s3cr3t" not in client.get(url).content.decode(), url
        assert client.get(f"{API}/campaigns/{campaign.pk}/").json()["has_webhook"] is True
    page = role_client("viewer").get(f"/campaigns/{campaign.pk}/").content.decode()
    assert "s3cr3t" not in page and 'data-testid="webhook">set<' in page
    edit = role_client("operator").get(f"/campaigns/{campaign.pk}/edit/").content.decode()
    assert "s3cr3t" not in edit and "A webhook is set" in edit
    admin = Client()
    admin.force_login(get_user_model().objects.create_superuser("root-webhook", password="pw-12345678"))
    assert "s3cr3t" not in admin.get(f"/admin/campaigns/campaign/{campaign.pk}/change/").content.decode()


@pytest.mark.django_db
def test_leaving_it_out_keeps_it_and_an_empty_string_or_the_checkbox_clears_it(operator):
    campaign = CampaignFactory(webhook_url=SECRET_URL)
    assert operator.patch(f"{API}/campaigns/{campaign.pk}/", {"description": "x"}, format="json").status_code == 200
    campaign.refresh_from_db()
    assert campaign.get_webhook_url() == SECRET_URL
    cleared = operator.patch(f"{API}/campaigns/{campaign.pk}/", {"webhook_url": ""}, format="json")
    assert cleared.status_code == 200 and cleared.json()["has_webhook"] is False
    campaign.refresh_from_db()
    assert not campaign.has_webhook()

    campaign.set_webhook_url(SECRET_URL)
    campaign.save()
    data = {"name": campaign.name, "threads": "1", "repetitions": "1", "clients_min": "1", "scale_factor": "1",
            "webhook_url": "", "clear_webhook": "on"}
    form = CampaignForm(data=data, instance=campaign)
    assert form.is_valid(), form.errors
    form.save_by(user=None)
    campaign.refresh_from_db()
    assert not campaign.has_webhook()


# ---------------------------------------------------------------- addresses refused when saving


@pytest.mark.django_db
@pytest.mark.parametrize("url", BAD_URLS)
def test_saving_a_url_that_reaches_a_local_or_private_address_is_a_400_naming_the_field(operator, url):
    response = operator.post(f"{API}/campaigns/", {"name": "evil", "threads": [1], "webhook_url": url}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()) == ["webhook_url"]
    campaign = CampaignFactory()
    patch = operator.patch(f"{API}/campaigns/{campaign.pk}/", {"webhook_url": url}, format="json")
    assert patch.status_code == 400 and "webhook_url" in patch.json()


@pytest.mark.django_db
def test_the_form_names_the_webhook_field():
    form = CampaignForm(data={"name": "evil", "threads": "1", "repetitions": "1", "clients_min": "1",
                              "scale_factor": "1", "webhook_url": "http://2130706433:6379/"})
    assert not form.is_valid()
    assert "loopback" in " ".join(form.errors["webhook_url"])


def test_the_setting_allows_loopback_and_private_receivers_but_never_link_local_or_multicast():
    webhook_url_check("http://127.0.0.1:8080/hook", allow_private=True)
    webhook_url_check("http://10.1.2.3/hook", allow_private=True)
    for url in ("http://169.254.169.254/", "http://[fe80::1]/", "http://224.0.0.1/", "http://0.0.0.0/"):
        with pytest.raises(WebhookRefused):
            webhook_url_check(url, allow_private=True)
    webhook_url_check("https://93.184.215.14/hook", allow_private=False)


# ---------------------------------------------------------------- checked again when sending


def _fake_dns(monkeypatch, answers: dict[str, list[str]]) -> list[str]:
    """The names a test owns resolve as it says; every other lookup is the real one. Returns the lookups made."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            asked.append(host)
            address = answers[host][min(len(asked), len(answers[host])) - 1]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


@pytest.mark.django_db
def test_a_name_that_resolves_to_a_private_address_at_send_time_is_refused_and_not_retried(monkeypatch, settings):
    receiver = WebhookReceiver()
    try:
        port = receiver.server.server_port
        # Public when saved, this machine when sent (DNS rebinding).
        asked = _fake_dns(monkeypatch, {"hooks.example.test": ["93.184.215.14", "127.0.0.1"]})
        url = f"http://hooks.example.test:{port}/hook"
        webhook_url_check(url, allow_private=False)
        target, scenario = TargetFactory(), ScenarioFactory()
        campaign = CampaignFactory(targets=[target], scenarios=[scenario], webhook_url=url)
        history(campaign, target, scenario, [10000, 10300, 9700, 10150, 9850])
        (current,) = history(campaign, target, scenario, [9000])
        ids = monitoring.run_finished(run_id=current.pk)
        tasks.webhook_notify_task.apply(args=[current.pk, ids])  # eager: a retry would run at once
        assert receiver.bodies == [] and asked == ["hooks.example.test", "hooks.example.test"]
        error = Regression.objects.get().notification_error
        assert "webhook refused" in error and "127.0.0.1 is a loopback address" in error
        assert "hooks.example.test" not in error
    finally:
        receiver.close()


def test_the_connection_goes_to_the_address_that_was_checked(monkeypatch):
    receiver = WebhookReceiver()
    try:
        # The name resolves once, to the receiver; a second lookup (the rebinding) would give 10.255.255.1.
        asked = _fake_dns(monkeypatch, {"hook.example.test": ["127.0.0.1", "10.255.255.1"]})
        webhook_post(f"http://hook.example.test:{receiver.server.server_port}/hook", {"text": "hi"},
                     allow_private=True)
        assert receiver.bodies == [{"text": "hi"}] and asked == ["hook.example.test"]
    finally:
        receiver.close()


# ---------------------------------------------------------------- retries


def test_the_task_retries_a_failing_receiver_with_exponential_back_off_within_time_limits():
    task = tasks.webhook_notify_task
    assert task.autoretry_for == (monitoring.WebhookFailed,)
    assert task.max_retries == 5 and task.retry_backoff == 2 and task.retry_backoff_max == 300
    assert task.retry_jitter is True and task.soft_time_limit == 30 and task.time_limit == 60


def test_a_failing_post_raises_celerys_retry_with_a_back_off_countdown(monkeypatch):
    def failing(**kwargs):
        raise monitoring.WebhookFailed("HTTP 503")

    monkeypatch.setattr(monitoring, "webhook_notify", failing)
    seen: list[dict] = []

    def retry(*args, **kwargs):
        seen.append(kwargs)
        raise Retry("retrying", when=kwargs.get("countdown"))

    monkeypatch.setattr(tasks.webhook_notify_task, "retry", retry)
    with pytest.raises(Retry):
        tasks.webhook_notify_task(1, [1])
    assert isinstance(seen[0]["exc"], monitoring.WebhookFailed)
    assert 0 <= seen[0]["countdown"] <= 2  # the first wait: up to retry_backoff seconds (jitter)
