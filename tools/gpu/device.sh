#!/usr/bin/env bash
# Runs on a lent GPU machine (the device tool), from the repository root, with the release
# binary built elsewhere and carried in. Writes logs and the merged results under $OUT.
#   device.sh demo               a first build with empty caches, interrupted, then resumed
#   device.sh labs IDS NAME      `bench --labs IDS`, its log as labs-NAME.log, the results file
#   device.sh kernels            `bench --force --no-labs`: every kernel record again (with its time)
#   device.sh bench FAMS LABS NAME  `bench --families FAMS --labs LABS` ("-": none of that kind)
#   device.sh announce           the first lines of a first build (records without keys), 20 s
# On a machine with several GPUs `labs` runs the multi-GPU labs at every world size it has GPUs
# for, e.g. `device.sh labs dist_collectives,dist_scaling,dist_tensor_parallel dist` on 2 GPUs;
# their records go into the same results file, told apart by `params.world`.
set -u
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BIN=${BIN:-target/release/hdlc}
OUT=${OUT:?OUT is the folder the results go to}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/gpu.txt"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
results=kernels/results/$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 \
  | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9]\+/-/g; s/-$//').json
# Every record of this GPU loses its cache key, and the cache goes: as on a card the book has no
# records for (the file stays, so cards that cite its numbers still build).
forget_keys() {
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for r in d["records"]:
    r["key"] = ""
json.dump(d, open(sys.argv[1], "w"))' "$results"
  rm -rf target/hdlc-cache
}
case "$1" in
demo)
  # What a reader sees on a first build on a card the book has no records for.
  cp "$results" /tmp/shipped.json
  forget_keys
  timeout -s INT "${DEMO_S:-100}" "$BIN" build --out /tmp/book > "$OUT/first-build.log" 2>&1
  echo "exit $?" >> "$OUT/first-build.log"
  timeout -s INT 25 "$BIN" build --out /tmp/book > "$OUT/resume.log" 2>&1
  echo "exit $?" >> "$OUT/resume.log"
  cp /tmp/shipped.json "$results"
  ;;
kernels)
  "$BIN" bench --force --no-labs > "$OUT/kernels.log" 2>&1
  echo "exit $?" >> "$OUT/kernels.log"
  cp "$results" "$OUT/"
  ;;
announce)
  cp "$results" /tmp/measured.json
  forget_keys
  timeout -s INT 20 "$BIN" build --out /tmp/book > "$OUT/announce.log" 2>&1
  echo "exit $?" >> "$OUT/announce.log"
  cp /tmp/measured.json "$results"
  ;;
bench)
  args=()
  [ "$2" != - ] && args+=(--families "$2")
  if [ "$3" != - ]; then args+=(--labs "$3"); else args+=(--no-labs); fi
  timeout -s INT "${LABS_S:-540}" "$BIN" bench "${args[@]}" > "$OUT/bench-$4.log" 2>&1
  echo "exit $?" >> "$OUT/bench-$4.log"
  cp "$results" "$OUT/"
  tail -60 "$OUT/bench-$4.log"
  ;;
labs)
  timeout -s INT "${LABS_S:-540}" "$BIN" bench --labs "$2" > "$OUT/labs-$3.log" 2>&1
  echo "exit $?" >> "$OUT/labs-$3.log"
  cp "$results" "$OUT/"
  tail -40 "$OUT/labs-$3.log"
  ;;
esac
