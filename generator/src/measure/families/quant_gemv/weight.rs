//! quant_gemv's weight: the N × K BF16 values on the host (shared by every batch and variant),
//! their quantization per format, and each variant's device layout (shared by the variants
//! reading it).

use super::super::qgemv_layout::{repack_int4_fast, repack_int4_mma, repack_int8_fast, repack_w8_mma};
use crate::measure::gpu::{DevBuf, Gpu};
use crate::measure::harness::{Ctx, Res};
use crate::measure::quant::{quantize_rows_par, Format, Quantized};
use crate::measure::reference::random_bf16;
use std::rc::Rc;

/// The N × K weight on the host (BF16 bits and values), shared by every batch and variant.
pub(super) struct HostWeight {
    pub(super) bits: Vec<u16>,
    pub(super) values: Vec<f32>,
}

/// A variant's weight on the device: codes (or BF16 bits) in its layout, and scales.
pub(super) struct DevWeight {
    pub(super) w: DevBuf,
    pub(super) scales: Option<DevBuf>,
}

/// The `Ctx::shared` slot of a variant's device weight: variants reading the same layout share it.
fn layout_slot(variant: &str) -> &'static str {
    match variant {
        "int8" => "qgemv_int8",
        "int8_fast" => "qgemv_int8_fast",
        "int4" => "qgemv_int4",
        "int4_fast" => "qgemv_int4_fast",
        "int4_mma" => "qgemv_int4_mma",
        "int8_mma" => "qgemv_int8_mma",
        "fp8" => "qgemv_fp8",
        "fp8_mma" => "qgemv_fp8_mma",
        _ => "qgemv_bf16",
    }
}

/// The slot of a format's quantization (codes, scales, dequantized values) on the host.
fn quant_slot(fmt: Format) -> &'static str {
    match fmt {
        Format::Int8 => "qgemv_q_int8",
        Format::Int4 => "qgemv_q_int4",
        Format::Fp8 => "qgemv_q_fp8",
    }
}

/// The host weight of shape `key`, drawn once from its slot's seed.
pub(super) fn host(ctx: &mut Ctx, key: &str, n: usize, k: usize) -> Res<Rc<HostWeight>> {
    ctx.shared("qgemv_w_host", key, |_, seed| {
        let (bits, values) = random_bf16(n * k, seed ^ 0x77, -1.0, 1.0);
        Ok(HostWeight { bits, values })
    })
}

/// The weight format a variant reads (`None`: BF16).
pub(super) fn format(variant: &str) -> Option<Format> {
    match variant {
        "int8" | "int8_fast" | "int8_mma" => Some(Format::Int8),
        "int4" | "int4_fast" | "int4_mma" => Some(Format::Int4),
        "fp8" | "fp8_mma" => Some(Format::Fp8),
        _ => None,
    }
}

/// The format's quantization of `wh` (codes, scales, dequantized values), made once per shape.
pub(super) fn quantized(
    ctx: &mut Ctx,
    fmt: Option<Format>,
    key: &str,
    wh: &[f32],
    n: usize,
    k: usize,
) -> Res<Option<Rc<Quantized>>> {
    Ok(match fmt {
        None => None,
        Some(f) => Some(ctx.shared(quant_slot(f), key, |_, _| Ok(quantize_rows_par(wh, n, k, f)))?),
    })
}

/// The kernel's weight: codes (or BF16 bits) in the variant's layout, and scales.
pub(super) fn device(
    ctx: &mut Ctx,
    variant: &str,
    key: &str,
    quantized: Option<&Quantized>,
    bits: &[u16],
    (n, k): (usize, usize),
) -> Res<Rc<DevWeight>> {
    ctx.shared(layout_slot(variant), key, |gpu, _| {
        upload(gpu, variant, quantized, bits, (n, k))
    })
}

/// Upload the weight in `variant`'s layout: the BF16 bits, or the (repacked) codes and scales.
fn upload(
    gpu: &Gpu,
    variant: &str,
    quantized: Option<&Quantized>,
    bits: &[u16],
    (n, k): (usize, usize),
) -> Res<DevWeight> {
    let Some(q) = quantized else {
        let w = gpu.alloc(n * k * 2)?;
        gpu.upload_u16(&w, bits)?;
        return Ok(DevWeight { w, scales: None });
    };
    let (w, s) = (gpu.alloc(q.codes.len())?, gpu.alloc_f32(q.scales.len())?);
    match variant {
        "int4_fast" => gpu.upload_bytes(&w, &repack_int4_fast(&q.codes, n, k))?,
        "int4_mma" => gpu.upload_bytes(&w, &repack_int4_mma(&q.codes, n, k))?,
        "int8_fast" => gpu.upload_bytes(&w, &repack_int8_fast(&q.codes, n, k))?,
        "int8_mma" | "fp8_mma" => gpu.upload_bytes(&w, &repack_w8_mma(&q.codes, n, k))?,
        _ => gpu.upload_bytes(&w, &q.codes)?,
    }
    gpu.upload_f32(&s, &q.scales)?;
    Ok(DevWeight { w, scales: Some(s) })
}
