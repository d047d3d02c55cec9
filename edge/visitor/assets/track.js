// lps page tracking: one view, clicks, reaching the bottom, visible time, forms. First-party:
// it talks only to this page's own address; its one cookie is a random visitor id.
(function () {
  var page = location.pathname.replace(/\/+$/, "");
  var beacon = page + "/beacon";
  var automated = navigator.webdriver === true;

  if (!/(?:^|; )lps_vid=[0-9a-f]{32}/.test(document.cookie)) {
    var bytes = new Uint8Array(16);
    crypto.getRandomValues(bytes);
    var id = "";
    for (var i = 0; i < bytes.length; i++) id += (bytes[i] + 256).toString(16).slice(1);
    document.cookie = "lps_vid=" + id + "; Max-Age=31536000; Path=/; SameSite=Lax" +
      (location.protocol === "https:" ? "; Secure" : "");
  }

  function send(type, extra) {
    var body = { type: type, webdriver: automated };
    for (var key in extra) body[key] = extra[key];
    body = JSON.stringify(body);
    if (navigator.sendBeacon && navigator.sendBeacon(beacon, new Blob([body], { type: "text/plain" }))) return;
    fetch(beacon, { method: "POST", body: body, keepalive: true, credentials: "same-origin" }).catch(function () {});
  }

  send("view");

  // Clicks on links and buttons, sent before the browser leaves for a link.
  document.addEventListener("click", function (event) {
    var el = event.target && event.target.closest &&
      event.target.closest("a, button, [role=button], input[type=submit], input[type=button]");
    if (!el) return;
    var target = el.getAttribute("href") || el.value || el.textContent || "";
    send("click", { target: target.trim().slice(0, 300) });
  }, true);

  // The bottom of the page, or a page that fits on screen.
  var bottom = false;
  function atBottom() {
    var root = document.documentElement;
    if (bottom || window.innerHeight + window.scrollY < root.scrollHeight - 2) return;
    bottom = true;
    send("scroll");
  }
  addEventListener("scroll", atBottom, { passive: true });
  addEventListener("load", atBottom);
  atBottom();

  // Visible time, at most 30 minutes a view, sent whenever the page is hidden or left.
  var MAX = 1800, total = 0, sent = 0;
  var since = document.visibilityState === "visible" ? Date.now() : 0;
  function report() {
    if (since) total += (Date.now() - since) / 1000;
    since = 0;
    var whole = Math.min(MAX, Math.floor(total));
    if (whole > sent) {
      send("time", { seconds: whole - sent });
      sent = whole;
    }
  }
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") report();
    else since = Date.now();
  });
  addEventListener("pagehide", report);

  // Forms post in the background to the page's own address; a thank-you note replaces them.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    event.preventDefault();
    var data = new URLSearchParams(new FormData(form));
    var position = Array.prototype.indexOf.call(document.forms, form) + 1;
    data.set("form_id", form.id || form.getAttribute("name") || data.get("form_id") || "form-" + position);
    fetch(page, {
      method: "POST",
      body: data,
      headers: { Accept: "application/json" },
      credentials: "same-origin"
    }).then(function (response) {
      if (!response.ok) throw new Error(response.status);
      var note = document.createElement("p");
      note.className = "lps-thanks";
      note.setAttribute("role", "status");
      note.textContent = "Thank you! Your message has been received.";
      form.replaceWith(note);
    }).catch(function () {
      form.setAttribute("method", "post");
      form.setAttribute("action", page);
      HTMLFormElement.prototype.submit.call(form);
    });
  });
})();
