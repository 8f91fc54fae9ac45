// Live per-second charts of a job, polling the samples API with ?since= (job page), and the run page's live view:
// the run's state every half second (job statuses, the running job, its output tail, elapsed and ETA, which tick
// on each second in between), one timeline of every job's QPS and latency on the run's clock (the server's,
// downsampled, fetched again as each job finishes; the running job's seconds appended as they arrive) with a
// dashed line where each job started, and QPS against threads per target and scenario from the finished jobs.
// The charts are made once the page has loaded: three canvases laid out and drawn would hold the load event back
// by tens of milliseconds, while the page's figures (the jobs table, the progress) are already there.
(function () {
  "use strict";
  const config = document.getElementById("run-config");
  if (!config) return;
  const mode = config.dataset.mode;
  // While a job runs, a second is on the page within a quarter of a second of the API having it.
  const SAMPLES_EVERY_MS = 250;
  // Until a job's first second arrives, ask more often: the first point is what a user waits for after Launch.
  const FIRST_SAMPLE_EVERY_MS = 100;
  const STATE_EVERY_MS = 500;
  const throughputCanvas = document.getElementById("chart-throughput");
  const latencyCanvas = document.getElementById("chart-latency");
  const countEl = document.getElementById("sample-count");
  const common = {
    responsive: true, maintainAspectRatio: false, animation: false, parsing: false, normalized: true,
    interaction: { mode: "nearest", axis: "x", intersect: false },
    plugins: { legend: { position: "bottom" } },
  };

  function formatNumber(value) {
    if (value === null || value === undefined || !isFinite(value)) return "—";
    if (Math.abs(value) >= 100) return Math.round(value).toLocaleString("en-US");
    return value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  function formatMs(value) {
    if (value === null || value === undefined || !isFinite(value)) return "—";
    return value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }

  // A point alone (a job's first second, a second between two gaps) is drawn as a dot: a line needs two.
  function loneRadius(ctx) {
    const data = ctx.dataset.data;
    const i = ctx.dataIndex;
    const here = data[i];
    if (!here || here.y === null) return 0;
    const before = data[i - 1];
    const after = data[i + 1];
    return (!before || before.y === null) && (!after || after.y === null) ? 3 : 0;
  }

  // ------------------------------------------------------------- job page
  function jobPage() {
    const xAxis = { type: "linear", title: { display: true, text: "seconds" }, ticks: { precision: 0 } };
    const throughput = new Chart(throughputCanvas, {
      type: "line",
      data: { datasets: [
        { label: "QPS", data: [], borderColor: "#2563eb", backgroundColor: "#2563eb", yAxisID: "y", pointRadius: loneRadius, borderWidth: 2 },
        { label: "TPS", data: [], borderColor: "#d97706", backgroundColor: "#d97706", yAxisID: "y1", pointRadius: loneRadius, borderWidth: 2, borderDash: [6, 4] },
      ] },
      options: { ...common, scales: { x: xAxis,
        y: { beginAtZero: true, position: "left", title: { display: true, text: "QPS" } },
        y1: { beginAtZero: true, position: "right", grid: { drawOnChartArea: false }, title: { display: true, text: "TPS" } } } },
    });
    const latency = new Chart(latencyCanvas, {
      type: "line",
      data: { datasets: [
        { label: "latency (ms)", data: [], borderColor: "#dc2626", backgroundColor: "#dc2626", pointRadius: loneRadius, borderWidth: 2 },
      ] },
      options: { ...common, scales: { x: xAxis, y: { beginAtZero: true, title: { display: true, text: "ms" } } } },
    });

    let samplesUrl = null;
    let since = null;
    let count = 0;
    let samplesTimer = null;

    function resetCharts(url) {
      samplesUrl = url;
      since = null;
      count = 0;
      for (const chart of [throughput, latency]) {
        for (const dataset of chart.data.datasets) dataset.data = [];
        chart.update("none");
      }
      if (countEl) countEl.textContent = "0";
    }

    async function pollSamples() {
      samplesTimer = null;
      if (!samplesUrl) return;
      let body;
      try {
        const url = samplesUrl + (since === null ? "" : "?since=" + encodeURIComponent(since));
        const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
        if (!response.ok) throw new Error("HTTP " + response.status);
        body = await response.json();
      } catch (error) {
        samplesTimer = setTimeout(pollSamples, SAMPLES_EVERY_MS * 3);
        return;
      }
      if (body.job && samplesUrl && samplesUrl.indexOf("/" + body.job + "/") === -1) return; // switched job meanwhile
      for (const s of body.samples) {
        throughput.data.datasets[0].data.push({ x: s.t, y: s.qps });
        throughput.data.datasets[1].data.push({ x: s.t, y: s.tps });
        latency.data.datasets[0].data.push({ x: s.t, y: s.latency_pct_ms });
      }
      count += body.samples.length;
      if (body.samples.length) {
        since = body.last_t;
        throughput.update("none");
        latency.update("none");
      }
      if (countEl) countEl.textContent = String(count);
      const none = document.getElementById("no-samples");
      if (none) none.hidden = !(body.finished && count === 0);
      if (body.more) {
        samplesTimer = setTimeout(pollSamples, 0);
      } else if (!body.finished) {
        samplesTimer = setTimeout(pollSamples, count === 0 ? FIRST_SAMPLE_EVERY_MS : SAMPLES_EVERY_MS);
      }
    }

    function startSamples(url) {
      if (samplesTimer) clearTimeout(samplesTimer);
      resetCharts(url);
      pollSamples();
    }

    startSamples(config.dataset.samplesUrl);
  }

  function afterLoad(callback) {
    if (document.readyState === "complete") setTimeout(callback, 0);
    else window.addEventListener("load", function () { setTimeout(callback, 0); });
  }

  if (mode === "job") {
    if (typeof Chart !== "undefined") afterLoad(jobPage);
    return;
  }

  // ------------------------------------------------------------- run page
  const stateEl = document.getElementById("run-state");
  let state = stateEl ? JSON.parse(stateEl.textContent) : null;
  if (!state) return;
  const TICK_MS = 1000;
  const live = document.getElementById("live");
  const liveLabel = document.getElementById("live-label");
  const livePhase = document.getElementById("live-phase");
  const liveProgress = document.querySelector("#live-progress span");
  const tail = document.getElementById("live-tail");
  const tailJob = document.getElementById("tail-job");
  const runStatus = document.getElementById("run-status");
  const runDone = document.getElementById("run-done");
  const runProgress = document.querySelector("#run-progress span");
  const elapsedEl = document.getElementById("run-elapsed");
  const etaWrap = document.getElementById("run-eta-wrap");
  const etaEl = document.getElementById("run-eta");
  const noWorkerEl = document.getElementById("run-no-worker");
  const timelineSection = document.getElementById("timeline");
  const timelineNote = document.getElementById("timeline-note");
  const latencyLabel = document.getElementById("latency-label");
  const threadsCanvas = document.getElementById("chart-threads");
  const COLOURS = ["#2563eb", "#d97706", "#059669", "#dc2626", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f"];

  // The server's clock minus this browser's, and when the last state arrived (both in seconds).
  let clockOffsetS = 0;
  let receivedAtS = Date.now() / 1000;
  function serverNowS() { return Date.now() / 1000 + clockOffsetS; }
  function noteClock(body) {
    receivedAtS = Date.now() / 1000;
    if (typeof body.now === "number") clockOffsetS = body.now - receivedAtS;
  }

  // As campaigns.services.format_duration writes it, so a tick does not change the page's wording.
  function formatDuration(seconds) {
    let s = Math.max(0, Math.round(seconds));
    const days = Math.floor(s / 86400); s -= days * 86400;
    const hours = Math.floor(s / 3600); s -= hours * 3600;
    const minutes = Math.floor(s / 60); s -= minutes * 60;
    if (days) return days + " d " + hours + " h " + minutes + " min";
    if (hours) return hours + " h " + minutes + " min";
    if (minutes) return minutes + " min " + s + " s";
    return s + " s";
  }

  // Job boundaries: a dashed line where each job started, labelled with its number when there is room.
  let boundaries = [];
  const boundaryPlugin = {
    id: "jobBoundaries",
    afterDatasetsDraw(chart) {
      const x = chart.scales.x;
      const area = chart.chartArea;
      if (!x || !area || !boundaries.length) return;
      const ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = "rgba(100, 116, 139, 0.8)";
      ctx.fillStyle = "#475569";
      ctx.lineWidth = 1;
      ctx.setLineDash([4, 3]);
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "top";
      let lastLabelX = -Infinity;
      for (const job of boundaries) {
        const px = x.getPixelForValue(job.start_s);
        if (!isFinite(px) || px < area.left - 1 || px > area.right + 1) continue;
        ctx.beginPath();
        ctx.moveTo(px, area.top);
        ctx.lineTo(px, area.bottom);
        ctx.stroke();
        const text = "#" + job.number;
        if (px - lastLabelX >= ctx.measureText(text).width + 8 && px + 3 < area.right) {
          ctx.fillText(text, px + 3, area.top + 2);
          lastLabelX = px;
        }
      }
      ctx.restore();
    },
  };

  const timeAxis = { type: "linear", min: 0, title: { display: true, text: "seconds since the run started" },
    ticks: { precision: 0, maxTicksLimit: 8 } };
  function timelineTooltip(items) {
    if (!items.length) return "";
    const t = items[0].parsed.x;
    let job = null;
    for (const b of boundaries) if (b.start_s <= t) job = b;
    return Math.round(t) + " s" + (job ? " · job #" + job.number + " (" + job.threads + " thr)" : "");
  }
  function timelineChart(canvas, label, colour, unit) {
    return new Chart(canvas, {
      type: "line",
      data: { datasets: [{ label: label, data: [], borderColor: colour, backgroundColor: colour, pointRadius: loneRadius,
        pointHoverRadius: 4, borderWidth: 2, spanGaps: false }] },
      options: { ...common, plugins: { legend: { display: false }, tooltip: { callbacks: { title: timelineTooltip } } },
        scales: { x: timeAxis, y: { beginAtZero: true, title: { display: true, text: unit } } } },
      plugins: [boundaryPlugin],
    });
  }
  let threadCounts = []; // the thread counts of the run's jobs, ascending: the QPS-by-threads chart's ticks
  // Made after the load event (makeCharts); until then draw() and drawThreads() only keep what they would draw.
  let throughput = null;
  let latency = null;
  let byThreads = null;
  let drawWaiting = false;
  function makeCharts() {
    // A finished run that measured nothing has no timeline charts on its page (a line says so instead).
    if (typeof Chart === "undefined" || !throughputCanvas) return;
    throughput = timelineChart(throughputCanvas, "QPS", "#2563eb", "QPS");
    latency = timelineChart(latencyCanvas, "latency (ms)", "#dc2626", "ms");
    byThreads = new Chart(threadsCanvas, {
      type: "line",
      data: { datasets: [] },
      options: { ...common, interaction: { mode: "nearest", intersect: false },
        scales: { x: { type: "logarithmic", title: { display: true, text: "threads" },
          // Ticks and grid lines at the thread counts measured, nowhere else; a little room beyond the ends.
          afterBuildTicks: function (scale) { scale.ticks = threadCounts.map(function (v) { return { value: v }; }); },
          afterDataLimits: function (scale) {
            if (!threadCounts.length) return;
            scale.min = threadCounts[0] / 1.25;
            scale.max = threadCounts[threadCounts.length - 1] * 1.25;
          },
          ticks: { maxRotation: 0, autoSkip: true, callback: function (value) { return String(value); } } },
        y: { beginAtZero: true, title: { display: true, text: "QPS" } } } },
    });
    drawThreads(state.jobs);
    if (drawWaiting) draw();
  }

  // The timeline as the server last sent it (every job's seconds, downsampled) and the running job's own
  // seconds since, from the samples API; the charts draw the first up to where the running job starts.
  let base = { qps: [], latency: [], jobs: [] };
  let liveJob = null; // {id, number, threads, start_s}
  let liveQps = [];
  let liveLatency = [];
  let samplesUrl = null;
  let since = null;
  let count = 0;
  let samplesTimer = null;

  function points(pairs) {
    return pairs.map(function (p) { return { x: p[0], y: p[1] }; });
  }
  function joined(baseline, extra, startS) {
    const kept = startS === null ? baseline : baseline.filter(function (p) { return p.x < startS; });
    if (!extra.length) return kept;
    return kept.length ? kept.concat([{ x: startS, y: null }], extra) : extra.slice();
  }
  function draw() {
    const startS = liveJob && liveJob.start_s !== null ? liveJob.start_s : null;
    const known = base.jobs.filter(function (j) { return startS === null || j.start_s < startS; });
    boundaries = liveJob && startS !== null ? known.concat([liveJob]) : base.jobs.slice();
    if (!throughput) { drawWaiting = true; return; }
    throughput.data.datasets[0].data = joined(base.qps, liveQps, startS);
    latency.data.datasets[0].data = joined(base.latency, liveLatency, startS);
    throughput.update("none");
    latency.update("none");
    throughputCanvas.dataset.boundaries = String(boundaries.length);
    const shown = throughput.data.datasets[0].data.filter(function (p) { return p.y !== null; }).length;
    if (timelineNote) {
      timelineNote.textContent = boundaries.length + " job" + (boundaries.length === 1 ? "" : "s") + " started, "
        + shown + " points" + (base.downsampled ? " (downsampled from " + base.total_points + " seconds)" : "");
    }
  }

  let timelineBusy = false;
  let timelineAgain = false;
  async function fetchTimeline() {
    if (timelineBusy) { timelineAgain = true; return; }
    timelineBusy = true;
    try {
      const response = await fetch(config.dataset.timelineUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error("HTTP " + response.status);
      const body = await response.json();
      base = { qps: points(body.qps), latency: points(body.latency), jobs: body.jobs,
        downsampled: body.downsampled, total_points: body.total_points };
      if (latencyLabel && body.latency_pct !== null && body.latency_pct !== undefined) {
        latencyLabel.textContent = "p" + body.latency_pct;
      }
      if (timelineSection && body.jobs.length) timelineSection.hidden = false;
      draw();
    } catch (error) {
      timelineAgain = true;
    } finally {
      timelineBusy = false;
      if (timelineAgain) { timelineAgain = false; setTimeout(fetchTimeline, STATE_EVERY_MS * 2); }
    }
  }

  async function pollSamples() {
    samplesTimer = null;
    if (!samplesUrl || !liveJob) return;
    const url = samplesUrl;
    let body;
    try {
      const response = await fetch(url + (since === null ? "" : "?since=" + encodeURIComponent(since)),
        { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error("HTTP " + response.status);
      body = await response.json();
    } catch (error) {
      samplesTimer = setTimeout(pollSamples, SAMPLES_EVERY_MS * 3);
      return;
    }
    if (url !== samplesUrl) return; // switched job meanwhile
    if (liveJob.start_s === null && body.samples.length) {
      // The job started between two state reads: ask again once its start is known.
      samplesTimer = setTimeout(pollSamples, SAMPLES_EVERY_MS);
      return;
    }
    for (const s of body.samples) {
      liveQps.push({ x: liveJob.start_s + s.t, y: s.qps });
      liveLatency.push({ x: liveJob.start_s + s.t, y: s.latency_pct_ms });
    }
    count += body.samples.length;
    if (body.samples.length) {
      since = body.last_t;
      draw();
    }
    if (countEl) countEl.textContent = String(count);
    if (body.more) {
      samplesTimer = setTimeout(pollSamples, 0);
    } else if (!body.finished) {
      samplesTimer = setTimeout(pollSamples, count === 0 ? FIRST_SAMPLE_EVERY_MS : SAMPLES_EVERY_MS);
    }
  }

  function setBadge(el, status) {
    el.className = "badge " + status;
    el.textContent = status.replace(/_/g, " ");
  }

  // The run's badge says what its jobs' verdicts say with its status ("Succeeded · 24 of 24 jobs invalid"), in
  // amber when some are suspect or invalid: the server's words (Run.status_text), as on the page it drew.
  function setRunBadge(el, run) {
    el.className = "badge " + run.status + (run.verdict_level ? " spoiled verdict-" + run.verdict_level : "");
    el.textContent = run.status_text;
    el.dataset.status = run.status;
    el.title = run.verdict_text || run.status_text;
  }

  function phaseText(running) {
    if (running.status === "preparing") return running.prepare_text || "Preparing: target check, dataset, warm-up…";
    if (running.phase === "finalizing") return "Closing the job: results, server snapshot, clean-up…";
    if (running.elapsed_s === null || running.elapsed_s === undefined) return "Starting the clients…";
    const elapsed = running.elapsed_s + (Date.now() / 1000 - receivedAtS);
    // sysbench may run past --time and the job still has to close: never "21 s of 10 s".
    if (elapsed >= running.time_s) return "Running: " + running.time_s + " s of " + running.time_s + " s · finishing…";
    return "Running: " + Math.floor(elapsed) + " s of " + running.time_s + " s";
  }

  function showRunning(running) {
    if (!running) {
      live.hidden = true;
      return;
    }
    live.hidden = false;
    if (!liveJob || running.id !== liveJob.id) {
      liveJob = { id: running.id, number: running.number, threads: null, start_s: null };
      liveLabel.textContent = "#" + running.number + " " + running.label;
      if (tailJob) tailJob.textContent = "job #" + running.number;
      tail.textContent = "(waiting for sysbench's output…)";
      if (samplesTimer) clearTimeout(samplesTimer);
      samplesUrl = running.samples_url;
      since = null;
      count = 0;
      liveQps = [];
      liveLatency = [];
      if (countEl) countEl.textContent = "0";
      if (latencyLabel && running.latency_pct !== null) latencyLabel.textContent = "p" + running.latency_pct;
      fetchTimeline();
      pollSamples();
    }
    if (liveJob.start_s === null && running.start_s !== null && running.start_s !== undefined) {
      liveJob.start_s = running.start_s;
      draw();
    }
    const job = state.jobs.find(function (j) { return j.id === running.id; });
    if (job) liveJob.threads = job.threads;
    tick();
  }

  function tick() {
    const run = state.run;
    if (!run.finished && run.started_at) {
      elapsedEl.textContent = formatDuration(serverNowS() - run.started_at);
    }
    if (run.finished || run.eta_s === null || run.eta_s === undefined) {
      etaWrap.hidden = true;
    } else {
      const left = run.eta_s - (Date.now() / 1000 - receivedAtS);
      etaWrap.hidden = false;
      etaEl.textContent = left >= 1 ? formatDuration(left) : "any moment";
    }
    const running = state.running;
    if (running && !live.hidden) {
      livePhase.textContent = phaseText(running);
      const elapsed = (running.elapsed_s || 0) + (Date.now() / 1000 - receivedAtS);
      const pct = running.elapsed_s !== null && running.time_s ? Math.min(100, (elapsed * 100) / running.time_s) : 0;
      liveProgress.style.width = pct.toFixed(0) + "%";
    }
  }

  let threadsKey = "";
  function drawThreads(jobs) {
    if (!byThreads) return;
    const cells = new Map();
    for (const job of jobs) {
      if (!job.result || job.result.qps === null || job.result.qps === undefined) continue;
      if (!cells.has(job.cell)) cells.set(job.cell, new Map());
      const byCount = cells.get(job.cell);
      if (!byCount.has(job.threads)) byCount.set(job.threads, []);
      byCount.get(job.threads).push(job.result.qps);
    }
    const datasets = [];
    let i = 0;
    for (const [cell, byCount] of cells) {
      const data = [...byCount.entries()].sort(function (a, b) { return a[0] - b[0]; }).map(function (e) {
        return { x: e[0], y: e[1].reduce(function (a, b) { return a + b; }, 0) / e[1].length };
      });
      const colour = COLOURS[i++ % COLOURS.length];
      datasets.push({ label: cell, data: data, borderColor: colour, backgroundColor: colour, pointRadius: 3, borderWidth: 2 });
    }
    const key = JSON.stringify(datasets.map(function (d) { return [d.label, d.data]; }));
    if (key === threadsKey) return;
    threadsKey = key;
    threadCounts = [...new Set(jobs.map(function (j) { return j.threads; }))].sort(function (a, b) { return a - b; });
    byThreads.data.datasets = datasets;
    byThreads.update("none");
  }

  // A figure is written only when it changed (the page comes with the server's), and the percentile beside a
  // latency ("0.46 p95") stays.
  function setFigure(cell, text) {
    const node = cell.firstChild;
    if (node && node.nodeType === Node.TEXT_NODE && cell.childNodes.length > 1) {
      if (node.data.trim() !== text) node.data = text + " ";
    } else if (cell.textContent !== text) {
      cell.textContent = text;
    }
  }

  function applyJobs(jobs) {
    for (const job of jobs) {
      const row = document.getElementById("job-" + job.id);
      if (!row) continue;
      const badge = row.querySelector("td.status .badge");
      if (badge && badge.textContent !== job.status) setBadge(badge, job.status);
      const bar = row.querySelector("td.status .progress span");
      if (bar && bar.style.width !== job.progress_pct + "%") bar.style.width = job.progress_pct + "%";
      const result = job.result;
      if (result) {
        const cells = [["qps", formatNumber(result.qps)], ["tps", formatNumber(result.tps)],
          ["latency_avg_ms", formatMs(result.latency_avg_ms)], ["latency_pct_ms", formatMs(result.latency_pct_ms)]];
        for (const [metric, text] of cells) {
          const cell = row.querySelector('[data-metric="' + metric + '"]');
          if (cell) setFigure(cell, text);
        }
      }
    }
    drawThreads(jobs);
  }

  function apply(next) {
    const finishedNow = next.run.finished && !state.run.finished;
    const doneMore = next.run.done !== state.run.done;
    // The adaptive thread ladder added jobs to the run: the server renders their rows.
    const grown = next.run.total > state.run.total;
    state = next;
    noteClock(next);
    setRunBadge(runStatus, next.run);
    if (noWorkerEl) {
      // "no worker alive since ...": shown while nobody can take the run's next job, gone when a worker is back.
      noWorkerEl.hidden = !next.run.no_worker;
      // The same first capital as the server-drawn page's capfirst, so a poll never changes how the sentence reads.
      const message = next.run.no_worker ? next.run.no_worker.message : "";
      noWorkerEl.querySelector("span").textContent = message.charAt(0).toUpperCase() + message.slice(1);
    }
    runDone.textContent = String(next.run.done);
    runProgress.style.width = (next.run.total ? (next.run.done * 100) / next.run.total : 0).toFixed(0) + "%";
    if (next.run.finished) elapsedEl.textContent = formatDuration(next.run.elapsed_s);
    applyJobs(next.jobs);
    showRunning(next.running);
    // The output pane is the shown job's: a tail of another job (the next one, read before the page switched) waits.
    if (next.running && liveJob && next.tail_job === liveJob.id) {
      const text = next.tail || "(waiting for sysbench's output…)";
      if (tail.textContent !== text) {
        const atBottom = tail.scrollTop + tail.clientHeight >= tail.scrollHeight - 20;
        tail.textContent = text;
        if (atBottom) tail.scrollTop = tail.scrollHeight;
      }
    }
    if (doneMore) fetchTimeline();
    if (finishedNow || grown) {
      // The server renders the finished jobs' summaries and snapshots.
      setTimeout(function () { window.location.reload(); }, 500);
    }
    return !next.run.finished;
  }

  async function pollState() {
    let next;
    try {
      const response = await fetch(config.dataset.liveUrl, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error("HTTP " + response.status);
      next = await response.json();
    } catch (error) {
      setTimeout(pollState, STATE_EVERY_MS * 2);
      return;
    }
    if (apply(next)) setTimeout(pollState, STATE_EVERY_MS);
  }

  noteClock(state);
  applyJobs(state.jobs);
  if (state.running) {
    showRunning(state.running);
  } else if (state.run.started_at && throughputCanvas) {
    fetchTimeline();
  }
  if (state.running && state.tail_job === state.running.id) tail.textContent = state.tail;
  if (!live.hidden) tail.scrollTop = tail.scrollHeight;  // reading scrollHeight lays the page out: only when shown
  tick();
  if (!state.run.finished) {
    setInterval(tick, TICK_MS);
    setTimeout(pollState, STATE_EVERY_MS);
  }
  afterLoad(makeCharts);
})();
