// Times: every <time datetime> is written by the server in UTC; show it
// in the viewer's time zone, to the second, with the zone's name.
(function () {
  "use strict";
  var lang = document.documentElement.lang || undefined;
  var fmt;
  try {
    fmt = new Intl.DateTimeFormat(lang, { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit",
      minute: "2-digit", second: "2-digit", hour12: false, timeZoneName: "short" });
  } catch (e) { return; }
  document.querySelectorAll("time[datetime]").forEach(function (el) {
    var d = new Date(el.getAttribute("datetime"));
    if (isNaN(d.getTime())) { return; }
    el.setAttribute("title", el.textContent);
    el.textContent = fmt.format(d);
    el.classList.add("local");
  });
})();

// Live status of a queued or running submission: poll the status endpoint
// and reload once it is graded or failed, so the feedback appears. The
// only script on any page; it writes text only (textContent), never HTML.
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
