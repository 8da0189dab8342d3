//! CPU references, the error measure, the repetition policy and the work counts.

use hdlc::measure::plan::{items, work};
use hdlc::measure::reference::*;
use hdlc::measure::rep_count;

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
    assert_eq!(rep_count(0.5), 300, "cheap kernels: capped");
    assert_eq!(rep_count(2.0), 100, "200 ms worth");
    assert_eq!(
        rep_count(20.0),
        20,
        "at least 20 when that costs at most a second"
    );
    assert_eq!(
        rep_count(100.0),
        5,
        "slow kernels: at least 200 ms, at least 5 runs"
    );
    assert_eq!(rep_count(f64::NAN), 20);
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
            assert!(
                it.baseline
                    == (it.rung as usize == items(fam).iter().filter(|j| j.params == it.params).count()),
                "baseline is the last rung: {}",
                it.describe()
            );
        }
    }
}
