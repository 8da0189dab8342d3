//! Host-side quantizers for the inference families (quant_gemv, decode_attention): the codes the
//! kernels read and the exact values those codes stand for, so that the f64 references use the
//! very numbers the GPU dequantizes.
//!
//! Why on the host: quantization here is a storage format the kernels consume, not something
//! they time; doing it once in plain Rust keeps the reference and the encoding in one place, and
//! the unit tests below pin the bit layouts the .cu files assume.

/// Largest finite FP8 E4M3 value.
pub const E4M3_MAX: f32 = 448.0;

/// The value of an FP8 E4M3 code (bias 7, no infinities; 0x7f / 0xff are NaN).
pub fn e4m3_value(code: u8) -> f32 {
    let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((code >> 3) & 0xf) as i32;
    let m = (code & 0x7) as f32;
    if e == 0xf && code & 0x7 == 0x7 {
        return f32::NAN;
    }
    let mag = if e == 0 {
        m / 8.0 * 2f32.powi(-6)
    } else {
        (1.0 + m / 8.0) * 2f32.powi(e - 7)
    };
    sign * mag
}

/// The nearest E4M3 code to `x` (round to nearest, ties to the even code), saturating at ±448.
/// Straight from the f32 bits (a gigabyte cache is half a billion encodes): the 23-bit mantissa
/// rounded to 3 bits, or, below 2^-6, the value counted in steps of 2^-9 (the subnormals); a
/// mantissa that rounds up to 8 carries into the exponent, as the codes are ordered by value.
pub fn e4m3_encode(x: f32) -> u8 {
    let sign: u8 = if x.is_sign_negative() { 0x80 } else { 0 };
    let a = x.abs().min(E4M3_MAX);
    if a.is_nan() {
        return 0;
    }
    let bits = a.to_bits();
    let exp = (bits >> 23) as i32 - 127;
    let code = if exp < -6 {
        // Subnormal (or zero): m · 2^-9 for m = 0..=8 (8 is the smallest normal, code 0x08).
        (a * 512.0).round_ties_even() as u32
    } else {
        let man = bits & 0x7f_ffff;
        let (mut m, rest) = (man >> 20, man & 0xf_ffff);
        if rest > 0x8_0000 || (rest == 0x8_0000 && m & 1 == 1) {
            m += 1;
        }
        (((exp + 7) as u32) << 3) + m // m = 8 carries into the exponent field
    };
    sign | code.min(0x7e) as u8
}

/// Symmetric scale for `max_abs` over `levels` (127 for int8, 7 for int4, 448 for E4M3);
/// 1 for an all-zero group so that the codes stay 0.
pub fn scale_for(max_abs: f32, levels: f32) -> f32 {
    if max_abs > 0.0 {
        max_abs / levels
    } else {
        1.0
    }
}

/// Weight formats of the quantized kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Int8,
    Int4,
    Fp8,
}

impl Format {
    /// The largest code magnitude a symmetric scale maps a group's maximum to.
    pub fn levels(self) -> f32 {
        match self {
            Format::Int8 => 127.0,
            Format::Int4 => 7.0,
            Format::Fp8 => E4M3_MAX,
        }
    }
}

/// A quantized row-major `rows × cols` matrix: packed codes, FP32 scales and the dequantized
/// values (what the kernels compute with).
pub struct Quantized {
    pub codes: Vec<u8>,
    pub scales: Vec<f32>,
    pub dequant: Vec<f32>,
}

/// Group size of the int4 format (consecutive columns sharing one scale).
pub const INT4_GROUP: usize = 128;

/// Quantize each row of `w` (int8 / fp8: one scale per row; int4: one per 128 columns).
/// int4 codes are value + 8 in a nibble, two per byte, the even column in the low nibble.
pub fn quantize_rows(w: &[f32], rows: usize, cols: usize, fmt: Format) -> Quantized {
    let mut q = Quantized::zeroed(rows, cols, fmt);
    quantize_into(w, cols, fmt, None, &mut q.codes, &mut q.scales, &mut q.dequant);
    q
}

/// Scale groups per row and code bytes per row of a format.
fn layout(cols: usize, fmt: Format) -> (usize, usize) {
    let group = if fmt == Format::Int4 { INT4_GROUP } else { cols };
    assert!(
        cols.is_multiple_of(group),
        "{cols} columns do not split into groups of {group}"
    );
    let code_bytes = if fmt == Format::Int4 { cols / 2 } else { cols };
    (cols / group, code_bytes)
}

