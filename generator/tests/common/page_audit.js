// The reader's bars for one laid-out page (issue 28), evaluated inside the page by
// tests/browser_pages.rs. Returns every offence as {bar, where, detail}; nothing is sampled.
//
// Bars: "overflow" (a box or text past the main column's edges, outside any scroll box),
// "table-box" (a table not inside its own horizontal scroll box), "rows" (a table showing more
// than 30 rows), "ellipsis" (an SVG <text> cut with "…"), "markup" (raw Markdown or TeX in
// visible text), "word-break" (a Korean word split across lines), "cuda" (a CUDA block without
// highlighting spans).
(async () => {
  await document.fonts.ready;
  const found = [];
  const scope = document.querySelector("main") || document.body;
  const col = scope.getBoundingClientRect();
  const SVG = "http://www.w3.org/2000/svg";
  const heads = [...scope.querySelectorAll("h1, h2, h3")];
  const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + "…" : s).replace(/\s+/g, " ").trim();
  const visible = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== "hidden";

  // Where an element is, for a reader looking for it: its id'd ancestor or the heading above it.
  function where(el) {
    const parts = [];
    for (let e = el; e && e !== scope && parts.length < 3; e = e.parentElement) {
      const cls = [...e.classList].filter((c) => !c.startsWith("hljs")).slice(0, 2);
      parts.unshift(e.localName + (cls.length ? "." + cls.join(".") : ""));
    }
    const owner = el.closest("[id]:not(main):not(body)");
    const id = owner && scope.contains(owner) && !/^h[1-6]$/.test(owner.localName) ? " #" + owner.id : "";
    const head = heads.filter((h) => h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING).pop();
    return parts.join(" > ") + id + (head ? " under «" + clip(head.textContent, 40) + "»" : "");
  }
  const add = (bar, el, detail) => found.push({ bar, where: where(el), detail });

  // 1. Nothing spills past the main column, except inside a box that scrolls (or clips) it.
  const range = document.createRange();
  const past = (r) => r.width > 0 && (r.right > col.right + 1 || r.left < col.left - 1);
  const span = (r) => Math.round(r.left - col.left) + ".." + Math.round(r.right - col.left) + " px of a " + Math.round(col.width) + " px column";
  function walk(el) {
    for (const n of el.childNodes) {
      if (n.nodeType === Node.TEXT_NODE && n.data.trim()) {
        range.selectNodeContents(n);
        const r = range.getBoundingClientRect();
        if (past(r)) add("overflow", el, "text «" + clip(n.data, 40) + "»: " + span(r));
        continue;
      }
      if (n.nodeType !== Node.ELEMENT_NODE) continue;
      const s = getComputedStyle(n);
      if (s.display === "none" || s.position === "fixed") continue;
      const r = n.getBoundingClientRect();
      if (past(r)) { add("overflow", n, span(r)); continue; }
      if (s.overflowX !== "visible" && s.display !== "contents") continue;
      walk(n);
    }
  }
  walk(scope);
  if (!found.length && document.documentElement.scrollWidth > innerWidth + 1) {
    add("overflow", document.body, "the page scrolls sideways: " + document.documentElement.scrollWidth + " px in a " + innerWidth + " px window");
  }

  // 2. Tables: each in its own horizontal scroll box, none showing more than 30 rows.
  for (const t of scope.querySelectorAll("table")) {
    if (!visible(t)) continue;
    let box = t;
    while (box !== scope && !/auto|scroll/.test(getComputedStyle(box).overflowX)) box = box.parentElement;
    if (box === scope) add("table-box", t, "no horizontal scroll box around the table");
    // checkVisibility: rows folded in a closed <details> keep their boxes in Chromium but are not shown.
    const rows = [...t.rows].filter((r) => r.querySelector("td") && r.checkVisibility()).length;
    if (rows > 30) add("rows", t, rows + " visible rows");
  }

  // 3. SVG labels are never cut short. A text that is only "…" is a drawn "and so on" (a row of
  //    warps in a diagram), not a label cut short.
  for (const t of document.querySelectorAll("svg text")) {
    const s = t.textContent.trim();
    if (s.endsWith("…") && s !== "…") add("ellipsis", t, "«" + clip(s, 60) + "»");
  }

  // 4. Visible text (outside code) holds no raw Markdown, TeX or HTML entities.
  const rawMarks = [
    [/`/, "backtick"],
    [/\*\*/, "**"],
    [/\$\$|\$[^$\s][^$]*\$|\$(?=[A-Za-z\\{^_])/, "$ (TeX)"],
    [/\\[A-Za-z]{2,}/, "TeX command"],
    [/&(?:[a-z]{2,8}|#\d+|#x[0-9a-f]+);/i, "HTML entity"],
  ];
  const codeLike = "code, pre, kbd, samp, script, style, textarea, noscript";
  const texts = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT);
  const hangulNodes = [];
  for (let n = texts.nextNode(); n; n = texts.nextNode()) {
    const p = n.parentElement;
    if (!p || !n.data.trim() || p.closest(codeLike) || !visible(p)) continue;
    for (const [re, what] of rawMarks) {
      const m = re.exec(n.data);
      if (m) add("markup", p, what + " in «" + clip(n.data.slice(Math.max(0, m.index - 25), m.index + 35), 64) + "»");
    }
    if (/[\uAC00-\uD7A3]/.test(n.data) && p.namespaceURI !== SVG && !p.closest("math, svg")) hangulNodes.push(n);
  }

  // 5. A Korean word is never split across two lines: a line break between two letters of one
  //    word (no space), where one of them is Hangul.
  const lines = (rects) => {
    const rs = [...rects].filter((r) => r.width > 0).sort((a, b) => a.top - b.top);
    let n = rs.length ? 1 : 0;
    for (let i = 1, cur = rs[0]; i < rs.length; i++) if (rs[i].top >= cur.bottom - 2) { n++; cur = rs[i]; }
    return n;
  };
  const letter = /[\p{L}\p{N}]/u, hangul = /[\uAC00-\uD7A3]/;
  for (const n of hangulNodes) {
    range.selectNodeContents(n);
    if (lines(range.getClientRects()) < 2) continue;
    for (const m of n.data.matchAll(/\S+/g)) {
      if (!hangul.test(m[0])) continue;
      range.setStart(n, m.index);
      range.setEnd(n, m.index + m[0].length);
      if (lines(range.getClientRects()) < 2) continue;
      let prevTop = null;
      for (let k = 0; k < m[0].length; k++) {
        range.setStart(n, m.index + k);
        range.setEnd(n, m.index + k + 1);
        const r = range.getBoundingClientRect();
        if (prevTop !== null && r.top > prevTop + r.height / 2) {
          const a = m[0][k - 1], b = m[0][k];
          if (letter.test(a) && letter.test(b) && (hangul.test(a) || hangul.test(b))) {
            add("word-break", n.parentElement, "«" + clip(m[0], 40) + "» broken before «" + m[0].slice(k, k + 6) + "»");
          }
          break;
        }
        prevTop = r.top;
      }
    }
  }

  // 6. Every CUDA block is highlighted.
  for (const c of scope.querySelectorAll("code.language-cuda")) {
    if (!c.querySelector('[class^="hljs-"], [class*=" hljs-"]')) {
      add("cuda", c, "no highlighting in «" + clip(c.textContent.trim().split("\n")[0], 50) + "»");
    }
  }
  return found;
})()
