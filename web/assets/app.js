// spool session browser: keyboard navigation and live updates. No inline script anywhere (the
// Content-Security-Policy forbids it); htmx does the active search.
(function () {
  "use strict";
  var csrf = document.body.getAttribute("data-csrf") || "";
  // htmx requests carry the CSRF token too.
  document.body.addEventListener("htmx:configRequest", function (e) {
    e.detail.headers["X-CSRF-Token"] = csrf;
  });

  // --- keyboard ---
  var sel = -1;
  function items() {
    return Array.prototype.filter.call(document.querySelectorAll("[data-nav]"), function (el) {
      return el.offsetParent !== null;
    });
  }
  function select(i) {
    var list = items();
    if (!list.length) return;
    i = Math.max(0, Math.min(list.length - 1, i));
    list.forEach(function (el) { el.classList.remove("sel"); });
    var el = list[i];
    el.classList.add("sel");
    el.scrollIntoView({ block: "nearest" });
    var focus = el.tagName === "DETAILS" ? el.querySelector("summary") : el.querySelector("a, summary");
    if (focus) focus.focus({ preventScroll: true });
    sel = i;
  }
  function current() {
    var list = items();
    var i = list.indexOf(document.querySelector(".sel"));
    return i >= 0 ? i : sel;
  }
  var pendingG = false;
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable);
    if (e.key === "Escape" && typing) { t.blur(); return; }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (pendingG) {
      pendingG = false;
      if (e.key === "s") { location.href = document.querySelector(".brand").href; return; }
      if (e.key === "u") { var u = document.querySelector('nav a[href$="/usage"]'); if (u) location.href = u.href; return; }
    }
    switch (e.key) {
      case "j": select(current() + 1); e.preventDefault(); break;
      case "k": select(current() - 1); e.preventDefault(); break;
      case "/": var q = document.getElementById("search-q") || document.getElementById("global-q"); if (q) { q.focus(); q.select(); e.preventDefault(); } break;
      case "f": var f = document.getElementById("filter-q"); if (f) { f.focus(); e.preventDefault(); } break;
      case "g": pendingG = true; break;
      case "o":
        var el = items()[current()];
        if (!el) break;
        var d = el.tagName === "DETAILS" ? el : el.querySelector("details");
        if (d) { d.open = !d.open; e.preventDefault(); }
        break;
      case "Enter":
        var row = items()[current()];
        if (row && document.activeElement === document.body) {
          var a = row.querySelector("a"); if (a) { a.click(); e.preventDefault(); }
        }
        break;
      case "?": var h = document.getElementById("help"); if (h && h.showModal) h.showModal(); break;
    }
  });
  var hb = document.getElementById("help-btn");
  if (hb) hb.addEventListener("click", function () { var h = document.getElementById("help"); if (h && h.showModal) h.showModal(); });

  // Branch groups in the sessions list fold and unfold (rows are shown without script).
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("button.toggle[data-group]");
    if (!b) return;
    var open = b.getAttribute("aria-expanded") !== "true";
    b.setAttribute("aria-expanded", String(open));
    document.querySelectorAll('tr[data-in-group="' + CSS.escape(b.getAttribute("data-group")) + '"]').forEach(function (tr) {
      tr.hidden = !open;
    });
  });

  // A link to #mID inside a collapsed archived span or tool call opens it.
  function reveal() {
    if (!location.hash || location.hash.length < 3) return;
    var el = document.getElementById(location.hash.slice(1));
    if (!el) return;
    for (var p = el.parentElement; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
    el.scrollIntoView({ block: "center" });
  }
  window.addEventListener("hashchange", reveal);
  reveal();

  // --- live ---
  var box = document.querySelector("#messages[data-live]");
  if (box && window.EventSource) {
    var src = new EventSource(box.getAttribute("data-live"));
    src.addEventListener("open", function () { box.setAttribute("data-stream", "open"); });
    src.addEventListener("messages", function (e) {
      var empty = box.querySelector(".empty");
      if (empty) empty.remove();
      // The fragment was rendered and escaped by the server's templates.
      box.insertAdjacentHTML("beforeend", e.data);
      box.setAttribute("data-updated", String(Date.now()));
      var last = box.lastElementChild;
      if (last && (window.innerHeight + window.scrollY) >= document.body.offsetHeight - 400) {
        last.scrollIntoView({ block: "end" });
      }
    });
    // A compaction archived rows the page already shows: restyle them as the server renders
    // archived rows (no branch button, folded into a span), without a reload.
    src.addEventListener("archived", function (e) {
      e.data.split(" ").forEach(function (id) {
        var el = document.getElementById("m" + id);
        if (!el || el.tagName !== "ARTICLE" || el.classList.contains("arch")) return;
        el.classList.add("arch");
        var form = el.querySelector("form.branchat");
        if (form) form.remove();
      });
      var run = [];
      var fold = function () {
        if (run.length === 0) return;
        var d = document.createElement("details");
        d.className = "archived";
        d.setAttribute("data-nav", "");
        var sum = document.createElement("summary");
        sum.textContent = run.length + " archived message" + (run.length > 1 ? "s" : "") + " ";
        var small = document.createElement("small");
        small.textContent = "(compacted away: the model no longer sees them; still searchable)";
        sum.appendChild(small);
        d.appendChild(sum);
        run[0].parentNode.insertBefore(d, run[0]);
        run.forEach(function (el) { d.appendChild(el); });
        run = [];
      };
      Array.prototype.slice.call(box.children).forEach(function (el) {
        if (el.tagName === "ARTICLE" && el.classList.contains("arch")) run.push(el);
        else fold();
      });
      fold();
    });
    src.addEventListener("lease", function (e) {
      var b = document.getElementById("live-badge");
      if (b) b.innerHTML = e.data;
    });
    window.addEventListener("pagehide", function () { src.close(); });
  }
})();
