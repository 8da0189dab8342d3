//! NVRTC logs become `file:line` diagnostics; with NVRTC installed, every embedded kernel file
//! compiles and a broken one is reported at the right line.

use hdlc::measure::nvrtc_log::{describe_failure, parse, Diagnostic};

const LOG: &str = r#"sgemm.cu(42): error: identifier "acc2" is undefined
      acc2 += 1.0f;
      ^

sgemm.cu(57): warning #177-D: variable "x" was declared but never referenced
      int x;
          ^

2 errors detected in the compilation of "sgemm.cu".
my (odd) name.cu(7): error: expected a ";"
"#;

#[test]
fn parses_file_line_severity_and_message() {
    let d = parse(LOG);
    assert_eq!(d.len(), 3, "{d:?}");
    assert_eq!(
        d[0],
        Diagnostic {
            file: "sgemm.cu".into(),
            line: 42,
            severity: "error".into(),
            message: "identifier \"acc2\" is undefined".into()
        }
    );
    assert_eq!(d[1].line, 57);
    assert_eq!(d[1].severity, "warning");
    assert_eq!(d[2].file, "my (odd) name.cu");
    assert_eq!(d[2].line, 7);
    assert_eq!(
        d[0].to_string(),
        "sgemm.cu:42: error: identifier \"acc2\" is undefined"
    );
}

#[test]
fn describe_lists_errors_only_and_falls_back_to_the_raw_log() {
    let s = describe_failure("sgemm.cu", LOG);
    assert!(s.contains("sgemm.cu:42: error"), "{s}");
    assert!(!s.contains("warning"), "{s}");
    let raw = describe_failure(
        "x.cu",
        "nvrtc: error: invalid value for --gpu-architecture (-arch)\n",
    );
    assert!(raw.starts_with("x.cu: compile failed"), "{raw}");
    assert!(raw.contains("gpu-architecture"), "{raw}");
    assert!(parse("no diagnostics (here): at all").is_empty());
}

#[test]
fn every_family_has_embedded_kernels_for_its_variants() {
    use hdlc::measure::{families, kernel_source};
    // Variants made of several kernels (the harness launches these by their own names).
    let composite = [
        "softmax_three_pass",
        "softmax_online",
        // the width-adaptive rows: a warp kernel or a cluster kernel, picked by width
        "softmax_adaptive",
        "rmsnorm_adaptive",
        // attention: three kernels (naive) or one kernel per head dimension (flash_*_d64/_d128)
        "naive",
        "flash_simt",
        "flash_tc",
        "flash_wgmma",
        "flash_wgmma_pipe",
        "flash_wgmma_pingpong",
        // decode_attention: decode_naive, or decode_split_<format>_g<G> (+ decode_combine)
        "gqa",
        "split_kv",
        "paged",
        "kv_int8",
        "kv_fp8",
        // decode_attention_v2.cu: decode_v2_<cache>_g<G>
        "split_kv_v2",
        "paged_v2",
        // quant_gemv: qgemv_<format>_t<tile>
        "bf16",
        "int8",
        "int4",
        "fp8",
        // ssm_scan: ssm_decode_step; the three kernels of the chunked scan
        "decode_step",
        "scan_chunked",
        // lowp_gemm: fp8_wgmma (both scalings) and int8_wgmma
        "fp8_tensor",
        "fp8_rowwise",
    ];
    // Families whose sizes have several library baselines (lowp_gemm: cuBLASLt FP8 twice,
    // cuBLASLt INT8, cuBLAS BF16; its first is the reference of every "% of baseline").
    let several_baselines = ["lowp_gemm"];
    for fam in families() {
        let items = hdlc::measure::items(fam);
        assert!(!items.is_empty(), "{fam} has items");
        let sizes = items
            .iter()
            .map(|i| &i.params)
            .collect::<std::collections::BTreeSet<_>>();
        let baselines = items.iter().filter(|i| i.baseline).count();
        if several_baselines.contains(&fam) {
            for p in &sizes {
                assert!(
                    items.iter().any(|i| i.baseline && &i.params == *p),
                    "{fam}: a baseline at {p:?}"
                );
            }
        } else {
            assert_eq!(baselines, sizes.len(), "{fam}: one baseline per size");
        }
        for it in items.iter().filter(|i| !i.baseline) {
            let file = it.source_file.expect("kernel variants name their file");
            let src = kernel_source(file).unwrap_or_else(|| panic!("{file} embedded"));
            if !composite.contains(&it.variant) {
                let sig = format!(" {}(", it.variant);
                assert!(
                    src.contains(&sig) && src.contains("extern \"C\""),
                    "{file} defines `{}`",
                    it.variant
                );
            }
        }
    }
    for k in [
        "softmax3_max",
        "softmax3_sum",
        "softmax_normalize",
        "softmax_online_stats",
    ] {
        assert!(kernel_source("rowwise/softmax.cu")
            .unwrap()
            .contains(&format!("void {k}(")));
    }
    for (file, k) in [
        ("rowwise/softmax.cu", "softmax_warp"),
        ("rowwise/softmax.cu", "softmax_cluster"),
        ("rowwise/rmsnorm.cu", "rmsnorm_warp"),
        ("rowwise/rmsnorm.cu", "rmsnorm_cluster"),
        ("gemm/lowp_gemm.cu", "fp8_wgmma"),
        ("gemm/lowp_gemm.cu", "int8_wgmma"),
    ] {
        assert!(
            kernel_source(file).unwrap().contains(&format!(" {k}(")),
            "{file} defines {k}"
        );
    }
    assert!(kernel_source("memory/reduction.cu")
        .unwrap()
        .contains("void sum_partials("));
    for k in [
        "attn_naive_scores",
        "attn_naive_softmax",
        "attn_naive_pv",
        "attn_softmax_bf16",
        "flash_simt_d64",
        "flash_simt_d128",
        "flash_tc_d64",
        "flash_tc_d128",
    ] {
        assert!(
            kernel_source("attention/attention.cu")
                .unwrap()
                .contains(&format!(" {k}(")),
            "attention.cu defines {k}"
        );
    }
    for k in [
        "flash_wgmma_d64",
        "flash_wgmma_d128",
        "flash_wgmma_pipe_d64",
        "flash_wgmma_pipe_d128",
        "flash_wgmma_pingpong_d64",
        "flash_wgmma_pingpong_d128",
    ] {
        assert!(
            kernel_source("attention/attention_hopper.cu")
                .unwrap()
                .contains(&format!("FW_KERNEL({k},")),
            "attention_hopper.cu defines {k}"
        );
    }
    assert!(kernel_source("rowwise/rmsnorm.cu")
        .unwrap()
        .contains("void rmsnorm_bwd_dw_reduce("));
    let decode = kernel_source("inference/decode_attention.cu").unwrap();
    assert!(decode.contains(" decode_naive(") && decode.contains(" decode_combine("));
    for base in [
        "decode_split_bf16",
        "decode_split_paged",
        "decode_split_int8",
        "decode_split_fp8",
    ] {
        assert!(decode.contains(&format!("DECODE_GROUPS({base},")), "{base}");
    }
    let v2 = kernel_source("inference/decode_attention_v2.cu").unwrap();
    for k in ["bf16_g1", "bf16_g4", "paged_g1", "paged_g4"] {
        assert!(v2.contains(&format!("DECODE_V2(decode_v2_{k},")), "{k}");
    }
    let qg = kernel_source("inference/quant_gemv.cu").unwrap();
    for fmt in ["bf16", "int8", "int4", "fp8"] {
        assert!(qg.contains(&format!("QGEMV_TILES({fmt},")), "{fmt}");
    }
    let ssm = kernel_source("inference/ssm_scan.cu").unwrap();
    for k in ["scan_chunk_local", "scan_chunk_carry", "scan_chunk_fix"] {
        assert!(ssm.contains(&format!(" {k}(")), "{k}");
    }
    assert!(kernel_source("nope.cu").is_none());
}

