"""Password guessing is throttled: the token endpoint per username and per address
(token buckets in Redis), the login page by django-axes. Past the limit a guess is refused before any
password is hashed, and a correct login works again once the cool-off has passed.

The hasher below counts hash computations, which is what each unthrottled guess cost."""
from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import MD5PasswordHasher
from django.db.models import F
from django.test import Client
from pyrate_limiter import WallClock
from rest_framework.test import APIClient, APIRequestFactory

from campaigns.api import throttling
from tests.helpers.users import API

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-password-1"
TOKEN_URL = f"{API}/auth/token/"


class CountingHasher(MD5PasswordHasher):
    """MD5 (fast) with a count of hashes computed: verify() computes one through encode()."""

    algorithm = "counting_md5"
    computed = 0

    def encode(self, password: str, salt: str) -> str:
        CountingHasher.computed += 1
        return super().encode(password, salt)


@pytest.fixture
def hashes(settings: Any) -> type[CountingHasher]:
    settings.PASSWORD_HASHERS = [f"{__name__}.CountingHasher"]
    CountingHasher.computed = 0
    return CountingHasher


@pytest.fixture
def alice(hashes: type[CountingHasher]) -> Any:
    user = get_user_model().objects.create_user("alice", password=PASSWORD)
    hashes.computed = 0
    return user


class LaterClock(WallClock):
    """The wall clock, moved forward by `ahead_ms`: stands for waiting out a cool-off."""

    ahead_ms = 0

    def now(self) -> int:
        return super().now() + self.ahead_ms


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> LaterClock:
    later = LaterClock()
    monkeypatch.setattr(throttling.RedisRateThrottle, "clock", later)
    return later


# ---------------------------------------------------------------- the token endpoint


def _token(client: APIClient, username: Any, password: str, **extra: Any) -> Any:
    return client.post(TOKEN_URL, {"username": username, "password": password}, format="json", **extra)


def test_the_eleventh_wrong_password_for_a_username_is_refused_unhashed_until_the_cool_off(alice, hashes, clock):
    client = APIClient()
    for _ in range(10):
        assert _token(client, "alice", "wrong-guess").status_code == 400
    assert hashes.computed == 10

    refused = _token(client, "alice", "wrong-guess")
    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled"
    # 10 per hour: the next attempt is allowed 6 minutes after the burst.
    assert 300 < int(refused["Retry-After"]) <= 360
    # Refused before the password is looked at, even the right one, from that address.
    assert _token(client, "alice", PASSWORD).status_code == 429
    assert hashes.computed == 10
    # Alice herself, from another address, is not locked out by someone else's guesses (the attack: ten anonymous
    # wrong passwords kept the real one out for six minutes).
    elsewhere = _token(APIClient(), " alice ", PASSWORD, REMOTE_ADDR="10.9.8.7")
    assert elsewhere.status_code == 200 and elsewhere.json()["username"] == "alice"
    assert hashes.computed == 11
    # The guessing address keeps guessing: refused, and none of it spends alice's budget from every address.
    for _ in range(200):
        assert _token(client, "alice", "wrong-guess").status_code == 429
    assert _token(APIClient(), "alice", PASSWORD, REMOTE_ADDR="10.9.8.6").status_code == 200

    clock.ahead_ms = 361_000
    response = _token(client, "alice", PASSWORD)
    assert response.status_code == 200 and response.json()["username"] == "alice"


def test_guesses_at_one_user_spread_over_many_addresses_stop_at_the_users_own_limit(alice, hashes):
    """Every address gets 10 guesses at alice an hour, and alice 100 from all of them together: a guesser with many
    machines gains little, and only one with more than ten addresses can keep alice herself out."""
    for n in range(10):
        guesser = APIClient(REMOTE_ADDR=f"10.3.0.{n}")
        for _ in range(10):
            assert _token(guesser, "alice", "wrong-guess").status_code == 400
    assert hashes.computed == 100
    assert _token(APIClient(REMOTE_ADDR="10.3.1.1"), "alice", "wrong-guess").status_code == 429
    assert _token(APIClient(REMOTE_ADDR="10.3.1.2"), "bob", "wrong-guess").status_code == 400  # another user is not
    assert hashes.computed == 101


