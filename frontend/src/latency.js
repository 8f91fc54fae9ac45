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
  // sysbench prints only the buckets that counted events; its buckets are 1,024 log-spaced values from
  // 0.001 ms to 100 s (each about 1.8 % above the previous). A missing bucket is zero events: drawn as
  // zero, not bridged by the line from its neighbours.
  const STEP = Math.pow(1e8, 1 / 1024);
  const points = [];
  buckets.forEach(function (b, i) {
    if (i > 0 && b[0] / buckets[i - 1][0] > STEP * 1.01) {
      points.push({ x: buckets[i - 1][0] * STEP, y: 0 });
      points.push({ x: b[0] / STEP, y: 0 });
    }
    points.push({ x: b[0], y: b[1] });
  });
  // Log-axis labels at 1, 2 and 5 of each decade only: the others crowd each other.
  function tickLabel(value) {
    const mantissa = value / Math.pow(10, Math.floor(Math.log10(value) + 1e-9));
    const rounded = Math.round(mantissa * 1000) / 1000;
    return rounded === 1 || rounded === 2 || rounded === 5 ? value.toLocaleString("en-US") : "";
  }
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
        x: { type: "logarithmic", title: { display: true, text: "latency (ms, log scale)" },
             ticks: { autoSkip: false, maxRotation: 0, callback: tickLabel } },
        y: { beginAtZero: true, title: { display: true, text: "events" }, ticks: { precision: 0 } },
      },
    },
  });
})();
