// Comparison charts: QPS vs threads (a line per product), best QPS per spec (grouped bars), latency vs threads;
// and the choice form's published spec list, narrowed to the chosen published product.
(function () {
  "use strict";
  const dataEl = document.getElementById("compare-charts");
  const printButton = document.getElementById("print-report");
  if (printButton) printButton.addEventListener("click", function () { window.print(); });

  // The published spec list is grouped by product (optgroup labels are the product choices' labels): show only
  // the chosen product's specs, and clear a spec that belongs to another product.
  const publishedProduct = document.getElementById("id_published_product");
  const publishedSpec = document.getElementById("id_published_spec");
  function filterPublishedSpecs() {
    const chosen = publishedProduct.selectedIndex > 0 ? publishedProduct.options[publishedProduct.selectedIndex].text : "";
    for (const group of publishedSpec.querySelectorAll("optgroup")) {
      const hide = chosen !== "" && group.label !== chosen;
      group.hidden = hide;
      group.disabled = chosen === "" || hide;
    }
    const selected = publishedSpec.options[publishedSpec.selectedIndex];
    if (selected && selected.parentElement.tagName === "OPTGROUP" && selected.parentElement.disabled) {
      publishedSpec.value = "";
    }
  }
  if (publishedProduct && publishedSpec) {
    publishedProduct.addEventListener("change", filterPublishedSpecs);
    filterPublishedSpecs();
  }
  if (!dataEl || typeof Chart === "undefined") return;
  const charts = JSON.parse(dataEl.textContent);
  const palette = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f"];
  const forPrint = document.body.classList.contains("report-page");

  function color(i) { return palette[i % palette.length]; }

  // Thread counts are evenly spaced categories, as the white papers draw them (2, 4, … 3000).
  function lineChart(canvas, lines, yTitle, threads) {
    return new Chart(canvas, {
      type: "line",
      data: { labels: threads, datasets: lines.map(function (line, i) {
        return { label: line.label, data: line.data, borderColor: color(i), backgroundColor: color(i),
                 pointRadius: 3, borderWidth: 2, tension: 0 };
      }) },
      options: {
        responsive: true, maintainAspectRatio: false, animation: forPrint ? false : undefined,
        interaction: { mode: "nearest", intersect: false },
        plugins: { legend: { position: "bottom" } },
        scales: {
          x: { type: "category", title: { display: true, text: "threads" } },
          y: { beginAtZero: true, title: { display: true, text: yTitle } },
        },
      },
    });
  }

  function barChart(canvas, bars) {
    return new Chart(canvas, {
      type: "bar",
      data: { labels: bars.labels, datasets: bars.datasets.map(function (d, i) {
        return { label: d.label, data: d.data, backgroundColor: color(i) };
      }) },
      options: {
        responsive: true, maintainAspectRatio: false, animation: forPrint ? false : undefined,
        plugins: { legend: { position: "bottom" } },
        scales: { y: { beginAtZero: true, title: { display: true, text: "QPS" } } },
      },
    });
  }

  for (const block of document.querySelectorAll(".charts[data-table]")) {
    const data = charts[block.dataset.table];
    if (!data) continue;
    for (const canvas of block.querySelectorAll("canvas[data-chart]")) {
      const kind = canvas.dataset.chart;
      if (kind === "qps_lines") lineChart(canvas, data.qps_lines, "QPS", data.threads);
      else if (kind === "latency_lines") lineChart(canvas, data.latency_lines, data.latency_label, data.threads);
      else if (kind === "spec_bars" && data.spec_bars) barChart(canvas, data.spec_bars);
    }
  }
})();
