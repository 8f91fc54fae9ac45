// The job page's latency histogram: every event's latency, as the job's merged --histogram buckets
// ([bucket value in ms, count] pairs from the "latency-histogram-data" json_script), counts per bucket
// over a logarithmic latency axis (sysbench's buckets are log-spaced, so each bar has the same width).
(function () {
  "use strict";
  const dataEl = document.getElementById("latency-histogram-data");
  const canvas = document.getElementById("chart-latency-histogram");
  if (!dataEl || !canvas || typeof Chart === "undefined") return;
  const buckets = JSON.parse(dataEl.textContent) || [];
  if (!buckets.length) return;
  const points = buckets.map(function (b) { return { x: b[0], y: b[1] }; });
  new Chart(canvas, {
    type: "line",
    data: { datasets: [{
      label: "events per latency bucket", data: points, stepped: "middle", fill: true, pointRadius: 0,
      borderWidth: 1.5, borderColor: "#7c3aed", backgroundColor: "rgba(124, 58, 237, 0.25)",
    }] },
    options: {
      responsive: true, maintainAspectRatio: false, animation: false, parsing: false, normalized: true,
      interaction: { mode: "nearest", axis: "x", intersect: false },
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: {
          title: function (items) { return items.length ? items[0].parsed.x.toLocaleString("en-US") + " ms" : ""; },
          label: function (item) { return item.parsed.y.toLocaleString("en-US") + " events"; },
        } },
      },
      scales: {
        x: { type: "logarithmic", title: { display: true, text: "latency (ms, log scale)" } },
        y: { beginAtZero: true, title: { display: true, text: "events" }, ticks: { precision: 0 } },
      },
    },
  });
})();
