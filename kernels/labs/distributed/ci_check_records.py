"""Read a lab's records on stdin; exit non-zero unless every gloo record passed its check."""

import json
import sys

lab = sys.argv[1]
gloo = [r for r in map(json.loads, sys.stdin) if r["variant"].startswith("gloo")]
bad = [r for r in gloo if r["status"] != "ok" or not r["rel_error"] <= r["tolerance"]]
if not gloo:
    sys.exit(f"{lab}: no gloo record")
if bad:
    sys.exit(f"{lab}: gloo check failed: {bad}")
for r in gloo:
    print(f"{lab}: {r['label']}: rel_error {r['rel_error']:.1e} <= {r['tolerance']:.0e}")