impl Quantized {
    fn zeroed(rows: usize, cols: usize, fmt: Format) -> Quantized {
        let (groups, code_bytes) = layout(cols, fmt);
        Quantized {
            codes: vec![0u8; rows * code_bytes],
            scales: vec![0f32; rows * groups],
            dequant: vec![0f32; rows * cols],
        }
    }
}

/// Quantize the rows of `w` into the given (zeroed) slices, sized for those rows.
/// `fixed`: one scale for every group (a per-tensor format) instead of each group's own.
fn quantize_into(
    w: &[f32],
    cols: usize,
    fmt: Format,
    fixed: Option<f32>,
    codes: &mut [u8],
    scales: &mut [f32],
    dequant: &mut [f32],
) {
    let (per_row, _) = layout(cols, fmt);
    let group = cols / per_row;
    // Non-negative E4M3 values by code, for decoding without powi per element.
    static E4M3: std::sync::OnceLock<[f32; 0x80]> = std::sync::OnceLock::new();
    let e4m3 = E4M3.get_or_init(|| std::array::from_fn(|c| e4m3_value(c as u8)));
    for (g, src) in w.chunks(group).enumerate() {
        let max = src.iter().fold(0f32, |m, v| m.max(v.abs()));
        let s = fixed.unwrap_or_else(|| scale_for(max, fmt.levels()));
        scales[g] = s;
        for (j, &v) in src.iter().enumerate() {
            let idx = g * group + j;
            let (code, value) = match fmt {
                Format::Int8 => {
                    let q = (v / s).round().clamp(-127.0, 127.0);
                    ((q as i8) as u8, q)
                }
                Format::Int4 => {
                    let q = (v / s).round().clamp(-8.0, 7.0);
                    ((q as i32 + 8) as u8, q)
                }
                Format::Fp8 => {
                    let c = e4m3_encode(v / s);
                    let mag = e4m3[(c & 0x7f) as usize];
                    (c, if c & 0x80 != 0 { -mag } else { mag })
                }
            };
            dequant[idx] = value * s;
            if fmt == Format::Int4 {
                codes[idx / 2] |= code << (4 * (idx % 2));
            } else {
                codes[idx] = code;
            }
        }
    }
}

/// [`quantize_rows`] on all cores: rows are independent, so blocks of rows are quantized on
/// their own threads straight into their part of the outputs (identical to the single-threaded
/// result; no copy afterwards — a gigabyte KV cache made that copy cost seconds).
pub fn quantize_rows_par(w: &[f32], rows: usize, cols: usize, fmt: Format) -> Quantized {
    quantize_par(w, rows, cols, fmt, None)
}

/// Quantize the whole of `w` with one scale (its absolute maximum over the format's largest
/// code): the per-tensor format of FP8 GEMMs. `scales` then holds that scale once per row.
pub fn quantize_tensor_par(w: &[f32], rows: usize, cols: usize, fmt: Format) -> Quantized {
    let max = w.iter().fold(0f32, |m, v| m.max(v.abs()));
    quantize_par(w, rows, cols, fmt, Some(scale_for(max, fmt.levels())))
}

