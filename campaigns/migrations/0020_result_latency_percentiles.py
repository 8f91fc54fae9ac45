"""Every job's latency distribution (p50, p90, p95, p99, p99.9) beside its result (#16).

The schema adds the five percentile columns and the reason they are missing; the data step fills them
for every stored result, measured or imported alike, from the clients' stored --histogram buckets
merged into one, by the rule campaigns.execution.results.latency_distribution() applies to new jobs.
A job logged with --report-checkpoints (seen in its clients' raw output) gets no percentiles: its
stored histogram covers only the time after the last checkpoint. Its figures were stored from the last
checkpoint block only; they are recomputed here for the whole run, from each client's raw output parsed
again (summaries kept per client, counts and rates summed over clients as results.merge_summaries does).
"""
from itertools import groupby

from django.db import migrations, models
from django.db.models import BooleanField, Case, Value, When

from campaigns.sysbench import parser

FIELDS = {"50": "latency_p50_ms", "90": "latency_p90_ms", "95": "latency_p95_ms", "99": "latency_p99_ms",
          "99.9": "latency_p999_ms"}
NO_HISTOGRAM_PERCENTILE_0 = "no latency histogram: sysbench ran with --percentile=0"
NO_HISTOGRAM_CHECKPOINTS = ("no whole-run latency histogram: with --report-checkpoints sysbench prints the histogram "
                            "of the time after the last checkpoint only")
NO_HISTOGRAM_OFF = "no latency histogram: sysbench ran without --histogram=on"
NO_HISTOGRAM_SOME_CLIENTS = "no latency histogram from every client: percentiles of part of the job would mislead"
NO_HISTOGRAM_EMPTY = "the latency histogram is empty: no event finished"


def _distribution(clients):
    if any(c.checkpointed for c in clients):
        return {}, NO_HISTOGRAM_CHECKPOINTS
    histograms = [c.histogram for c in clients]
    if not histograms or any(h is None for h in histograms):
        lats = [(c.summary or {}).get("latency_ms") or {} for c in clients]
        if lats and all(lat.get("pct") is None and lat.get("avg") is not None for lat in lats):
            return {}, NO_HISTOGRAM_PERCENTILE_0
        if all(h is None for h in histograms):
            return {}, NO_HISTOGRAM_OFF
        return {}, NO_HISTOGRAM_SOME_CLIENTS
    merged = parser.merge_histograms([[(b[0], int(b[1])) for b in h] for h in histograms])
    if not merged:
        return {}, NO_HISTOGRAM_EMPTY
    return parser.histogram_percentiles(merged), ""


_SUMMED = ("tps", "qps", "reads_per_s", "writes_per_s", "other_per_s", "transactions", "queries",
           "ignored_errors", "reconnects", "events")


def _whole_run_figures(JobClient, JobResult, job_id):
    """Re-parse a checkpointed job's clients; store their whole-run summaries and the job's summed figures."""
    clients = list(JobClient.objects.filter(job_id=job_id).order_by("index"))
    summaries = []
    for client in clients:
        parsed = parser.parse_output(client.raw_output)
        if parsed.summary is None:
            return
        summaries.append(parsed.summary.to_dict())
    for client, summary in zip(clients, summaries, strict=True):
        client.summary, client.histogram = summary, None
        client.save(update_fields=["summary", "histogram"])
    fields = {}
    for key in _SUMMED:
        values = [s.get(key) for s in summaries if s.get(key) is not None]
        fields[key] = sum(values) if values else None
    lats = [s.get("latency_ms") or {} for s in summaries]
    mins = [lat["min"] for lat in lats if lat.get("min") is not None]
    maxs = [lat["max"] for lat in lats if lat.get("max") is not None]
    events = sum(s.get("events") or 0 for s in summaries)
    fields.update(
        duration_s=max((s.get("duration_s") or 0) for s in summaries),
        latency_min_ms=min(mins) if mins else None, latency_max_ms=max(maxs) if maxs else None,
        latency_avg_ms=(sum((lat.get("avg") or 0) * (s.get("events") or 0) for lat, s in zip(lats, summaries,
                                                                                            strict=True)) / events
                        if events else None),
        latency_sum_ms=sum(lat.get("sum") or 0 for lat in lats), latency_pct=None, latency_pct_ms=None,
    )
    JobResult.objects.filter(job_id=job_id).update(**fields)


def fill_latency_percentiles(apps, schema_editor):
    JobResult = apps.get_model("campaigns", "JobResult")
    JobClient = apps.get_model("campaigns", "JobClient")
    results = {r.job_id: r for r in JobResult.objects.only("id", "job_id")}
    clients = (JobClient.objects.filter(job_id__in=list(results)).order_by("job_id", "index")
               .only("id", "job_id", "summary", "histogram")
               .annotate(checkpointed=Case(When(raw_output__contains="Checkpoint report:", then=Value(True)),
                                           default=Value(False), output_field=BooleanField())))
    changed = []
    for job_id, rows in groupby(clients.iterator(chunk_size=200), key=lambda c: c.job_id):
        result = results[job_id]
        rows = list(rows)
        if any(c.checkpointed for c in rows):
            _whole_run_figures(JobClient, JobResult, job_id)
        percentiles, missing = _distribution(rows)
        for key, name in FIELDS.items():
            setattr(result, name, percentiles.get(key))
        result.latency_percentiles_missing = missing
        changed.append(result)
    done = {r.job_id for r in changed}
    for job_id, result in results.items():
        if job_id not in done:  # a result without client rows has no histogram either
            result.latency_percentiles_missing = NO_HISTOGRAM_OFF
            changed.append(result)
    JobResult.objects.bulk_update(changed, [*FIELDS.values(), "latency_percentiles_missing"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ('campaigns', '0019_client_host_choice'),
    ]

    operations = [
        migrations.AddField(
            model_name='jobresult',
            name='latency_p50_ms',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='jobresult',
            name='latency_p90_ms',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='jobresult',
            name='latency_p95_ms',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='jobresult',
            name='latency_p999_ms',
            field=models.FloatField(blank=True, help_text='p99.9', null=True),
        ),
        migrations.AddField(
            model_name='jobresult',
            name='latency_p99_ms',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='jobresult',
            name='latency_percentiles_missing',
            field=models.CharField(blank=True, default='', help_text='why latency_p50_ms … latency_p999_ms are empty', max_length=200),
        ),
        migrations.RunPython(fill_latency_percentiles, migrations.RunPython.noop),
    ]
