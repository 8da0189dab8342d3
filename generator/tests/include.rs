//! `include` blocks cut kernel source out of kernels/*.cu: one `__global__` function with the
//! comments above it, or a line range; unknown files and kernels are errors that name what exists.

use hdlc::include::{extract, parse};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn cuts_one_kernel_with_its_comments() {
    let spec = parse("file: sgemm.cu\nkernel: sgemm_naive\n").unwrap();
    let x = extract(root(), &spec).unwrap();
    assert!(x.code.starts_with("// ---- 1. naive"), "{}", x.code);
    assert!(x.code.contains("__global__ void sgemm_naive("));
    assert!(x.code.trim_end().ends_with('}'));
    assert!(
        !x.code.contains("sgemm_coalesced"),
        "stops at the end of the body"
    );
    let text = std::fs::read_to_string(root().join("kernels/sgemm.cu")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[x.first_line - 1..x.last_line].join("\n"), x.code);
}

#[test]
fn finds_kernels_declared_over_two_lines() {
    let text = std::fs::read_to_string(root().join("kernels/sgemm.cu")).unwrap();
    let names = hdlc::include::kernel_names(&text.lines().collect::<Vec<_>>());
    assert!(names.contains(&"sgemm_naive".to_string()));
    let last = names.last().unwrap().clone();
    let x = extract(
        root(),
        &parse(&format!("file: sgemm.cu\nkernel: {last}\n")).unwrap(),
    )
    .unwrap();
    assert!(x.code.contains("__launch_bounds__"), "{}", x.code);
}

#[test]
fn line_ranges_and_errors() {
    let x = extract(root(), &parse("file: bandwidth.cu\nlines: 1-3\n").unwrap()).unwrap();
    assert_eq!((x.first_line, x.last_line), (1, 3));
    assert_eq!(x.code.lines().count(), 3);
    let e = extract(root(), &parse("file: sgemm.cu\nkernel: nope\n").unwrap()).unwrap_err();
    assert!(
        e.contains("no __global__ function `nope`") && e.contains("sgemm_naive"),
        "{e}"
    );
    assert!(extract(root(), &parse("file: missing.cu\n").unwrap())
        .unwrap_err()
        .contains("no kernel file"));
    assert!(extract(root(), &parse("file: ../Cargo.toml\n").unwrap()).is_err());
    assert!(extract(root(), &parse("file: sgemm.cu\nlines: 5-2\n").unwrap()).is_err());
    assert!(parse("file: sgemm.cu\nkernel: a\nlines: 1-2\n").is_err());
    assert!(
        parse("file: sgemm.cu\nfunction: a\n").is_err(),
        "unknown keys are rejected"
    );
}

#[test]
fn cuts_device_templates_by_name() {
    let x = extract(
        root(),
        &parse("file: sgemm.cu\nkernel: sgemm_warptile_body\n").unwrap(),
    )
    .unwrap();
    assert!(x.code.contains("template"), "{}", x.code);
    assert!(x.code.contains("sgemm_warptile_body("));
    assert!(
        !x.code.contains("extern \"C\""),
        "stops before the wrapper kernel"
    );
    assert!(x.code.trim_end().ends_with('}'));
}

#[test]
fn cuts_between_anchor_comments_without_them() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("kernels")).unwrap();
    std::fs::write(
        tmp.path().join("kernels/k.cu"),
        "a\n// ANCHOR: mid\nb\nc\n// ANCHOR_END: mid\nd\n",
    )
    .unwrap();
    let x = extract(tmp.path(), &parse("file: k.cu\nanchor: mid\n").unwrap()).unwrap();
    assert_eq!((x.code.as_str(), x.first_line, x.last_line), ("b\nc", 3, 4));
    assert!(extract(tmp.path(), &parse("file: k.cu\nanchor: nope\n").unwrap())
        .unwrap_err()
        .contains("ANCHOR: nope"));
    assert!(parse("file: k.cu\nanchor: mid\nkernel: x\n").is_err());
}
