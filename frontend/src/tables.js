// Tables that fit (class "fit": a comparison's tables, a run's jobs), on every page that has them: the column switch
// (a run's jobs: QPS / TPS / latency, one metric's columns at a time in the tables marked data-switch, remembered in
// this browser), the column chooser (a comparison's and its report's: any columns and cell details, remembered),
// the cells' labels that a phone's card shows, and the second sticky column (the first sticks by CSS alone). The
// phone's cards and the printed page's columns are app.css's.
(function () {
  "use strict";
  function afterLoad(callback) {
    if (document.readyState === "complete") setTimeout(callback, 0);
    else window.addEventListener("load", function () { setTimeout(callback, 0); });
  }
  // Every column without JavaScript; with it, the choice of the switch, the same on every page that has one.
  const metricSwitch = document.getElementById("metric-switch");
  const storeKey = "benchapp.compare.columns";
  function showColumns(value) {
    for (const table of document.querySelectorAll("table.fit[data-switch]")) {
      if (value === "all") delete table.dataset.show; else table.dataset.show = value;
    }
  }
  if (metricSwitch) {
    let saved = "all";
    try { saved = localStorage.getItem(storeKey) || "all"; } catch (e) { /* storage refused: keep every column */ }
    const input = metricSwitch.querySelector('input[value="' + saved + '"]');
    if (input) { input.checked = true; showColumns(saved); }
    metricSwitch.hidden = false;
    metricSwitch.addEventListener("change", function (event) {
      showColumns(event.target.value);
      try { localStorage.setItem(storeKey, event.target.value); } catch (e) { /* not remembered, still shown */ }
    });
  }

  // The column chooser (a comparison and its report): any of the key, metric and detail columns hidden
  // or shown, in every measured comparison table of the page, remembered in this browser. Its choices are the
  // data-metric values of the cells (and, for the details inside them, the class of their spans); app.css hides
  // what a table's data-hide names. A report's table of one metric group that has none of its columns left is
  // hidden whole. Print shows everything.
  const chooser = document.getElementById("column-chooser");
  const hiddenKey = "benchapp.compare.hidden";
  const KEY_COLUMNS = new Set(["table_size", "tables"]);
  function chooserHidden() {
    return [...chooser.querySelectorAll("input[name=column-show]")].filter(function (i) { return !i.checked; })
      .map(function (i) { return i.value; });
  }
  function applyColumns(hidden) {
    const set = new Set(hidden);
    for (const table of document.querySelectorAll("table.comparison.fit:not(.beside)")) {
      if (hidden.length) table.dataset.hide = hidden.join(" "); else delete table.dataset.hide;
      // A table left with no metric column at all (a report's TPS table when TPS is hidden) goes whole.
      const metrics = [...table.querySelectorAll("thead th[data-metric]")]
        .map(function (th) { return th.dataset.metric; }).filter(function (m) { return !KEY_COLUMNS.has(m); });
      const box = table.closest(".table-scroll") || table;
      box.classList.toggle("columns-none", metrics.length > 0 && metrics.every(function (m) { return set.has(m); }));
    }
    const count = chooser.querySelector("[data-columns-count]");
    if (count) count.textContent = hidden.length ? hidden.length + " hidden" : "";
  }
  if (chooser) {
    let saved = [];
    try { saved = JSON.parse(localStorage.getItem(hiddenKey) || "[]"); } catch (e) { saved = []; }
    if (!Array.isArray(saved)) saved = [];
    for (const input of chooser.querySelectorAll("input[name=column-show]")) input.checked = !saved.includes(input.value);
    applyColumns(chooserHidden());
    chooser.hidden = false;
    function chosen() {
      const hidden = chooserHidden();
      applyColumns(hidden);
      // Remembered with the hidden choices of other pages' tables (a choice this page has not) kept as they were.
      const here = new Set([...chooser.querySelectorAll("input[name=column-show]")].map(function (i) { return i.value; }));
      const keep = saved.filter(function (v) { return !here.has(v); });
      saved = keep.concat(hidden);
      try { localStorage.setItem(hiddenKey, JSON.stringify(saved)); } catch (e) { /* not remembered, still shown */ }
      stickSecond(document);
    }
    chooser.addEventListener("change", chosen);
    const all = chooser.querySelector("[data-columns-all]");
    if (all) all.addEventListener("click", function () {
      for (const input of chooser.querySelectorAll("input[name=column-show]")) input.checked = true;
      chosen();
    });
  }

  // On a phone each row is a card, each cell labelled by its column's heading (app.css shows data-label before it).
  // The labels are read from the table's head here rather than written into every cell by the server: a
  // comparison has thousands of cells. A heading's data-label, when it has one, stands for its text.
  function labelCells(table) {
    const grid = [];
    for (const [r, tr] of [...(table.tHead ? table.tHead.rows : [])].entries()) {
      grid[r] = grid[r] || [];
      let c = 0;
      for (const th of tr.cells) {
        while (grid[r][c]) c++;
        for (let i = 0; i < th.rowSpan; i++) {
          for (let j = 0; j < th.colSpan; j++) (grid[r + i] = grid[r + i] || [])[c + j] = th;
        }
        c += th.colSpan;
      }
    }
    const labels = [];
    const width = Math.max(0, ...grid.map(function (row) { return row.length; }));
    for (let c = 0; c < width; c++) {
      const heads = [];
      for (const row of grid) if (row[c] && heads[heads.length - 1] !== row[c]) heads.push(row[c]);
      labels.push(heads.map(function (th) {
        return th.dataset.label || th.textContent.replace(/\s+/g, " ").trim();
      }).join(" "));
    }
    for (const body of table.tBodies) {
      for (const tr of body.rows) {
        for (let c = 0; c < tr.cells.length; c++) {
          const cell = tr.cells[c];
          if (cell.tagName === "TD" && labels[c] && !cell.hasAttribute("data-label")) cell.setAttribute("data-label", labels[c]);
        }
      }
    }
  }
  const labelled = new WeakSet();
  function labelAll() {
    for (const table of document.querySelectorAll("table.fit")) {
      if (!labelled.has(table)) { labelled.add(table); labelCells(table); }
    }
  }
  // Only a phone shows them: labelled before its first paint, or when a window narrows to a phone's width.
  const phone = window.matchMedia("screen and (max-width: 760px)");
  if (phone.matches) labelAll();
  if (phone.addEventListener) phone.addEventListener("change", function () { if (phone.matches) labelAll(); });

  // The second column sticks beside the first once the first's width is known: measured per section as it comes
  // near the view, after the load event (measuring every table at once would lay out the whole page).
  function stickSecond(root) {
    const tables = root.matches && root.matches("table.fit") ? [root] : root.querySelectorAll("table.fit");
    for (const table of tables) {
      if (table.classList.contains("comparison")) wrapBetweenParts(table);
      const first = table.querySelector("thead th");
      if (!first || !first.offsetWidth) continue;
      table.style.setProperty("--sticky-2", first.offsetWidth + "px");
      table.classList.add("sticky-2");
      // Scrolling a cell into view (keyboard focus, find in page) stops beside the sticky columns, not under them.
      const second = table.querySelector("thead th:nth-child(2)");
      const box = table.closest(".table-scroll");
      if (box && second) box.style.scrollPaddingLeft = (first.offsetWidth + second.offsetWidth) + "px";
    }
  }
  function stickWhenNear() {
    const sections = new Set();
    for (const table of document.querySelectorAll("table.fit")) sections.add(table.closest("section") || table);
    if (!("IntersectionObserver" in window)) { stickSecond(document); return; }
    const observer = new IntersectionObserver(function (entries) {
      for (const entry of entries) if (entry.isIntersecting) stickSecond(entry.target);
    }, { rootMargin: "300px" });
    for (const section of sections) observer.observe(section);
  }
  // A seed comparison's table (measured and published side by side, class "with-published") fits from 1280 px on:
  // a cell's details wrap between their " · " parts only (never "n = | 3"), and on a
  // screen wider than a phone its table size and tables columns go when every row has the same value (the table's
  // heading names them, "1 × 10,000"); a phone's cards and paper show them.
  // A cell's details ("1,000–1,500 · sd 354 · CV 28.3%") wrap between their parts only, in every comparison table
  // (the rest of the page's tables, section by section as they come near, with the sticky columns).
  const parted = new WeakSet();
  function wrapBetweenParts(table) {
    if (parted.has(table)) return;
    parted.add(table);
    for (const span of table.querySelectorAll(".spread, td.ratio > .muted.small, td.published-figure > .muted.small")) {
      // A published figure's lines ("its 50 threads, scaled") also wrap after their commas: kept whole, two of
      // them made a seed table 37 px wider than its box at 1440 px.
      const published = span.parentElement.classList.contains("published-figure");
      const separator = published ? ", " : " · ";
      const parts = span.textContent.split(separator);
      if (parts.length < 2 && !/ /.test(parts[0])) continue;
      span.textContent = "";
      parts.forEach(function (text, i) {
        if (i) span.append(separator);
        const part = document.createElement("span");
        part.className = "part";
        part.textContent = text;
        span.append(part);
      });
    }
    // "significant (n = 2)": the "(n = 2)" stays whole.
    for (const span of table.querySelectorAll(".verdict-text")) {
      const text = span.textContent;
      const match = /\(n = [^)]*\)/.exec(text);
      if (!match || span.children.length) continue;
      const part = document.createElement("span");
      part.className = "part";
      part.textContent = match[0];
      span.textContent = text.slice(0, match.index);
      span.append(part, text.slice(match.index + match[0].length));
    }
  }
  function fitPublished() {
    for (const table of document.querySelectorAll("table.comparison.with-published")) {
      wrapBetweenParts(table);
      const constant = [];
      for (const key of KEY_COLUMNS) {
        const values = new Set([...table.querySelectorAll('tbody td[data-metric="' + key + '"]')]
          .map(function (td) { return td.textContent.trim(); }));
        if (values.size === 1) constant.push(key);
      }
      if (constant.length) table.dataset.same = constant.join(" ");
    }
  }
  fitPublished();
  afterLoad(stickWhenNear);
  window.addEventListener("resize", function () { stickSecond(document); });
})();
