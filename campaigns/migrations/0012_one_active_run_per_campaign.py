"""One active run per campaign, held by a partial unique index.

Databases where parallel launches already raced hold campaigns with several active runs: every one but the oldest
is cancelled first (its unfinished jobs with it), with the reason in its error, so the index can be built.
"""

from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('campaigns', '0011_campaign_webhook_url_encrypted'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunSQL(
            sql="""
                WITH extra AS (
                    SELECT id FROM (
                        SELECT id, row_number() OVER (PARTITION BY campaign_id ORDER BY created_at, id) AS n
                        FROM campaigns_run
                        WHERE status IN ('pending', 'running') AND trigger <> 'import'
                    ) ranked WHERE n > 1
                ), jobs AS (
                    UPDATE campaigns_job SET status = 'cancelled', finished_at = now(),
                           error = 'cancelled by migration 0012: its run was a second active run of its campaign'
                    WHERE run_id IN (SELECT id FROM extra)
                      AND status NOT IN ('succeeded', 'failed', 'cancelled')
                )
                UPDATE campaigns_run SET status = 'cancelled', finished_at = now(),
                       error = 'cancelled by migration 0012: a second active run of this campaign '
                               '(a campaign has one active run at a time)'
                WHERE id IN (SELECT id FROM extra)
            """,
            reverse_sql=migrations.RunSQL.noop,
        ),
        migrations.AddConstraint(
            model_name='run',
            constraint=models.UniqueConstraint(condition=models.Q(('status__in', ['pending', 'running']), models.Q(('trigger', 'import'), _negated=True)), fields=('campaign',), name='run_one_active_per_campaign', violation_error_message='the campaign already has a run in progress'),
        ),
    ]
