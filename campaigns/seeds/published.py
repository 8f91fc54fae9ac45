"""The seed documents' result tables, from CSV files into PublishedResult rows.

One CSV per document in campaigns/fixtures/published/, named "<document id>_<anything>.csv", with the header
COLUMNS. Products and specs are named, not numbered: a product must be one of PRODUCTS, a spec label must say
its memory (campaigns.seeds.specs). Numbers are plain digits with an optional decimal point: a value as
printed with thousands separators or a line break in it ("4127 23") is refused, so every such reading is
made by hand and explained in the row's `correction`. `source_row` keeps the row as printed: cells joined
with " | ", a line break inside a cell shown as a space.

Every file is checked before anything is written, and all files are written in one transaction: a malformed
row stores nothing at all and the error names the file, the line and the column. Loading again updates the
rows in place, and removes a document's rows that its file no longer lists.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from campaigns.cache import results_changed
from campaigns.models import Product, PublishedResult
from campaigns.seeds.specs import spec_facts, spec_get_or_create

DEFAULT_DIRECTORY = Path(__file__).resolve().parent.parent / "fixtures" / "published"

COLUMNS = (
    "document", "document_title", "table_ref", "product", "spec", "dataset_label", "scenario_label", "tables",
    "table_size", "threads", "clients", "qps", "tps", "latency_avg_ms", "latency_pct", "latency_pct_ms",
    "correction", "source_row",
)
_KEY = ("table_ref", "product", "spec", "dataset_label", "scenario_label", "threads")
# The fields a reload may change; the others identify the row.
_VALUES = ("document_title", "tables", "table_size", "clients", "qps", "tps", "latency_avg_ms", "latency_pct",
           "latency_pct_ms", "correction", "source_row")
_INT = re.compile(r"\d+")
_FLOAT = re.compile(r"\d+(\.\d+)?")
_FILE = re.compile(r"(\d{3})_[\w.-]+\.csv")


@dataclass(frozen=True)
class ProductFacts:
    engine: str
    version: str
    vendor: str
    notes: str


# The products the documents compare, named as benchapp shows them.
PRODUCTS: dict[str, ProductFacts] = {
    "TencentDB for MariaDB": ProductFacts(
        Product.Engine.MARIADB, "", "Tencent Cloud",
        "Seed 000. Its strong sync comparison ran MariaDB 10.1.10 with strong sync replication and the thread pool."),
    "MySQL 5.6 (async)": ProductFacts(
        Product.Engine.MYSQL, "5.6", "Oracle (community edition)",
        "Seed 000 part 2's baseline: unoptimised, asynchronous replication."),
    "TDSQL-C for MySQL": ProductFacts(
        Product.Engine.MYSQL, "5.7", "Tencent Cloud",
        "Seed 001: cloud-native MySQL; log_bin=off, thread_handling=pool-of-threads, innodb_log_sync_method=async."),
    "TencentDB for MySQL": ProductFacts(
        Product.Engine.MYSQL, "5.7", "Tencent Cloud",
        "Seeds 001 and 003: two-node, async replication, local SSD, high-performance parameter template."),
    "Huawei DDM": ProductFacts(
        Product.Engine.OTHER, "", "Huawei Cloud",
        "Seed 002: Distributed Database Middleware, sharding over RDS for MySQL (MySQL protocol)."),
    "TDSQL for MySQL": ProductFacts(
        Product.Engine.MYSQL, "5.7", "Tencent Cloud",
        "Seed 004: strong sync, thread pool (thread_pool_max_threads=2000, oversubscribe=10, stall_limit=50)."),
    "MySQL 5.7 (semi-sync)": ProductFacts(
        Product.Engine.MYSQL, "5.7.17", "Oracle (community edition)",
        "Seed 004's baseline: unoptimised, semi-synchronous replication."),
}


class PublishedDataError(ValueError):
    """A published-results file that cannot be loaded; the message names the file, line and column."""

    def __init__(self, path: Path, line: int, column: str, message: str) -> None:
        super().__init__(f"{path.name}, line {line}, column '{column}': {message}")
        self.path = path
        self.line = line
        self.column = column


@dataclass(frozen=True)
class PublishedRow:
    """One checked CSV row, typed."""

    line: int
    document: str
    document_title: str
    table_ref: str
    product: str
    spec: str
    dataset_label: str
    scenario_label: str
    tables: int | None
    table_size: int | None
    threads: int
    clients: int | None
    qps: float | None
    tps: float | None
    latency_avg_ms: float | None
    latency_pct: float | None
    latency_pct_ms: float | None
    correction: str
    source_row: str

    def key(self) -> tuple[str, ...]:
        return tuple(str(getattr(self, name)) for name in _KEY)


def _check_row(path: Path, line: int, document: str, cells: dict[str, str]) -> PublishedRow:
    def fail(column: str, message: str) -> PublishedDataError:
        return PublishedDataError(path, line, column, message)

    def text(column: str, *, required: bool = True) -> str:
        value = cells[column]
        if value != value.strip():
            raise fail(column, "surrounding spaces")
        if required and not value:
            raise fail(column, "must not be empty")
        return value

    def integer(column: str, *, required: bool = False, high: int = 10**12) -> int | None:
        value = text(column, required=required)
        if not value:
            return None
        if not _INT.fullmatch(value):
            raise fail(column, f"{value!r} is not a whole number written as plain digits")
        number = int(value)
        if not 1 <= number <= high:
            raise fail(column, f"{number} is outside 1 to {high:,}")
        return number

    def decimal(column: str, *, high: float | None = None) -> float | None:
        value = text(column, required=False)
        if not value:
            return None
        if not _FLOAT.fullmatch(value):
            raise fail(column, f"{value!r} is not a number written as plain digits with an optional decimal point")
        number = float(value)
        if high is not None and number > high:
            raise fail(column, f"{number:g} is above {high:g}")
        return number

    if text("document") != document:
        raise fail("document", f"{cells['document']!r} in a file for document {document!r}")
    product = text("product")
    if product not in PRODUCTS:
        raise fail("product", f"unknown product {product!r} (known: {', '.join(sorted(PRODUCTS))})")
    spec = text("spec")
    try:
        spec_facts(spec)
    except ValueError as exc:
        raise fail("spec", str(exc)) from None
    threads = integer("threads", required=True, high=1_000_000)
    if threads is None:  # required=True has refused an empty cell already
        raise fail("threads", "must not be empty")
    row = PublishedRow(
        line=line, document=document, document_title=text("document_title"), table_ref=text("table_ref"),
        product=product, spec=spec, dataset_label=text("dataset_label", required=False),
        scenario_label=text("scenario_label"), tables=integer("tables", high=100_000),
        table_size=integer("table_size"), threads=threads,
        clients=integer("clients", high=10_000), qps=decimal("qps"), tps=decimal("tps"),
        latency_avg_ms=decimal("latency_avg_ms"), latency_pct=decimal("latency_pct", high=100.0),
        latency_pct_ms=decimal("latency_pct_ms"), correction=text("correction", required=False),
        source_row=text("source_row"),
    )
    if row.qps is None and row.tps is None:
        raise fail("qps", "a row needs a QPS or a TPS")
    if (row.latency_pct is None) != (row.latency_pct_ms is None):
        raise fail("latency_pct", "latency_pct and latency_pct_ms go together")
    return row


def published_read(path: Path) -> tuple[str, list[PublishedRow]]:
    """The document id (from the file name) and the checked rows of one CSV; PublishedDataError if malformed."""
    match = _FILE.fullmatch(path.name)
    if match is None:
        raise PublishedDataError(path, 0, "(file name)", "expected '<3-digit document id>_<name>.csv'")
    document = match.group(1)
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.reader(fh, strict=True)
            header = next(reader, None)
            if header is None:
                raise PublishedDataError(path, 1, "(header)", "the file is empty; expected a header row")
            for index, expected in enumerate(COLUMNS):
                found = header[index] if index < len(header) else None
                if found != expected:
                    raise PublishedDataError(path, 1, expected, f"header has {found!r} where {expected!r} belongs")
            if len(header) > len(COLUMNS):
                raise PublishedDataError(path, 1, header[len(COLUMNS)], "unexpected extra column")
            rows: list[PublishedRow] = []
            titles: dict[str, int] = {}
            seen: dict[tuple[str, ...], int] = {}
            for cells in reader:
                line = reader.line_num
                if not cells:
                    continue
                if len(cells) < len(COLUMNS):
                    raise PublishedDataError(path, line, COLUMNS[len(cells)], "missing (the row has too few cells)")
                if len(cells) > len(COLUMNS):
                    raise PublishedDataError(path, line, "(extra cell)", f"{len(cells)} cells for {len(COLUMNS)} columns")
                row = _check_row(path, line, document, dict(zip(COLUMNS, cells, strict=True)))
                titles.setdefault(row.document_title, line)
                if len(titles) > 1:
                    raise PublishedDataError(path, line, "document_title",
                                             f"differs from the title on line {next(iter(titles.values()))}")
                if row.key() in seen:
                    raise PublishedDataError(path, line, "threads",
                                             f"repeats the cell of line {seen[row.key()]} (same table, product, "
                                             "spec, dataset, scenario and threads)")
                seen[row.key()] = line
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise PublishedDataError(path, 0, "(encoding)", f"not UTF-8: {exc.reason}") from None
    except csv.Error as exc:
        raise PublishedDataError(path, reader.line_num, "(row)", f"not valid CSV: {exc}") from None
    return document, rows


def _product(name: str) -> Product:
    facts = PRODUCTS[name]
    product, _ = Product.objects.get_or_create(
        name=name, defaults={"engine": facts.engine, "version": facts.version, "vendor": facts.vendor,
                             "notes": facts.notes},
    )
    return product


def load_published(*, directory: Path | str | None = None) -> dict[str, int]:
    """Loads every "<id>_*.csv" of `directory` (default: the project's fixtures); returns rows per document.

    Idempotent: a row is found by its cell (document, table, product, spec, dataset, scenario, threads) and
    updated in place (the effect of update_or_create, in a few bulk statements); rows of a loaded document that
    its file no longer lists are deleted.
    """
    folder = Path(directory) if directory is not None else DEFAULT_DIRECTORY
    paths = sorted(folder.glob("*.csv"))
    if not paths:
        raise FileNotFoundError(f"no published-results CSV files in {folder}")
    # Check everything before writing anything.
    documents: dict[str, list[PublishedRow]] = {}
    for path in paths:
        document, rows = published_read(path)
        if document in documents:
            raise PublishedDataError(path, 0, "(file name)", f"a second file for document {document}")
        documents[document] = rows
    counts: dict[str, int] = {}
    with transaction.atomic():
        products = {name: _product(name) for name in sorted({r.product for rows in documents.values() for r in rows})}
        specs = {label: spec_get_or_create(label=label)
                 for label in sorted({r.spec for rows in documents.values() for r in rows})}
        existing = {
            (r.document, r.table_ref, r.product_id, r.spec_id, r.dataset_label, r.scenario_label, r.threads): r
            for r in PublishedResult.objects.select_for_update().filter(document__in=documents)
        }
        created: list[PublishedResult] = []
        updated: list[PublishedResult] = []
        for document, rows in documents.items():
            for row in rows:
                product, spec = products[row.product], specs[row.spec]
                key = (document, row.table_ref, product.pk, spec.pk, row.dataset_label, row.scenario_label, row.threads)
                result = existing.pop(key, None)
                if result is None:
                    result = PublishedResult(document=document, table_ref=row.table_ref, product=product, spec=spec,
                                             dataset_label=row.dataset_label, scenario_label=row.scenario_label,
                                             threads=row.threads)
                    created.append(result)
                elif any(getattr(result, name) != getattr(row, name) for name in _VALUES):
                    updated.append(result)
                for name in _VALUES:
                    setattr(result, name, getattr(row, name))
            counts[document] = len(rows)
        # What is left was not listed again by its document's file.
        PublishedResult.objects.filter(pk__in=[r.pk for r in existing.values()]).delete()
        PublishedResult.objects.bulk_update(updated, _VALUES, batch_size=500)
        PublishedResult.objects.bulk_create(created, batch_size=500)
        results_changed()  # comparisons that show published figures are outdated (bulk writes send no signal)
    return counts
