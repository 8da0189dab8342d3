// How Deep Learning Computes: remember the line the reader rides, and highlight map lines.
(function () {
  "use strict";
  const KEY = "hdlc-line";
  // 1. Which line is the reader on? ?line= in the URL wins, else the last one remembered.
  const params = new URLSearchParams(location.search);
  let line = params.get("line");
  try {
    if (line) localStorage.setItem(KEY, line); else line = localStorage.getItem(KEY);
  } catch (e) { /* storage disabled: fall back to the URL only */ }
  const box = document.querySelector(".hdlc-lines");
  if (box && line) {
    const cur = box.querySelector('.hdlc-line[data-line="' + CSS.escape(line) + '"]');
    if (cur) { cur.classList.add("current"); box.prepend(cur); }
  }
  // 2. Map: hovering or focusing a line or its legend entry fades the others.
  document.querySelectorAll("svg.hdlc-subway").forEach(function (svg) {
    function focus(id) {
      svg.classList.toggle("hdlc-focused", !!id);
      svg.querySelectorAll("[data-line]").forEach(function (el) { el.classList.toggle("hdlc-on", el.getAttribute("data-line") === id); });
      svg.querySelectorAll(".hdlc-stop").forEach(function (el) {
        const ls = (el.getAttribute("data-lines") || "").split(" ");
        el.classList.toggle("hdlc-on", !!id && ls.indexOf(id) >= 0);
      });
    }
    svg.querySelectorAll(".hdlc-route, .hdlc-legend-item").forEach(function (el) {
      const id = el.getAttribute("data-line");
      el.addEventListener("mouseenter", function () { focus(id); });
      el.addEventListener("mouseleave", function () { focus(null); });
      el.addEventListener("focus", function () { focus(id); });
      el.addEventListener("blur", function () { focus(null); });
    });
  });
})();
