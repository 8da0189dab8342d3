// How Deep Learning Computes: the subway map explorer.
// Pan and zoom (wheel, drag, pinch, keys), an overview by area when zoomed out (area names
// instead of station names, which show once they are readable), lines switched on and off by
// area, a station search that jumps to the station, and #line=<path id> to select a line.
// Everything is local: no library, no network.
(function () {
  "use strict";
  const READABLE = 10; // px on screen from which station names are shown

  function init(view) {
    const port = view.querySelector(".hdlc-mapport");
    const stage = view.querySelector(".hdlc-mapstage");
    const svg = stage && stage.querySelector("svg.hdlc-subway");
    if (!svg) return;
    const chips = view.querySelector(".hdlc-mapchips");
    const legend = view.querySelector(".hdlc-maplegend");
    const legendButton = view.querySelector('[data-act="legend"]');
    const search = view.querySelector(".hdlc-mapsearch");
    const W = parseFloat(svg.getAttribute("data-width"));
    const H = parseFloat(svg.getAttribute("data-height"));
    const FONT = parseFloat(svg.getAttribute("data-font")) || 12;
    const full = !!view.closest(".hdlc-map-full");
    view.classList.add("hdlc-js");
    if (full) fillPage();
    let s = 1, tx = 0, ty = 0, touched = false;

    // ---- View transform ----
    function minScale() { return Math.min(fitScale(), READABLE / FONT) * 0.8; }
    // The part of the viewport the legend leaves free (it opens over the right side).
    function room() {
      const open = legend && view.classList.contains("hdlc-legend-open") && port.clientWidth > 700;
      return open ? port.clientWidth - legend.offsetWidth - 16 : port.clientWidth;
    }
    function fitScale() { return Math.min(room() / W, port.clientHeight / H); }
    function clampScale(v) { return Math.max(minScale(), Math.min(4, v)); }
    function clampPan() {
      const pw = room(), ph = port.clientHeight, m = 40;
      const w = W * s, h = H * s;
      tx = w <= pw ? (pw - w) / 2 : Math.min(m, Math.max(pw - w - m, tx));
      ty = h <= ph ? (ph - h) / 2 : Math.min(m, Math.max(ph - h - m, ty));
    }
    function apply() {
      clampPan();
      stage.style.transform = "translate(" + tx + "px," + ty + "px) scale(" + s + ")";
      port.classList.toggle("hdlc-far", s * FONT < READABLE - 1e-6);
      port.setAttribute("data-scale", s.toFixed(4));
      placeChips();
    }
    function zoomAt(f, cx, cy) {
      const ns = clampScale(s * f);
      tx = cx - (cx - tx) * ns / s;
      ty = cy - (cy - ty) * ns / s;
      s = ns;
      touched = true;
      apply();
    }
    function zoomMid(f) { zoomAt(f, port.clientWidth / 2, port.clientHeight / 2); }
    function fit() { s = fitScale(); touched = false; markArea(null); apply(); }
    // A tall, narrow window (a phone) starts closer in: the whole map would be a thin strip.
    function start() {
      fit();
      const pw = room(), ph = port.clientHeight;
      if (ph > pw * 1.2) {
        s = clampScale(Math.min(ph / H, 2 * pw / W));
        tx = (pw - W * s) / 2;
        apply();
      }
    }
    // Show a box (drawing coordinates) whole, at least at `least` scale, centred.
    function show(x, y, w, h, least) {
      const pw = room(), ph = port.clientHeight;
      s = clampScale(Math.max(Math.min(pw / w, ph / h) * 0.92, least || 0));
      tx = pw / 2 - (x + w / 2) * s;
      ty = ph / 2 - (y + h / 2) * s;
      touched = true;
      apply();
    }

    // ---- Overview by area: names that open their area at a readable size ----
    const regions = Array.prototype.slice.call(svg.querySelectorAll(".hdlc-region"));
    regions.sort(function (a, b) { return b.getAttribute("data-n") - a.getAttribute("data-n"); });
    regions.forEach(function (r) {
      const b = document.createElement("button");
      b.type = "button";
      b.className = "hdlc-mapchip";
      b.textContent = r.getAttribute("data-title");
      b.setAttribute("data-area", r.getAttribute("data-area"));
      b.setAttribute("data-cx", r.getAttribute("data-cx"));
      b.setAttribute("data-cy", r.getAttribute("data-cy"));
      b.addEventListener("click", function () { openArea(r); });
      chips.appendChild(b);
    });
    // An area opens at a size its names can be read at, its stations marked (an area may be
    // wider than the window: the marks show where to pan). It opens around its middle, or, when
    // the window holds only part of it, where the window holds the most of its stations.
    function openArea(r) {
      const key = r.getAttribute("data-area");
      const g = ["x", "y", "width", "height"].map(function (k) { return parseFloat(r.getAttribute(k)); });
      const cx = parseFloat(r.getAttribute("data-cx")), cy = parseFloat(r.getAttribute("data-cy"));
      const w = Math.min(g[2], 2 * Math.min(cx - g[0], g[0] + g[2] - cx) + 80);
      const h = Math.min(g[3], 2 * Math.min(cy - g[1], g[1] + g[3] - cy) + 80);
      const sc = clampScale(Math.max(Math.min(room() / w, port.clientHeight / h) * 0.92, READABLE / FONT));
      const whole = w * sc <= room() && h * sc <= port.clientHeight;
      const c = whole ? [cx, cy] : densest(key, [cx, cy], 0.6 * room() / sc, 0.7 * port.clientHeight / sc);
      show(c[0] - w / 2, c[1] - h / 2, w, h, READABLE / FONT);
      markArea(key);
    }
    // Among the area's stations, the one whose window (vw × vh, map units) holds the most of
    // them, the nearest to the middle on a tie; the middle itself when the area has none.
    function densest(key, mid, vw, vh) {
      const pts = Array.prototype.map.call(
        svg.querySelectorAll('.hdlc-stop[data-area="' + key + '"] rect'),
        function (e) {
          return [parseFloat(e.getAttribute("x")) + parseFloat(e.getAttribute("width")) / 2,
                  parseFloat(e.getAttribute("y")) + parseFloat(e.getAttribute("height")) / 2];
        });
      let best = mid, most = -1, near = Infinity;
      pts.forEach(function (p) {
        const n = pts.filter(function (q) {
          return Math.abs(q[0] - p[0]) <= vw / 2 && Math.abs(q[1] - p[1]) <= vh / 2;
        }).length;
        const d = Math.hypot(p[0] - mid[0], p[1] - mid[1]);
        if (n > most || (n === most && d < near)) { best = p; most = n; near = d; }
      });
      return best;
    }
    function markArea(key) {
      svg.classList.toggle("hdlc-area-focus", !!key);
      svg.querySelectorAll(".hdlc-stop").forEach(function (a) {
        a.classList.toggle("hdlc-in-area", !!key && a.getAttribute("data-area") === key);
      });
      view.setAttribute("data-area", key || "");
    }
    // Area names where their areas are; one that would cover another (on a small screen) waits
    // until the map is zoomed in far enough for both.
    function placeChips() {
      if (!port.classList.contains("hdlc-far")) return;
      const placed = [];
      chips.querySelectorAll(".hdlc-mapchip").forEach(function (c) {
        c.style.left = (tx + parseFloat(c.getAttribute("data-cx")) * s) + "px";
        c.style.top = (ty + parseFloat(c.getAttribute("data-cy")) * s) + "px";
        c.style.visibility = "";
        const r = c.getBoundingClientRect();
        const hit = placed.some(function (q) {
          return r.left < q.right + 4 && q.left < r.right + 4 && r.top < q.bottom + 2 && q.top < r.bottom + 2;
        });
        if (hit) c.style.visibility = "hidden"; else placed.push(r);
      });
    }

    // ---- Highlight: hovering or focusing a line, a station or a legend entry ----
    let selected = null;
    function highlight(ids) {
      const on = ids && ids.length ? ids : (selected ? [selected] : null);
      svg.classList.toggle("hdlc-focused", !!on);
      view.querySelectorAll(".hdlc-route, .hdlc-maplegend-line").forEach(function (el) {
        el.classList.toggle("hdlc-on", !!on && on.indexOf(el.getAttribute("data-line")) >= 0);
      });
      svg.querySelectorAll(".hdlc-stop").forEach(function (el) {
        const ls = (el.getAttribute("data-lines") || "").split(" ");
        el.classList.toggle("hdlc-on", !!on && ls.some(function (l) { return on.indexOf(l) >= 0; }));
      });
    }
    function bind(el, ids) {
      el.addEventListener("mouseenter", function () { highlight(ids); });
      el.addEventListener("mouseleave", function () { highlight(null); });
      el.addEventListener("focus", function () { highlight(ids); });
      el.addEventListener("blur", function () { highlight(null); });
    }
    view.querySelectorAll(".hdlc-route, .hdlc-maplegend-line a:not(.hdlc-maplegend-go)").forEach(function (el) {
      bind(el, [el.getAttribute("data-line")]);
    });
    svg.querySelectorAll(".hdlc-stop").forEach(function (el) {
      bind(el, (el.getAttribute("data-lines") || "").split(" ").filter(Boolean));
    });

    // ---- Lines on and off, by area ----
    function setLine(id, on) {
      const r = svg.querySelector('.hdlc-route[data-line="' + CSS.escape(id) + '"]');
      if (r) r.classList.toggle("hdlc-hidden", !on);
      view.querySelectorAll('.hdlc-maplegend input[data-line="' + CSS.escape(id) + '"]').forEach(function (i) { i.checked = on; });
      syncGroups();
    }
    function syncGroups() {
      view.querySelectorAll(".hdlc-maplegend-area").forEach(function (f) {
        const boxes = Array.prototype.slice.call(f.querySelectorAll("input[data-line]"));
        const g = f.querySelector("input[data-group]");
        const n = boxes.filter(function (b) { return b.checked; }).length;
        g.checked = n === boxes.length;
        g.indeterminate = n > 0 && n < boxes.length;
      });
    }
    view.querySelectorAll(".hdlc-maplegend input[data-line]").forEach(function (i) {
      i.addEventListener("change", function () { setLine(i.getAttribute("data-line"), i.checked); });
    });
    view.querySelectorAll(".hdlc-maplegend input[data-group]").forEach(function (g) {
      g.addEventListener("change", function () {
        g.closest("fieldset").querySelectorAll("input[data-line]").forEach(function (i) { setLine(i.getAttribute("data-line"), g.checked); });
      });
    });
    view.querySelectorAll(".hdlc-maplegend [data-all]").forEach(function (b) {
      b.addEventListener("click", function () {
        const on = b.getAttribute("data-all") === "1";
        view.querySelectorAll(".hdlc-maplegend input[data-line]").forEach(function (i) { setLine(i.getAttribute("data-line"), on); });
      });
    });
    // A line's name selects it (the hash says which); its path page is a click further.
    view.querySelectorAll(".hdlc-maplegend-line a:not(.hdlc-maplegend-go)").forEach(function (a) {
      a.addEventListener("click", function (e) {
        if (e.ctrlKey || e.metaKey || e.shiftKey) return;
        e.preventDefault();
        const id = a.getAttribute("data-line");
        if (location.hash === "#line=" + id) selectLine(id); else location.hash = "line=" + id;
      });
    });

    // ---- #line=<id> selects a line: shown, highlighted, framed ----
    function selectLine(id) {
      const r = svg.querySelector('.hdlc-route[data-line="' + CSS.escape(id) + '"]');
      selected = r ? id : null;
      view.querySelectorAll(".hdlc-maplegend-line").forEach(function (el) {
        el.classList.toggle("hdlc-selected", el.getAttribute("data-line") === selected);
      });
      if (!r) { highlight(null); return; }
      setLine(id, true);
      highlight(null);
      const b = r.getBBox();
      show(b.x - 40, b.y - 40, b.width + 80, b.height + 80, 0);
    }
    function fromHash() {
      const m = /^#line=(.+)$/.exec(location.hash);
      if (m) selectLine(decodeURIComponent(m[1])); else if (selected) { selected = null; highlight(null); }
    }
    if (full) window.addEventListener("hashchange", fromHash);

    // ---- Station search: jump to the station, mark it, focus its link ----
    function find(q) {
      q = q.trim().toLowerCase();
      if (!q) return null;
      const stops = Array.prototype.slice.call(svg.querySelectorAll(".hdlc-stop"));
      const title = function (a) { return (a.querySelector("title") || {}).textContent || ""; };
      return stops.find(function (a) { return title(a).toLowerCase() === q; }) ||
        stops.find(function (a) { return title(a).toLowerCase().indexOf(q) >= 0; }) ||
        stops.find(function (a) { return (a.getAttribute("data-id") || "").indexOf(q) >= 0; }) || null;
    }
    function go() {
      const a = find(search.value);
      search.classList.toggle("hdlc-notfound", !a && !!search.value.trim());
      if (!a) return;
      const m = a.querySelector(".hdlc-station");
      const x = parseFloat(m.getAttribute("x")), y = parseFloat(m.getAttribute("y"));
      show(x - 160, y - 90, 320 + parseFloat(m.getAttribute("width")), 180, Math.max(1, READABLE / FONT));
      svg.querySelectorAll(".hdlc-found").forEach(function (f) { f.classList.remove("hdlc-found"); });
      a.classList.add("hdlc-found");
      a.focus({ preventScroll: true });
    }
    if (search) {
      search.addEventListener("change", go);
      search.addEventListener("keydown", function (e) { if (e.key === "Enter") { e.preventDefault(); go(); } });
    }

    // ---- Tools ----
    view.querySelectorAll(".hdlc-maptools [data-act]").forEach(function (b) {
      b.addEventListener("click", function () {
        const act = b.getAttribute("data-act");
        if (act === "in") zoomMid(1.4);
        else if (act === "out") zoomMid(1 / 1.4);
        else if (act === "fit") fit();
        else if (act === "legend") {
          const open = !view.classList.contains("hdlc-legend-open");
          view.classList.toggle("hdlc-legend-open", open);
          b.setAttribute("aria-expanded", open ? "true" : "false");
          if (!touched) fit(); else apply();
        }
      });
    });
    if (legend && full && window.innerWidth >= 1100) {
      view.classList.add("hdlc-legend-open");
      legendButton.setAttribute("aria-expanded", "true");
    }

    // ---- Wheel, keys, drag and pinch ----
    port.addEventListener("wheel", function (e) {
      if (!full && !e.ctrlKey && !e.metaKey) return; // on the front page the wheel scrolls the page
      e.preventDefault();
      const r = port.getBoundingClientRect();
      zoomAt(Math.exp(-e.deltaY * (e.deltaMode ? 0.05 : 0.0015)), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    port.addEventListener("keydown", function (e) {
      if (e.target !== port) return;
      const k = e.key, step = 80;
      if (k === "+" || k === "=") zoomMid(1.25);
      else if (k === "-" || k === "_") zoomMid(1 / 1.25);
      else if (k === "0") fit();
      else if (k === "ArrowLeft") { tx += step; touched = true; apply(); }
      else if (k === "ArrowRight") { tx -= step; touched = true; apply(); }
      else if (k === "ArrowUp") { ty += step; touched = true; apply(); }
      else if (k === "ArrowDown") { ty -= step; touched = true; apply(); }
      else return;
      e.preventDefault();
      e.stopPropagation(); // mdBook's arrows would turn the page
    });
    const pointers = new Map();
    let gesture = null, dragged = false;
    port.addEventListener("pointerdown", function (e) {
      if (e.button !== 0 || e.target.closest(".hdlc-mapchip")) return;
      pointers.set(e.pointerId, { x: e.clientX, y: e.clientY });
      gesture = null;
      dragged = false;
    });
    port.addEventListener("pointermove", function (e) {
      const p = pointers.get(e.pointerId);
      if (!p) return;
      const r = port.getBoundingClientRect();
      if (pointers.size === 2) {
        const [a, b] = Array.from(pointers.values());
        const d0 = Math.hypot(a.x - b.x, a.y - b.y);
        p.x = e.clientX; p.y = e.clientY;
        const d1 = Math.hypot(a.x - b.x, a.y - b.y);
        if (d0 > 0) zoomAt(d1 / d0, (a.x + b.x) / 2 - r.left, (a.y + b.y) / 2 - r.top);
        dragged = true;
        return;
      }
      const dx = e.clientX - p.x, dy = e.clientY - p.y;
      if (!gesture && Math.abs(dx) + Math.abs(dy) > 4) {
        gesture = "pan";
        port.setPointerCapture(e.pointerId);
        port.classList.add("hdlc-dragging");
      }
      if (gesture === "pan") {
        tx += dx; ty += dy; touched = true; dragged = true;
        p.x = e.clientX; p.y = e.clientY;
        apply();
      }
    });
    function up(e) {
      pointers.delete(e.pointerId);
      if (!pointers.size) { gesture = null; port.classList.remove("hdlc-dragging"); }
    }
    port.addEventListener("pointerup", up);
    port.addEventListener("pointercancel", up);
    port.addEventListener("click", function (e) {
      if (dragged) { e.preventDefault(); e.stopPropagation(); dragged = false; }
    }, true);

    window.addEventListener("resize", function () { if (!touched) start(); else apply(); });
    start();
    if (full) fromHash();
  }

  // The map page uses the whole window: the table of contents steps aside (for this page
  // only; the reader's choice elsewhere is kept) and the view fills what is under the menu.
  function fillPage() {
    document.documentElement.classList.remove("sidebar-visible");
    document.documentElement.classList.add("hdlc-map-page");
    const toggle = document.getElementById("mdbook-sidebar-toggle-anchor");
    if (toggle) toggle.checked = false;
  }

  document.querySelectorAll(".hdlc-mapview").forEach(init);
})();
