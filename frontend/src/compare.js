// Comparison charts: QPS vs threads (a line per product, error bars from min to max of the repetitions where a cell
// has them, published figures dashed at their own thread counts, threads on a log scale), best QPS per
// spec (grouped bars), latency vs threads; a measured cell's side panel on click (its costs, bound, why, seconds and
// latency histogram); and
// the choice form's published spec list, narrowed to the chosen published product.
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
  const palette = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f"];
  const forPrint = document.body.classList.contains("report-page");

  function color(i) { return palette[i % palette.length]; }

  function fmt(value) {
    if (value === null || value === undefined) return "—";
    return Math.abs(value) >= 100 ? Math.round(value).toLocaleString("en-US")
      : value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }

  function fmtDelta(value) {
    return (value > 0 ? "+" : "") + value.toFixed(1) + "%";
  }

  // The error-bars plugin (chartjs-chart-error-bars, loaded before this module) registers lineWithErrorBars; its
  // points carry yMin/yMax, the min–max of the cell's repetitions.
  const errorBars = typeof ChartErrorBars !== "undefined";

  // A point's tooltip lines: the value (geometric mean) with n, the spread the bar shows, and Δ% vs the baseline
  // with the table's significance mark; a published point says it is the document's figure. Short lines, so the
  // tooltip fits a narrow chart.
  function pointLabel(item, unit, baseline) {
    const p = item.raw || {};
    if (item.dataset.published) {
      const lines = [item.dataset.label + ": " + fmt(p.y) + unit + " at " + fmt(p.x) + " threads",
                     "one printed figure, on " + item.dataset.spec];
      if (p.correction) lines.push("corrected: " + p.correction);
      return lines;
    }
    const lines = [item.dataset.label + ": " + fmt(p.y) + unit + " (n = " + p.n + ")"];
    if (p.n > 1 && p.yMin !== null && p.yMin !== undefined) {
      lines.push("min–max " + fmt(p.yMin) + "–" + fmt(p.yMax) + ", sd " + fmt(p.sd));
    }
    if (p.delta !== null && p.delta !== undefined) {
      lines.push(fmtDelta(p.delta) + (p.interval ? " (" + p.interval + ")" : "") + " vs " + baseline +
                 (p.significance ? ", " + p.significance : ""));
    }
    // A suspect or invalid point says why, and a click on it opens a job's findings.
    if (p.verdict) {
      lines.push(p.verdict + ": " + (p.reasons ? p.reasons.join("; ") : "see the job's findings") +
                 (p.url ? " (click for the findings)" : ""));
    }
    return lines;
  }

  // Untrusted points are drawn hollow and crossed (a reader sees them without hovering); published ones as
  // triangles on a dashed line; the rest as usual.
  function pointStyles(line, colour) {
    if (line.published) {
      return { pointBorderColor: colour, pointStyle: "triangle", pointRadius: 5, pointBorderWidth: 1,
               borderDash: [6, 4] };
    }
    return {
      pointBorderColor: colour,
      pointStyle: line.data.map(function (p) { return p.verdict ? "crossRot" : "circle"; }),
      pointRadius: line.data.map(function (p) { return p.verdict ? 7 : 3; }),
      pointBorderWidth: line.data.map(function (p) { return p.verdict ? 3 : 1; }),
    };
  }

  function openFindings(event, elements, chart) {
    if (!elements.length) return;
    const point = chart.data.datasets[elements[0].datasetIndex].data[elements[0].index];
    if (point && point.verdict && point.url) window.location.assign(point.url);
  }

  // Threads on a log scale, each point at its own count (a published 1,000-thread figure at 1,000, not in the
  // slot after 512), with a tick at every count the table has.
  function threadsAxis(lines) {
    const threads = [...new Set(lines.flatMap(function (line) { return line.data.map(function (p) { return p.x; }); }))]
      .sort(function (a, b) { return a - b; });
    return {
      type: "logarithmic", title: { display: true, text: "threads (log scale)" },
      afterBuildTicks: function (axis) {
        axis.ticks = threads.filter(function (t) { return t >= axis.min && t <= axis.max; })
          .map(function (t) { return { value: t }; });
      },
      ticks: { autoSkip: true, maxRotation: 0, callback: function (value) { return Number(value).toLocaleString("en-US"); } },
    };
  }

  function lineChart(canvas, lines, yTitle, data, unit, logY) {
    const doubtful = lines.some(function (line) { return line.data.some(function (p) { return p.verdict; }); });
    // Chart.js does not wrap a legend title: each note is a line of its own. Error bars are named only where a
    // measured line has them.
    // The caption under the charts says the rest (which line is measured, which published).
    const legend = [];
    if (data.error_bars) legend.push("error bars: " + data.error_bars);
    if (doubtful) legend.push(forPrint ? "✕ suspect or invalid: the table says why"
                                       : "✕ suspect or invalid: hover for why, click for the findings");
    // Measured lines take the palette in order; a published line the colour after them.
    let measured = 0;
    const measuredCount = lines.filter(function (line) { return !line.published; }).length;
    let published = 0;
    return new Chart(canvas, {
      type: errorBars ? "lineWithErrorBars" : "line",
      data: { datasets: lines.map(function (line) {
        const colour = line.published ? color(measuredCount + published++) : color(measured++);
        return Object.assign({ label: line.label, data: line.data, borderColor: colour, backgroundColor: colour,
                 errorBarColor: colour, errorBarWhiskerColor: colour, errorBarWhiskerSize: 8,
                 borderWidth: 2, tension: 0, published: !!line.published, spec: line.spec || "" },
                 pointStyles(line, colour));
      }) },
      options: {
        responsive: true, maintainAspectRatio: false, animation: forPrint ? false : undefined,
        interaction: { mode: "nearest", intersect: false },
        onClick: openFindings,
        plugins: {
          legend: { position: "bottom",
                    // Chart.js gives a legend title one line's height: the padding below makes room for the
                    // others, which would otherwise be drawn over the legend's items.
                    title: { display: legend.length > 0, text: legend.length === 1 ? legend[0] : legend,
                             font: { size: 12, lineHeight: 1.2 },
                             padding: { top: 4, bottom: 4 + (legend.length - 1) * 14.4 } } },
          tooltip: { callbacks: { label: function (item) { return pointLabel(item, unit, data.baseline); } } },
        },
        scales: {
          x: threadsAxis(lines),
          y: logY ? { type: "logarithmic", title: { display: true, text: yTitle + " (log)" } }
            : { beginAtZero: true, title: { display: true, text: yTitle } },
        },
      },
    });
  }

  function barChart(canvas, bars, yTitle) {
    return new Chart(canvas, {
      type: "bar",
      data: { labels: bars.labels, datasets: bars.datasets.map(function (d, i) {
        return { label: d.label, data: d.data, backgroundColor: color(i) };
      }) },
      options: {
        responsive: true, maintainAspectRatio: false, animation: forPrint ? false : undefined,
        plugins: { legend: { position: "bottom" } },
        scales: { y: { beginAtZero: true, title: { display: true, text: yTitle } } },
      },
    });
  }

  // A click on a measured cell opens its side panel: its figures, its per-query costs beside its row's baseline
  // cell's, what ran out and why it differs (from the page's cell-details, campaigns/comparison/panel.py), its jobs'
  // seconds on one time axis (the jobs API) and its latency histogram (the comparisons API).
  const dialog = document.getElementById("cell-histogram");
  const detailsEl = document.getElementById("cell-details");
  const details = detailsEl ? JSON.parse(detailsEl.textContent) || { cells: {}, costs: {} } : { cells: {}, costs: {} };
  let histogramChart = null;
  let panelCharts = [];
  let panelToken = 0;

  // The server's counter per second that stands for a reason or a bound, first the one the server counts.
  const COUNTERS = {
    bp_misses_per_1k_queries: ["Innodb_buffer_pool_reads", "blks_read"], bp_hit_pct: ["Innodb_buffer_pool_reads", "blks_read"],
    data_reads_per_txn: ["Innodb_data_reads", "blks_read"], data_writes_per_txn: ["Innodb_data_writes"],
    rows_read_per_query: ["Innodb_rows_read", "Rows_read", "tup_returned"], row_lock_waits_per_s: ["Innodb_row_lock_waits"],
    lock_waits_per_txn: ["Innodb_row_lock_waits"], io: ["Innodb_buffer_pool_reads", "blks_read"],
    locks: ["Innodb_row_lock_waits"], concurrency: ["Threads_running", "backends_active"],
  };
  const GAUGES = ["Threads_running", "backends_active"];

  function textEl(tag, text, className) {
    const el = document.createElement(tag);
    el.textContent = text;
    if (className) el.className = className;
    return el;
  }

  function cellKey(cell, column) {
    const row = cell.closest("tr");
    const table = cell.closest("table");
    return [table.id.replace(/^table-/, ""), row.dataset.specId, row.dataset.threads, row.dataset.tableSize,
            row.dataset.tables, column].join("|");
  }

  function fillSummary(entry) {
    const section = dialog.querySelector("[data-testid=panel-summary]");
    section.hidden = !entry;
    if (!entry) return;
    const figures = section.querySelector("[data-testid=panel-figures]");
    figures.replaceChildren();
    let text = fmt(entry.qps) + " QPS, " + (entry.n > 1 ? "geometric mean of " + entry.n + " runs" : "one run");
    if (entry.ci95 && entry.ci95[0] !== null) text += " (95% interval " + fmt(entry.ci95[0]) + "–" + fmt(entry.ci95[1]) + ")";
    if (entry.base && entry.delta_pct !== null && entry.delta_pct !== undefined) text += "; " + fmtDelta(entry.delta_pct) + " against " + entry.base.name;
    figures.append(textEl("strong", text));
    if (entry.verdict === "suspect" || entry.verdict === "invalid") {
      figures.append(" ", textEl("span", entry.verdict, "badge verdict-" + entry.verdict));
    }
    if (entry.significance) figures.append(textEl("span", " " + entry.significance, "muted"));
    const bound = section.querySelector("[data-testid=panel-bound]");
    bound.replaceChildren(textEl("strong", "What ran out: "),
      entry.bound ? entry.bound.words + (entry.bound.evidence ? ": " + entry.bound.evidence : "") + "." : "not judged (no per-query costs stored).");
    const why = section.querySelector("[data-testid=panel-why]");
    why.replaceChildren(textEl("strong", "Why: "), entry.isBase ? "this is the row's baseline column; the other columns are explained against it."
      : !entry.base ? "the row's baseline column has no measured cell here, so nothing is compared."
      : entry.why || "its Δ% is not significant, so nothing is explained (the costs below still compare).");
    const thisHead = section.querySelector("[data-testid=panel-this]");
    const baseHead = section.querySelector("[data-testid=panel-base]");
    thisHead.textContent = entry.name;
    baseHead.textContent = entry.base ? entry.base.name + " (baseline)" : "baseline";
    const body = section.querySelector("table.panel-costs tbody");
    body.replaceChildren();
    const baseCosts = entry.base ? entry.base.costs : {};
    for (const [name, words] of Object.entries(details.costs || {})) {
      const mine = entry.costs[name];
      const theirs = baseCosts[name];
      if (!mine && !theirs) continue;
      const tr = document.createElement("tr");
      if (entry.reasons.indexOf(name) >= 0) tr.className = "reason";
      tr.append(textEl("th", words));
      tr.firstChild.scope = "row";
      for (const figures of [mine, theirs]) {
        const td = textEl("td", figures ? fmt(figures[0]) : "—", "num");
        if (figures && figures[1] !== figures[2] && figures[1] !== null) {
          td.append(document.createElement("br"), textEl("span", fmt(figures[1]) + "–" + fmt(figures[2]), "muted small"));
        }
        tr.append(td);
      }
      const ratio = mine && theirs && theirs[0] ? mine[0] / theirs[0] : null;
      const against = mine && theirs && !theirs[0] && mine[0] ? "against none" : "—";
      tr.append(textEl("td", !entry.base ? "—" : ratio === null ? against : ratio.toFixed(2) + "×", "num"));
      body.append(tr);
    }
    if (!body.children.length) {
      const tr = document.createElement("tr");
      const td = textEl("td", "No per-query cost was stored for these jobs (an imported result, or a server measured from outside).");
      td.colSpan = 4;
      tr.append(td);
      body.append(tr);
    }
  }

  // The server's profile beside the baseline's: each function's share of the sampled CPU time, ordered by how much
  // it differs (the differential view), or by its share where the baseline has no profile.
  function fillProfile(entry) {
    const section = dialog.querySelector("[data-testid=panel-profile]");
    const mine = entry && entry.profile;
    const theirs = entry && entry.base && entry.base.profile;
    section.hidden = !mine && !theirs;
    if (section.hidden) return;
    section.querySelector("[data-testid=profile-this]").textContent = entry.name;
    section.querySelector("[data-testid=profile-base]").textContent = entry.base ? entry.base.name : "baseline";
    const shares = new Map();
    for (const [side, profile] of [[0, mine], [1, theirs]]) {
      for (const [dso, symbol, pct] of (profile ? profile.symbols : [])) {
        const key = symbol + " (" + dso + ")";
        if (!shares.has(key)) shares.set(key, [null, null]);
        shares.get(key)[side] = pct;
      }
    }
    const rows = [...shares.entries()].map(function (e) {
      const delta = e[1][0] !== null && e[1][1] !== null ? e[1][0] - e[1][1] : null;
      return { name: e[0], mine: e[1][0], theirs: e[1][1], delta: delta };
    });
    rows.sort(function (a, b) {
      if (mine && theirs) return Math.abs((b.mine || 0) - (b.theirs || 0)) - Math.abs((a.mine || 0) - (a.theirs || 0));
      return (b.mine || b.theirs || 0) - (a.mine || a.theirs || 0);
    });
    const body = section.querySelector("tbody");
    body.replaceChildren();
    for (const row of rows.slice(0, 15)) {
      const tr = document.createElement("tr");
      const th = textEl("th", row.name);
      th.scope = "row";
      tr.append(th, textEl("td", row.mine === null ? "—" : row.mine.toFixed(1) + "%", "num"),
        textEl("td", row.theirs === null ? "—" : row.theirs.toFixed(1) + "%", "num"),
        textEl("td", mine && theirs ? ((row.mine || 0) - (row.theirs || 0) >= 0 ? "+" : "")
          + ((row.mine || 0) - (row.theirs || 0)).toFixed(1) : "—", "num"));
      body.append(tr);
    }
    const parts = [];
    if (mine) parts.push(entry.name + ": " + mine.samples.toLocaleString("en-US") + " samples from " + mine.profiles + " job" + (mine.profiles === 1 ? "" : "s"));
    if (theirs) parts.push(entry.base.name + ": " + theirs.samples.toLocaleString("en-US") + " from " + theirs.profiles);
    section.querySelector("[data-testid=panel-profile-note]").textContent = parts.join("; ")
      + ". Shares of the server process's sampled CPU time over each job's steady window (a function under 0.5 % of"
      + " a profile counts as none there); Δ is this cell's share minus the baseline's, in percentage points.";
  }

  async function fetchJson(url) {
    const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error("HTTP " + response.status);
    return response.json();
  }

  // One figure per second of every job, its name above the chart (a long counter name does not fit beside the axis);
  // the jobs' legend under the first chart only: the three share their lines' colours and dashes.
  function secondsChart(canvas, lines, title, legend) {
    return new Chart(canvas, {
      type: "line",
      data: { datasets: lines },
      options: {
        responsive: true, maintainAspectRatio: false, animation: false, parsing: false, normalized: true,
        interaction: { mode: "nearest", intersect: false },
        plugins: { title: { display: true, text: title, align: "start" },
                   legend: { display: legend, position: "bottom", labels: { boxWidth: 12 } } },
        scales: { x: { type: "linear", title: { display: true, text: "seconds since the measurement began" } },
                  y: { beginAtZero: true } },
      },
    });
  }

  async function fillSeconds(entry, token) {
    const section = dialog.querySelector("[data-testid=panel-seconds]");
    const note = section.querySelector("[data-testid=panel-seconds-note]");
    section.hidden = !entry || typeof Chart === "undefined";
    if (section.hidden) return;
    const sides = [{ name: entry.name, jobs: entry.jobs, dash: [] }];
    if (entry.base) sides.push({ name: entry.base.name, jobs: entry.base.jobs, dash: [6, 4] });
    note.textContent = "Loading the jobs' seconds…";
    const base = dialog.dataset.jobsUrl;
    const wanted = [];
    const reason = entry.reasons[0] || (entry.bound ? entry.bound.resource : "");
    const counters = COUNTERS[reason] || ["Questions", "xact_commit"];
    try {
      for (const side of sides) {
        for (const [i, job] of side.jobs.entries()) {
          wanted.push(Promise.all([fetchJson(base + job + "/series/?max_points=300"), fetchJson(base + job + "/metrics/")])
            .then(function (both) { return { side: side, index: i, job: job, series: both[0], metrics: both[1] }; }));
        }
      }
      // A job that cannot be read (deleted meanwhile) leaves out its lines, not every chart.
      const loaded = (await Promise.allSettled(wanted)).filter(function (r) { return r.status === "fulfilled"; })
        .map(function (r) { return r.value; });
      if (token !== panelToken) return;  // another cell was opened meanwhile
      if (!loaded.length && wanted.length) throw new Error("none of the jobs' seconds could be read");
      const qps = [], latency = [], server = [];
      let counterName = "";
      for (const item of loaded) {
        const colour = color(sides.indexOf(item.side));
        const label = item.side.name + " · job #" + item.job;
        const common = { label: label, borderColor: colour, backgroundColor: colour, borderDash: item.side.dash,
                         pointRadius: 0, borderWidth: 1.5 };
        const series = item.series.series || {};
        qps.push(Object.assign({ data: (series.qps || []).map(function (p) { return { x: p[0], y: p[1] }; }) }, common));
        latency.push(Object.assign({ data: (series.latency_pct_ms || []).map(function (p) { return { x: p[0], y: p[1] }; }) }, common));
        const rates = (item.metrics.server || {}).rates || {};
        const gauges = (item.metrics.server || {}).gauges || {};
        const name = counters.find(function (n) { return n in rates || n in gauges; });
        if (name) {
          counterName = counterName || name;
          const values = (GAUGES.indexOf(name) >= 0 ? gauges : rates)[name];
          const ts = item.metrics.server.t;
          server.push(Object.assign({ data: ts.map(function (t, k) { return { x: t, y: values[k] }; }) }, common));
        }
      }
      // Jobs without stored seconds (imported results, seconds past retention) draw no empty chart.
      const seconds = qps.some(function (line) { return line.data.length; });
      for (const name of ["panel-qps", "panel-latency"]) {
        dialog.querySelector("canvas[data-chart=" + name + "]").parentElement.hidden = !seconds;
      }
      if (seconds) {
        panelCharts.push(secondsChart(dialog.querySelector("canvas[data-chart=panel-qps]"), qps, "QPS", true));
        const pct = (loaded[0] && loaded[0].series.latency && loaded[0].series.latency.pct) || "";
        panelCharts.push(secondsChart(dialog.querySelector("canvas[data-chart=panel-latency]"), latency,
          (pct ? "p" + pct + " " : "") + "latency (ms)", false));
      }
      const serverBox = dialog.querySelector("[data-testid=panel-server-box]");
      serverBox.hidden = !server.length;
      if (server.length) {
        panelCharts.push(secondsChart(dialog.querySelector("canvas[data-chart=panel-server]"), server,
          "server: " + counterName + (GAUGES.indexOf(counterName) >= 0 ? "" : " per second"), false));
      }
      note.textContent = !seconds ? "No per-second figures are stored for these " + loaded.length + " jobs (imported results, "
        + "or jobs from before seconds were kept)." : loaded.length + " job" + (loaded.length === 1 ? "" : "s") + ": this cell solid"
        + (entry.base ? ", " + entry.base.name + " dashed" : "") + (server.length ? "; the server's " + counterName
        + " stands for " + (reason ? "the first reason" : "the work it did") : "; the server's counters were not stored") + ".";
    } catch (error) {
      if (token !== panelToken) return;
      note.textContent = "The jobs' seconds could not be loaded: " + error.message;
      for (const name of ["panel-qps", "panel-latency", "panel-server"]) {
        dialog.querySelector("canvas[data-chart=" + name + "]").parentElement.hidden = true;
      }
    }
  }

  async function showHistogram(cell) {
    const row = cell.closest("tr");
    const table = cell.closest("table");
    const keys = new URLSearchParams({
      scenario: row.dataset.scenarioId, spec: row.dataset.specId, concurrency: row.dataset.threads,
      table_size: row.dataset.tableSize, tables: row.dataset.tables, product: cell.dataset.product,
      variant: cell.dataset.variant || "",
    });
    if (cell.dataset.target) keys.set("target", cell.dataset.target);
    const header = table.querySelectorAll("thead tr:last-child th");
    const product = Array.from(row.querySelectorAll("td[data-metric=qps]")).findIndex(function (td) {
      return td.dataset.product === cell.dataset.product && (td.dataset.variant || "") === (cell.dataset.variant || "")
        && (td.dataset.target || "") === (cell.dataset.target || "");
    });
    const name = product >= 0 && header[product] ? header[product].textContent : "product";
    dialog.querySelector("[data-testid=histogram-where]").textContent =
      name + " · " + table.dataset.scenario + " · " + (row.dataset.spec || "no spec") + " · " + row.dataset.threads + " threads";
    const found = (details.cells || {})[cellKey(cell, product)] || null;
    // Its baseline cell is named by key: the page carries each cell once.
    const entry = found && Object.assign({}, found, { base: found.base ? details.cells[found.base] || null : null,
                                                      isBase: !found.base });
    dialog.querySelector("#cell-histogram-title").textContent = entry ? "Cell: " + entry.name : "Cell";
    const token = ++panelToken;
    for (const chart of panelCharts) chart.destroy();
    panelCharts = [];
    fillSummary(entry);
    fillProfile(entry);
    const percentiles = dialog.querySelector("[data-testid=histogram-percentiles]");
    const note = dialog.querySelector("[data-testid=histogram-note]");
    percentiles.textContent = "Loading…";
    note.hidden = true;
    if (histogramChart) { histogramChart.destroy(); histogramChart = null; }
    if (!dialog.open) dialog.showModal();
    fillSeconds(entry, token);
    let body;
    try {
      const response = await fetch(dialog.dataset.url + "&" + keys, { credentials: "same-origin", headers: { Accept: "application/json" } });
      body = await response.json();
      if (!response.ok) throw new Error(JSON.stringify(body));
    } catch (error) {
      if (token === panelToken) percentiles.textContent = "The histogram could not be loaded: " + error.message;
      return;
    }
    if (token !== panelToken) return;
    const jobs = body.jobs_with_histogram + " of " + body.jobs + " job" + (body.jobs === 1 ? "" : "s");
    if (!body.events) {
      percentiles.textContent = "";
    } else {
      percentiles.textContent = Object.keys(body.percentiles).map(function (k) {
        return k + " " + fmt(body.percentiles[k]) + " ms";
      }).join(" · ") + " — " + body.events.toLocaleString("en-US") + " events from " + jobs;
    }
    if (body.note) { note.textContent = body.note; note.hidden = false; }
    if (!body.events || typeof Chart === "undefined") return;
    histogramChart = new Chart(dialog.querySelector("canvas[data-chart=histogram]"), {
      type: "bar",
      data: { labels: body.buckets.map(function (b) { return b[0]; }),
              datasets: [{ label: "events", data: body.buckets.map(function (b) { return b[1]; }), backgroundColor: color(0) }] },
      options: {
        responsive: true, maintainAspectRatio: false, animation: false,
        plugins: { legend: { display: false } },
        scales: { x: { title: { display: true, text: "latency (ms), sysbench's log-spaced buckets" } },
                  y: { beginAtZero: true, title: { display: true, text: "events" } } },
      },
    });
  }
  if (dialog) {
    for (const table of document.querySelectorAll("table.comparison")) {
      table.addEventListener("click", function (event) {
        if (event.target.closest("a")) return;  // a verdict's link opens the job's findings instead
        const cell = event.target.closest("td[data-product]");
        if (!cell || !cell.closest("tr[data-scenario-id]") || !cell.dataset.value) return;
        showHistogram(cell);
      });
    }
  }

  if (!dataEl || typeof Chart === "undefined") return;
  const charts = JSON.parse(dataEl.textContent);
  // Charts are drawn after the page has loaded, those in view first and then one block per idle moment: a
  // comparison of fifteen tables would otherwise hold the load event back by a second of canvas work while its
  // tables, the page's content, are already there. Printing draws whatever is left.
  const blocks = [...document.querySelectorAll(".charts[data-table]")];
  const drawn = new Set();
  function drawBlock(block) {
    if (drawn.has(block)) return;
    drawn.add(block);
    const data = charts[block.dataset.table];
    if (!data) return;
    for (const canvas of block.querySelectorAll("canvas[data-chart]")) {
      const kind = canvas.dataset.chart;
      // A host test's headline is in its own unit (events/s, MiB/s), a database test's in QPS.
      const headline = data.qps_label || "QPS";
      if (kind === "qps_lines") lineChart(canvas, data.qps_lines, headline, data, " " + headline, data.log_y);
      else if (kind === "latency_lines") lineChart(canvas, data.latency_lines, data.latency_label, data, " ms", false);
      else if (kind === "spec_bars" && data.spec_bars) barChart(canvas, data.spec_bars, headline);
    }
  }
  function drawAll() { for (const block of blocks) drawBlock(block); }
  function start() {
    if ("IntersectionObserver" in window) {
      const observer = new IntersectionObserver(function (entries) {
        for (const entry of entries) if (entry.isIntersecting) drawBlock(entry.target);
      }, { rootMargin: "300px" });
      for (const block of blocks) observer.observe(block);
    }
    // An idle moment, or at most half a second: a renderer busy without pause (a loaded machine, a chart's
    // animation frames running long) would otherwise put the remaining charts off for good.
    const idle = window.requestIdleCallback
      ? function (callback) { return window.requestIdleCallback(callback, { timeout: 500 }); }
      : function (callback) { return setTimeout(callback, 30); };
    (function next() {
      const block = blocks.find(function (b) { return !drawn.has(b); });
      if (!block) return;
      try {
        drawBlock(block);
      } finally {
        idle(next);  // one block that cannot be drawn (its error is in the console) leaves the others drawn
      }
    })();
  }
  window.addEventListener("beforeprint", drawAll);
  // Chart.js resizes from a ResizeObserver, which a browser laying the page out for paper does not wait for: each
  // chart is resized to its box as print media starts (the page then has its printed layout) and after printing.
  function resizeAll() {
    for (const canvas of document.querySelectorAll(".charts canvas")) {
      const chart = Chart.getChart(canvas);
      if (chart) chart.resize();
    }
  }
  const printMedia = window.matchMedia("print");
  printMedia.addEventListener("change", function () { drawAll(); resizeAll(); });
  window.addEventListener("afterprint", resizeAll);
  if (document.readyState === "complete") setTimeout(start, 0);
  else window.addEventListener("load", function () { setTimeout(start, 0); });
})();
