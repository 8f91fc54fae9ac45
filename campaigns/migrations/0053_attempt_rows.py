"""A job's earlier attempts and a client's earlier sends become rows (Attempt, ClientSend) instead of the JSON lists
each row kept (earlier_attempts); 0054 drops those lists. Every earlier attempt number a job has gets a row (one
whose record is missing says so), so its seconds, stored under that number, keep an attempt they belong to. A
client's sends are copied as they were recorded: they own no seconds.
"""
from datetime import datetime

import django.db.models.deletion
from django.db import migrations, models

NOT_RECORDED = "not recorded (this attempt was lost before benchapp kept why)"


def _when(text):
    if not text:
        return None
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


def _number(value):
    return value if isinstance(value, int) and value >= 1 else None


def lists_to_rows(apps, schema_editor):
    Job = apps.get_model("campaigns", "Job")
    JobClient = apps.get_model("campaigns", "JobClient")
    Attempt = apps.get_model("campaigns", "Attempt")
    ClientSend = apps.get_model("campaigns", "ClientSend")
    jobs = Job.objects.filter(attempt__gt=1).only("id", "attempt", "earlier_attempts", "queued_at", "claimed_at")
    for job in jobs.iterator(chunk_size=500):
        rows = {}
        for item in job.earlier_attempts or []:
            if not isinstance(item, dict):
                continue
            number = _number(item.get("attempt"))
            if number is None or number >= job.attempt or number in rows:
                continue
            t_s = item.get("t_s")
            ended = _when(item.get("ended_at")) or _when(item.get("started_at")) or job.claimed_at or job.queued_at
            rows[number] = Attempt(job_id=job.pk, number=number, started_at=_when(item.get("started_at")),
                                   ended_at=ended, cause=str(item.get("cause") or ""),
                                   t_s=float(t_s) if isinstance(t_s, (int, float)) else None)
        for number in range(1, job.attempt):
            rows.setdefault(number, Attempt(job_id=job.pk, number=number, ended_at=job.claimed_at or job.queued_at,
                                            cause=NOT_RECORDED))
        Attempt.objects.bulk_create(rows.values())
    clients = JobClient.objects.filter(attempt__gt=1).select_related("job").only(
        "id", "attempt", "earlier_attempts", "job__started_at", "job__queued_at")
    for client in clients.iterator(chunk_size=500):
        rows = {}
        for item in client.earlier_attempts or []:
            if not isinstance(item, dict):
                continue
            number = _number(item.get("attempt"))
            if number is None or number >= client.attempt or number in rows:
                continue
            ended = _when(item.get("ended_at")) or client.job.started_at or client.job.queued_at
            rows[number] = ClientSend(client_id=client.pk, number=number, host=str(item.get("host") or "")[:255],
                                      sent_at=_when(item.get("sent_at")), ended_at=ended,
                                      outcome=str(item.get("outcome") or "lost")[:12],
                                      cause=str(item.get("cause") or ""))
        ClientSend.objects.bulk_create(rows.values())


def _text(value):
    return value.isoformat() if value is not None else None


def rows_to_lists(apps, schema_editor):
    Job = apps.get_model("campaigns", "Job")
    JobClient = apps.get_model("campaigns", "JobClient")
    Attempt = apps.get_model("campaigns", "Attempt")
    ClientSend = apps.get_model("campaigns", "ClientSend")
    lists = {}
    for row in Attempt.objects.order_by("job_id", "number"):
        lists.setdefault(row.job_id, []).append({
            "attempt": row.number, "started_at": _text(row.started_at), "ended_at": _text(row.ended_at),
            "cause": row.cause, "t_s": row.t_s})
    for job_id, items in lists.items():
        Job.objects.filter(pk=job_id).update(earlier_attempts=items)
    lists = {}
    for row in ClientSend.objects.order_by("client_id", "number"):
        lists.setdefault(row.client_id, []).append({
            "attempt": row.number, "host": row.host, "sent_at": _text(row.sent_at), "ended_at": _text(row.ended_at),
            "outcome": row.outcome, "cause": row.cause})
    for client_id, items in lists.items():
        JobClient.objects.filter(pk=client_id).update(earlier_attempts=items)


class Migration(migrations.Migration):

    dependencies = [
        ('campaigns', '0052_packed_seconds'),
    ]

    operations = [
        migrations.CreateModel(
            name='Attempt',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField(help_text="1 = the job's first measurement")),
                ('started_at', models.DateTimeField(blank=True, help_text='when it began measuring (or, lost before that, when it was claimed)', null=True)),
                ('ended_at', models.DateTimeField(help_text='when it was found lost')),
                ('cause', models.TextField(blank=True, help_text='why it was lost')),
                ('t_s', models.FloatField(blank=True, help_text='how far into its measurement it was lost (None: before it measured)', null=True)),
                ('job', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='attempts', to='campaigns.job')),
            ],
            options={
                'ordering': ['job_id', 'number'],
                'constraints': [models.UniqueConstraint(fields=('job', 'number'), name='attempt_once')],
            },
        ),
        migrations.CreateModel(
            name='ClientSend',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.PositiveIntegerField(help_text="1 = the share's first send")),
                ('host', models.CharField(max_length=255)),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
                ('ended_at', models.DateTimeField(help_text='when it was found lost')),
                ('outcome', models.CharField(default='lost', max_length=12)),
                ('cause', models.TextField(blank=True)),
                ('client', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='earlier_sends', to='campaigns.jobclient')),
            ],
            options={
                'ordering': ['client_id', 'number'],
                'constraints': [models.UniqueConstraint(fields=('client', 'number'), name='client_send_once')],
            },
        ),
        migrations.RunPython(lists_to_rows, rows_to_lists),
    ]
