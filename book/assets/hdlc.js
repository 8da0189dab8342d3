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
  // 2. Map: hovering or focusing a line, its legend entry or a station highlights those lines
  //    and fades the rest. Everything is local: no library, no network.
  document.querySelectorAll("svg.hdlc-subway").forEach(function (svg) {
    function focus(ids) {
      const on = ids && ids.length ? ids : null;
      svg.classList.toggle("hdlc-focused", !!on);
      svg.querySelectorAll(".hdlc-route, .hdlc-legend-item").forEach(function (el) {
        el.classList.toggle("hdlc-on", !!on && on.indexOf(el.getAttribute("data-line")) >= 0);
      });
      svg.querySelectorAll(".hdlc-stop").forEach(function (el) {
        const ls = (el.getAttribute("data-lines") || "").split(" ");
        el.classList.toggle("hdlc-on", !!on && ls.some(function (l) { return on.indexOf(l) >= 0; }));
      });
    }
    function bind(el, ids) {
      el.addEventListener("mouseenter", function () { focus(ids); });
      el.addEventListener("mouseleave", function () { focus(null); });
      el.addEventListener("focus", function () { focus(ids); });
      el.addEventListener("blur", function () { focus(null); });
    }
    svg.querySelectorAll(".hdlc-route, .hdlc-legend-item").forEach(function (el) {
      bind(el, [el.getAttribute("data-line")]);
    });
    svg.querySelectorAll(".hdlc-stop").forEach(function (el) {
      bind(el, (el.getAttribute("data-lines") || "").split(" ").filter(Boolean));
    });
  });
  // 3. Map box: zoom buttons, drag to pan, keyboard (+ − 0); the full map uses the page's width.
  document.querySelectorAll(".hdlc-map").forEach(function (box) {
    const svg = box.querySelector("svg.hdlc-subway");
    if (!svg) return;
    const natural = parseFloat(svg.getAttribute("data-width") || svg.getAttribute("width")) || svg.getBoundingClientRect().width;
    let scale = 1;
    function apply(s, cx, cy) {
      const old = scale;
      scale = Math.min(4, Math.max(0.1, s));
      // Keep the point under (cx, cy) of the box's view in place.
      const x = (box.scrollLeft + (cx === undefined ? box.clientWidth / 2 : cx)) / old;
      const y = (box.scrollTop + (cy === undefined ? box.clientHeight / 2 : cy)) / old;
      svg.style.width = (natural * scale) + "px";
      box.scrollLeft = x * scale - (cx === undefined ? box.clientWidth / 2 : cx);
      box.scrollTop = y * scale - (cy === undefined ? box.clientHeight / 2 : cy);
    }
    function fit() { apply(Math.min(1, (box.clientWidth - 2) / natural)); box.scrollLeft = 0; box.scrollTop = 0; }
    const tools = document.createElement("div");
    if (box.classList.contains("hdlc-map-full")) {
      // Let the full map use the width of the page, not only the text column (leaving room
      // for mdBook's page arrows).
      const main = box.parentElement;
      const content = box.closest(".content") || document.body;
      const widen = function () {
        [box, tools].forEach(function (el) { el.style.width = ""; el.style.marginLeft = ""; });
        const mw = main.clientWidth;
        const avail = content.clientWidth - 160;
        const w = Math.max(mw, Math.min(avail, natural + 2));
        if (w > mw) {
          [box, tools].forEach(function (el) { el.style.width = w + "px"; el.style.marginLeft = ((mw - w) / 2) + "px"; });
        }
      };
      window.addEventListener("resize", widen);
      setTimeout(widen, 0);
    }
    tools.className = "hdlc-map-tools";
    tools.setAttribute("role", "toolbar");
    tools.setAttribute("aria-label", "지도 확대·축소");
    [["out", "−", "축소"], ["in", "+", "확대"], ["fit", "맞춤", "화면 너비에 맞춤"], ["reset", "1:1", "원래 크기"]].forEach(function (b) {
      const btn = document.createElement("button");
      btn.type = "button";
      btn.setAttribute("data-zoom", b[0]);
      btn.title = b[2];
      btn.setAttribute("aria-label", b[2]);
      btn.textContent = b[1];
      btn.addEventListener("click", function () {
        if (b[0] === "in") apply(scale * 1.25);
        else if (b[0] === "out") apply(scale / 1.25);
        else if (b[0] === "fit") fit();
        else apply(1);
      });
      tools.appendChild(btn);
    });
    box.parentNode.insertBefore(tools, box);
    box.tabIndex = 0;
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", "전체 지식 지도 (끌어서 이동, + − 0 키로 확대·축소)");
    box.addEventListener("keydown", function (e) {
      if (e.target !== box) return;
      if (e.key === "+" || e.key === "=") { apply(scale * 1.25); e.preventDefault(); }
      else if (e.key === "-") { apply(scale / 1.25); e.preventDefault(); }
      else if (e.key === "0") { apply(1); e.preventDefault(); }
    });
    // Drag with the mouse to pan (touch screens scroll natively); a drag never clicks a station.
    let drag = null, dragged = false;
    box.addEventListener("pointerdown", function (e) {
      if (e.pointerType !== "mouse" || e.button !== 0) return;
      drag = { x: e.clientX, y: e.clientY, l: box.scrollLeft, t: box.scrollTop, moved: false };
    });
    window.addEventListener("pointermove", function (e) {
      if (!drag) return;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) > 5) { drag.moved = true; box.classList.add("hdlc-dragging"); }
      if (drag.moved) { box.scrollLeft = drag.l - dx; box.scrollTop = drag.t - dy; }
    });
    window.addEventListener("pointerup", function () {
      if (drag && drag.moved) { dragged = true; setTimeout(function () { dragged = false; }, 0); }
      drag = null;
      box.classList.remove("hdlc-dragging");
    });
    box.addEventListener("click", function (e) { if (dragged) { e.preventDefault(); e.stopPropagation(); } }, true);
  });
})();
