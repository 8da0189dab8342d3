// Live reload for `hdlc serve`: poll the local server's build counter and reload on change.
(function () {
  let seen = null;
  async function poll() {
    try {
      const r = await fetch("/__hdlc/version", { cache: "no-store" });
      const v = await r.text();
      if (seen !== null && v !== seen) location.reload();
      seen = v;
    } catch (e) { /* server restarting */ }
    setTimeout(poll, 1000);
  }
  poll();
})();
