// The dashboard's only script (first-party; every screen works without it):
// - each <time datetime="..."> is shown in the reader's own time zone and language (the
//   server writes UTC, which stays when scripts do not run);
// - a screen watching something that changes (an AI design run) reloads itself every few
//   seconds while it is marked with data-refresh-seconds.
(function () {
  var format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  var zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  document.querySelectorAll("time[datetime]").forEach(function (element) {
    var date = new Date(element.getAttribute("datetime"));
    if (!isNaN(date.getTime())) {
      element.textContent = format.format(date);
      element.title = zone;
    }
  });
  var watching = document.querySelector("[data-refresh-seconds]");
  if (watching) {
    var seconds = parseInt(watching.getAttribute("data-refresh-seconds"), 10) || 3;
    setTimeout(function () { window.location.reload(); }, seconds * 1000);
  }
})();