fn quantize_par(w: &[f32], rows: usize, cols: usize, fmt: Format, fixed: Option<f32>) -> Quantized {
    crate::measure::prof::timed(crate::measure::prof::Op::Quantize, || {
        assert_eq!(w.len(), rows * cols);
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(64);
        let per = rows.div_ceil(threads).max(1);
        let (groups, code_bytes) = layout(cols, fmt);
        let mut q = Quantized::zeroed(rows, cols, fmt);
        std::thread::scope(|s| {
            let parts = w
                .chunks(per * cols)
                .zip(q.codes.chunks_mut(per * code_bytes))
                .zip(q.scales.chunks_mut(per * groups))
                .zip(q.dequant.chunks_mut(per * cols));
            for (((block, codes), scales), dequant) in parts {
                s.spawn(move || quantize_into(block, cols, fmt, fixed, codes, scales, dequant));
            }
        });
        q
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The nearest code by search over all finite codes (ties to the even code).
    fn e4m3_nearest(x: f32) -> u8 {
        let a = x.abs().min(E4M3_MAX);
        let mut best = 0u8;
        for c in 1..=0x7eu8 {
            let (d, db) = ((e4m3_value(c) - a).abs(), (e4m3_value(best) - a).abs());
            if d < db || (d == db && c % 2 == 0) {
                best = c;
            }
        }
        (if x.is_sign_negative() { 0x80 } else { 0 }) | best
    }

    #[test]
    fn e4m3_encode_is_the_nearest_code() {
        // Every code's value, the midpoints between neighbours (ties), points just beside them,
        // and a spread of values from far below the subnormals to past the saturation point.
        let mut xs: Vec<f32> = Vec::new();
        for c in 0..0x7eu8 {
            let (v, w) = (e4m3_value(c), e4m3_value(c + 1));
            let mid = (v + w) / 2.0;
            xs.extend([
                v,
                w,
                mid,
                f32::from_bits(mid.to_bits() + 1),
                f32::from_bits(mid.to_bits() - 1),
            ]);
        }
        xs.extend((0..20000).map(|i| 1e-4 * 1.0007f32.powi(i)));
        xs.extend([0.0, 447.9, 448.0, 460.0, 1e6, f32::INFINITY]);
        for &x in &xs {
            for x in [x, -x] {
                assert_eq!(e4m3_encode(x), e4m3_nearest(x), "x = {x:e}");
            }
        }
    }

    #[test]
    fn e4m3_known_codes_and_round_trip() {
        assert_eq!(e4m3_value(0x00), 0.0);
        assert_eq!(e4m3_value(0x38), 1.0); // e = 7, m = 0
        assert_eq!(e4m3_value(0x7e), 448.0);
        assert_eq!(e4m3_value(0x01), 2f32.powi(-9)); // smallest subnormal
        assert_eq!(e4m3_value(0xb8), -1.0);
        assert!(e4m3_value(0x7f).is_nan());
        for c in 0..=0x7eu8 {
            assert_eq!(e4m3_encode(e4m3_value(c)), c, "code {c:#x}");
            assert_eq!(e4m3_encode(-e4m3_value(c)) & 0x7f, c);
        }
        assert_eq!(e4m3_encode(1000.0), 0x7e);
        // 1.0625 lies halfway between 1.0 (0x38) and 1.125 (0x39): ties to the even code.
        assert_eq!(e4m3_encode(1.0625), 0x38);
        assert_eq!(e4m3_encode(1.07), 0x39);
    }

    /// The kernels decode E4M3 by moving its fields into an FP32 and scaling by 2^120; check
    /// that trick against the definition for every code.
    #[test]
    fn e4m3_bit_trick_of_the_kernels_matches() {
        for c in 0..=0xffu8 {
            if c & 0x7f == 0x7f {
                continue;
            }
            let bits = ((c as u32 & 0x7f) << 20) | ((c as u32 & 0x80) << 24);
            let v = f32::from_bits(bits) * 2f32.powi(120);
            assert_eq!(v, e4m3_value(c), "code {c:#x}");
        }
    }

    #[test]
    fn int4_packing_and_group_scales() {
        let cols = 256;
        let w: Vec<f32> = (0..2 * cols)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 50.0)
            .collect();
        let q = quantize_rows(&w, 2, cols, Format::Int4);
        assert_eq!(q.codes.len(), 2 * cols / 2);
        assert_eq!(q.scales.len(), 4);
        for (idx, &d) in q.dequant.iter().enumerate() {
            let nib = (q.codes[idx / 2] >> (4 * (idx % 2))) & 0xf;
            let s = q.scales[idx / INT4_GROUP];
            assert_eq!(d, (nib as f32 - 8.0) * s);
            assert!((d - w[idx]).abs() <= s / 2.0 + 1e-6);
        }
    }

    #[test]
    fn int8_and_fp8_errors_are_bounded() {
        let cols = 128;
        let w: Vec<f32> = (0..cols).map(|i| (i as f32 * 0.37).sin()).collect();
        let q8 = quantize_rows(&w, 1, cols, Format::Int8);
        let s = q8.scales[0];
        for (i, &d) in q8.dequant.iter().enumerate() {
            assert!((d - w[i]).abs() <= s / 2.0 + 1e-6);
            assert_eq!(d, (q8.codes[i] as i8) as f32 * s);
        }
        let f8 = quantize_rows(&w, 1, cols, Format::Fp8);
        for (i, &d) in f8.dequant.iter().enumerate() {
            // 3 mantissa bits: relative error at most 1/16 for normal values.
            assert!((d - w[i]).abs() <= w[i].abs() / 16.0 + 2f32.powi(-9) * f8.scales[0]);
        }
        let par = quantize_rows_par(&w.repeat(3), 3, cols, Format::Fp8);
        assert_eq!(par.codes, f8.codes.repeat(3));
        let zero = quantize_rows(&[0.0; 128], 1, 128, Format::Int8);
        assert_eq!(zero.scales[0], 1.0);
        assert!(zero.dequant.iter().all(|&v| v == 0.0));
    }
}
