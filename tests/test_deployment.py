"""Deployment settings: a Content-Security-Policy on every page that the pages keep, secure
cookies and HSTS over HTTPS, and `manage.py check --deploy` clean with the production settings of docs/install.md."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.users import make_user

ROOT = Path(__file__).resolve().parent.parent
PRODUCTION = {"DEBUG": "false", "BENCHAPP_HTTPS": "true", "ALLOWED_HOSTS": "bench.example.com",
              "CSRF_TRUSTED_ORIGINS": "https://bench.example.com",
              "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend"}


@pytest.mark.slow  # a fresh Django process: 2.4 s
def test_check_deploy_is_clean_with_the_production_settings_of_the_readme():
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    done = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], cwd=ROOT,
                          env={**env, **PRODUCTION}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "no issues" in done.stdout, done.stdout + done.stderr
    guide = (ROOT / "docs" / "install.md").read_text()
    for name, value in PRODUCTION.items():
        assert f"{name}={value}" in guide, f"docs/install.md's production settings lack {name}={value}"


@pytest.mark.django_db
def test_every_page_carries_a_policy_without_inline_scripts_and_has_none(client):
    user = make_user("admin", "csp-admin")
    client.force_login(user)
    for url in ("/", "/targets/", "/campaigns/", "/runs/", "/compare/", "/seeds/", "/scenarios/new/",
                "/campaigns/new/", "/accounts/login/", "/admin/"):
        response = client.get(url, follow=True)
        assert response.status_code == 200, url
        policy = response["Content-Security-Policy"]
        directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
        assert directives["script-src"] == "'self'" and directives["frame-ancestors"] == "'none'", policy
        assert "unsafe-inline" not in directives["script-src"] + directives["style-src"]
        html = response.content.decode()
        inline = [tag for tag in re.findall(r"<script\b[^>]*>", html)
                  if "src=" not in tag and "application/json" not in tag]
        assert inline == [], (url, inline)
        assert not re.search(r"\son[a-z]+=\"", html), f"{url} has an inline event handler"


def test_over_https_cookies_are_secure_and_hsts_is_sent():
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG")}
    code = ("import django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'benchapp.settings'; django.setup(); "
            "from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
            "s.SECURE_HSTS_SECONDS, s.SECURE_SSL_REDIRECT)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**env, **PRODUCTION}, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["True", "True", "31536000", "True"], done.stderr


def test_the_policy_built_once_is_django_csps_and_per_response_changes_still_apply(rf, settings):
    from csp.constants import NONCE
    from csp.middleware import CSPMiddleware as DjangoCSPMiddleware
    from django.http import HttpResponse

    from benchapp.middleware import CSPMiddleware

    def answer(request: Any) -> HttpResponse:
        return HttpResponse("ok")

    ours, theirs = CSPMiddleware(answer), DjangoCSPMiddleware(answer)
    for path in ("/", "/api/v1/runs/", "/api/docs/"):
        mine, reference = ours(rf.get(path)), theirs(rf.get(path))
        assert mine.get("Content-Security-Policy") == reference.get("Content-Security-Policy"), path
    assert "Content-Security-Policy" not in ours(rf.get("/api/docs/"))  # an excluded prefix stays excluded

    # A view's own change (django-csp's decorators) and a nonce go through django-csp.
    def updated(request: Any) -> HttpResponse:
        response = HttpResponse("ok")
        response._csp_update = {"img-src": ["https://img.example"]}  # what @csp_update sets
        return response

    assert "https://img.example" in CSPMiddleware(updated)(rf.get("/"))["Content-Security-Policy"]

    def with_nonce(request: Any) -> HttpResponse:
        return HttpResponse(str(request.csp_nonce))

    # Other settings, another header; one that asks for nonces gets each response's own.
    settings.CONTENT_SECURITY_POLICY = {"DIRECTIVES": {"default-src": ["'none'"], "script-src": ["'self'", NONCE]}}
    def directives(response: Any) -> dict[str, str]:
        return dict(part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";"))

    assert directives(ours(rf.get("/"))) == {"default-src": "'none'", "script-src": "'self'"}
    response = CSPMiddleware(with_nonce)(rf.get("/"))
    assert directives(response)["script-src"] == f"'self' 'nonce-{response.content.decode()}'"


def test_the_install_guide_and_the_shipped_proxy_examples_set_the_number_of_proxies():
    """The install guide and the proxy examples set BENCHAPP_NUM_PROXIES=1: without it, behind the documented TLS
    proxy every request came from 127.0.0.1 (one lock-out for everyone)."""
    root = ROOT
    assert "BENCHAPP_NUM_PROXIES=1" in (root / "docs" / "install.md").read_text()
    for example in ("deploy/nginx/benchapp.conf", "deploy/Caddyfile"):
        text = (root / example).read_text()
        assert "BENCHAPP_NUM_PROXIES=1" in text and "/metrics" in text and "127.0.0.1:8000" in text, example
    # nginx overwrites what a client sent, so that the one address benchapp believes is the one nginx saw.
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in (root / "deploy/nginx/benchapp.conf").read_text()
