"""Whether a target's endpoint is one of benchapp's own services: its PostgreSQL database or its Redis.

A target is benchmarked with sysbench, whose prepare and cleanup create and drop tables, and probed with our
credentials: pointed at benchapp's own database it would write into it, pointed at its Redis it would talk to the
broker. Host names are resolved the way the client libraries resolve them (getaddrinfo: `2130706433` and `127.1`
are 127.0.0.1), and an address is this machine's when it is a loopback or unspecified address or one that this
machine can bind (the address of one of its interfaces: what the machine's own name usually resolves to). The
check runs when a target is saved and again right before each connection, since a name can resolve elsewhere
by then.
"""
from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

DEFAULT_PGSQL_PORT = 5432
DEFAULT_REDIS_PORT = 6379
# Test sessions create test_benchapp_<session>[_gwN]: benchapp's database as much as the one in use.
_TEST_DATABASE = re.compile(r"^test_benchapp(?:_|$)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Service:
    """One of benchapp's own servers: what it is, where it listens, and (for PostgreSQL) its database."""

    kind: str
    host: str
    port: int
    database: str = ""


def _addresses(host: str, port: int) -> set[str]:
    """The addresses `host` resolves to; an empty host (a Unix socket) is this machine."""
    if not host or host.startswith("/"):
        return {"127.0.0.1"}
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return set()  # does not resolve here: the connection will fail on its own
    return {str(info[4][0]).split("%", 1)[0] for info in infos}


def is_local_address(address: str) -> bool:
    """True when a connection to `address` reaches this machine."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_unspecified:
        return True
    # Only an address of one of this machine's interfaces can be bound (EADDRNOTAVAIL otherwise).
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.bind((str(ip), 0))
    except OSError:
        return False
    return True


def _redis_urls() -> Iterable[str]:
    yield getattr(settings, "REDIS_URL", "")
    yield getattr(settings, "CELERY_BROKER_URL", "")
    yield getattr(settings, "BENCHAPP_CACHE_URL", "")
    for cache in settings.CACHES.values():
        location = cache.get("LOCATION", "")
        if isinstance(location, str):
            yield location
        elif isinstance(location, list | tuple):
            yield from (str(one) for one in location)


def own_services() -> list[Service]:
    """benchapp's PostgreSQL databases (every alias) and Redis servers, as the settings name them."""
    services = []
    for db in settings.DATABASES.values():
        port = int(db.get("PORT") or DEFAULT_PGSQL_PORT)
        services.append(Service("database", str(db.get("HOST") or ""), port, str(db.get("NAME") or "")))
    for url in _redis_urls():
        for one in str(url or "").split(","):
            parts = urlsplit(one.strip())
            if parts.scheme in ("redis", "rediss") and parts.hostname:
                try:
                    port = parts.port or DEFAULT_REDIS_PORT
                except ValueError:
                    continue
                services.append(Service("redis", parts.hostname, port))
    return list(dict.fromkeys(services))


def _is_own_database(name: str, service: Service) -> bool:
    return name.lower() == service.database.lower() or bool(_TEST_DATABASE.match(name))


def _same_server(target_addresses: set[str], service: Service) -> bool:
    service_addresses = _addresses(service.host, service.port)
    if target_addresses & service_addresses:
        return True
    return any(map(is_local_address, target_addresses)) and any(map(is_local_address, service_addresses))


def own_service_problem(*, host: str, port: int | str | None, database: str) -> str | None:
    """Why this endpoint cannot be a target (it is benchapp's own database or Redis), or None."""
    try:
        port_number = int(port or 0)
    except (TypeError, ValueError):
        return None  # the port field's own check says what is wrong with it
    if not host or not port_number:
        return None
    candidates = [s for s in own_services() if s.port == port_number
                  and (s.kind == "redis" or _is_own_database(database or "", s))]
    if not candidates:
        return None
    target_addresses = _addresses(host, port_number)
    for service in candidates:
        if _same_server(target_addresses, service):
            if service.kind == "redis":
                return (f"{host}:{port_number} is benchapp's own Redis (its broker and cache): "
                        "a target cannot point at it")
            return (f"{host}:{port_number} database '{database}' is benchapp's own database: "
                    "a target cannot point at it (another database on that server can be a target)")
    return None


def same_server(host_a: str, host_b: str, port: int | None) -> bool:
    """Whether two targets' hosts (on one port) name the same server as this machine reaches them: the same name,
    an address in common (`localhost` and `127.0.0.1`), or both this machine (its loopback and its own address).
    What a measurement must have to itself, whatever database or target name the other uses."""
    if host_a.strip().lower() == host_b.strip().lower():
        return True
    a, b = _addresses(host_a, port or 0), _addresses(host_b, port or 0)
    if a & b:
        return True
    return bool(a and b) and all(map(is_local_address, a | b))


def server_key(host: str, port: int | None) -> str:
    """One name for a server, whichever of its names a target uses (as same_server tells them apart): this machine
    for any of its own addresses, else the lowest address the host resolves to, else the host as written."""
    addresses = _addresses(host, port or 0)
    if addresses and all(map(is_local_address, addresses)):
        return f"this-machine:{port}"
    return f"{min(addresses) if addresses else host.strip().lower()}:{port}"


def own_server_problem(*, host: str, port: int | str | None) -> str | None:
    """Why a target on this endpoint may not have settings variants (None when it may): it is on a server
    benchapp itself uses, its PostgreSQL or its Redis, whatever the database. A variant changes server-wide
    settings, so on benchapp's own cluster it would change benchapp's (and a lock-out would lock benchapp out);
    such a target still runs campaigns without variants (the demo PostgreSQL target of `make run` is one)."""
    try:
        port_number = int(port or 0)
    except (TypeError, ValueError):
        return None
    if not host or not port_number:
        return None
    target_addresses = _addresses(host, port_number)
    for service in own_services():
        if service.port == port_number and _same_server(target_addresses, service):
            what = "PostgreSQL server (it holds benchapp's own database)" if service.kind == "database" else \
                "Redis (its broker and cache)"
            return (f"{host}:{port_number} is benchapp's own {what}: settings variants change server-wide settings, "
                    "so they are refused on it; the target runs campaigns without variants")
    return None
