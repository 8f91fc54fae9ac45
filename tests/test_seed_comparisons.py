"""Seed comparisons in the paper's own shape: a campaign made from each seed template, measured,
opens beside the document's published figures in ONE table per document table (published figure, measured figure,
ratio with its interval where there are repetitions, verdict marks) and one chart with both series (published points
at their own concurrency, error bars only where there are repetitions); every link of /seeds/ works for such
campaigns, and the published comparison is reachable from the campaign's, the run's and the compare page."""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import pytest

from campaigns.comparison import Selection, comparison_layout
from campaigns.models import Campaign, InstanceSpec, Job, Product, PublishedResult, Scenario
from campaigns.seeds.matching import published_key
from campaigns.seeds.published import load_published
from campaigns.seeds.services import template_load_all
from campaigns.seeds.templates import TEMPLATES
from tests.helpers.seeds import local_target, measured_instance

NO_MATCH = "is not a scenario of a seed template"


@pytest.fixture
def seeds(db):
    template_load_all()
    load_published()


def _text(response: Any) -> str:
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def _links(html: str, section_id: str) -> list[str]:
    section = html.split(f'id="{section_id}"', 1)[1].split("</section>", 1)[0]
    return [href.replace("&amp;", "&") for href in re.findall(r'href="([^"]+)"', section)]


# ---------------------------------------------------------------- every /seeds/ link, for each template


def test_every_seeds_link_works_for_a_measured_campaign_made_from_each_template(role_client, seeds):
    target = local_target()
    for template in Campaign.objects.filter(is_template=True).order_by("template_key"):
        measured_instance(template, target)
    client = role_client("viewer")
    html = _text(client.get("/seeds/"))
    links = _links(html, "instances-h") + _links(html, "templates-h")
    compare_links = [link for link in links if urlsplit(link).path.startswith("/compare/")]
    beside_links = [link for link in compare_links if "published_product=" in link]
    # Each campaign lists the products with figures for its template's tables: seed 000 part 1 one, part 2 two,
    # 001 two, 002 one, 003 none (charts only), 004 two.
    expected = 0
    for template in TEMPLATES:
        keys = [published_key(s.name) for s in template.scenarios]
        expected += len({r.product_id for r in PublishedResult.objects.filter(document=template.document)
                         if any(k.matches(document=r.document, dataset_label=r.dataset_label,
                                          scenario_label=r.scenario_label) for k in keys)})
    assert len(beside_links) == expected == 8
    assert len(links) > len(compare_links) > len(beside_links)
    for link in links:
        page = _text(client.get(link))
        assert NO_MATCH not in page, link
        assert "has no published figures" not in page, link
    # Each link beside a published product (and each "the document's own tables") shows the published columns in
    # the measured table: a published figure and a ratio in every row.
    for link in [*beside_links, *[lk for lk in compare_links if "campaign=" in lk and "published=" in lk]]:
        page = _text(client.get(link))
        assert 'data-metric="published"' in page and 'class="num ratio' in page, link
        assert 'data-testid="beside-published"' in page, link


def test_seed_002s_plain_ddl_copy_is_matched_to_the_documents_table(seeds):
    assert published_key("seed 002 · DDM oltp (legacy oltp.lua) · plain DDL") == published_key(
        "seed 002 · DDM oltp (legacy oltp.lua)")
    assert published_key("my own scenario · plain DDL") is None


# ---------------------------------------------------------------- one table, one chart per document table


