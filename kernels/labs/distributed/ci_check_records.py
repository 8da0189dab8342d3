"""Read a lab's records on stdin; exit non-zero unless every checked record passed its check.

`ci_check_records.py LAB` checks the records whose variant starts with `gloo` (the labs that
start their own gloo workers beside GPU variants). `ci_check_records.py LAB --all WORLD` checks
every record (a lab run under torchrun on gloo CPU processes) and that each names `world` WORLD.
"""

import json
import sys

lab = sys.argv[1]
records = [json.loads(line) for line in sys.stdin if line.strip()]
if len(sys.argv) > 2 and sys.argv[2] == "--all":
    world = int(sys.argv[3])
    checked = records
    wrong_world = [r["variant"] for r in records if r["params"].get("world") != world]
    if wrong_world:
        sys.exit(f"{lab}: records without world {world}: {wrong_world}")
else:
    checked = [r for r in records if r["variant"].startswith("gloo")]
bad = [r for r in checked if r["status"] != "ok" or not r["rel_error"] <= r["tolerance"]]
if not checked:
    sys.exit(f"{lab}: no record to check")
if bad:
    sys.exit(f"{lab}: check failed: {bad}")
for r in checked:
    print(f"{lab}: {r['label']} {r['params']}: rel_error {r['rel_error']:.1e} <= {r['tolerance']:.0e}")
