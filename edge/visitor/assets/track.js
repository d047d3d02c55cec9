// lps page tracking (first-party: it talks only to this page's own address). A view is sent
// once the page is shown (never while prerendering or hidden), then "confirm" with the
// evidence of a person (an interaction, or 3 s visible); clicks, the bottom, visible time and
// forms follow. Comment lines are stripped when served.
(function () {
  var page = location.pathname.replace(/\/+$/, "");
  var beacon = page + "/beacon";
  var automated = navigator.webdriver === true;
  function hex(n) {
    var bytes = crypto.getRandomValues(new Uint8Array(n)), s = "";
    for (var i = 0; i < n; i++) s += (bytes[i] + 256).toString(16).slice(1);
    return s;
  }
  // This load's id, made by lps with the page (the lps_load cookie, read once and deleted);
  // without one (cookies off) a random id, whose view lps keeps as automated.
  var load = /(?:^|; )lps_load=([0-9a-f]{40})/.exec(document.cookie);
  var view = load ? load[1] : hex(16);
  if (load) document.cookie = "lps_load=; Max-Age=0; Path=" + page;
  // The one cookie, a random visitor id; never for a browser asking not to be tracked (GPC).
  if (!navigator.globalPrivacyControl && !/(?:^|; )lps_vid=[0-9a-f]{32}/.test(document.cookie)) {
    document.cookie = "lps_vid=" + hex(16) + "; Max-Age=31536000; Path=/; SameSite=Lax" +
      (location.protocol === "https:" ? "; Secure" : "");
  }

  var shown = false, interaction = "", total = 0, sent = 0, since = 0, confirmed = false;
  function visible() {
    return total + (since ? (Date.now() - since) / 1000 : 0);
  }
  function send(type, extra) {
    var body = { type: type, webdriver: automated, view_id: view, interaction: interaction,
      visible_seconds: Math.floor(visible()) };
    for (var key in extra) body[key] = extra[key];
    body = JSON.stringify(body);
    if (navigator.sendBeacon && navigator.sendBeacon(beacon, new Blob([body], { type: "text/plain" }))) return;
    fetch(beacon, { method: "POST", body: body, keepalive: true, credentials: "same-origin" }).catch(function () {});
  }
  function confirm() {
    if (!shown || confirmed || !(interaction || visible() >= 3)) return;
    confirmed = true;
    send("confirm");
  }
  ["pointermove", "pointerdown", "touchstart", "keydown", "wheel", "scroll", "focusin"].forEach(function (name) {
    addEventListener(name, function (event) {
      if (!shown || interaction || event.isTrusted === false) return;
      interaction = name === "focusin" ? "focus" : name.replace(/move|down|start/, "");
      confirm();
    }, { passive: true, capture: true });
  });

  // The bottom of the page, or a page that fits on screen.
  var bottom = false;
  function atBottom() {
    var root = document.documentElement;
    if (!shown || bottom || innerHeight + scrollY < root.scrollHeight - 2) return;
    bottom = true;
    send("scroll");
  }
  addEventListener("scroll", atBottom, { passive: true });
  addEventListener("load", atBottom);

  function show() {
    if (document.prerendering || document.visibilityState !== "visible") return;
    since = Date.now();
    setTimeout(confirm, 3100);
    if (shown) return;
    shown = true;
    send("view");
    atBottom();
  }
  // Visible time, at most 30 minutes a view, sent whenever the page is hidden or left.
  function report() {
    total = visible();
    since = 0;
    var whole = Math.min(1800, Math.floor(total));
    if (whole > sent) {
      send("time", { seconds: whole - sent });
      sent = whole;
    }
  }
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden") { if (shown) report(); } else show();
  });
  document.addEventListener("prerenderingchange", show);
  addEventListener("pagehide", function () { if (shown) report(); });
  show();

  document.addEventListener("click", function (event) {
    var el = event.target && event.target.closest &&
      event.target.closest("a, button, [role=button], input[type=submit], input[type=button]");
    if (!el) return;
    var target = el.getAttribute("href") || el.value || el.textContent || "";
    send("click", { target: target.trim().slice(0, 300) });
  }, true);

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
      headers: automated ? { Accept: "application/json", "X-Lps-Webdriver": "1" } : { Accept: "application/json" },
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
