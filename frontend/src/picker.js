// Searchable pickers: every list of checkboxes (targets, scenarios, tests, templates) longer than a screenful
// gets a filter box above it, and a list whose rows say who made them (data-mine, set by the server for the
// user looking) gets "Mine only" when it mixes the user's rows and others'. Typing or ticking hides the choices
// that do not match; ticked ones stay visible, so a filter never hides what will be submitted.
const MIN_CHOICES = 8;

function makeSearchable(fieldset) {
  const choices = [...fieldset.querySelectorAll("input[type=checkbox]")]
    .map((box) => ({ box, row: box.closest("div") || box.closest("label"), text: (box.closest("label")?.textContent || "").toLowerCase() }))
    .filter((c) => c.row);
  // What is ticked comes first (as the page comes back from "See the plan" or an error), so a long list never hides
  // the choice in its middle; the rest keep their order.
  const ticked = choices.filter((c) => c.box.checked);
  for (const c of ticked.reverse()) c.row.parentElement.prepend(c.row);
  const mineAware = choices.some((c) => c.box.dataset.mine === "true") && choices.some((c) => c.box.dataset.mine === "false");
  if (choices.length < MIN_CHOICES && !mineAware) return;
  const legend = fieldset.querySelector("legend")?.textContent.replace("*", "").trim() || "choices";
  const wrap = document.createElement("div");
  wrap.className = "picker-search";
  const input = document.createElement("input");
  input.type = "search";
  input.placeholder = `Filter ${legend.toLowerCase()}…`;
  input.setAttribute("aria-label", `Filter ${legend}`);
  input.setAttribute("data-picker-filter", "");
  wrap.append(input);
  let mineOnly = null;
  if (mineAware) {
    const label = document.createElement("label");
    label.className = "check";
    mineOnly = document.createElement("input");
    mineOnly.type = "checkbox";
    mineOnly.setAttribute("data-picker-mine", "");
    label.append(mineOnly, ` Mine only`);
    wrap.append(label);
  }
  const count = document.createElement("span");
  count.className = "muted small";
  count.setAttribute("aria-live", "polite");
  wrap.append(count);
  const anchor = fieldset.querySelector("legend");
  if (anchor) anchor.after(wrap);
  else fieldset.prepend(wrap);

  function apply() {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    const onlyMine = mineOnly?.checked ?? false;
    let shown = 0;
    for (const c of choices) {
      const match = c.box.checked || (words.every((w) => c.text.includes(w)) && (!onlyMine || c.box.dataset.mine === "true"));
      c.row.hidden = !match;
      if (match) shown += 1;
    }
    summary = words.length || onlyMine ? `${shown} of ${choices.length} shown` : `${choices.length} choices`;
    // Nothing left in sight says why, and how to get the choices back (never a silent "0 of 70 shown").
    if (shown === 0) {
      const undo = [words.length ? "clear the filter" : "", onlyMine ? "untick Mine only" : ""].filter(Boolean);
      summary += ": none " + (onlyMine && !words.length ? "of them is yours" : "matches") + " — " + undo.join(" or ");
    }
    counted();
  }
  let summary = "";
  // How many are ticked, beside how many are shown: a tick far down a long list is still counted in sight.
  function counted() {
    const checked = choices.filter((c) => c.box.checked).length;
    count.textContent = summary + (checked ? ` · ${checked} ticked` : "");
  }
  input.addEventListener("input", apply);
  mineOnly?.addEventListener("change", apply);
  fieldset.addEventListener("change", counted);
  // Enter in the filter box must not submit the whole form.
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") event.preventDefault(); });
  apply();
}

document.querySelectorAll("fieldset.checks").forEach(makeSearchable);
