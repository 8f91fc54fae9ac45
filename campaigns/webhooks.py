"""Webhook URLs: which ones benchapp accepts, and posting to one without being turned against our own network.

A webhook URL is chosen by an operator, so a POST to it must not reach this machine or its private network
(Redis on 127.0.0.1:6379, a cloud's metadata service on 169.254.169.254) unless the deployment allows private
receivers (BENCHAPP_WEBHOOK_ALLOW_PRIVATE). The address is checked when the URL is saved and again when
posting, on what the name resolves to then; the connection goes to that checked address (the Host header,
TLS SNI and certificate check still use the name), so a DNS answer that changes between check and
connection (rebinding) cannot redirect the POST. Redirects are not followed and no proxy is used.

No Django models here: strings and addresses in, exceptions out (settings are read by the callers).
"""
from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

MAX_URL_CHARS = 2000
TIMEOUT_S = 5.0
# campaigns.tasks.webhook_notify_task: retried this many times after the first attempt, waiting about 2, 4, 8,
# 16, 32 s (exponential back-off with jitter, never more than WEBHOOK_BACKOFF_MAX_S).
WEBHOOK_MAX_RETRIES = 5
WEBHOOK_BACKOFF_S = 2
WEBHOOK_BACKOFF_MAX_S = 300

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class WebhookRefused(Exception):
    """The URL or the address it resolves to is not allowed; retrying will not help."""


class WebhookFailed(Exception):
    """The receiver could not be reached or answered with an error; worth retrying."""


def address_problem(address: Address, *, allow_private: bool) -> str | None:
    """Why a webhook may not be sent to this address (None when it may).

    Link-local (cloud metadata), multicast, unspecified and reserved addresses are never allowed; loopback
    and private (RFC 1918, unique-local, shared 100.64/10) ones only with allow_private.
    """
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is not None:
            return address_problem(embedded, allow_private=allow_private)
    if address.is_unspecified or address in _THIS_NETWORK:
        return f"{address} is an unspecified address"
    if address.is_link_local:
        return f"{address} is a link-local address"
    if address.is_multicast:
        return f"{address} is a multicast address"
    if address.is_reserved:
        return f"{address} is a reserved address"
    if address.is_global:
        return None
    if allow_private and (address.is_loopback or address.is_private or address in _SHARED):
        return None
    if address.is_loopback:
        return f"{address} is a loopback address (this machine)"
    return f"{address} is a private or non-public address"


_SHARED = ipaddress.ip_network("100.64.0.0/10")
_THIS_NETWORK = ipaddress.ip_network("0.0.0.0/8")


def _split(url: str) -> tuple[str, str, int, str]:
    """Scheme, host, port and path-with-query of an acceptable URL, or WebhookRefused."""
    if len(url) > MAX_URL_CHARS:
        raise WebhookRefused(f"at most {MAX_URL_CHARS} characters")
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        raise WebhookRefused("a URL has no spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebhookRefused(f"not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise WebhookRefused("only http:// and https:// URLs")
    if not parts.hostname:
        raise WebhookRefused("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise WebhookRefused("credentials in the URL (user@host) are not supported")
    path = parts.path or "/"
    if parts.query:
        path += f"?{parts.query}"
    return parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80), path


def _resolve(host: str, port: int, *, numeric_only: bool = False) -> list[Address]:
    """Every address the host stands for. Numeric spellings (2130706433, 127.1, 0x7f.1, [::1]) are read as the
    C library reads them, so they are checked as what a connection would reach."""
    flags = socket.AI_NUMERICHOST if numeric_only else 0
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=flags)
    addresses: list[Address] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _checked(addresses: list[Address], *, allow_private: bool) -> list[Address]:
    # One refused address refuses the name: a DNS answer mixing public and private addresses is the
    # rebinding trick itself.
    for address in addresses:
        problem = address_problem(address, allow_private=allow_private)
        if problem is not None:
            raise WebhookRefused(f"the webhook's host resolves to {problem}")
    return addresses


def webhook_url_check(url: str, *, allow_private: bool) -> None:
    """Refuses a URL benchapp would never post to (WebhookRefused says why). For saving a URL.

    A numeric host in any spelling, or a name that resolves now, is checked on its addresses. A name that
    does not resolve at the moment is accepted: sending checks again anyway.
    """
    _scheme, host, port, _path = _split(url)
    name = host.rstrip(".").lower()
    if (name == "localhost" or name.endswith(".localhost")) and not allow_private:
        # RFC 6761: always this machine, whatever a resolver says of a spelling it does not know.
        raise WebhookRefused("the webhook's host is localhost, a loopback address (this machine)")
    try:
        addresses = _resolve(host, port, numeric_only=True)
    except (socket.gaierror, UnicodeError):
        try:
            addresses = _resolve(host, port)
        except (socket.gaierror, UnicodeError, OSError):
            return
    _checked(addresses, allow_private=allow_private)


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """HTTP to a host name, connected to an address checked beforehand."""

    def __init__(self, host: str, port: int, *, address: Address, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = str(address)

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to a host name (SNI and certificate checked against it), connected to a checked address."""

    def __init__(self, host: str, port: int, *, address: Address, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=ssl.create_default_context())
        self._address = str(address)

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # type: ignore[attr-defined]


def webhook_post(url: str, payload: dict[str, Any], *, allow_private: bool, timeout_s: float = TIMEOUT_S) -> None:
    """POSTs JSON once. WebhookRefused for a URL or resolved address that is not allowed, WebhookFailed for a
    receiver that cannot be reached or does not answer 2xx. Messages never contain the URL."""
    scheme, host, port, path = _split(url)
    try:
        addresses = _resolve(host, port)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise WebhookFailed(f"the webhook's host does not resolve ({exc})") from None
    address = _checked(addresses, allow_private=allow_private)[0]
    connection_class = _PinnedHTTPSConnection if scheme == "https" else _PinnedHTTPConnection
    connection = connection_class(host, port, address=address, timeout=timeout_s)
    body = json.dumps(payload).encode()
    try:
        connection.request("POST", path, body=body,
                           headers={"Content-Type": "application/json", "User-Agent": "benchapp"})
        response = connection.getresponse()
        response.read(65536)
    except (OSError, http.client.HTTPException) as exc:
        raise WebhookFailed(f"{type(exc).__name__}: {exc}") from None
    finally:
        connection.close()
    if not 200 <= response.status < 300:
        raise WebhookFailed(f"HTTP {response.status}")
