"""Comparison cells you can trust: each repeated cell's geometric mean with n, min–max and standard
deviation in the page, the exports and the API; Δ% and conclusions in one direction from one statistic;
Benjamini–Hochberg over the page's Δ% marks."""
from __future__ import annotations

import csv
import io
import math
import re
import statistics

import pytest

from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.measured import measure


def _text(response) -> str:
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()




def _geometric_mean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def _row(html: str, threads: int) -> str:
    return re.search(rf'<tr data-spec="[^"]*" data-threads="{threads}"[^>]*>(.*?)</tr>', html, re.S).group(1)


def test_a_repeated_cell_shows_its_geometric_mean_n_min_max_and_sd_everywhere(role_client):
    alpha, beta = ProductFactory(name="Alpha DB"), ProductFactory(name="Beta DB")
    spec = InstanceSpecFactory(label="4-core 16 GB (local)", cpu_cores=4, memory_gb=16)
    scenario = ScenarioFactory(name="spread scenario", dataset=DatasetFactory(name="spread dataset"))
    measure(product=alpha, spec=spec, scenario=scenario, figures={8: [1000.0, 4000.0, 2000.0]})
    measure(product=beta, spec=spec, scenario=scenario, figures={8: [3000.0]})
    client = role_client("viewer")
    query = f"products={alpha.pk},{beta.pk}"
    html = _text(client.get(f"/compare/?{query}"))
    cell = re.search(rf'<td class="num" data-metric="qps" data-product="{alpha.pk}"([^>]*)>(.*?)</td>',
                     _row(html, 8), re.S)
    # The geometric mean of 1000, 4000 and 2000 is 2000 (the arithmetic mean would be 2333).
    assert 'data-value="2000.0"' in cell.group(1) and cell.group(2).startswith("2,000")
    assert "n=3" in cell.group(2) and "1,000–4,000 · sd 1,528" in cell.group(2)
    assert "geometric mean of 3 runs: min 1,000, max 4,000, standard deviation 1,528" in cell.group(1)
    # A single run shows its value alone, and Δ% is Beta's against Alpha's: 3000 / 2000 − 1.
    single = re.search(rf'data-metric="qps" data-product="{beta.pk}"[^>]*>(.*?)</td>', _row(html, 8), re.S)
    assert single.group(1) == "3,000"
    assert re.search(r'data-metric="delta"[^>]*>\+50\.0%', _row(html, 8))
    rows = list(csv.DictReader(io.StringIO(_text(client.get(f"/compare/comparison.csv?{query}")))))
    first = next(r for r in rows if r["product"] == "Alpha DB")
    assert (float(first["qps"]), float(first["qps_median"]), float(first["qps_min"]), float(first["qps_max"])) == (
        2000.0, 2000.0, 1000.0, 4000.0)
    assert float(first["qps_stdev"]) == pytest.approx(statistics.stdev([1000.0, 4000.0, 2000.0]), abs=0.01)
    markdown = _text(client.get(f"/compare/comparison.md?{query}"))
    assert "| 2,000; n = 3, 1,000–4,000 · sd 1,528 · CV 65.5% | 3,000 | +50.0%, untested (n = 3 vs 1) |" in markdown
    api = client.get(f"/api/v1/comparisons/?{query}").json()
    qps = api["groups"][0]["rows"][0]["cells"][0]["qps"]
    assert (qps["value"], qps["median"], qps["min"], qps["max"], qps["n"]) == (2000.0, 2000.0, 1000.0, 4000.0, 3)


def test_the_conclusion_states_the_tables_delta_in_the_same_direction(db):
    """A conclusion once said "+1786 %" (the baseline's lead) beside a table saying −94.7 % for the same row."""
    from campaigns.comparison import Selection, comparison_layout

    fast, slow = ProductFactory(name="Fast DB"), ProductFactory(name="Slow DB")
    spec = InstanceSpecFactory(label="2-core 8 GB (local)", cpu_cores=2, memory_gb=8)
    scenario = ScenarioFactory(name="direction scenario", dataset=DatasetFactory(name="direction dataset"))
    measure(product=fast, spec=spec, scenario=scenario, figures={4: [18860.0], 8: [20000.0]})
    measure(product=slow, spec=spec, scenario=scenario, figures={4: [1000.0], 8: [2000.0]})
    table = comparison_layout(Selection(products=[fast.pk, slow.pk]))["tables"][0]
    assert [row["deltas"][0] for row in table["rows"]] == [-94.7, -90.0]
    # On average: the geometric mean of the rows' ratios, (1000/18860 × 2000/20000)^½ − 1 = −92.7 %.
    expected = (math.sqrt(1000 / 18860 * 2000 / 20000) - 1) * 100
    # One run a side: the conclusion states the numbers without claiming "slower".
    assert (f"Slow DB against Fast DB, untested: {expected:+.1f}% QPS on average (geometric mean of the 2 rows' "
            "ratios), from -94.7% at 4 threads to -90.0% at 8 threads") in table["conclusion"]
    assert "1786" not in table["conclusion"] and "+" not in table["conclusion"].split("QPS on average")[0]
    assert "untested in 2 of 2 rows (n = 1)" in table["conclusion"]
    qps_points = table["charts"]["qps_lines"][1]["data"]
    assert [p["delta"] for p in qps_points] == [-94.7, -90.0] and [p["n"] for p in qps_points] == [1, 1]
    assert [p["significance"] for p in qps_points] == ["untested (n = 1)"] * 2


