"""A seed reproduction says what differs from the document: run at this machine's scale, every
published figure beside a measured one carries its differences (rows, memory, threads, clients, duration, hardware),
no ratio sentence sets unlike runs against each other, and the document's thread ladder is kept, scaled, with its
mapping stated."""
from __future__ import annotations

import csv
import html as html_module
import io
import re
from typing import Any

import pytest

from campaigns.comparison.differences import Side, differences, in_memory
from campaigns.models import Campaign, Job
from campaigns.seeds.published import load_published
from campaigns.seeds.services import template_load_all
from tests.helpers.seeds import local_target, measured_instance


@pytest.fixture
def seeds(db):
    template_load_all()
    load_published()


def _text(response: Any) -> str:
    assert response.status_code == 200, response.content[:500]
    return b"".join(response.streaming_content).decode() if response.streaming else response.content.decode()


def test_like_with_like_needs_the_same_rows_memory_fit_threads_and_a_comparable_duration():
    paper = Side(tables=150, table_size=800_000, threads=256, clients=2, time_s=300.0, memory_gb=16.0)
    same = differences(measured=paper, published=paper)
    assert same.like and same.items == ()
    small = Side(tables=1, table_size=10_000, threads=64, clients=1, time_s=4.0, memory_gb=8.0)
    found = differences(measured=small, published=paper, hardware="different hardware")
    assert set(found.unlike) == {"rows", "memory", "threads", "duration"}
    assert "rows: 1 × 10,000 here, 150 × 800,000 in the document (8.3e-05 of its data)" in found.items
    assert any(i.startswith("data in memory (about 2 MB in 8 GB) here, I/O-bound (about 30 GB for 16 GB)")
               for i in found.items), found.items
    assert "threads: 64 here, 256 in the document" in found.items
    assert "client machines: 1 here, 2 in the document" in found.items and found.items[-1] == "different hardware"
    assert in_memory(1, 10_000, 8) and not in_memory(150, 800_000, 16) and in_memory(1, 10_000, None) is None


def test_the_measured_side_is_in_memory_or_not_by_the_hit_ratio_its_jobs_measured():
    paper = Side(tables=150, table_size=800_000, threads=256, clients=2, time_s=300.0, memory_gb=16.0)
    # Small enough to fit by its size, yet its buffer pool missed: measured, it was I/O-bound like the paper's.
    cold = Side(tables=150, table_size=800_000, threads=256, clients=2, time_s=300.0, memory_gb=512.0, hit_pct=62.0)
    assert "memory" not in differences(measured=cold, published=paper).unlike
    warm = Side(tables=150, table_size=800_000, threads=256, clients=2, time_s=300.0, memory_gb=8.0, hit_pct=99.7)
    found = differences(measured=warm, published=paper)
    assert found.unlike == ("memory",)
    assert found.items == ("data in memory (buffer-pool hit ratio 99.7 % measured) here, I/O-bound (about 30 GB "
                           "for 16 GB) in the document",)


def test_a_seed_run_at_this_machines_scale_says_what_differs_beside_every_published_figure(role_client, seeds):
    template = Campaign.objects.get(is_template=True, template_key="seed-004")
    campaign, run = measured_instance(template, local_target(), repetitions=2)
    Job.objects.filter(run=run).update(time_s=4, clients_needed=1)
    # The paper's ladder (50 … 1,000 threads) is kept as a curve, scaled under 64, and the mapping is written down.
    assert campaign.threads == [3, 6, 13, 32, 64]
    assert "The document's threads 50, 100, 200, 500, 1,000 run here as 3, 6, 13, 32, 64." in campaign.description
    page = _text(role_client("viewer").get(f"/compare/?campaign={campaign.pk}&published=004"))
    figures = re.findall(r'<td class="num published-figure"[^>]*data-differences="([^"]*)"', page)
    assert len(figures) == 3 * 2 * 5, len(figures)  # three tables, two published products, five rows each
    for found in map(html_module.unescape, figures):
        assert "rows: " in found and "threads: " in found and "duration: 4 s here, " in found, found
        assert "different hardware" in found, found
    assert page.count('data-testid="differs"') == len(figures)
    # Each measured point stands beside the document's point it stands for: 3 ↔ 50, 6 ↔ 100 … 64 ↔ 1,000.
    first = page.split('<table class="comparison', 1)[1].split("</table>", 1)[0]
    pairs = re.findall(r'<tr[^>]*>.*?<td class="num">([\d,]+)</td>.*?data-published-threads="(\d+)"', first, re.S)
    assert [(int(t.replace(",", "")), int(p)) for t, p in pairs] == [
        (3, 50), (6, 100), (13, 200), (32, 500), (64, 1000)], pairs
    assert "its 100 threads, scaled" in first
    ratios = re.findall(r'<td class="num ratio[^"]*"[^>]*>(.*?)</td>', page, re.S)
    assert ratios and all('data-testid="unlike"' in cell for cell in ratios)
    # No sentence sets the measured figures against the published ones: each says why not.
    summaries = re.findall(r'data-testid="beside-summary"><strong>Beside the published figures.</strong> (.*?)</p>',
                           page, re.S)
    assert summaries and all("× the published" not in s and "not set against" in s for s in summaries), summaries
    assert "rows, thread counts and duration" in html_module.unescape(summaries[0]), summaries[0]
    assert 'data-testid="beside-difference"' in page
    rows = list(csv.DictReader(io.StringIO(_text(role_client("viewer").get(
        f"/compare/comparison.csv?campaign={campaign.pk}&published=004")))))
    measured = [r for r in rows if r["source"] == "measured" and r["published_qps"]]
    assert measured and all("threads: " in r["published_differences"] for r in measured)


def test_a_ladder_scaled_down_whole_maps_point_to_point_and_nothing_else_does():
    from campaigns.comparison.published import scaled_ladder

    assert scaled_ladder([3, 6, 13, 32, 64], [50, 100, 200, 500, 1000]) == {3: 50, 6: 100, 13: 200, 32: 500,
                                                                           64: 1000}
    assert scaled_ladder([2, 4, 8, 64], [2, 4, 8, 3000]) == {}  # clipped, not scaled: the nearest rule applies
    assert scaled_ladder([64, 96], [64, 96]) == {} and scaled_ladder([64], [256]) == {}
