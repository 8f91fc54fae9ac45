"""How many repetitions a comparison needs, said before it is launched (quick compare): the smallest difference
1, 3, 5 and 10 runs per cell can tell from the noise this machine's recent repeated cells showed."""
from __future__ import annotations

import math

from django.db.models import Avg, Count, StdDev

from campaigns.models import Job, JobResult
from campaigns.statistics import change_to_tell

# Without measured noise, the advice assumes this CV of one run's QPS (what a busy shared machine shows).
ASSUMED_CV_PCT = 10.0
RECENT_CELLS = 200
ADVISED_RUNS = (3, 5, 10)


def recent_cv_pct() -> tuple[float | None, int]:
    """The median CV of QPS over the last RECENT_CELLS cells measured 2 or more times in one run (one query), and how
    many cells it comes from; (None, 0) before any."""
    cells = list(JobResult.objects.filter(job__status=Job.Status.SUCCEEDED, qps__gt=0)
                 .values("job__run_id", "job__target_id", "job__scenario_id", "job__threads", "job__tables",
                         "job__table_size")
                 .annotate(runs=Count("id"), mean=Avg("qps"), sd=StdDev("qps", sample=True))
                 .filter(runs__gte=2).order_by("-job__run_id").values_list("mean", "sd")[:RECENT_CELLS])
    cvs = sorted(sd / mean * 100 for mean, sd in cells if mean and sd is not None)
    if not cvs:
        return None, 0
    return cvs[len(cvs) // 2], len(cvs)


def repetitions_advice(cv_pct: float | None, cells: int = 0) -> str:
    """The advice quick compare shows beside its repetitions: "1 run per cell cannot tell a difference from noise;
    at this machine's noise (CV 8.2% over 40 repeated cells), 3 runs tell differences of about 25% or more, 5 about
    16%, 10 about 11% (8 times in 10)"."""
    measured = cv_pct is not None
    cv = cv_pct if cv_pct is not None else ASSUMED_CV_PCT
    log_sd = math.sqrt(math.log1p((cv / 100) ** 2))
    changes = [change_to_tell(n, log_sd) or 0.0 for n in ADVISED_RUNS]
    noise = (f"this machine's noise (CV {cv:.1f}% of one run's QPS over {cells} repeated cell{'s' if cells != 1 else ''})"
             if measured else f"a CV of {cv:.0f}% per run (not measured here yet)")
    told = ", ".join(f"{n} about {c:.0f}%" for n, c in zip(ADVISED_RUNS[1:], changes[1:], strict=True))
    return (f"1 run per cell cannot tell a difference from noise. At {noise}, {ADVISED_RUNS[0]} runs per cell tell "
            f"differences of about {changes[0]:.0f}% or more, {told} (8 times in 10).")
