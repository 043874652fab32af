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
