// The console's one script (no inline script anywhere: Content-Security-Policy default-src 'self').
// Pressing "/" outside a text field focuses the search box, or, on a page without one, opens the version's search
// page (the Search link of the page's navigation) with its box focused.
document.addEventListener("keydown", function (event) {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  var target = event.target;
  if (target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  var box = document.getElementById("q");
  var search = document.querySelector("nav.pages a[data-search]");
  if (box) {
    event.preventDefault();
    box.focus();
  } else if (search) {
    event.preventDefault();
    window.location.assign(search.href + "#q");
  }
});
if (window.location.hash === "#q" && document.getElementById("q")) {
  document.getElementById("q").focus();
}