def test_an_address_guessing_many_usernames_is_refused_whatever_forwarded_for_it_claims(hashes):
    client = APIClient()
    for n in range(60):  # the address's limit per hour
        assert _token(client, f"user{n}", "guess").status_code == 400
    assert hashes.computed == 60
    assert _token(client, "user60", "guess").status_code == 429
    # A client-set X-Forwarded-For is not believed: no trusted proxy is configured.
    assert _token(client, "user61", "guess", HTTP_X_FORWARDED_FOR="203.0.113.9").status_code == 429
    assert hashes.computed == 60
    # Another address is not affected.
    assert _token(client, "user62", "guess", REMOTE_ADDR="10.1.2.3").status_code == 400


def test_parallel_guesses_cannot_all_slip_under_the_limit():
    """20 threads hit the username throttle at once: the Redis script counts each, exactly 10 pass."""
    factory = APIRequestFactory()
    answers: list[bool] = []
    barrier = threading.Barrier(20)

    def guess() -> None:
        request = factory.post(TOKEN_URL, {"username": "racer", "password": "x"}, format="json")
        throttle = throttling.TokenUsernameThrottle()
        from rest_framework.parsers import JSONParser
        from rest_framework.request import Request

        barrier.wait()
        answers.append(throttle.allow_request(Request(request, parsers=[JSONParser()]), None))

    threads = [threading.Thread(target=guess) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [False] * 10 + [True] * 10


@pytest.mark.parametrize("body", [
    b"[1, 2]", b'{"username": {"a": 1}, "password": "x"}', b'{"username": ["alice"], "password": "x"}',
    b'{"username": 12, "password": 3}', b'{"username": "' + b"a" * 5000 + b'", "password": "x"}',
    b'{"username": "alice"', b'"alice"', b"null",
])
def test_odd_token_requests_are_400_not_500(body):
    response = APIClient().post(TOKEN_URL, body, content_type="application/json")
    assert response.status_code == 400


def test_throttle_settings_apply_per_request(settings, alice):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"token-address": "2/hour", "token-username": "50/hour"}}
    client = APIClient()
    assert [_token(client, "alice", "nope").status_code for _ in range(3)] == [400, 400, 429]


# ---------------------------------------------------------------- the login page (django-axes)


def _login(client: Client, username: str, password: str, **extra: Any) -> Any:
    return client.post("/accounts/login/", {"username": username, "password": password}, **extra)


def _logged_in(response: Any) -> bool:
    return "_auth_user_id" in response.wsgi_request.session


def test_the_login_page_locks_out_after_ten_failures_without_hashing_until_the_cool_off(alice, hashes):
    client = Client()
    for _ in range(9):
        response = _login(client, "alice", "wrong-guess")
        assert response.status_code == 200 and "Please enter a correct username and password" in response.content.decode()
    locked = _login(client, "alice", "wrong-guess")  # the tenth failure locks
    assert locked.status_code == 429
    assert hashes.computed == 10

    for password in ("wrong-guess", PASSWORD):
        response = _login(client, "alice", password)
        text = response.content.decode()
        assert response.status_code == 429 and not _logged_in(response)
        assert "Too many failed logins" in text and "paused for 15 min" in text
    assert hashes.computed == 10
    # Django's admin login is the same lock.
    assert client.post("/admin/login/", {"username": "alice", "password": PASSWORD}).status_code == 429
    assert hashes.computed == 10

    # The cool-off passes (the failures age by 16 minutes), and the right password logs in.
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(minutes=16))
    response = _login(client, "alice", PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/" and _logged_in(response)


def test_an_address_trying_many_usernames_is_locked_out_and_others_are_not(alice, hashes):
    attacker = Client(REMOTE_ADDR="10.6.6.6")
    for n in range(10):
        _login(attacker, f"guess{n}", "guess")
    response = _login(attacker, "alice", PASSWORD)
    assert response.status_code == 429 and not _logged_in(response)
    assert hashes.computed == 10
    # alice, from her own address, is not locked out by someone else's guesses at other names.
    response = _login(Client(REMOTE_ADDR="10.1.1.1"), "alice", PASSWORD)
    assert response.status_code == 302 and _logged_in(response)


def test_api_failures_are_the_token_throttles_business_not_axes(alice):
    client = APIClient()
    for _ in range(10):
        _token(client, "alice", "wrong-guess")
    assert not AccessAttempt.objects.exists()
    response = _login(Client(), "alice", PASSWORD)
    assert response.status_code == 302 and _logged_in(response)
