// Share links page: "Copy" puts the new link on the clipboard (the field stays selectable where the clipboard
// API is not offered, e.g. over plain HTTP).
const button = document.getElementById("share-copy");
const field = button ? document.getElementById(button.dataset.copy) : null;

if (button && field) {
  field.addEventListener("focus", function () { field.select(); });
  button.addEventListener("click", async function () {
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
      button.textContent = "Copied";
    } catch (error) {
      button.textContent = "Select and copy (Ctrl+C)";
    }
  });
}
