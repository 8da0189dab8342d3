//! CPU references, the error measure, the repetition policy and the work counts.

use hdlc::measure::reference::*;
use hdlc::measure::rep_count;
use hdlc::measure::{items, work};

#[test]
fn rel_error_is_zero_for_equal_and_infinite_for_nan() {
    let r = [1.0f64, -2.0, 3.0];
    assert_eq!(rel_error(&[1.0, -2.0, 3.0], &r), 0.0);
    assert!(rel_error(&[1.0, f32::NAN, 3.0], &r).is_infinite());
    assert!(rel_error(&[1.0, f32::INFINITY, 3.0], &r).is_infinite());
    assert!(rel_error(&[1.0, 2.0], &r).is_infinite(), "length mismatch");
    let e = rel_error(&[1.1, -2.0, 3.0], &r);
    assert!((e - 0.1 / 14f64.sqrt()).abs() < 1e-6, "{e}");
    assert!(!passes(f64::NAN, 1.0));
    assert!(!passes(f64::INFINITY, 1.0));
    assert!(passes(0.0, 0.0));
    assert!(!passes(1e-3, 1e-4));
}

#[test]
fn rel_error_catches_nan_in_large_parallel_inputs() {
    let n = 1 << 20;
    let mut out: Vec<f32> = (0..n).map(|i| i as f32).collect();
    assert_eq!(rel_error_fn(&out, |i| i as f64), 0.0);
    out[n - 3] = f32::NAN;
    assert!(rel_error_fn(&out, |i| i as f64).is_infinite());
}

#[test]
fn random_inputs_are_in_range_reproducible_and_not_zero() {
    let a = random_vec(1 << 17, 42, -1.0, 1.0);
    let b = random_vec(1 << 17, 42, -1.0, 1.0);
    let c = random_vec(1 << 17, 43, -1.0, 1.0);
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a.iter().all(|&x| (-1.0..1.0).contains(&x)));
    let mean = a.iter().map(|&x| x as f64).sum::<f64>() / a.len() as f64;
    assert!(mean.abs() < 0.01, "{mean}");
    assert!(a.iter().filter(|&&x| x == 0.0).count() < 4);
    assert_ne!(seed_for(1, "a"), seed_for(1, "b"));
}

#[test]
fn references_match_hand_computed_values() {
    // 2×3 · 3×2
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let b = [7.0f32, 8.0, 9.0, 10.0, 11.0, 12.0];
    assert_eq!(matmul_f64(&a, &b, 2, 2, 3), vec![58.0, 64.0, 139.0, 154.0]);
    assert_eq!(gemv_f64(&a, &[1.0, 0.0, -1.0], 2, 3), vec![-2.0, -2.0]);
    assert_eq!(sum_f64(&a), 21.0);
    let stats = softmax_row_stats(&[0.0, 0.0, 1.0, 3.0], 2, 2);
    assert_eq!(stats[0], (0.0, 2.0));
    assert!((softmax_at(&[0.0, 0.0, 1.0, 3.0], &stats, 2, 3) - 1.0 / (1.0 + (-2f64).exp())).abs() < 1e-12);
    let s = rmsnorm_row_scale(&[3.0, 4.0], 1, 2, 0.0);
    assert!((s[0] - 1.0 / 12.5f64.sqrt()).abs() < 1e-12);
}

#[test]
fn percentiles_of_a_known_sample() {
    let xs: Vec<f64> = (1..=11).map(|x| x as f64).collect();
    assert_eq!(percentiles(&xs), (6.0, 2.0, 10.0));
    assert!(percentiles(&[]).0.is_nan());
}

#[test]
fn repetition_policy() {
    assert_eq!(rep_count(0.05), 200, "cheap kernels: capped");
    assert_eq!(rep_count(0.5), 80, "40 ms worth");
    assert_eq!(rep_count(8.0), 10, "at least 10 when that costs at most 100 ms");
    assert_eq!(rep_count(10.0), 10, "10 runs of 10 ms: exactly at the limit");
    assert_eq!(
        rep_count(10.5),
        5,
        "then at least 5 when that costs at most 200 ms"
    );
    assert_eq!(rep_count(40.0), 5, "5 runs of 40 ms: exactly at the limit");
    assert_eq!(rep_count(40.5), 3);
    assert_eq!(rep_count(100.0), 3, "slow kernels: at least 3 runs");
    assert_eq!(rep_count(f64::NAN), 10);
}

