// The main navigation: three menus (Compare, Benchmarks, Setup) beside Dashboard. On a phone the whole
// navigation sits behind a "Menu" button; without this script it stays open. One menu open at a time; Escape or a
// click elsewhere closes it.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  const nav = document.getElementById("main-nav");
  const toggle = document.getElementById("nav-toggle");
  if (!nav) return;
  const menus = Array.from(nav.querySelectorAll("details"));
  function closeMenus(except) {
    for (const menu of menus) if (menu !== except) menu.open = false;
  }
  for (const menu of menus) {
    menu.addEventListener("toggle", function () { if (menu.open) closeMenus(menu); });
  }
  document.addEventListener("click", function (event) {
    if (!nav.contains(event.target) && event.target !== toggle) closeMenus(null);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    const open = menus.find(function (menu) { return menu.open; });
    if (open) { open.open = false; open.querySelector("summary").focus(); }
  });
  if (toggle) {
    toggle.addEventListener("click", function () {
      const opened = !nav.classList.contains("open");
      nav.classList.toggle("open", opened);
      toggle.setAttribute("aria-expanded", opened ? "true" : "false");
      // On a phone the current section's menu opens with the navigation, so the page's own link is in sight.
      if (opened) for (const menu of menus) if (menu.hasAttribute("data-current")) menu.open = true;
    });
  }
})();