def test_a_seed_004_campaign_beside_its_document_is_one_table_with_both_products_and_ratios(role_client, seeds):
    template = Campaign.objects.get(is_template=True, template_key="seed-004")
    campaign, _run = measured_instance(template, local_target(), repetitions=3, invalid_threads=64)
    client = role_client("viewer")
    html = _text(client.get(f"/compare/?campaign={campaign.pk}&published=004"))
    # Three document tables (read, write, hybrid), each measured: three tables, none of them published-only.
    assert html.count('<table class="comparison') == 3
    assert "published in seed 004" not in html
    table = html.split('<table class="comparison', 1)[1].split("</table>", 1)[0]
    head = table.split("</thead>", 1)[0]
    # Both of the document's products, each with its figure and the measured product's ratio to it.
    for product in ("TDSQL for MySQL", "MySQL 5.7 (semi-sync)"):
        assert f'{product} <span class="badge published">published</span>' in head
    assert head.count(">local MariaDB product ÷ published</th>") == 2
    rows = re.findall(r"<tr data-spec[^>]*data-threads=\"(\d+)\"[^>]*>(.*?)</tr>", table, re.S)
    assert [int(t) for t, _ in rows] == [3, 6, 13, 32, 64]  # 50 … 1,000 scaled under the ceiling of 64
    for _threads, row in rows:
        assert row.count('class="num published-figure"') == 2
        # The document's average and p99 latency beside the measured ones (seed 004 measures p99 as it does).
        assert row.count('class="num published-latency" data-metric="latency_avg_ms"') == 2
        assert row.count('class="num published-latency" data-metric="latency_pct_ms"') == 2
        assert row.count('class="num ratio') == 2
        # Three repetitions: every ratio has its 95% interval and n.
        assert row.count('data-testid="ratio-ci"') == 2 and row.count(" · n = 3</span>") == 2
    # The run scaled the document's ladder (50 … 1,000 → 3 … 64): each row stands beside the point it stands for,
    # and says so (it was once the nearest, 50, for all but the last).
    assert "its 50 threads, scaled</span>" in rows[0][1] and "its 100 threads, scaled</span>" in rows[1][1]
    assert "stands for the document&#x27;s 50" in rows[0][1]
    # The invalid cells keep their mark, and their ratios say where they come from.
    assert "verdict-invalid" in rows[-1][1] and rows[-1][1].count("from an invalid cell") == 2
    assert "from an invalid cell" not in rows[0][1]


def test_the_chart_puts_published_points_at_their_own_concurrency_and_error_bars_only_on_repetitions(seeds):
    template = Campaign.objects.get(is_template=True, template_key="seed-004")
    campaign, _run = measured_instance(template, local_target(), repetitions=2)
    layout = comparison_layout(Selection(campaign=[campaign.pk], published=["004"]))
    charts = layout["tables"][0]["charts"]
    measured = [line for line in charts["qps_lines"] if not line.get("published")]
    published = [line for line in charts["qps_lines"] if line.get("published")]
    assert [p["x"] for p in measured[0]["data"]] == [3, 6, 13, 32, 64]
    assert all(p["yMin"] is not None and p["yMax"] is not None for p in measured[0]["data"])
    assert {line["label"] for line in published} == {"TDSQL for MySQL (published)",
                                                     "MySQL 5.7 (semi-sync) (published)"}
    for line in published:
        assert [p["x"] for p in line["data"]] == [50, 100, 200, 500, 1000]  # 1,000 at 1,000
        assert all(p["yMin"] is None and p["yMax"] is None for p in line["data"])
    assert charts["threads"] == [3, 6, 13, 32, 50, 64, 100, 200, 500, 1000]
    assert "error bars: min–max of the repetitions" in charts["caption"]
    published_clause = charts["caption"].split("Dashed lines, triangles: published (", 1)[1]
    assert "TDSQL for MySQL" in published_clause and "MySQL 5.7 (semi-sync)" in published_clause
    # The latency chart has the document's p99 latency: the table shows the same percentile.
    assert charts["latency_label"] == "p99 latency (ms)"
    assert sum(1 for line in charts["latency_lines"] if line.get("published")) == 2

    # One run per cell: no error bars, and the caption does not claim any.
    single, _ = measured_instance(template, local_target("single"), repetitions=1)
    charts = comparison_layout(Selection(campaign=[single.pk], published=["004"]))["tables"][0]["charts"]
    assert all(p["yMin"] is None for line in charts["qps_lines"] for p in line["data"])
    assert charts["error_bars"] == "" and "one run per cell, so no error bars" in charts["caption"]
    # The document's tables alone: its own figures, at their own concurrency, no error bars, said so.
    alone = comparison_layout(Selection(published=["004"]))["tables"][0]["charts"]
    assert alone["error_bars"] == "" and "no error bars" in alone["caption"]
    assert sorted({p["x"] for line in alone["qps_lines"] for p in line["data"]}) == [50, 100, 200, 500, 1000]


