// Live reload for `hdlc serve`: wait on the server's build counter and reload when it changes.
// The server answers `/__hdlc/wait?seen=N` only once the counter has passed N (or after a while
// with the same N), so a rebuilt page shows the moment it is written.
(function () {
  let seen = null;
  async function wait() {
    try {
      const r = await fetch("/__hdlc/wait?seen=" + (seen === null ? "" : seen), { cache: "no-store" });
      const v = await r.text();
      if (seen !== null && v !== seen) {
        location.reload();
        return;
      }
      seen = v;
      setTimeout(wait, 0);
    } catch (e) {
      setTimeout(wait, 1000); /* server restarting */
    }
  }
  wait();
})();
