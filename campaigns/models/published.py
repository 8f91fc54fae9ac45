"""Figures that white papers published, entered as data so measured runs can be set beside them."""
from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

from campaigns.models.core import InstanceSpec, Product


class PublishedResult(models.Model):
    """One cell row of a result table printed in a seed white paper: a product on a spec, on a dataset,
    running a scenario at a concurrency, and the throughput and latency the document printed for it.

    Rows come from the CSV files in campaigns/fixtures/published/ (campaigns.seeds.published), never from
    a benchmark run. `table_ref` names the table the way the document does; `source_row` keeps the row's text as
    printed, so every number can be traced back; `correction` says what was changed from the printed text and
    why (empty when the row is as printed). `threads` is the job's total concurrency (summed over clients where
    the document gives a per-client figure).
    """

    document = models.CharField(max_length=10, help_text="Seed file id, e.g. '001'.")
    document_title = models.CharField(max_length=300)
    table_ref = models.CharField(max_length=300, help_text="The table or section as the document names it.")
    product = models.ForeignKey(Product, on_delete=models.PROTECT, related_name="published_results")
    spec = models.ForeignKey(InstanceSpec, on_delete=models.PROTECT, related_name="published_results")
    dataset_label = models.CharField(max_length=200, blank=True)
    scenario_label = models.CharField(max_length=200)
    tables = models.PositiveIntegerField(null=True, blank=True)
    table_size = models.BigIntegerField(null=True, blank=True, validators=[MinValueValidator(1)])
    threads = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    clients = models.PositiveIntegerField(null=True, blank=True)
    qps = models.FloatField(null=True, blank=True)
    tps = models.FloatField(null=True, blank=True)
    latency_avg_ms = models.FloatField(null=True, blank=True)
    latency_pct = models.FloatField(
        null=True, blank=True, validators=[MinValueValidator(0.0), MaxValueValidator(100.0)]
    )
    latency_pct_ms = models.FloatField(null=True, blank=True)
    correction = models.TextField(blank=True)
    source_row = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Rows are loaded in the order the CSV lists them, which is the document's order.
        ordering = ["document", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["document", "table_ref", "product", "spec", "dataset_label", "scenario_label", "threads"],
                name="publishedresult_unique_cell",
            )
        ]
        indexes = [models.Index(fields=["document", "table_ref"])]

    def __str__(self) -> str:
        return f"{self.document} {self.table_ref}: {self.product} on {self.spec} × {self.threads} thr"

    def is_corrected(self) -> bool:
        return self.correction != ""
