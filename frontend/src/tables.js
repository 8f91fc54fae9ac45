// Tables that fit (class "fit": a comparison's tables, a run's jobs), on every page that has them: the column switch
// (QPS / TPS / latency, one metric's columns at a time in the tables marked data-switch, remembered in this browser)
// and the second sticky column (the first sticks by CSS alone). The phone's cards and the printed page's columns
// are app.css's.
(function () {
  "use strict";
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

  // The second column sticks beside the first once the first's width is known: measured per section as it comes
  // near the view, after the load event (measuring every table at once would lay out the whole page).
  function stickSecond(root) {
    const tables = root.matches && root.matches("table.fit") ? [root] : root.querySelectorAll("table.fit");
    for (const table of tables) {
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
  if (document.readyState === "complete") setTimeout(stickWhenNear, 0);
  else window.addEventListener("load", function () { setTimeout(stickWhenNear, 0); });
  window.addEventListener("resize", function () { stickSecond(document); });
})();