#[test]
fn work_counts() {
    let sg = items("sgemm");
    let one = sg
        .iter()
        .find(|i| i.variant == "sgemm_warptile" && i.p("m") == 4096)
        .unwrap();
    let (flops, bytes) = work(one);
    assert_eq!(flops, 2.0 * 4096f64.powi(3));
    assert_eq!(bytes, 4.0 * 3.0 * 4096f64.powi(2));
    let naive8k = sg
        .iter()
        .find(|i| i.variant == "sgemm_naive" && i.p("m") == 8192)
        .unwrap();
    assert!(
        naive8k.skip.is_some(),
        "the naive kernel is skipped at 8192, honestly"
    );
    // The slowest rungs stop at 4096 (the suite's time budget); from the 1D rung on, all run.
    for it in sg.iter().filter(|i| i.p("m") == 8192) {
        let skipped = ["sgemm_naive", "sgemm_coalesced", "sgemm_smem"].contains(&it.variant);
        assert_eq!(it.skip.is_some(), skipped, "{}", it.describe());
    }

    let bw = items("bandwidth");
    let copy = bw.iter().find(|i| i.variant == "copy_vec4").unwrap();
    assert_eq!(work(copy), (0.0, 8.0 * (1u64 << 28) as f64), "read + write");
    let add = bw.iter().find(|i| i.variant == "vector_add_vec4").unwrap();
    assert_eq!(work(add).1, 12.0 * (1u64 << 28) as f64);
    let red = items("reduction");
    assert_eq!(
        work(red.iter().find(|i| i.variant == "reduce_vec4").unwrap()).1,
        4.0 * (1u64 << 28) as f64
    );
    assert_eq!(
        work(red.iter().find(|i| i.variant == "memcpy").unwrap()).1,
        8.0 * (1u64 << 28) as f64
    );
    for fam in hdlc::measure::families() {
        for it in items(fam) {
            let (_, b) = work(&it);
            assert!(b > 0.0, "{} counts bytes", it.describe());
            // A width-sweep point keeps its variants' ladder rungs (the same rung, so the same
            // color, in every view), so rungs at one size may skip numbers.
            // Baselines come after every kernel rung of their size (a family may have several
            // library baselines, e.g. lowp_gemm's cuBLASLt FP8, INT8 and cuBLAS BF16).
            let at: Vec<_> = items(fam).into_iter().filter(|j| j.params == it.params).collect();
            let top_kernel = at
                .iter()
                .filter(|j| !j.baseline)
                .map(|j| j.rung)
                .max()
                .unwrap_or(0);
            let top = at.iter().map(|j| j.rung).max();
            assert!(
                if it.baseline {
                    it.rung > top_kernel
                } else {
                    it.rung < top.unwrap_or(0)
                },
                "baselines are the last rungs: {}",
                it.describe()
            );
            assert!(
                at.iter().any(|j| j.baseline && Some(j.rung) == top),
                "{fam}: a baseline is the last rung"
            );
        }
    }
}

#[test]
fn bf16_rounds_to_nearest_even_and_keeps_nan() {
    assert_eq!(bf16_bits(1.0), 0x3f80);
    assert_eq!(bf16_value(0x3f80), 1.0);
    assert_eq!(bf16_bits(-2.0), 0xc000);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
    assert_eq!(bf16_bits(1.0 + 1.0 / 256.0), 0x3f80);
    // 1 + 3·2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
    assert_eq!(bf16_bits(1.0 + 3.0 / 256.0), 0x3f82);
    assert!(bf16_value(bf16_bits(f32::NAN)).is_nan());
    let (bits, vals) = random_bf16(1000, 7, -6.0, 6.0);
    for (b, v) in bits.iter().zip(&vals) {
        assert_eq!(bf16_value(*b), *v, "values are exactly the BF16 numbers");
        assert!((-6.0..=6.0).contains(v));
    }
    assert!(vals.iter().filter(|v| **v == 0.0).count() < 4);
    // The NaN poison word reads as NaN both as one f32 and as two BF16.
    assert!(f32::from_bits(0x7fc0_7fc0).is_nan() && bf16_value(0x7fc0).is_nan());
    assert!(bf16_to_f32(&[0x7fc0, 0x3f80])[0].is_nan());
}

