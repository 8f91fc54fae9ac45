"""One e-mail rule and one Campaign.recipients() for every way in (the API stored addresses one
per line that the notifier then read as one broken recipient; the web form checked none), and one webhook URL
check for the form and the API (campaigns/addresses.py)."""
from __future__ import annotations

import pytest
from django.core import mail

from campaigns import monitoring, roles
from campaigns.forms import CampaignForm
from campaigns.models import Campaign, Regression
from tests.factories import CampaignFactory, RunFactory, ScenarioFactory, TargetFactory
from tests.helpers.users import API, client_for, make_user

pytestmark = pytest.mark.django_db
FORM = {"name": "mailing", "threads": "1", "repetitions": "1", "clients_min": "1", "scale_factor": "1",
        "client_tries": "2"}


def _pending_regression(campaign: Campaign) -> Regression:
    run = RunFactory(campaign=campaign)
    return Regression.objects.create(campaign=campaign, run=run, target=TargetFactory(), scenario=ScenarioFactory(),
                                     threads=8, metric=Regression.Metric.QPS, kind=Regression.Kind.REGRESSION,
                                     baseline_value=1000.0, current_value=800.0, change_pct=-20.0, method="threshold")


def test_two_addresses_saved_through_the_api_are_two_recipients_of_the_notice():
    operator = client_for(make_user(roles.OPERATOR))
    made = operator.post(f"{API}/campaigns/", {"name": "nightly", "threads": [1],
                                               "notify_emails": "ops@example.com, dev@example.com"}, format="json")
    assert made.status_code == 201, made.content
    campaign = Campaign.objects.get(name="nightly")
    assert campaign.notify_emails == "ops@example.com\ndev@example.com"
    assert campaign.recipients() == ["ops@example.com", "dev@example.com"]
    regression = _pending_regression(campaign)
    monitoring.regressions_notify(run=regression.run)
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["ops@example.com", "dev@example.com"]
    regression.refresh_from_db()
    assert regression.notification_error == ""


def test_rows_stored_before_with_commas_or_semicolons_still_reach_everyone():
    campaign = CampaignFactory(notify_emails="a@example.com, b@example.com;c@example.com\nd@example.com")
    assert campaign.recipients() == ["a@example.com", "b@example.com", "c@example.com", "d@example.com"]


def test_the_form_the_api_and_the_model_refuse_the_same_bad_address_naming_the_field():
    form = CampaignForm(data={**FORM, "notify_emails": "ops@example.com\nnot an address"})
    assert not form.is_valid() and form.errors["notify_emails"] == ["'not' is not an e-mail address"]
    good = CampaignForm(data={**FORM, "notify_emails": "ops@example.com; dev@example.com"})
    assert good.is_valid(), good.errors
    assert good.save_by(user=None).notify_emails == "ops@example.com\ndev@example.com"
    operator = client_for(make_user(roles.OPERATOR))
    answer = operator.post(f"{API}/campaigns/", {"name": "c", "threads": [1], "notify_emails": "x@y"}, format="json")
    assert answer.status_code == 400 and answer.json() == {"notify_emails": ["'x@y' is not an e-mail address"]}
    campaign = Campaign(name="model", threads=[1], notify_emails="ok@example.com, @bad")
    with pytest.raises(Exception, match="is not an e-mail address"):
        campaign.full_clean()


def test_the_form_and_the_api_refuse_a_webhook_url_with_the_same_words():
    url = "http://127.0.0.1:6379/"
    form = CampaignForm(data={**FORM, "webhook_url": url})
    assert not form.is_valid()
    api = client_for(make_user(roles.OPERATOR)).post(f"{API}/campaigns/", {"name": "w", "threads": [1],
                                                                          "webhook_url": url}, format="json")
    assert api.status_code == 400 and api.json()["webhook_url"] == form.errors["webhook_url"]
    assert "loopback" in form.errors["webhook_url"][0]
