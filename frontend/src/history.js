// Campaign page, "History": one cell's QPS per run (geometric mean of its repetitions) with the baseline band the
// newest run is judged against, regressions and improvements marked. The chosen cell's history comes with
// the page (json_script "history-data"); picking another cell fetches GET /api/v1/regressions/history/.
(function () {
  "use strict";
  const config = document.getElementById("history-config");
  const select = document.getElementById("history-cell");
  const canvas = document.getElementById("history-chart");
  const initial = document.getElementById("history-data");
  if (!config || !select || !canvas || typeof Chart === "undefined") return;

  const COLORS = {
    qps: "#2563eb", band: "rgba(37, 99, 235, 0.12)", bandEdge: "rgba(37, 99, 235, 0.35)", median: "#64748b", changePoint: "#7c3aed", note: "#b45309",
    regression: "#dc2626", improvement: "#059669", noisy: "#d97706",
  };
  const baselineText = document.getElementById("history-baseline");
  const changesTable = document.getElementById("history-changes");
  const errorText = document.getElementById("history-error");
  let chart = null;
  let latest = 0; // only the answer to the newest request is drawn

  function fmt(value, digits) {
    if (value === null || value === undefined) return "—";
    return Number(value).toLocaleString("en-US", { maximumFractionDigits: digits === undefined ? 1 : digits });
  }

  // As the server renders the same table (Django's floatformat:1).
  function fixed(value) { return value === null || value === undefined ? "—" : Number(value).toFixed(1); }

  function runUrl(id) { return config.dataset.runUrl.replace(/\/0\/$/, "/" + id + "/"); }

  function pointLabel(point) {
    const date = (point.started_at || point.created_at || "").slice(0, 10);
    return "#" + point.run_id + (date ? " " + date : "");
  }

  function flat(points, value) { return points.map(function () { return value; }); }

  function marked(points, kind) {
    return points.map(function (p) { return p[kind] ? p.qps : null; });
  }

  function notesByPoint(history) {
    const points = history.points;
    const byPoint = points.map(function () { return []; });
    (history.annotations || []).forEach(function (note) {
      let index = points.findIndex(function (p) { return note.run_id !== null && p.run_id === note.run_id; });
      if (index < 0 && note.run_id === null) {
        index = points.findIndex(function (p) { return (p.started_at || p.created_at || "") >= note.at; });
      }
      if (index >= 0) byPoint[index].push(note.text);
    });
    return byPoint;
  }

  function datasets(history) {
    const points = history.points;
    const band = history.baseline;
    const sets = [];
    if (band) {
      // Two invisible edges, the upper one filled down to the lower one: the band.
      sets.push({ label: "band low", data: flat(points, band.low), borderColor: COLORS.bandEdge, borderWidth: 1,
                  pointRadius: 0, pointHitRadius: 0, fill: false, order: 4 });
      sets.push({ label: "baseline ± " + fmt(band.threshold_pct) + "%", data: flat(points, band.high),
                  borderColor: COLORS.bandEdge, backgroundColor: COLORS.band, borderWidth: 1, pointRadius: 0,
                  pointHitRadius: 0, fill: "-1", order: 4 });
      sets.push({ label: "baseline mean", data: flat(points, band.mean), borderColor: COLORS.median,
                  borderDash: [6, 4], borderWidth: 1, pointRadius: 0, pointHitRadius: 0, fill: false, order: 3 });
    }
    sets.push({
      label: "QPS", data: points.map(function (p) { return p.qps; }), borderColor: COLORS.qps,
      backgroundColor: points.map(function (p) { return p.noisy ? COLORS.noisy : COLORS.qps; }),
      pointStyle: points.map(function (p) { return p.noisy ? "triangle" : "circle"; }),
      pointRadius: 3, borderWidth: 2, tension: 0, fill: false, order: 2,
    });
    sets.push({ label: "regression", data: marked(points, "regression"), showLine: false, pointRadius: 7,
                pointHoverRadius: 9, pointStyle: "rectRot", backgroundColor: COLORS.regression,
                borderColor: COLORS.regression, order: 1 });
    sets.push({ label: "improvement", data: marked(points, "improvement"), showLine: false, pointRadius: 7,
                pointHoverRadius: 9, pointStyle: "rectRot", backgroundColor: COLORS.improvement,
                borderColor: COLORS.improvement, order: 1 });
    // Where the history changes level (E-Divisive means): the first run of the new level, as a hollow triangle.
    // Annotations: a star on the run they belong to (or the first run at or after a target's note).
    const noted = notesByPoint(history);
    sets.push({ label: "note", data: points.map(function (p, i) { return noted[i] ? p.qps : null; }), showLine: false,
                pointRadius: 8, pointHoverRadius: 10, pointStyle: "star", borderColor: COLORS.note, borderWidth: 2,
                backgroundColor: COLORS.note, order: 0 });
    sets.push({ label: "change point", data: marked(points, "change_point"), showLine: false, pointRadius: 9,
                pointHoverRadius: 11, pointStyle: "triangle", backgroundColor: "rgba(0, 0, 0, 0)",
                borderColor: COLORS.changePoint, borderWidth: 2, order: 0 });
    return sets;
  }

  function draw(history) {
    const points = history.points;
    if (chart) chart.destroy();
    chart = new Chart(canvas, {
      type: "line",
      data: { labels: points.map(pointLabel), datasets: datasets(history) },
      options: {
        responsive: true, maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false },
        plugins: {
          legend: { position: "bottom", labels: { filter: function (item) { return item.text !== "band low"; } } },
          tooltip: {
            filter: function (item) { return item.dataset.label === "QPS"; },
            callbacks: {
              title: function (items) {
                const p = points[items[0].dataIndex];
                return "Run #" + p.run_id + (p.label ? " · " + p.label : "") + " (" + p.trigger + ")";
              },
              label: function (item) {
                const p = points[item.dataIndex];
                return "QPS " + fmt(p.qps) + " (" + p.repetitions + " rep., CV " + fmt(p.cv_pct) + "%" +
                  (p.noisy ? ", noisy" : "") + ")";
              },
              afterLabel: function (item) {
                const p = points[item.dataIndex];
                const lines = [];
                if (p.latency_pct_ms !== null) lines.push("latency " + fmt(p.latency_pct_ms, 2) + " ms");
                if (p.regression) lines.push("regression");
                if (p.improvement) lines.push("improvement");
                if (p.change_point) lines.push("change point: the history changes level here");
                notesByPoint(history)[item.dataIndex].forEach(function (text) { lines.push("note: " + text); });
                return lines;
              },
            },
          },
        },
        scales: {
          x: { type: "category", title: { display: true, text: "run" } },
          // Room above and below, so that a marked point at the edge is not cut in half.
          y: { beginAtZero: false, grace: "8%", title: { display: true, text: "QPS" } },
        },
        onClick: function (event, elements) {
          if (elements.length) window.location.href = runUrl(points[elements[0].index].run_id);
        },
      },
    });
  }

  function cell(text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    return td;
  }

  function summarise(history) {
    const band = history.baseline;
    const n = history.points.length;
    const text = band
      ? "Baseline: " + fmt(band.mean) + " QPS, band " + fmt(band.low) + " – " + fmt(band.high) + " (± " +
        fmt(band.threshold_pct) + "%), " + band.label + "."
      : "No baseline yet: pin a run or let scheduled runs accumulate.";
    baselineText.textContent = text + " " + n + " run" + (n === 1 ? "" : "s") + " shown.";
    const body = changesTable.tBodies[0];
    body.replaceChildren();
    for (const c of history.changes) {
      const row = document.createElement("tr");
      row.dataset.kind = c.kind;
      const run = document.createElement("td");
      const link = document.createElement("a");
      link.href = runUrl(c.run_id);
      link.textContent = "#" + c.run_id;
      run.appendChild(link);
      const kind = document.createElement("td");
      const badge = document.createElement("span");
      badge.className = "badge " + c.kind;
      badge.textContent = c.kind;
      kind.appendChild(badge);
      const significance = cell(c.p_value === null ? "— " : "p = " + Number(c.p_value).toFixed(4) + " ", "small");
      const method = document.createElement("span");
      method.className = "muted";
      method.textContent = c.method;
      significance.appendChild(method);
      row.append(run, kind, cell(c.metric === "qps" ? "QPS" : "latency (ms)"), cell(fixed(c.baseline_value), "num"),
                 cell(fixed(c.current_value), "num"), cell(fixed(c.change_pct) + "%", "num change-pct " + c.kind),
                 significance);
      body.appendChild(row);
    }
    changesTable.hidden = history.changes.length === 0;
  }

  async function load() {
    // target:scenario:threads:variant (a variant's name may hold a colon: the rest is the variant).
    const [target, scenario, threads, ...rest] = select.value.split(":");
    const params = new URLSearchParams({ campaign: config.dataset.campaign, target: target, scenario: scenario,
                                         threads: threads, variant: rest.join(":") });
    const url = new URL(window.location.href);
    for (const key of ["target", "scenario", "threads", "variant"]) url.searchParams.set(key, params.get(key));
    url.hash = "history";
    window.history.replaceState(null, "", url);
    const mine = ++latest;
    errorText.hidden = true;
    try {
      const response = await fetch(config.dataset.apiUrl + "?" + params, {
        credentials: "same-origin", headers: { Accept: "application/json" },
      });
      if (!response.ok) throw new Error("HTTP " + response.status);
      const history = await response.json();
      if (mine !== latest) return;
      draw(history);
      summarise(history);
    } catch (error) {
      if (mine !== latest) return;
      errorText.textContent = "Could not load this cell's history (" + error.message + ").";
      errorText.hidden = false;
    }
  }

  select.addEventListener("change", load);
  if (initial) draw(JSON.parse(initial.textContent));
})();