#[test]
fn attention_reference_rows() {
    // 1 head, n = 3, d = 2. Q = 0: the softmax is uniform over the keys a row may see.
    let q = [0.0f32; 6];
    let k = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let v = [1.0f32, 10.0, 2.0, 20.0, 3.0, 30.0];
    assert_eq!(attention_row_f64(&q, &k, &v, 3, 2, 0, 0, false), vec![2.0, 20.0]);
    assert_eq!(attention_row_f64(&q, &k, &v, 3, 2, 0, 0, true), vec![1.0, 10.0]);
    assert_eq!(attention_row_f64(&q, &k, &v, 3, 2, 0, 1, true), vec![1.5, 15.0]);
    // One dominant key: q·k_2 ≫ the others.
    let q = [0.0f32, 0.0, 0.0, 0.0, 40.0, 0.0];
    let k = [0.0f32, 0.0, 0.0, 1.0, 1.0, 0.0];
    let o = attention_row_f64(&q, &k, &v, 3, 2, 0, 2, false);
    assert!((o[0] - 3.0).abs() < 1e-9 && (o[1] - 30.0).abs() < 1e-8, "{o:?}");
    // The error measure over sampled rows: exact rows give 0, NaN gives ∞.
    let out: Vec<f32> = (0..3)
        .flat_map(|i| attention_row_f64(&q, &k, &v, 3, 2, 0, i, true))
        .map(|x| x as f32)
        .collect();
    let rows = [(0, 0), (0, 1), (0, 2)];
    let want = attention_rows_f64(&q, &k, &v, 3, 2, true, &rows);
    assert!(attention_rows_vs(&out, 3, 2, &rows, &want) < 1e-7);
    let mut bad = out.clone();
    bad[3] = f32::NAN;
    assert!(attention_rows_vs(&bad, 3, 2, &rows, &want).is_infinite());
    // A reference of the wrong length (other rows) never passes.
    assert!(attention_rows_vs(&out, 3, 2, &rows[..2], &want).is_infinite());
    let s = sample_rows(64, 4096, 64, 9);
    assert_eq!(s.len(), 64);
    assert!(s.contains(&(0, 0)) && s.contains(&(63, 4095)));
    assert!(s.iter().all(|&(h, i)| h < 64 && i < 4096));
}

/// The closed-form RMSNorm gradients agree with central finite differences of
/// L = Σ dy·y, y = x / rms(x) · w.
#[test]
fn rmsnorm_backward_reference_matches_finite_differences() {
    let (rows, cols, eps) = (3usize, 5usize, 1e-6f64);
    let x = random_vec(rows * cols, 1, -1.0, 1.0);
    let w = random_vec(cols, 2, 0.5, 1.5);
    let dy = random_vec(rows * cols, 3, -1.0, 1.0);
    let loss = |x: &[f64], w: &[f64]| -> f64 {
        (0..rows)
            .map(|r| {
                let row = &x[r * cols..(r + 1) * cols];
                let s = 1.0 / (row.iter().map(|v| v * v).sum::<f64>() / cols as f64 + eps).sqrt();
                (0..cols)
                    .map(|c| dy[r * cols + c] as f64 * row[c] * s * w[c])
                    .sum::<f64>()
            })
            .sum()
    };
    let xf: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let wf: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let stats = rmsnorm_bwd_row_stats(&x, &w, &dy, rows, cols, eps);
    let h = 1e-6;
    for i in 0..rows * cols {
        let (mut p, mut m) = (xf.clone(), xf.clone());
        p[i] += h;
        m[i] -= h;
        let fd = (loss(&p, &wf) - loss(&m, &wf)) / (2.0 * h);
        let an = rmsnorm_bwd_dx_at(&x, &w, &dy, &stats, cols, i);
        assert!((fd - an).abs() < 1e-6, "dx[{i}]: {fd} vs {an}");
    }
    let dw = rmsnorm_bwd_dw_f64(&x, &dy, &stats, rows, cols);
    for c in 0..cols {
        let (mut p, mut m) = (wf.clone(), wf.clone());
        p[c] += h;
        m[c] -= h;
        let fd = (loss(&xf, &p) - loss(&xf, &m)) / (2.0 * h);
        assert!((fd - dw[c]).abs() < 1e-6, "dw[{c}]: {fd} vs {}", dw[c]);
    }
}

