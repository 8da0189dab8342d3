// Live reload for `hdlc serve`: wait on the server's build counter and reload when it changes.
// The server answers `/__hdlc/wait?seen=N` only once the counter has passed N (or after a while
// with the same N), so a rebuilt page shows the moment it is written.
// The server writes the version it served this page at on the script's tag (`data-version`),
// so a change published while the page was still loading is not missed.
(function () {
  const served = document.currentScript && document.currentScript.dataset.version;
  let seen = served === undefined ? null : served;
  async function wait() {
    try {
      const r = await fetch("/__hdlc/wait?seen=" + (seen === null ? "" : seen), { cache: "no-store" });
      const v = await r.text();
      if (seen !== null && v !== seen) {
        show();
        return;
      }
      seen = v;
      setTimeout(wait, 0);
    } catch (e) {
      setTimeout(wait, 1000); /* server restarting */
    }
  }
  // The new page's text at once, then the page itself. A reload fetches the page and revalidates
  // its dozen stylesheets and scripts before the text can show; swapping in the new <main> first
  // puts the edit on screen a few hundred milliseconds sooner, and the reload that follows brings
  // what the swap cannot (the sidebar, the page's scripts: figures, maps, search).
  async function show() {
    try {
      const r = await fetch(location.href, { cache: "no-store" });
      if (r.ok) {
        const next = new DOMParser().parseFromString(await r.text(), "text/html");
        const main = document.querySelector("main"), newMain = next.querySelector("main");
        if (main && newMain) {
          main.replaceWith(document.adoptNode(newMain));
          document.title = next.title;
          // Let the swapped text reach the screen before the reload replaces the document.
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        }
      }
    } catch (e) {
      /* the reload below shows the page anyway */
    }
    location.reload();
  }
  wait();
})();
