// How Deep Learning Computes: reading aids that need the page itself (see hdlc-text.css).
(function () {
  "use strict";

  // 1. Code blocks: one element per source line, so that a line too long for the column wraps
  //    under itself (its own indentation + 2 columns, a bar marking the continuation) instead of
  //    scrolling sideways. A line is its indentation (.hdlc-ind, narrowed on a phone so that
  //    deep indentation cannot push code out of the column) and the rest (.hdlc-rest, which
  //    wraps); both are inline boxes, so a selection copies the source as written. Runs after
  //    mdBook's highlighting (additional-js loads after book.js); a highlighting span that
  //    crosses a newline (a block comment) is closed at the end of the line and reopened on the
  //    next.
  function lineHtml(l) {
    const indent = /^ */.exec(l.replace(/<[^>]+>/g, ""))[0].length;
    let rest = "";
    let skipped = 0;
    for (const part of l.split(/(<[^>]+>)/)) {
      if (part.startsWith("<") || skipped === indent) { rest += part; continue; }
      const take = Math.min(indent - skipped, /^ */.exec(part)[0].length);
      skipped += take;
      rest += part.slice(take);
    }
    return '<span class="hdlc-cl" style="--i:' + indent + '"><span class="hdlc-ind">' + " ".repeat(indent) +
      '</span><span class="hdlc-rest">' + rest + "\n</span></span>";
  }
  function splitLines(code) {
    const open = [];
    const lines = [];
    let cur = "";
    for (const part of code.innerHTML.split(/(<[^>]+>|\n)/)) {
      if (!part) continue;
      if (part === "\n") {
        lines.push(cur + "</span>".repeat(open.length));
        cur = open.join("");
      } else if (part.startsWith("</")) {
        open.pop();
        cur += part;
      } else if (part.startsWith("<")) {
        open.push(part);
        cur += part;
      } else {
        cur += part;
      }
    }
    if (cur.replace(/<[^>]+>/g, "") !== "") lines.push(cur + "</span>".repeat(open.length));
    code.innerHTML = lines.map(lineHtml).join("");
    code.classList.add("hdlc-wrap");
  }
  document.querySelectorAll("main pre > code").forEach(function (code) {
    if (!code.classList.contains("hdlc-wrap")) splitLines(code);
  });
  // mdBook's copy button copies the block's innerText, which counts each line element as a
  // paragraph (blank lines between all lines); the source is the block's text content.
  const playgroundText = window.playground_text;
  if (typeof playgroundText === "function") {
    window.playground_text = function (playground) {
      const code = playground.querySelector("code.hdlc-wrap");
      return code ? code.textContent : playgroundText.apply(this, arguments);
    };
  }

  // 2. Inline math wider than its line: MathML does not wrap, so such a formula becomes its own
  //    horizontal scroll box (hdlc-math-wide) instead of pushing past the column. Checked again
  //    when the window changes width.
  function fitMath() {
    document.querySelectorAll("main math:not([display=block])").forEach(function (m) {
      m.classList.remove("hdlc-math-wide");
      const box = m.closest("p, li, td, th, dd, blockquote, figcaption, div, main");
      if (box && m.getBoundingClientRect().width > box.clientWidth + 0.5) m.classList.add("hdlc-math-wide");
    });
  }
  let pending = 0;
  window.addEventListener("resize", function () {
    cancelAnimationFrame(pending);
    pending = requestAnimationFrame(fitMath);
  });
  if (document.fonts && document.fonts.ready) document.fonts.ready.then(fitMath);
  fitMath();
})();
