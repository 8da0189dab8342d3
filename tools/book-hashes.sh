#!/bin/sh
# Build the book deterministically with a given hdlc binary and print the SHA-256 of every file,
# so two generator versions can be compared byte for byte on the same sources:
#
#   tools/book-hashes.sh OLD_BINARY . /tmp/old > old.sha
#   tools/book-hashes.sh NEW_BINARY . /tmp/new > new.sha
#   cmp old.sha new.sha && echo identical
#
# Fixed inputs: no GPU, no CPU roofline (its numbers vary run to run), no labs, a fixed commit
# for provenance, a fixed seed. Build each binary in its own CARGO_TARGET_DIR: worktrees that
# share one target dir also share the `hdlc` artifacts, and target/debug/hdlc may then be the
# other tree's build.
set -e
BIN=$1; ROOT=$2; OUT=$3
[ -n "$BIN" ] && [ -n "$ROOT" ] && [ -n "$OUT" ] || { echo "usage: $0 BINARY BOOK_ROOT OUT_DIR" >&2; exit 2; }
rm -rf "$OUT"
HDLC_GIT_COMMIT=fixed HDLC_CPU_BENCH=0 HDLC_SEED=1 "$BIN" --root "$ROOT" build --no-gpu --no-cpu-bench --no-labs --out "$OUT" >/dev/null
cd "$OUT" && find . -type f | LC_ALL=C sort | xargs sha256sum
