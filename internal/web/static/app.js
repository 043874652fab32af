// Times: the server writes every time on a page in the zone it was told
// (the npugrade_tz cookie, else UTC) and names it in <html data-tz>. Tell
// it the browser's zone, and reload a page written in another zone once,
// so no page mixes zones. (sessionStorage stops a loop where cookies are
// refused; the page then stays in UTC throughout.)
(function () {
  "use strict";
  var zone;
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone; } catch (e) { return; }
  var page = document.documentElement.getAttribute("data-tz");
  if (!zone || !page || zone === page || !/^[A-Za-z0-9_+\/-]{1,64}$/.test(zone)) { return; }
  document.cookie = "npugrade_tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax" +
    (location.protocol === "https:" ? "; Secure" : "");
  var key = "npugrade_tz_reload:" + zone;
  // Only a page got by GET is reloaded: a form's answer would be posted again.
  if (document.documentElement.hasAttribute("data-tz-reload") &&
      document.querySelector("time[datetime], svg.chart, [data-zoned]") && !sessionStorage.getItem(key)) {
    sessionStorage.setItem(key, "1");
    location.reload();
  }
})();

// Live status of a queued or running submission: poll the status endpoint
// and reload once it is graded or failed, so the feedback appears. The
// script writes text only (textContent), never HTML.
(function () {
  "use strict";
  var el = document.querySelector("[data-poll]");
  if (!el) { return; }
  var url = el.getAttribute("data-poll");
  var delay = 1000;
  function tick() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" }, cache: "no-store" })
      .then(function (r) { if (!r.ok) { throw new Error(r.status); } return r.json(); })
      .then(function (s) {
        if (s.status !== el.getAttribute("data-status")) {
          el.setAttribute("data-status", s.status);
          el.textContent = s.label;
          el.className = "badge " + (s.status === "graded" ? "ok" : s.status === "failed" ? "bad" : "neutral");
        }
        if (s.final) { setTimeout(function () { window.location.reload(); }, 600); return; }
        setTimeout(tick, delay);
      })
      .catch(function () { setTimeout(tick, 3000); });
  }
  setTimeout(tick, delay);
})();

// An LTI Deep Linking answer posts itself back to the LMS.
(function () {
  var f = document.querySelector("form[data-autopost]");
  if (f) { f.submit(); }
})();