def test_a_document_table_not_measured_is_named_with_a_link_to_the_documents_tables(role_client, seeds):
    template = Campaign.objects.get(is_template=True, template_key="seed-004")
    campaign, _run = measured_instance(template, local_target())
    campaign.scenarios.set(campaign.scenarios.filter(name="seed 004 · read"))
    Job.objects.filter(run__campaign=campaign).exclude(scenario__name="seed 004 · read").delete()
    html = _text(role_client("viewer").get(f"/compare/?campaign={campaign.pk}&published=004"))
    assert html.count('<table class="comparison') == 1
    left_out = re.search(r'data-testid="published-left-out">(.*?)</p>', html, re.S).group(1)
    assert "write" in left_out and "hybrid" in left_out and "read" not in left_out.replace("Not measured", "")
    assert 'href="/compare/?published=004"' in left_out


# ---------------------------------------------------------------- reachable from the campaign, run and compare pages


def test_the_published_comparison_is_linked_from_the_campaign_run_and_compare_pages(role_client, seeds):
    template = Campaign.objects.get(is_template=True, template_key="seed-001")
    campaign, run = measured_instance(template, local_target())
    client = role_client("viewer")
    tdsqlc, tencentdb = (Product.objects.get(name=n) for n in ("TDSQL-C for MySQL", "TencentDB for MySQL"))
    pages = {f"/campaigns/{campaign.pk}/": f"campaign={campaign.pk}", f"/runs/{run.pk}/": f"runs={run.pk}",
             f"/compare/?campaign={campaign.pk}": f"campaign={campaign.pk}"}
    for url, query in pages.items():
        html = _text(client.get(url))
        links = re.search(r'data-testid="published-links">(.*?)</p>', html, re.S)
        assert links is not None, url
        hrefs = [h.replace("&amp;", "&") for h in re.findall(r'href="([^"]+)"', links.group(1))]
        assert sorted(hrefs[:-1]) == sorted(f"/compare/?{query}&published_product={p.pk}" for p in (tdsqlc, tencentdb))
        assert hrefs[-1] == f"/compare/?{query}&published=001", url
        for href in hrefs:
            page = _text(client.get(href))
            assert 'data-metric="published"' in page and NO_MATCH not in page, href
    # Once the published figures are shown, the compare page does not offer them again; a plain comparison of
    # non-seed scenarios offers nothing.
    html = _text(client.get(f"/compare/?campaign={campaign.pk}&published=001"))
    assert 'data-testid="published-links"' not in html
    template_page = _text(client.get(f"/campaigns/{template.pk}/"))
    assert 'data-testid="published-links"' not in template_page


def test_the_print_report_of_a_seed_campaign_has_the_published_columns_in_its_qps_table(role_client, seeds):
    template = Campaign.objects.get(is_template=True, template_key="seed-004")
    campaign, _run = measured_instance(template, local_target(), repetitions=2)
    report = _text(role_client("viewer").get(f"/compare/report/?campaign={campaign.pk}&published=004"))
    qps = report.split('id="table-', 1)[1].split("</table>", 1)[0]
    assert 'data-metric="qps"' in qps and qps.count('class="num published-figure"') == 2 * 5
    assert 'data-testid="ratio-ci"' in qps
    assert 'data-testid="chart-note"' in report
    # No second, separate "beside" table anywhere.
    assert "comparison fit beside" not in report
    # The summary (and the conclusions) say what the page says beside the table: the ratio to the published figures.
    summary = report.split("<h2>1. Summary</h2>", 1)[1].split("</section>", 1)[0]
    conclusions = report.split("<h2>5. Conclusions</h2>", 1)[1].split("</section>", 1)[0]
    beside = re.search(r'data-testid="beside-summary"><strong>Beside the published figures.</strong> (.*?)</p>',
                       report, re.S).group(1)
    # At this machine's scale the rows and thread counts are not the document's: no ratio sentence.
    assert "figures are not set against the published " in beside and "× the published " not in beside
    assert "rows" in beside and "thread counts" in beside
    assert beside in summary and beside in conclusions, summary
    assert InstanceSpec.objects.filter(label="local MariaDB 2-core 8 GB").exists()
    assert Scenario.objects.filter(name__startswith="seed 004").count() == 3