#[test]
fn tensor_core_and_attention_plans() {
    use hdlc::measure::families::attention::{ATTN_HEAD_DIMS, ATTN_SEQS};
    use hdlc::measure::families::tc_gemm::TC_GEMM_SIZES;
    use hdlc::measure::uses_cublas;
    let tc = items("tc_gemm");
    assert_eq!(tc.len(), TC_GEMM_SIZES.len() * 7);
    let wg = tc
        .iter()
        .find(|i| i.variant == "tc_wgmma" && i.p("m") == 8192)
        .unwrap();
    assert_eq!(wg.rung, 4);
    // The persistent rung follows it, from its own file.
    let pw: Vec<_> = tc.iter().filter(|i| i.variant == "tc_wgmma_persistent").collect();
    assert_eq!(pw.len(), TC_GEMM_SIZES.len());
    assert!(pw
        .iter()
        .all(|i| i.rung == 5 && i.source_file == Some("gemm/tc_gemm_persistent.cu")));
    // Then the stream-K rung, from its own file too.
    let sk: Vec<_> = tc.iter().filter(|i| i.variant == "tc_wgmma_streamk").collect();
    assert_eq!(sk.len(), TC_GEMM_SIZES.len());
    assert!(sk
        .iter()
        .all(|i| i.rung == 6 && i.source_file == Some("gemm/tc_gemm_streamk.cu")));
    let (f, b) = work(wg);
    let s = 8192f64;
    assert_eq!(f, 2.0 * s * s * s);
    assert_eq!(b, 2.0 * 2.0 * s * s + 4.0 * s * s, "BF16 A and B in, FP32 C out");
    let cub = tc.iter().find(|i| i.baseline && i.p("m") == 2048).unwrap();
    assert!(uses_cublas(cub) && cub.variant == "cublas" && cub.source_file.is_none());

    let at = items("attention");
    assert_eq!(at.len(), ATTN_HEAD_DIMS.len() * 2 * ATTN_SEQS.len() * 7);
    for v in ["flash_wgmma", "flash_wgmma_pipe", "flash_wgmma_pingpong"] {
        let hop: Vec<_> = at.iter().filter(|i| i.variant == v).collect();
        assert_eq!(hop.len(), ATTN_HEAD_DIMS.len() * 2 * ATTN_SEQS.len());
        assert!(
            hop.iter()
                .all(|i| i.source_file == Some("attention/attention_hopper.cu")),
            "{v}"
        );
    }
    let flash = at
        .iter()
        .find(|i| i.variant == "flash_tc" && i.p("n") == 4096 && i.p("d") == 128 && i.p("causal") == 0)
        .unwrap();
    let (f, b) = work(flash);
    let (heads, n, d) = (64.0, 4096.0, 128.0);
    assert_eq!(f, 4.0 * n * n * d * heads);
    assert_eq!(b, 4.0 * 2.0 * heads * n * d, "Q, K, V read and O written, BF16");
    let causal = at
        .iter()
        .find(|i| i.variant == "flash_tc" && i.p("n") == 4096 && i.p("d") == 128 && i.p("causal") == 1)
        .unwrap();
    assert_eq!(work(causal).0, f / 2.0, "causal counts half");
    let std = at.iter().find(|i| i.variant == "standard").unwrap();
    assert!(std.baseline && uses_cublas(std) && std.source_file == Some("attention/attention.cu"));
    assert!(!uses_cublas(flash));
    // The slowest rungs stop early (the suite's time budget); flash_tc runs every size.
    for it in &at {
        let limit = match it.variant {
            "naive" => 8192,
            "flash_simt" => 8192,
            _ => u64::MAX,
        };
        assert_eq!(it.skip.is_some(), it.p("n") >= limit, "{}", it.describe());
    }

    let rn = items("rmsnorm");
    let bwd = rn.iter().find(|i| i.variant == "rmsnorm_bwd").unwrap();
    let (rows, cols) = (32768.0, 4096.0);
    assert_eq!(work(bwd), (9.0 * rows * cols, 12.0 * rows * cols + 8.0 * cols));
    assert!(rn.iter().any(|i| i.variant == "rmsnorm_bwd_atomic"));
    assert!(rn.last().unwrap().baseline);
}

/// The cache-layout rungs run only where the cards draw them (batch 8, 8 KV heads); the v2 rungs
/// skip MQA; everything else runs at every decode shape.
#[test]
fn decode_layout_rungs_run_at_batch_8_with_8_kv_heads() {
    let items = hdlc::measure::items("decode_attention");
    for it in &items {
        let at_8_8 = (it.p("b"), it.p("hkv")) == (8, 8);
        let layout = ["paged", "paged_v2", "kv_int8", "kv_fp8"].contains(&it.variant);
        let mqa_v2 = it.variant.ends_with("_v2") && it.p("hkv") == 1;
        assert_eq!(
            it.skip.is_some(),
            (layout && !at_8_8) || mqa_v2,
            "{}",
            it.describe()
        );
    }
    assert!(items.iter().any(|i| i.variant == "kv_fp8" && i.skip.is_none()));
}
