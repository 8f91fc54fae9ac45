"""The comparison's words: an interval too wide to mean anything reads "too noisy to tell" with
its figure on hover; a conclusion quotes the statistic its cells show (the geometric mean) from the cells the banner
counts; the CSV's sentence starts with a word (no formula escape) and ends as a sentence."""
from __future__ import annotations

import csv
import io
import re

from campaigns.comparison.formatting import interval_text, interval_too_wide
from campaigns.models import Job
from tests.factories import DatasetFactory, InstanceSpecFactory, ProductFactory, ScenarioFactory
from tests.helpers.measured import CLIENT_BOUND, mariadb_and_postgresql, measure


def _page(client, url: str) -> str:
    answer = client.get(url)
    assert answer.status_code == 200, answer.content[:500]
    return b"".join(answer.streaming_content).decode() if answer.streaming else answer.content.decode()


def test_only_intervals_spanning_more_than_a_hundredfold_are_too_noisy():
    assert interval_too_wide([-100.0, 139_116_847.2]) and interval_too_wide([-95.0, 1000.0])
    assert interval_too_wide([-99.5, 10.0])
    assert not interval_too_wide([-79.0, 1102.4]) and not interval_too_wide([-20.0, 180.0])
    assert not interval_too_wide(None)
    assert interval_text([-100.0, 139_116_847.2]) == "too noisy to tell"
    assert interval_text([-20.0, 180.0]) == "-20.0% … +180.0%"


def test_a_wild_interval_reads_too_noisy_to_tell_with_its_figure_on_hover(role_client):
    a, b = ProductFactory(name="Steady DB"), ProductFactory(name="Wild DB")
    spec = InstanceSpecFactory(label="2-core (local)", cpu_cores=2, memory_gb=4)
    scenario = ScenarioFactory(name="wild", dataset=DatasetFactory(name="wild ds", tables=1, table_size=1000))
    measure(product=a, spec=spec, scenario=scenario, figures={8: [4000.0, 4100.0]})
    measure(product=b, spec=spec, scenario=scenario, figures={8: [2.0, 9000.0]})
    viewer = role_client("viewer")
    for url in (f"/compare/?products={a.pk}&products={b.pk}", f"/compare/report/?products={a.pk}&products={b.pk}"):
        page = _page(viewer, url)
        cell = re.search(r'<span class="ci" data-testid="ci" title="95% CI ([^"]+)" data-too-noisy>([^<]+)</span>', page)
        assert cell, page[page.find('data-metric="delta"'):][:600]
        assert cell.group(2) == "too noisy to tell" and " … " in cell.group(1)
        conclusion = re.search(r'data-testid="conclusion">(.*?)</p>', page, re.S).group(1)
        assert "too noisy to tell" in conclusion and cell.group(1).split(" … ")[1] not in conclusion


def test_the_conclusion_quotes_the_geometric_mean_of_trusted_cells_only(role_client):
    only = ProductFactory(name="Lonely DB")
    scenario = ScenarioFactory(name="alone", dataset=DatasetFactory(name="alone ds", tables=1, table_size=1000))
    target = measure(product=only, spec=None, scenario=scenario,
                     figures={1: [1000.0, 1100.0], 4: [3000.0, 4730.0], 16: [9000.0, 9500.0]})
    viewer = role_client("viewer")
    # 4 threads: geometric mean √(3000 × 4730) = 3,767 (the cell); the median (3,865) is not quoted.
    Job.objects.filter(target=target, threads=16).update(verdict="invalid", findings=[CLIENT_BOUND])
    page = _page(viewer, f"/compare/?products={only.pk}")
    conclusion = re.search(r'data-testid="conclusion">(.*?)</p>', page, re.S).group(1)
    assert "its best is 3,767 QPS at 4 threads" in conclusion, conclusion
    assert "9,2" not in conclusion and "3,865" not in conclusion
    included = _page(viewer, f"/compare/?products={only.pk}&untrusted=on")
    assert "its best is 9,247 QPS at 16 threads" in re.search(r'data-testid="conclusion">(.*?)</p>', included,
                                                              re.S).group(1)


def test_the_csv_sentence_starts_with_a_word_and_ends_as_a_sentence(role_client):
    mariadb, postgresql = mariadb_and_postgresql()
    text = _page(role_client("viewer"), f"/compare/comparison.csv?products={mariadb.pk}&products={postgresql.pk}")
    sentences = [row["qps_delta_sentence"] for row in csv.DictReader(io.StringIO(text)) if row["qps_delta_sentence"]]
    assert sentences and all(s.startswith("QPS ") for s in sentences), sentences
    cut = [s for s in sentences if s.endswith(" would")]
    assert not cut and any(s.endswith("runs per side would tell a difference this large") for s in sentences)
