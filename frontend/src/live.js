// Live per-second charts of a job, polling the samples API with ?since= (run page and job page).
// Run page: also polls the run's live state every 2 s for job statuses, the running job and the output tail.
(function () {
  "use strict";
  const config = document.getElementById("run-config");
  if (!config || typeof Chart === "undefined") return;
  const mode = config.dataset.mode;
  // While a job runs, a second is on the page within a quarter of a second of the API having it.
  const SAMPLES_EVERY_MS = 250;
  // Until a job's first second arrives, ask more often: the first point is what a user waits for after Launch.
  const FIRST_SAMPLE_EVERY_MS = 100;
  const STATE_EVERY_MS = 500;
  const throughputCanvas = document.getElementById("chart-throughput");
  const latencyCanvas = document.getElementById("chart-latency");
  const countEl = document.getElementById("sample-count");

  function formatNumber(value) {
    if (value === null || value === undefined || !isFinite(value)) return "—";
    if (Math.abs(value) >= 100) return Math.round(value).toLocaleString("en-US");
    return value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  function formatMs(value) {
    if (value === null || value === undefined || !isFinite(value)) return "—";
    return value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }

  const common = {
    responsive: true, maintainAspectRatio: false, animation: false, parsing: false, normalized: true,
    interaction: { mode: "nearest", axis: "x", intersect: false },
    plugins: { legend: { position: "bottom" } },
  };
  const xAxis = { type: "linear", title: { display: true, text: "seconds" }, ticks: { precision: 0 } };
  const throughput = new Chart(throughputCanvas, {
    type: "line",
    data: { datasets: [
      { label: "QPS", data: [], borderColor: "#2563eb", backgroundColor: "#2563eb", yAxisID: "y", pointRadius: 0, borderWidth: 2 },
      { label: "TPS", data: [], borderColor: "#d97706", backgroundColor: "#d97706", yAxisID: "y1", pointRadius: 0, borderWidth: 2, borderDash: [6, 4] },
    ] },
    options: { ...common, scales: { x: xAxis,
      y: { beginAtZero: true, position: "left", title: { display: true, text: "QPS" } },
      y1: { beginAtZero: true, position: "right", grid: { drawOnChartArea: false }, title: { display: true, text: "TPS" } } } },
  });
  const latency = new Chart(latencyCanvas, {
    type: "line",
    data: { datasets: [
      { label: "latency (ms)", data: [], borderColor: "#dc2626", backgroundColor: "#dc2626", pointRadius: 0, borderWidth: 2 },
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

  if (mode === "job") {
    startSamples(config.dataset.samplesUrl);
    return;
  }

  // ------------------------------------------------------------- run page
  const stateEl = document.getElementById("run-state");
  let state = stateEl ? JSON.parse(stateEl.textContent) : null;
  if (!state) return;
  const live = document.getElementById("live");
  const liveLabel = document.getElementById("live-label");
  const livePhase = document.getElementById("live-phase");
  const liveProgress = document.querySelector("#live-progress span");
  const tail = document.getElementById("live-tail");
  const runStatus = document.getElementById("run-status");
  const runDone = document.getElementById("run-done");
  const runProgress = document.querySelector("#run-progress span");
  let runningId = null;

  function setBadge(el, status) {
    el.className = "badge " + status;
    el.textContent = status.replace(/_/g, " ");
  }

  function applyRunning(running) {
    if (!running) {
      live.hidden = true;
      return;
    }
    live.hidden = false;
    if (running.id !== runningId) {
      runningId = running.id;
      liveLabel.textContent = running.label;
      startSamples(running.samples_url);
    }
    const pct = running.elapsed_s && running.time_s ? Math.min(100, (running.elapsed_s * 100) / running.time_s) : 0;
    liveProgress.style.width = pct.toFixed(0) + "%";
    livePhase.textContent = running.status === "preparing" ? running.prepare_text || "Preparing the dataset…"
      : "Running: " + Math.round(running.elapsed_s || 0) + " s of " + running.time_s + " s";
  }

  function applyJobs(jobs) {
    for (const job of jobs) {
      const row = document.getElementById("job-" + job.id);
      if (!row) continue;
      const badge = row.querySelector("td.status .badge");
      if (badge && badge.textContent !== job.status) setBadge(badge, job.status);
      const bar = row.querySelector("td.status .progress span");
      if (bar) bar.style.width = job.progress_pct + "%";
      const result = job.result;
      if (result) {
        row.querySelector('[data-metric="qps"]').textContent = formatNumber(result.qps);
        row.querySelector('[data-metric="tps"]').textContent = formatNumber(result.tps);
        row.querySelector('[data-metric="latency_avg_ms"]').textContent = formatMs(result.latency_avg_ms);
        row.querySelector('[data-metric="latency_pct_ms"]').textContent = formatMs(result.latency_pct_ms);
      }
    }
  }

  function apply(next) {
    const finishedNow = next.run.finished && !state.run.finished;
    state = next;
    setBadge(runStatus, next.run.status);
    runDone.textContent = String(next.run.done);
    runProgress.style.width = (next.run.total ? (next.run.done * 100) / next.run.total : 0).toFixed(0) + "%";
    applyJobs(next.jobs);
    applyRunning(next.running);
    const text = next.tail || "(waiting for sysbench's output…)";
    if (next.running && tail.textContent !== text) {
      const atBottom = tail.scrollTop + tail.clientHeight >= tail.scrollHeight - 20;
      tail.textContent = text;
      if (atBottom) tail.scrollTop = tail.scrollHeight;
    }
    if (finishedNow) {
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

  applyRunning(state.running);
  tail.scrollTop = tail.scrollHeight;
  if (!state.run.finished) setTimeout(pollState, STATE_EVERY_MS);
})();
