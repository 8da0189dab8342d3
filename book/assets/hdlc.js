// How Deep Learning Computes: remember the line the reader rides (the map's explorer is map.js).
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
})();
