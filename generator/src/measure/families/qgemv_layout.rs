//! The weight layouts of the quant_gemv kernels: the host reorders the quantized codes once (as
//! Marlin- or AWQ-style kernels repack their weights offline) so that every warp load is
//! coalesced and, for the tensor-core rung, each 32-bit word is one MMA fragment. Each function
//! is the exact permutation its kernel's comment documents; the tests check them entry by entry.

/// The int8 codes of a `rows × cols` matrix reordered for `int8_fast`: in each 512-byte block
/// of a row (512 columns), byte `t` of 32-bit word `e` of lane `l`'s 16 bytes holds column
/// `128·e + 4·l + t` (see quant_gemv.cu).
pub fn repack_int8_fast(codes: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    assert!(cols.is_multiple_of(512) && codes.len() == rows * cols);
    let mut out = vec![0u8; codes.len()];
    for blk in 0..rows * cols / 512 {
        let base = blk * 512;
        for lane in 0..32 {
            for e in 0..4 {
                for t in 0..4 {
                    out[base + 16 * lane + 4 * e + t] = codes[base + 128 * e + 4 * lane + t];
                }
            }
        }
    }
    out
}

/// The int4 codes of a `rows × cols` matrix (two per byte, even column in the low nibble)
/// reordered for `int4_fast`: in each 512-byte block of a row (1024 columns), nibble `i` of
/// 32-bit word `e` of lane `l`'s 16 bytes holds column `128·j + 4·l + t`, with `j = 2e + i/4`
/// and `t = i mod 4`, so that the warp's reads of X are coalesced (see quant_gemv.cu).
pub fn repack_int4_fast(codes: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    assert!(cols.is_multiple_of(1024) && codes.len() == rows * cols / 2);
    let mut out = vec![0u8; codes.len()];
    for row in 0..rows {
        for blk in 0..cols / 1024 {
            let base = row * cols + blk * 1024; // first column of the block, as a flat index
            for lane in 0..32 {
                for e in 0..4 {
                    for i in 0..8 {
                        let src = base + 128 * (2 * e + i / 4) + 4 * lane + i % 4;
                        let nib = (codes[src / 2] >> (4 * (src % 2))) & 0xf;
                        let dst = base / 2 + 16 * lane + 4 * e + i / 2;
                        out[dst] |= nib << (4 * (i % 2));
                    }
                }
            }
        }
    }
    out
}

/// The int4 codes of a `rows × cols` matrix (two per byte, even column in the low nibble)
/// reordered for `int4_mma` (quant_gemv_mma.cu): the 1 KB block of 16-row tile `T` and group `j`
/// (128 columns) at `(T · cols/128 + j) · 1024`; in it, lane `l`'s 32-bit word for k-step `s` at
/// `(s / 4) · 512 + l · 16 + (s mod 4) · 4`, whose nibble `i` holds row `16T + l/4 + 8·(i mod 2)`,
/// column `128j + 16s + 4·(l mod 4) + 2·((i / 2) mod 2) + i / 4`.
pub fn repack_int4_mma(codes: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    assert!(rows.is_multiple_of(16) && cols.is_multiple_of(128) && codes.len() == rows * cols / 2);
    let nibble = |r: usize, c: usize| (codes[(r * cols + c) / 2] >> (4 * (c % 2))) & 0xf;
    let mut out = vec![0u8; codes.len()];
    each_fragment(rows, cols, |tile, j, lane, s| {
        let (g, t) = (lane / 4, lane % 4);
        let mut word = 0u32;
        for i in 0..8 {
            let row = 16 * tile + g + 8 * (i % 2);
            let col = 128 * j + 16 * s + 4 * t + 2 * ((i / 2) % 2) + i / 4;
            word |= (nibble(row, col) as u32) << (4 * i);
        }
        let at = (tile * (cols / 128) + j) * 1024 + (s / 4) * 512 + lane * 16 + (s % 4) * 4;
        out[at..at + 4].copy_from_slice(&word.to_le_bytes());
    });
    out
}

/// Every (16-row tile, 128-column group, lane, k-step) of the MMA layouts, in the order both
/// repacks fill them: one mma.m16n8k16 A fragment's share of one lane.
fn each_fragment(rows: usize, cols: usize, mut f: impl FnMut(usize, usize, usize, usize)) {
    for tile in 0..rows / 16 {
        for j in 0..cols / 128 {
            for lane in 0..32 {
                for s in 0..8 {
                    f(tile, j, lane, s);
                }
            }
        }
    }
}

