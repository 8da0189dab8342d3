"""Cheap checks that run before anything is timed: the codes and the layouts.

Why: a GEMV that reads its codes in the wrong order still returns numbers of the right size; only
an entry-by-entry check of the permutation (the same ones the Rust harness pins in
qgemv_layout.rs) and the end-to-end comparison with the FP32 reference catch it. The round trip
is quantize.py's RoundTrip check: codes that the format's own quantizer maps to themselves.
"""

import torch

import qd_weights as qw
import quantize as qz


def check_w8_mma():
    """Every (row, col) byte found where quant_gemv_mma.cu's 8-bit comment puts it, exactly once
    (each entry's id split over two byte matrices, as qgemv_layout.rs's test does)."""
    rows, cols = 32, 256
    ids = torch.arange(rows * cols).reshape(rows, cols)
    lo = qw.repack_w8_mma((ids % 256).to(torch.uint8)).reshape(-1).to(torch.int64)
    hi = qw.repack_w8_mma((ids // 256).to(torch.uint8)).reshape(-1).to(torch.int64)
    got = lo + 256 * hi
    at = torch.arange(got.numel())
    block, off = at // 2048, at % 2048
    tile, j = block // (cols // 128), block % (cols // 128)
    lane, s = off % 512 // 16, 2 * (off // 512) + off % 16 // 8
    h, e = off % 8 // 4, off % 4
    row = 16 * tile + lane // 4 + 8 * h
    col = 128 * j + 16 * s + 4 * (lane % 4) + e
    if not torch.equal(got, row * cols + col):
        raise AssertionError("w8_mma layout: a byte is not where the kernel reads it")
    if not torch.equal(got.sort().values, torch.arange(rows * cols)):
        raise AssertionError("w8_mma layout: some weights were never placed")
    if not torch.equal(qw.unpack_w8_mma(qw.repack_w8_mma(ids % 256)), ids % 256):
        raise AssertionError("w8_mma layout: unpack_w8_mma does not undo repack_w8_mma")


def check_int4_mma():
    """Every (row, col) nibble found where quant_gemv_mma.cu's comment puts it, exactly once."""
    rows, cols = 32, 256
    val = (torch.arange(cols)[None, :] * 3 + torch.arange(rows)[:, None] * 5) % 16
    out = qw.repack_int4_mma(val.to(torch.uint8)).reshape(-1)
    words = out.reshape(-1, 4).to(torch.int64)
    words = words[:, 0] | words[:, 1] << 8 | words[:, 2] << 16 | words[:, 3] << 24
    seen = torch.zeros(rows, cols, dtype=torch.bool)
    for w in range(words.numel()):
        block, off = w * 4 // 1024, w * 4 % 1024
        tile, j = block // (cols // 128), block % (cols // 128)
        half, lane, q = off // 512, off % 512 // 16, off % 16 // 4
        s = 4 * half + q
        for i in range(8):
            row = 16 * tile + lane // 4 + 8 * (i % 2)
            col = 128 * j + 16 * s + 4 * (lane % 4) + 2 * ((i // 2) % 2) + i // 4
            if (int(words[w]) >> (4 * i)) & 0xF != int(val[row, col]) or seen[row, col]:
                raise AssertionError(f"int4_mma layout: row {row} col {col}")
            seen[row, col] = True
    if not bool(seen.all()):
        raise AssertionError("int4_mma layout: some weights were never placed")


def check_layouts():
    """Raise unless both repacks are the permutations the kernels document."""
    check_w8_mma()
    check_int4_mma()


def round_trip_error(w, fmt):
    """quantize.py's RoundTrip on one matrix: 0 when the codes are the format's own (its
    quantizer maps them to themselves: integers in range, values an E4M3 holds)."""
    rt = qz.RoundTrip()
    codes, scale, zero = qz.quantize(w, qw.FMT[fmt])
    rt.check(codes, scale, zero, qw.FMT[fmt])
    return rt.err
