// Scenario form: changing the test re-renders the form with that test's options (what was typed is kept);
// choosing an existing dataset hides the new-dataset fields.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  const test = document.getElementById("id_test");
  const switchButton = document.getElementById("switch-test");
  if (test && switchButton) {
    test.addEventListener("change", function () { switchButton.click(); });
  }
  const dataset = document.getElementById("id_dataset");
  const fresh = document.getElementById("new-dataset");
  function toggle() { if (dataset && fresh) fresh.hidden = dataset.value !== ""; }
  if (dataset) {
    dataset.addEventListener("change", toggle);
    toggle();
  }
})();
