"""Demo data for a fresh install: products, a local spec, targets for this machine's MariaDB and PostgreSQL,
and a smoke scenario."""
from __future__ import annotations

import os

from campaigns.execution.hosts import local_host_facts
from campaigns.execution.phases import target_connection
from campaigns.models import Dataset, InstanceSpec, Product, Scenario, Target
from campaigns.probes import ProbeError, server_info
from campaigns.services.datasets import dataset_create
from campaigns.services.scenarios import scenario_create
from campaigns.services.targets import target_create, target_update

# The targets demo_load() creates for this machine's own MariaDB and PostgreSQL.
DEMO_TARGET_NAMES = ("demo-mariadb", "demo-postgresql")


def demo_load() -> list[str]:
    """Demo products, a local spec, targets for the local MariaDB and PostgreSQL, a smoke scenario.

    Hosts and ports come from DEMO_MYSQL_HOST/PORT and DEMO_PGSQL_HOST/PORT (docker-compose sets
    them); re-running updates rather than duplicates.
    """
    facts = local_host_facts()
    spec, _ = InstanceSpec.objects.get_or_create(
        label=f"local {facts['cores']}-core {facts['memory_gb']:.0f} GB",
        defaults={"cpu_cores": facts["cores"], "memory_gb": facts["memory_gb"], "storage_type": "local disk"},
    )
    lines = []
    # This installation's MariaDB (scripts/setup.sh records its port) unless DEMO_MYSQL_PORT says otherwise.
    mysql_port = int(os.environ.get("DEMO_MYSQL_PORT") or os.environ.get("BENCHAPP_MARIADB_PORT") or "3306")
    demos = [
        ("demo-mariadb", "MariaDB (local)", Product.Engine.MARIADB, Target.Driver.MYSQL,
         os.environ.get("DEMO_MYSQL_HOST", "127.0.0.1"), mysql_port,
         os.environ.get("DEMO_MYSQL_USER", "root"), os.environ.get("DEMO_MYSQL_PASSWORD", "")),
        ("demo-postgresql", "PostgreSQL (local)", Product.Engine.POSTGRESQL, Target.Driver.PGSQL,
         os.environ.get("DEMO_PGSQL_HOST", "127.0.0.1"), int(os.environ.get("DEMO_PGSQL_PORT", "5432")),
         os.environ.get("DEMO_PGSQL_USER", "postgres"), os.environ.get("DEMO_PGSQL_PASSWORD", "")),
    ]
    for name, product_name, engine, driver, host, port, user, password in demos:
        product, _ = Product.objects.get_or_create(name=product_name, defaults={"engine": engine, "vendor": "local"})
        fields = {"product": product, "spec": spec, "driver": driver, "host": host, "port": port,
                  "database": "sbtest", "user": user, "is_demo": True}
        found = Target.objects.filter(name=name).first()
        target = (target_create(password=password, name=name, **fields) if found is None
                  else target_update(target=found, password=password, **fields))
        try:
            version = server_info(target_connection(target=target)).version
            if version and product.version != version:
                product.version = version[:100]
                product.save(update_fields=["version"])
            lines.append(f"demo target {name}: {target.endpoint_label()} (server {version})")
        except ProbeError as exc:
            lines.append(f"demo target {name}: {target.endpoint_label()} — not reachable now: {exc}")
    dataset = Dataset.objects.filter(name="smoke").first() or dataset_create(
        name="smoke", tables=4, table_size=10000, description="4 × 10,000 rows: quick checks")
    if not Scenario.objects.filter(name="point select (smoke)").exists():
        scenario_create(name="point select (smoke)", test="oltp_point_select", dataset=dataset, time_s=10,
                        percentile=95.0, cleanup=Scenario.Cleanup.KEEP)
    return lines
