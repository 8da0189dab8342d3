//! Cache keys: stable for identical inputs, different when anything that can change a number
//! changes.

use hdlc::measure::cache::{cache_key, source_hash, KeyInput};
use hdlc::measure::results::DeviceInfo;
use std::collections::BTreeMap;

fn device() -> DeviceInfo {
    DeviceInfo {
        name: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: "9.0".into(),
        sm_count: 132,
        memory_bytes: 85_520_809_984,
        driver_version: "580.159.04".into(),
        cuda_version: "13.0".into(),
        nvrtc_version: "13.0".into(),
        datasheet: None,
    }
}

fn params(n: u64) -> BTreeMap<String, u64> {
    [("n".to_string(), n)].into_iter().collect()
}

fn key_with(f: impl FnOnce(&mut String, &mut BTreeMap<String, u64>, &mut DeviceInfo, &mut String)) -> String {
    let mut src = source_hash("__global__ void k() {}");
    let mut p = params(1024);
    let mut d = device();
    let mut extra = String::new();
    f(&mut src, &mut p, &mut d, &mut extra);
    cache_key(&KeyInput {
        family: "bandwidth",
        variant: "copy_naive",
        source_hash: &src,
        params: &p,
        device: &d,
        extra: &extra,
    })
}

#[test]
fn key_is_stable_for_identical_inputs() {
    let a = key_with(|_, _, _, _| {});
    let b = key_with(|_, _, _, _| {});
    assert_eq!(a, b);
    assert_eq!(a.len(), 64, "hex sha256");
}

#[test]
fn key_ignores_provenance_only_fields() {
    // SM count, memory and datasheet describe the device but do not identify the measurement.
    let base = key_with(|_, _, _, _| {});
    let other = key_with(|_, _, d, _| {
        d.memory_bytes = 1;
        d.sm_count = 1;
    });
    assert_eq!(base, other);
}

#[test]
fn key_changes_with_source_params_device_and_toolchain() {
    let base = key_with(|_, _, _, _| {});
    let changed = [
        key_with(|s, _, _, _| *s = source_hash("__global__ void k() { }")),
        key_with(|_, p, _, _| *p = params(2048)),
        key_with(|_, p, _, _| {
            p.insert("m".into(), 1);
        }),
        key_with(|_, _, d, _| d.name = "NVIDIA H200".into()),
        key_with(|_, _, d, _| d.compute_capability = "8.0".into()),
        key_with(|_, _, d, _| d.driver_version = "580.159.05".into()),
        key_with(|_, _, d, _| d.cuda_version = "13.1".into()),
        key_with(|_, _, d, _| d.nvrtc_version = "12.8".into()),
        key_with(|_, _, _, e| *e = "cublas=13.1.0".into()),
    ];
    for (i, k) in changed.iter().enumerate() {
        assert_ne!(&base, k, "change #{i} did not change the key");
    }
    // All distinct from each other, too.
    let mut all = changed.to_vec();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), changed.len());
}

#[test]
fn key_depends_on_variant_and_family() {
    let src = source_hash("x");
    let p = params(1);
    let d = device();
    let k = |family, variant| {
        cache_key(&KeyInput {
            family,
            variant,
            source_hash: &src,
            params: &p,
            device: &d,
            extra: "",
        })
    };
    assert_ne!(k("bandwidth", "copy_naive"), k("bandwidth", "copy_vec4"));
    assert_ne!(k("bandwidth", "memcpy"), k("reduction", "memcpy"));
}

#[test]
fn field_boundaries_are_unambiguous() {
    // "ab"+"c" must not collide with "a"+"bc".
    let p = params(1);
    let d = device();
    let a = cache_key(&KeyInput {
        family: "ab",
        variant: "c",
        source_hash: "",
        params: &p,
        device: &d,
        extra: "",
    });
    let b = cache_key(&KeyInput {
        family: "a",
        variant: "bc",
        source_hash: "",
        params: &p,
        device: &d,
        extra: "",
    });
    assert_ne!(a, b);
}

#[test]
fn item_keys_follow_embedded_sources() {
    use hdlc::measure::item_key;
    let d = device();
    let items = hdlc::measure::items("sgemm");
    let naive = items.iter().find(|i| i.variant == "sgemm_naive").unwrap();
    let (key, hash) = item_key(naive, &d, "");
    assert_eq!(
        hash,
        source_hash(hdlc::measure::kernel_source("gemm/sgemm.cu").unwrap())
    );
    assert_eq!(key, item_key(naive, &d, "").0);
    let cublas = items.iter().find(|i| i.variant == "cublas").unwrap();
    let (_, h) = item_key(cublas, &d, "");
    assert_eq!(h, "", "library baselines have no kernel source");
}

/// A baseline is re-measured together with any variant at its parameters, never reused from an
/// older run beside a fresh variant.
#[test]
fn stale_variant_pulls_its_baseline_into_the_same_run() {
    use hdlc::measure::select_todo;
    let items = hdlc::measure::items("bandwidth");
    assert!(items.iter().any(|i| i.baseline));
    let mark = |stale: &str| {
        items
            .iter()
            .cloned()
            .map(|i| {
                let hit = i.variant != stale;
                (i, String::new(), String::new(), hit)
            })
            .collect::<Vec<_>>()
    };
    let (todo, cached) = select_todo(mark("copy_vec4"), false);
    let names: Vec<&str> = todo.iter().map(|(i, ..)| i.variant).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&"copy_vec4") && names.contains(&"memcpy"),
        "{names:?}"
    );
    assert_eq!(cached, items.len() - 2);
    let (todo, cached) = select_todo(mark("none-stale"), false);
    assert!(todo.is_empty() && cached == items.len());
    let (todo, _) = select_todo(mark("none-stale"), true);
    assert_eq!(todo.len(), items.len(), "force measures everything");
}

/// Items run shape by shape, so the inputs a shape's variants share (`Ctx::shared` holds one
/// shape per slot) are made once per pass: attention in one pass, the GEMM families in two (their
/// intricate rung last, for safety, still shape by shape).
#[test]
fn items_run_shape_by_shape() {
    /// Whether each shape's items are adjacent in `items`.
    fn grouped(items: &[hdlc::measure::plan::Item]) -> bool {
        let changes = items.windows(2).filter(|w| w[0].params != w[1].params).count();
        let mut shapes: Vec<_> = items.iter().map(|i| &i.params).collect();
        shapes.sort();
        shapes.dedup();
        changes + 1 == shapes.len()
    }
    let attention = hdlc::measure::items("attention");
    assert!(grouped(&attention), "attention shapes interleave");
    for family in [
        "tc_gemm",
        "tp_gemm",
        "decode_attention",
        "quant_gemv",
        "softmax",
        "sgemm",
    ] {
        let items = hdlc::measure::items(family);
        let split = items
            .iter()
            .position(|i| i.variant == "tc_wgmma")
            .unwrap_or(items.len());
        assert!(
            items[split..]
                .iter()
                .all(|i| matches!(i.variant, "tc_wgmma" | "tc_wgmma_persistent" | "tc_wgmma_streamk")),
            "{family}"
        );
        for pass in [&items[..split], &items[split..]] {
            assert!(pass.is_empty() || grouped(pass), "{family}: shapes interleave");
        }
    }
}
