// The console's one script (no inline script anywhere: Content-Security-Policy default-src 'self').
// Pressing "/" outside a text field focuses the search box, when the page has one.
document.addEventListener("keydown", function (event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  var box = document.getElementById("q");
  if (box) {
    event.preventDefault();
    box.focus();
  }
});
