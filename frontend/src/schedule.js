// Campaign page, "Add schedule": N shows only for "Every N hours" and the cron expression only for "Custom". A
// hidden field is disabled too, so it is not posted. Without JavaScript every field shows and the server says when
// a cron expression typed beside a preset differs from it (campaigns/forms/schedules.py).
(function () {
  "use strict";
  const preset = document.getElementById("id_preset");
  if (!preset) return;
  const form = preset.form;
  function show(name, visible) {
    const box = form.querySelector('[data-schedule-field="' + name + '"]');
    if (!box) return;
    box.hidden = !visible;
    box.querySelectorAll("input, select, textarea").forEach(function (input) { input.disabled = !visible; });
  }
  function toggle() {
    show("every_hours", preset.value === "hours");
    show("cron", preset.value === "");
  }
  preset.addEventListener("change", toggle);
  toggle();
})();
