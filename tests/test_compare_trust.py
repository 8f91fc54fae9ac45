"""A comparison that tells the truth at a glance: every Δ% with its 95% interval and n per side in the
comparisons API (and its CSV), per-run columns when two runs are named, and the conclusions written from the
trusted cells unless the user asks for all of them."""
from __future__ import annotations

import csv
import io
import math
import statistics

import pytest
from scipy import stats as sstats

from tests.factories import (
    JobFactory,
    JobResultFactory,
    RunFactory,
    ScenarioFactory,
    TargetFactory,
)
from tests.helpers.measured import mariadb_and_postgresql

pytestmark = pytest.mark.django_db



def _welch_interval(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """The expected 95% interval of the ratio of geometric means − 1 and Welch's p, computed here independently."""
    la, lb = [math.log(v) for v in a], [math.log(v) for v in b]
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    df = (va + vb) ** 2 / (va ** 2 / (len(la) - 1) + vb ** 2 / (len(lb) - 1))
    diff, se = statistics.fmean(lb) - statistics.fmean(la), math.sqrt(va + vb)
    t = sstats.t.ppf(0.975, df)
    p = sstats.ttest_ind(la, lb, equal_var=False).pvalue
    return math.expm1(diff - t * se) * 100, math.expm1(diff + t * se) * 100, float(p)




def test_the_comparisons_api_gives_each_delta_its_interval_n_per_side_and_significance(role_client):
    mariadb, postgresql = mariadb_and_postgresql()
    client = role_client("viewer")
    data = client.get(f"/api/v1/comparisons/?products={mariadb.pk},{postgresql.pk}").json()
    rows = {r["threads"]: r for r in data["groups"][0]["rows"]}
    base, other = rows[1]["cells"]
    assert base["significance"] is None and base["delta_ci95_pct"]["qps"] is None
    low, high, p = _welch_interval([1000.0, 1500.0], [1400.0, 2700.0])
    sig = other["significance"]
    assert other["delta_ci95_pct"]["qps"] == [pytest.approx(low, abs=0.01), pytest.approx(high, abs=0.01)]
    assert sig["ci95_pct"] == other["delta_ci95_pct"]["qps"]
    # The verdict is the page's words for this cell, not a weaker "not significant" a script would read otherwise.
    assert (sig["n_base"], sig["n_other"], sig["verdict"]) == (2, 2, "too few runs to tell")
    assert sig["text"] == "too few runs to tell (n = 2)"
    assert sig["p_value"] == pytest.approx(p, rel=1e-6) and sig["p_adjusted"] >= sig["p_value"]
    assert sig["runs_needed"] > 2
    # The words say the number, its interval and n, and cannot be read as "no difference".
    assert sig["sentence"].startswith(f"QPS {other['delta_pct']['qps']:+.1f}% (95% CI {low:+.1f}% … {high:+.1f}%), "
                                      "n = 2 each: too few runs to tell; about ")
    assert sig["sentence"].endswith(f"about {sig['runs_needed']} runs per side would tell a difference this large")
    # 16 threads: +50% with little spread is significant after the correction over the three Δ%.
    assert rows[16]["cells"][1]["significance"]["verdict"] == "significant"
    # Every metric has its interval (latency too).
    assert rows[16]["cells"][1]["delta_ci95_pct"]["latency_avg_ms"][1] < 0
    text = b"".join(client.get(f"/api/v1/comparisons/?products={mariadb.pk},{postgresql.pk}&format=csv")
                    .streaming_content).decode()
    line = next(r for r in csv.DictReader(io.StringIO(text)) if r["product"] == "PostgreSQL (local)"
                and r["threads"] == "1")
    assert float(line["qps_delta_ci95_low_pct"]) == pytest.approx(low, abs=0.01)
    assert (line["n_baseline"], line["qps_delta_verdict"]) == ("2", "too few runs to tell")


def test_two_runs_of_one_target_are_two_columns_and_by_run_false_pools_them(role_client):
    target, scenario = TargetFactory(), ScenarioFactory()
    first, second = RunFactory(), RunFactory()
    for run, figures in ((first, [1000.0, 1020.0, 980.0]), (second, [800.0, 810.0, 790.0])):
        for repetition, qps in enumerate(figures, start=1):
            JobResultFactory(job=JobFactory(run=run, target=target, scenario=scenario, threads=8,
                                            repetition=repetition), qps=qps)
    client = role_client("viewer")
    data = client.get(f"/api/v1/comparisons/?runs={first.pk},{second.pk}").json()
    assert [(c["run_id"], c["name"]) for c in data["products"]] == [
        (first.pk, f"{target.product.name} · run #{first.pk}"), (second.pk, f"{target.product.name} · run #{second.pk}")]
    base, other = data["groups"][0]["rows"][0]["cells"]
    assert (base["n"], other["n"], other["run_id"]) == (3, 3, second.pk)
    assert other["delta_pct"]["qps"] == pytest.approx(-20.0, abs=0.2)
    assert other["significance"]["verdict"] == "significant" and other["delta_ci95_pct"]["qps"][1] < 0
    pooled = client.get(f"/api/v1/comparisons/?runs={first.pk},{second.pk}&by_run=false").json()
    assert len(pooled["products"]) == 1 and pooled["groups"][0]["rows"][0]["cells"][0]["n"] == 6
    assert client.get(f"/api/v1/comparisons/?runs={first.pk},{second.pk}&by_run=maybe").status_code == 400


def test_conclusions_come_from_trusted_cells_unless_asked_and_say_what_they_left_out(role_client):
    from campaigns.comparison import Selection, comparison_layout

    mariadb, postgresql = mariadb_and_postgresql(invalid_postgresql=True)
    layout = comparison_layout(Selection(products=[mariadb.pk, postgresql.pk]))
    assert layout["trust"]["invalid"] == 6 and layout["trust"]["jobs"] == 12 and layout["trust"]["cells"] == 3
    assert [r["text"] for r in layout["trust"]["reasons"]] == ["the client host's CPU was saturated"]
    conclusion = layout["tables"][0]["conclusion"]
    assert conclusion.startswith("No row has trusted results of both PostgreSQL (local) and MariaDB (local) (3 rows "
                                 "with suspect or invalid cells left out)")
    whole = comparison_layout(Selection(products=[mariadb.pk, postgresql.pk], untrusted=True))
    conclusion = whole["tables"][0]["conclusion"]
    assert "PostgreSQL (local) is faster than MariaDB (local)" in conclusion and "(95% CI " in conclusion
    assert "left out" not in conclusion
    # Drawn from invalid cells only, the headline says so in its own words, not only in the banner above it.
    assert conclusion.startswith("From suspect or invalid cells only, whose figures may measure something else: "
                                 "PostgreSQL (local) is faster"), conclusion
    page = role_client("viewer").get(f"/compare/?products={mariadb.pk}&products={postgresql.pk}").content.decode()
    assert "6 of 12 jobs invalid" in page and "the client host&#x27;s CPU was saturated" in page
    assert page.count("data-untrusted=\"1\"") == 3 * 4  # QPS, TPS and both latencies of PostgreSQL's 3 cells
    markdown = role_client("viewer").get(
        f"/compare/comparison.md?products={mariadb.pk}&products={postgresql.pk}").content.decode()
    assert "> **6 of 12 jobs invalid: the client host's CPU was saturated." in markdown


def test_the_baseline_is_chosen_explicitly_and_kept_in_the_url(role_client):
    mariadb, postgresql = mariadb_and_postgresql()
    client = role_client("viewer")
    data = client.get(f"/api/v1/comparisons/?products={mariadb.pk},{postgresql.pk}&baseline={postgresql.pk}").json()
    assert [p["id"] for p in data["products"]] == [postgresql.pk, mariadb.pk]
    cells = data["groups"][0]["rows"][0]["cells"]
    assert cells[0]["significance"] is None and cells[1]["delta_pct"]["qps"] < 0  # MariaDB is the slower here
    page = client.get(f"/compare/?products={mariadb.pk}&products={postgresql.pk}").content.decode()
    choice = page.split('data-testid="baseline-choice">', 1)[1].split("</p>", 1)[0]
    assert choice.startswith("Baseline: <strong aria-current=\"true\"") and ">MariaDB (local)</strong>" in choice
    # The other column is a chip that makes it the baseline in one click.
    assert f'<a class="chip" href="?products={mariadb.pk}&amp;products={postgresql.pk}&amp;baseline={postgresql.pk}"' in choice
    assert ">PostgreSQL (local)</a>" in choice
    swapped = client.get(f"/compare/?products={mariadb.pk}&products={postgresql.pk}&baseline={postgresql.pk}")
    html = swapped.content.decode()
    assert "Δ% QPS vs PostgreSQL (local)" in html and "<h1>PostgreSQL (local) vs MariaDB (local)</h1>" in html
    # Kept when the choice is changed: the form's "Baseline" list has it chosen.
    baseline = html.split('<select name="baseline" id="id_baseline"', 1)[1].split("</select>", 1)[0]
    assert f'<option value="{postgresql.pk}" selected>PostgreSQL (local)</option>' in baseline
    assert client.get(f"/compare/?products={mariadb.pk}&baseline=1,2").status_code == 200
