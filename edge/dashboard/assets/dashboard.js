// The dashboard's only script (first-party; every screen works without it):
// - each <time datetime="..."> is shown in the reader's own time zone and language (the
//   server writes UTC, which stays when scripts do not run);
// - the browser's time zone is kept in the cookie lps_tz, so the server counts a chart's days
//   in it; a screen with a chart drawn in another zone is loaded again once with it; a person
//   who chose their own zone in Settings sees times in it instead (lps_tz_own);
// - a screen watching something that changes (an AI design run) reloads itself every few
//   seconds while it is marked with data-refresh-seconds;
// - the words editor's variable picker inserts the text naming a variable (with its fallback)
//   at the cursor of the words field last used, instead of showing it to type (the texts
//   come from the page, as core reads them: nothing of their syntax is spelled here);
// - the home page follows its workspaces' engagement live (server-sent events from
//   /dashboard/live): on news, the engaged list and the campaign tiles are read again from
//   the server and put in place, and a status line says so (without script, a reload does).
(function () {
  var kept = (document.cookie.match(/(?:^|;\s*)lps_tz=([^;]*)/) || [])[1];
  // The person's own time zone (Settings), set by the server with lps_tz_own=1: times are
  // shown in it and the browser's does not replace it.
  var own = /(?:^|;\s*)lps_tz_own=1(?:;|$)/.test(document.cookie) && kept;
  var zone = own || Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  var format;
  try {
    format = new Intl.DateTimeFormat(undefined,
      { dateStyle: "medium", timeStyle: "short", timeZone: zone || undefined });
  } catch (unknown) {
    format = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  }
  if (!own && /^[A-Za-z0-9_+\/-]{1,64}$/.test(zone) && kept !== zone) {
    document.cookie = "lps_tz=" + zone + "; Path=/dashboard; Max-Age=31536000; SameSite=Lax";
    var now = (document.cookie.match(/(?:^|;\s*)lps_tz=([^;]*)/) || [])[1];
    // Once: the cookie now holds the zone, so the next answer counts days in it.
    if (now === zone && document.querySelector("figure.chart")) {
      window.location.reload();
      return;
    }
  }
  function localise(root) {
    root.querySelectorAll("time[datetime]").forEach(function (element) {
      var date = new Date(element.getAttribute("datetime"));
      if (!isNaN(date.getTime())) {
        element.textContent = format.format(date);
        element.title = zone;
      }
    });
  }
  localise(document);
  if (window.EventSource && window.fetch && window.DOMParser) {
    document.querySelectorAll("section[data-live]").forEach(function (section) {
      var workspace = section.getAttribute("data-live-part");
      var status = document.querySelector("[data-live-status='" + workspace + "']");
      var waiting = false;
      var source = new EventSource(section.getAttribute("data-live"));
      source.addEventListener("engagement", function () {
        // A burst of beacons is one refresh, at most one a second.
        if (waiting) {
          return;
        }
        waiting = true;
        setTimeout(function () {
          fetch(window.location.href, { credentials: "same-origin" })
            .then(function (answer) { return answer.ok ? answer.text() : null; })
            .then(function (html) {
              waiting = false;
              if (!html) {
                return;
              }
              var fresh = new DOMParser().parseFromString(html, "text/html");
              document.querySelectorAll("[data-live-part='" + workspace + "']").forEach(function (part) {
                var now = fresh.getElementById(part.id);
                if (now) {
                  part.innerHTML = now.innerHTML;
                  localise(part);
                }
              });
              if (status) {
                status.textContent = "New engagement at " + format.format(new Date()) + ".";
              }
            })
            .catch(function () { waiting = false; });
        }, 1000);
      });
    });
  }
  var picker = document.querySelector("form[data-insert-variable]");
  var words = document.querySelector("form[data-words]");
  if (picker && words) {
    var field = words.querySelector("textarea");
    words.addEventListener("focusin", function (event) {
      if (event.target.matches("input[type=text], textarea")) {
        field = event.target;
      }
    });
    var said = document.getElementById("variable-text");
    picker.querySelector("button").textContent = "Insert at the cursor";
    picker.addEventListener("submit", function (event) {
      event.preventDefault();
      var option = picker.elements.variable.selectedOptions[0];
      var fallback = picker.elements.fallback.value.trim();
      if (!option || !field) {
        return;
      }
      if (fallback.indexOf("}}") >= 0) {
        said.textContent = "A fallback cannot hold \u201c}}\u201d.";
        return;
      }
      var text = fallback
        ? option.getAttribute("data-before") + fallback + option.getAttribute("data-after")
        : option.getAttribute("data-plain");
      field.setRangeText(text, field.selectionStart, field.selectionEnd, "end");
      field.focus();
      var label = words.querySelector("label[for='" + field.id + "']");
      said.textContent = "Inserted " + text + (label ? " in " + label.textContent : "") + ".";
    });
  }
  var watching = document.querySelector("[data-refresh-seconds]");
  if (watching) {
    var seconds = parseInt(watching.getAttribute("data-refresh-seconds"), 10) || 3;
    setTimeout(function () { window.location.reload(); }, seconds * 1000);
  }
})();
