// The job page's host and server charts: what was measured beside sysbench, on sysbench's time axis
// (seconds since its start), from /api/v1/jobs/<id>/metrics/. Fetched once for a finished job, every 5 s
// while it runs.
(function () {
  "use strict";
  const config = document.getElementById("metrics-config");
  if (!config || typeof Chart === "undefined") return;
  const hostCanvas = document.getElementById("chart-host");
  const serverCanvas = document.getElementById("chart-server");
  const note = document.getElementById("metrics-note");
  const EVERY_MS = 5000;

  const common = {
    responsive: true, maintainAspectRatio: false, animation: false, parsing: false, normalized: true,
    interaction: { mode: "nearest", axis: "x", intersect: false },
    plugins: { legend: { position: "bottom" } },
  };
  const xAxis = { type: "linear", title: { display: true, text: "seconds" }, ticks: { precision: 0 } };
  const host = new Chart(hostCanvas, {
    type: "line", data: { datasets: [] },
    options: { ...common, scales: { x: xAxis, y: { beginAtZero: true, suggestedMax: 100,
      title: { display: true, text: "% busy" } } } },
  });
  const server = new Chart(serverCanvas, {
    type: "line", data: { datasets: [] },
    options: { ...common, scales: { x: xAxis,
      y: { beginAtZero: true, title: { display: true, text: "per second" } },
      y1: { beginAtZero: true, position: "right", grid: { drawOnChartArea: false },
            title: { display: true, text: "threads / backends" } } } },
  });

  function points(ts, values, scale) {
    const out = [];
    for (let i = 0; i < ts.length; i++) {
      if (values[i] !== null && values[i] !== undefined) out.push({ x: ts[i], y: values[i] * (scale || 1) });
    }
    return out;
  }
  function line(label, data, color, axis) {
    return { label, data, borderColor: color, backgroundColor: color, borderWidth: 1.5, pointRadius: 0,
             yAxisID: axis || "y" };
  }

  // Server figures worth drawing, by what each product calls them.
  const SERVER_RATES = [
    ["Questions", "queries", "#2563eb"], ["xact_commit", "transactions committed", "#2563eb"],
    ["Innodb_rows_read", "rows read", "#16a34a"], ["Rows_read", "rows read", "#16a34a"],
    ["tup_fetched", "rows fetched", "#16a34a"],
    ["Innodb_buffer_pool_reads", "buffer-pool misses", "#dc2626"], ["blks_read", "blocks read (misses)", "#dc2626"],
  ];
  const SERVER_GAUGES = [["Threads_running", "threads running", "#7c3aed"],
                         ["backends_active", "active backends", "#7c3aed"]];

  function draw(data) {
    const palette = ["#0f766e", "#ea580c", "#4f46e5", "#be123c"];
    host.data.datasets = [];
    data.hosts.forEach(function (h, i) {
      const who = data.hosts.length > 1 ? " (" + (h.host_name || "client " + h.client_index) + ")" : "";
      const color = palette[i % palette.length];
      host.data.datasets.push(line("client CPUs busy" + who, points(h.t, h.client_cpus_busy_pct), color));
      host.data.datasets.push({ ...line("sysbench (% of one core ÷ cores)" + who,
        points(h.t, h.sysbench_cpu_pct, 1 / Math.max(1, (h.per_core_busy_pct[0] || [1]).length)), color),
        borderDash: [4, 3] });
      if (h.cpu_steal_pct.some(function (v) { return v > 0; })) {
        host.data.datasets.push({ ...line("steal" + who, points(h.t, h.cpu_steal_pct), "#dc2626"), borderDash: [2, 2] });
      }
    });
    host.update();
    server.data.datasets = [];
    const s = data.server;
    const drawn = {};
    SERVER_RATES.forEach(function (r) {
      // One line per meaning: MySQL's Innodb_rows_read, else MariaDB's Rows_read.
      if (s.rates[r[0]] && s.rates[r[0]].some(function (v) { return v; }) && !drawn[r[1]]) {
        drawn[r[1]] = true;
        server.data.datasets.push(line(r[1], points(s.t, s.rates[r[0]]), r[2]));
      }
    });
    SERVER_GAUGES.forEach(function (g) {
      if (s.gauges[g[0]]) server.data.datasets.push({ ...line(g[1], points(s.t, s.gauges[g[0]]), g[2], "y1"),
        borderDash: [4, 3] });
    });
    server.update();
    if (note) {
      note.textContent = data.hosts.length || s.t.length
        ? data.hosts.reduce(function (n, h) { return n + h.t.length; }, 0) + " host seconds, " + s.t.length +
          " server seconds"
        : "nothing was measured beside sysbench for this job (imported, or from before host and server metrics)";
    }
  }

  function load() {
    fetch(config.dataset.url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (data) {
        draw(data);
        if (config.dataset.finished !== "1") setTimeout(load, EVERY_MS);
      })
      .catch(function () { if (note) note.textContent = "host and server metrics could not be loaded"; });
  }
  load();
})();
