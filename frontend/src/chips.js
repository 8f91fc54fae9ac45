// The comparison's choice form ("Change what is compared"): each list of several choices
// (targets, products, campaigns, runs, scenarios, specs, published figures) becomes searchable chips through Tom
// Select (npm, built by build.mjs): type to find a choice, Enter adds it, Backspace takes the last chip off, a chip's
// × removes it. The "Baseline" list (one choice: the column every Δ% is against) becomes a single searchable choice
// of the same look: type to find a product (or run), Enter or a click sets it, and the form's Compare puts it in the
// URL (?baseline=); the comparison's "Baseline:" chips above the tables set it in one click. Without JavaScript (or
// without Tom Select) each stays the plain <select> the server wrote, and the form submits the same parameters.
(function () {
  "use strict";
  if (typeof TomSelect === "undefined") return;
  const form = document.querySelector("form.compare-form");
  if (!form) return;
  for (const select of form.querySelectorAll("select[multiple]")) {
    const label = form.querySelector('label[for="' + select.id + '"]');
    const what = label ? label.textContent.replace("*", "").trim().toLowerCase() : "choices";
    const chips = new TomSelect(select, {
      plugins: { remove_button: { title: "Remove" } },
      maxOptions: null,  // every choice can be found (the server sends at most 300)
      refreshThrottle: 0,  // filtered as typed: an Enter right after typing picks the first match
      placeholder: "Type to find " + what + "…",
      // The box keeps its place for typing when it loses focus (with hidePlaceholder it would shrink as a click
      // elsewhere begins, moving the Compare button from under the pointer).
      closeAfterSelect: false,
      // After Enter the typed text goes, so the next word finds the next choice.
      onItemAdd: function () { this.setTextboxValue(""); this.refreshOptions(false); },
    });
    // Enter with text typed never submits the whole form (Tom Select takes it when a choice matches); in an empty
    // box it does, as in any other field.
    chips.control_input.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && chips.control_input.value.trim() !== "") event.preventDefault();
    });
  }
  const baseline = form.querySelector("select#id_baseline:not([multiple])");
  if (baseline) {
    const choice = new TomSelect(baseline, {
      maxOptions: null,
      refreshThrottle: 0,
      allowEmptyOption: false,  // a baseline is always chosen: the first column unless another is
      placeholder: "Type to find the baseline…",
    });
    choice.control_input.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (choice.control_input.value.trim() !== "" || choice.isOpen)) event.preventDefault();
    });
  }
})();
