"""Collectives from the Rust harness: cudarc's NCCL bindings, one process driving every GPU.

Run by the lab runner beside collectives.py (torch.distributed, one process per GPU), so that
one run files both in family dist_collectives (variants rust_* here) and a figure can set their
bus bandwidths side by side: if a framework's own dispatch cost anything, the two would part.

This file only starts `hdlc nccl-bench` with every visible GPU and passes its records through;
the sizes, the exact checks and the timing are Rust (generator/src/measure/collectives.rs, the
NCCL calls in generator/src/measure/gpu/nccl.rs). What it adds is finding two programs:
- the hdlc binary: HDLC_BIN, which the runner sets to itself, else target/release/hdlc;
- NCCL's library. PyTorch's CUDA wheels ship it as nvidia/nccl/lib/libnccl.so.2, while cudarc
  asks the dynamic loader for `libnccl.so`; so a temporary directory holding that name, linked
  to the wheel's file, goes first on LD_LIBRARY_PATH of the child.

The runner's cache key for this lab covers this file; the Rust code it starts is the binary's,
so after changing that code run `bench --labs dist_collectives_rust` again by hand.
By hand, on a machine with 2 or more GPUs: `python3 kernels/labs/distributed/nccl_rust.py`.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

# No labkit here: it moves file descriptor 1 to standard error for the Python prints of a lab,
# and this file's records come from the child, which must inherit the real standard output.
QUICK = os.environ.get("HDLC_LAB_QUICK") == "1"
ROOT = pathlib.Path(__file__).resolve().parents[3]


def hdlc_binary():
    path = os.environ.get("HDLC_BIN") or str(ROOT / "target" / "release" / "hdlc")
    if not pathlib.Path(path).exists():
        raise SystemExit(f"nccl_rust: no hdlc binary at {path} (cargo build --release)")
    return path


def nccl_dir():
    """A directory whose libnccl.so is the NCCL that PyTorch's wheel ships (None: leave the
    library path as it is, e.g. a system NCCL)."""
    try:
        import nvidia.nccl
    except ImportError:
        return None
    lib = pathlib.Path(list(nvidia.nccl.__path__)[0]) / "lib" / "libnccl.so.2"
    if not lib.exists():
        return None
    d = pathlib.Path(tempfile.mkdtemp(prefix="hdlc_nccl_"))
    (d / "libnccl.so").symlink_to(lib)
    return str(d)


def main():
    env = dict(os.environ)
    d = nccl_dir()
    if d:
        env["LD_LIBRARY_PATH"] = d + os.pathsep + env.get("LD_LIBRARY_PATH", "")
        print(f"nccl_rust: NCCL from {d}", file=sys.stderr)
    args = [hdlc_binary(), "nccl-bench"] + (["--quick"] if QUICK else [])
    # The child inherits standard output (its records) and standard error (its messages).
    sys.exit(subprocess.run(args, env=env).returncode)


if __name__ == "__main__":
    main()
