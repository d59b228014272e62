// ProxyPlane dashboard: progressive enhancement only; every page works without this file.
(function () {
  "use strict";
  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "offscreen";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } finally { document.body.removeChild(area); }
    return Promise.resolve();
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest("button.copy");
    if (!button) { return; }
    event.preventDefault();
    copyText(button.getAttribute("data-copy") || "").then(function () {
      var old = button.textContent;
      button.textContent = "Copied";
      button.classList.add("done");
      setTimeout(function () { button.textContent = old; button.classList.remove("done"); }, 1500);
    });
  });
  document.addEventListener("submit", function (event) {
    var form = event.target;
    var button = event.submitter;
    var question = (button && button.getAttribute("data-confirm-button")) || form.getAttribute("data-confirm");
    if (question && !window.confirm(question)) { event.preventDefault(); }
  });
  // Live quote: forms with data-quote-url post their fields to the quote URL as they change.
  document.querySelectorAll("form[data-quote-url]").forEach(function (form) {
    var target = document.getElementById(form.getAttribute("data-quote-target"));
    var timer = null;
    function refresh() {
      var body = new FormData(form);
      body.delete("csrf");
      fetch(form.getAttribute("data-quote-url") + "?" + new URLSearchParams(body).toString(), {
        credentials: "same-origin", headers: { "Accept": "text/html" }
      }).then(function (r) { return r.text(); }).then(function (html) {
        if (target) { target.innerHTML = html; }
      }).catch(function () { /* the server-side preview button still works */ });
    }
    form.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(refresh, 250); });
    form.addEventListener("change", function () { clearTimeout(timer); timer = setTimeout(refresh, 50); });
  });
  // A select with data-reload="<button id>" submits its form through that button when it changes.
  document.querySelectorAll("select[data-reload]").forEach(function (select) {
    select.addEventListener("change", function () {
      var button = document.getElementById(select.getAttribute("data-reload"));
      if (button && select.form) { select.form.requestSubmit(button); }
    });
  });
})();