/// Runs only where libnvrtc is installed (skips silently otherwise, e.g. in CI).
#[test]
fn kernels_compile_with_nvrtc_when_available() {
    use hdlc::measure::{kernel_files, kernel_source, nvrtc_check};
    for file in kernel_files() {
        match nvrtc_check(file, kernel_source(file).unwrap(), "sm_90") {
            None => {
                eprintln!("NVRTC not installed: skipping the compile check");
                return;
            }
            Some(r) => assert!(r.is_ok(), "{file}: {}", r.unwrap_err()),
        }
    }
    let broken = "extern \"C\" __global__ void k(float* x)\n{\n    x[0] = undefined_name;\n}\n";
    let err = nvrtc_check("broken.cu", broken, "sm_90").unwrap().unwrap_err();
    assert!(err.contains("broken.cu:3: error"), "{err}");
}

/// The WGMMA rungs (tc_gemm's and attention's) need the architecture-specific target; under the
/// portable one their bodies are compiled out (and verification fails off Hopper). All must
/// compile.
#[test]
fn wgmma_kernels_compile_for_sm_90a_too() {
    use hdlc::measure::{kernel_source, nvrtc_check};
    for file in [
        "gemm/tc_gemm.cu",
        "gemm/tc_gemm_persistent.cu",
        "gemm/tc_gemm_streamk.cu",
        "gemm/lowp_gemm.cu",
        "attention/attention_hopper.cu",
    ] {
        let src = kernel_source(file).unwrap();
        let wgmma = src.contains("wgmma.mma_async") || src.contains("#include \"wgmma_gemm.cuh\"");
        assert!(wgmma && src.contains("__CUDA_ARCH_FEAT_SM90_ALL"), "{file}");
        match nvrtc_check(file, src, "sm_90a") {
            None => eprintln!("NVRTC not installed: skipping the sm_90a compile check"),
            Some(r) => assert!(r.is_ok(), "{file} for sm_90a: {}", r.unwrap_err()),
        }
    }
}

/// Every `#include "..."` in a kernel file names an embedded header (NVRTC has no file system),
/// the headers are real files under kernels/, and a file's source hash covers what it includes.
#[test]
fn kernel_includes_name_embedded_headers_and_join_the_hash() {
    use hdlc::measure::{
        cache::source_hash, included_headers, kernel_files, kernel_hash, kernel_headers, kernel_source,
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (name, text) in kernel_headers() {
        let on_disk = std::fs::read_to_string(root.join("kernels/common").join(name)).unwrap();
        assert_eq!(&on_disk, text, "{name} embedded text differs from the file");
    }
    let mut includers = 0;
    for file in kernel_files() {
        let src = kernel_source(file).unwrap();
        for line in src.lines().filter(|l| l.trim_start().starts_with("#include")) {
            let name = line
                .split('"')
                .nth(1)
                .unwrap_or_else(|| panic!("{file}: `{line}`"));
            assert!(
                kernel_headers().iter().any(|(n, _)| *n == name),
                "{file} includes {name}, not embedded"
            );
        }
        let plain = source_hash(src);
        if included_headers(src).next().is_some() {
            includers += 1;
            assert_ne!(
                kernel_hash(file).unwrap(),
                plain,
                "{file}: header not in its hash"
            );
        } else {
            assert_eq!(kernel_hash(file).unwrap(), plain, "{file}");
        }
    }
    assert!(includers >= 3, "the Hopper kernels include hopper_sync.cuh");
}