def test_marks_are_corrected_for_the_many_deltas_tested_at_once(role_client):
    """A raw p of about 0.04 is not significant once the page's other Δ% (p about 0.94) are accounted for."""
    alpha, beta = ProductFactory(name="Alpha DB"), ProductFactory(name="Beta DB")
    spec = InstanceSpecFactory(label="4-core 16 GB (local)", cpu_cores=4, memory_gb=16)
    scenario = ScenarioFactory(name="bh scenario", dataset=DatasetFactory(name="bh dataset"))
    measure(product=alpha, spec=spec, scenario=scenario,
             figures={8: [1000.0, 1010.0, 990.0], 16: [1000.0, 1050.0, 950.0]})
    measure(product=beta, spec=spec, scenario=scenario,
             figures={8: [1025.0, 1035.0, 1015.0], 16: [990.0, 1060.0, 960.0]})
    client = role_client("viewer")
    html = _text(client.get(f"/compare/?products={alpha.pk},{beta.pk}"))
    delta = re.search(r'data-metric="delta"([^>]*)>(.*?)</td>', _row(html, 8), re.S)
    title = re.search(r'title="([^"]*)"', delta.group(1)).group(1)
    raw, adjusted = (float(v) for v in re.search(r"p = ([0-9.e-]+), adjusted p = ([0-9.e-]+)", title).groups())
    assert raw < 0.05 < adjusted
    assert 'data-significance="within ±5%"' in delta.group(1) and "within ±4.8% (n = 3)" in delta.group(2)
    # Its interval alone leaves out 0; the title says why it is not significant all the same.
    assert "+0.2% … +4.8%" in delta.group(2) and "no difference beyond ±4.8%" in title
    conclusion = re.search(r'data-testid="conclusion">(.*?)</p>', html, re.S).group(1)
    assert "Too few runs to tell Beta DB from Alpha DB" in conclusion
    assert "too few runs to tell in 1 of 2 rows (n = 3), within ±5% in 1 (n = 3)" in conclusion
    assert "faster" not in conclusion
    # The API's verdicts are the page's words: within ±5% at 8 threads, too few runs to tell at 16.
    api = client.get(f"/api/v1/comparisons/?products={alpha.pk},{beta.pk}").json()
    verdicts = {r["threads"]: (r["cells"][1]["significance"]["verdict"], r["cells"][1]["significance"]["text"])
                for r in api["groups"][0]["rows"]}
    assert verdicts == {8: ("within ±5%", "within ±4.8% (n = 3)"), 16: ("too few runs to tell",
                                                                          "too few runs to tell (n = 3)")}


def test_a_cell_with_a_zero_run_falls_back_to_the_mean_and_says_so(role_client):
    """A geometric mean of a zero is zero whatever the other runs did: such a cell's value is the arithmetic mean."""
    alpha, beta = ProductFactory(name="Alpha DB"), ProductFactory(name="Beta DB")
    spec = InstanceSpecFactory(label="4-core 16 GB (local)", cpu_cores=4, memory_gb=16)
    scenario = ScenarioFactory(name="zero scenario", dataset=DatasetFactory(name="zero dataset"))
    measure(product=alpha, spec=spec, scenario=scenario, figures={8: [1000.0, 1000.0]})
    measure(product=beta, spec=spec, scenario=scenario, figures={8: [0.0, 1000.0]})
    client = role_client("viewer")
    cells = client.get(f"/api/v1/comparisons/?products={alpha.pk},{beta.pk}").json()["groups"][0]["rows"][0]["cells"]
    assert cells[0]["qps"]["statistic"] == "geometric mean" and cells[0]["qps"]["value"] == 1000.0
    assert (cells[1]["qps"]["statistic"], cells[1]["qps"]["value"], cells[1]["qps"]["min"]) == ("mean", 500.0, 0.0)
    assert cells[1]["delta_pct"]["qps"] == -50.0
    html = _text(client.get(f"/compare/?products={alpha.pk},{beta.pk}"))
    assert "mean of 2 runs: min 0.00, max 1,000" in _row(html, 8) and "geometric mean of 2 runs" in _row(html, 8)
