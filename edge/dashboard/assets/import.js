// The import screens' script (first-party; the screens work without it): while an import
// runs, its progress bar follows the job's stream (Server-Sent Events) and the page shows
// the summary once the job is done.
(function () {
  var running = document.querySelector("[data-import-events]");
  if (!running || !window.EventSource) {
    return;
  }
  var bar = running.querySelector("progress");
  var text = running.querySelector("[data-progress-text]");
  var events = new EventSource(running.getAttribute("data-import-events"));
  events.onmessage = function (message) {
    var job = JSON.parse(message.data);
    bar.max = Math.max(job.total_rows, 1);
    bar.value = job.processed_rows;
    text.textContent = job.processed_rows + " of " + job.total_rows + " rows handled";
    if (job.status === "completed" || job.status === "failed") {
      events.close();
      window.location.reload();
    }
  };
  events.onerror = function () {
    events.close();
    setTimeout(function () { window.location.reload(); }, 3000);
  };
})();