/// The 8-bit codes (INT8 or FP8 E4M3, one byte each) of a `rows × cols` matrix reordered for
/// the 8-bit entries of quant_gemv_mma.cu: the 2 KB block of 16-row tile `T` and group `j` at
/// `(T · cols/128 + j) · 2048`; in it, lane `l`'s 8 bytes for k-step `s` at
/// `(s / 2) · 512 + l · 16 + (s mod 2) · 8`, bytes `e` = 0..3 holding row `16T + l/4`, column
/// `128j + 16s + 4·(l mod 4) + e`, and bytes 4..7 the same columns of row `16T + l/4 + 8`.
pub fn repack_w8_mma(codes: &[u8], rows: usize, cols: usize) -> Vec<u8> {
    assert!(rows.is_multiple_of(16) && cols.is_multiple_of(128) && codes.len() == rows * cols);
    let mut out = vec![0u8; codes.len()];
    each_fragment(rows, cols, |tile, j, lane, s| {
        let (g, t) = (lane / 4, lane % 4);
        let at = (tile * (cols / 128) + j) * 2048 + (s / 2) * 512 + lane * 16 + (s % 2) * 8;
        let col = 128 * j + 16 * s + 4 * t;
        for (h, row) in [16 * tile + g, 16 * tile + g + 8].into_iter().enumerate() {
            let src = row * cols + col;
            out[at + 4 * h..at + 4 * h + 4].copy_from_slice(&codes[src..src + 4]);
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int4_fast_repack_is_the_documented_permutation() {
        // Column c of each row holds the nibble (c * 7 + row) mod 16.
        let (rows, cols) = (2, 2048);
        let val = |r: usize, c: usize| ((c * 7 + r) % 16) as u8;
        let mut codes = vec![0u8; rows * cols / 2];
        for r in 0..rows {
            for c in 0..cols {
                codes[(r * cols + c) / 2] |= val(r, c) << (4 * (c % 2));
            }
        }
        let out = repack_int4_fast(&codes, rows, cols);
        for r in 0..rows {
            for blk in 0..cols / 1024 {
                for lane in 0..32 {
                    for e in 0..4 {
                        let at = (r * cols + blk * 1024) / 2 + 16 * lane + 4 * e;
                        let word = u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
                        for i in 0..8 {
                            let c = blk * 1024 + 128 * (2 * e + i / 4) + 4 * lane + i % 4;
                            assert_eq!((word >> (4 * i)) & 0xf, val(r, c) as u32);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn int8_fast_repack_is_the_documented_permutation() {
        let (rows, cols) = (3, 1024);
        let codes: Vec<u8> = (0..rows * cols).map(|i| (i * 31 % 251) as u8).collect();
        let out = repack_int8_fast(&codes, rows, cols);
        for r in 0..rows {
            for blk in 0..cols / 512 {
                for lane in 0..32 {
                    for e in 0..4 {
                        for t in 0..4 {
                            let at = r * cols + blk * 512;
                            assert_eq!(
                                out[at + 16 * lane + 4 * e + t],
                                codes[at + 128 * e + 4 * lane + t]
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn int4_mma_repack_puts_each_weight_in_its_fragment_slot() {
        // Column c of row r holds (3c + 5r) mod 16; find every (row, col) in the packed words.
        let (rows, cols) = (32, 256);
        let val = |r: usize, c: usize| ((3 * c + 5 * r) % 16) as u32;
        let mut codes = vec![0u8; rows * cols / 2];
        for r in 0..rows {
            for c in 0..cols {
                codes[(r * cols + c) / 2] |= (val(r, c) as u8) << (4 * (c % 2));
            }
        }
        let out = repack_int4_mma(&codes, rows, cols);
        let mut seen = vec![false; rows * cols];
        for (w, bytes) in out.chunks(4).enumerate() {
            let word = u32::from_le_bytes(bytes.try_into().unwrap());
            let (block, off) = (w * 4 / 1024, w * 4 % 1024);
            let (tile, j) = (block / (cols / 128), block % (cols / 128));
            let (half, lane, q) = (off / 512, off % 512 / 16, off % 16 / 4);
            let s = 4 * half + q;
            for i in 0..8 {
                let row = 16 * tile + lane / 4 + 8 * (i % 2);
                let col = 128 * j + 16 * s + 4 * (lane % 4) + 2 * ((i / 2) % 2) + i / 4;
                assert_eq!((word >> (4 * i)) & 0xf, val(row, col), "row {row} col {col}");
                assert!(!seen[row * cols + col]);
                seen[row * cols + col] = true;
            }
        }
        assert!(seen.iter().all(|&x| x));
    }

    #[test]
    fn w8_mma_repack_puts_each_weight_in_its_fragment_slot() {
        // Each (row, col) gets a distinct 16-bit id split over two matrices' bytes: find every
        // one in the packed bytes, exactly once, where the kernel reads it.
        let (rows, cols) = (32, 256);
        let id = |r: usize, c: usize| r * cols + c;
        let lo: Vec<u8> = (0..rows * cols).map(|i| (i % 256) as u8).collect();
        let hi: Vec<u8> = (0..rows * cols).map(|i| (i / 256) as u8).collect();
        let (plo, phi) = (repack_w8_mma(&lo, rows, cols), repack_w8_mma(&hi, rows, cols));
        let mut seen = vec![false; rows * cols];
        for at in 0..plo.len() {
            let got = plo[at] as usize + 256 * phi[at] as usize;
            let (block, off) = (at / 2048, at % 2048);
            let (tile, j) = (block / (cols / 128), block % (cols / 128));
            let (lane, s) = (off % 512 / 16, 2 * (off / 512) + off % 16 / 8);
            let (h, e) = (off % 8 / 4, off % 4);
            let row = 16 * tile + lane / 4 + 8 * h;
            let col = 128 * j + 16 * s + 4 * (lane % 4) + e;
            assert_eq!(got, id(row, col), "row {row} col {col}");
            assert!(!seen[got]);
            seen[got] = true;
        }
        assert!(seen.iter().all(|&x| x));
    }
}
