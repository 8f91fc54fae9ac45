// Searchable pickers: every list of checkboxes (targets, scenarios, tests, templates) longer than a screenful
// gets a filter box above it. Typing hides the choices whose label does not contain the text (ticked ones stay
// visible, so a filter never hides what will be submitted); the count says how many are shown.
const MIN_CHOICES = 8;

function makeSearchable(fieldset) {
  const choices = [...fieldset.querySelectorAll("input[type=checkbox]")]
    .map((box) => ({ box, row: box.closest("div") || box.closest("label"), text: (box.closest("label")?.textContent || "").toLowerCase() }))
    .filter((c) => c.row);
  if (choices.length < MIN_CHOICES) return;
  const legend = fieldset.querySelector("legend")?.textContent.replace("*", "").trim() || "choices";
  const wrap = document.createElement("div");
  wrap.className = "picker-search";
  const input = document.createElement("input");
  input.type = "search";
  input.placeholder = `Filter ${legend.toLowerCase()}…`;
  input.setAttribute("aria-label", `Filter ${legend}`);
  input.setAttribute("data-picker-filter", "");
  const count = document.createElement("span");
  count.className = "muted small";
  count.setAttribute("aria-live", "polite");
  wrap.append(input, count);
  const anchor = fieldset.querySelector("legend");
  if (anchor) anchor.after(wrap);
  else fieldset.prepend(wrap);

  function apply() {
    const words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    for (const c of choices) {
      const match = c.box.checked || words.every((w) => c.text.includes(w));
      c.row.hidden = !match;
      if (match) shown += 1;
    }
    count.textContent = words.length ? `${shown} of ${choices.length} shown` : `${choices.length} choices`;
  }
  input.addEventListener("input", apply);
  // Enter in the filter box must not submit the whole form.
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") event.preventDefault(); });
  apply();
}

document.querySelectorAll("fieldset.checks").forEach(makeSearchable);
