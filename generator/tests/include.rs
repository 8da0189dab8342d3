//! `include` blocks cut kernel source out of kernels/<area>/*.cu: one `__global__` function with the
//! comments above it, or a line range; unknown files and kernels are errors that name what exists.

use hdlc::include::{extract, parse};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn cuts_one_kernel_with_its_comments() {
    let spec = parse("file: gemm/sgemm.cu\nkernel: sgemm_naive\n").unwrap();
    let x = extract(root(), &spec).unwrap();
    assert!(x.code.starts_with("// ---- 1. naive"), "{}", x.code);
    assert!(x.code.contains("__global__ void sgemm_naive("));
    assert!(x.code.trim_end().ends_with('}'));
    assert!(
        !x.code.contains("sgemm_coalesced"),
        "stops at the end of the body"
    );
    let text = std::fs::read_to_string(root().join("kernels/gemm/sgemm.cu")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[x.first_line - 1..x.last_line].join("\n"), x.code);
}

#[test]
fn finds_kernels_declared_over_two_lines() {
    let text = std::fs::read_to_string(root().join("kernels/gemm/sgemm.cu")).unwrap();
    let names = hdlc::include::kernel_names(&text.lines().collect::<Vec<_>>());
    assert!(names.contains(&"sgemm_naive".to_string()));
    let last = names.last().unwrap().clone();
    let x = extract(
        root(),
        &parse(&format!("file: gemm/sgemm.cu\nkernel: {last}\n")).unwrap(),
    )
    .unwrap();
    assert!(x.code.contains("__launch_bounds__"), "{}", x.code);
}

#[test]
fn line_ranges_and_errors() {
    let x = extract(root(), &parse("file: memory/bandwidth.cu\nlines: 1-3\n").unwrap()).unwrap();
    assert_eq!((x.first_line, x.last_line), (1, 3));
    assert_eq!(x.code.lines().count(), 3);
    let e = extract(root(), &parse("file: gemm/sgemm.cu\nkernel: nope\n").unwrap()).unwrap_err();
    assert!(
        e.contains("no __global__ function `nope`") && e.contains("sgemm_naive"),
        "{e}"
    );
    assert!(extract(root(), &parse("file: missing.cu\n").unwrap())
        .unwrap_err()
        .contains("no file `kernels/missing.cu`"));
    // Kernels live in area folders: the old flat name says where the file is now.
    let e = extract(root(), &parse("file: sgemm.cu\nkernel: sgemm_naive\n").unwrap()).unwrap_err();
    assert!(e.contains("did you mean `gemm/sgemm.cu`?"), "{e}");
    assert!(extract(root(), &parse("file: gemm/x/sgemm.cu\n").unwrap()).is_err());
    assert!(extract(root(), &parse("file: ../Cargo.toml\n").unwrap()).is_err());
    assert!(extract(root(), &parse("file: gemm/sgemm.cu\nlines: 5-2\n").unwrap()).is_err());
    assert!(parse("file: gemm/sgemm.cu\nkernel: a\nlines: 1-2\n").is_err());
    assert!(
        parse("file: gemm/sgemm.cu\nfunction: a\n").is_err(),
        "unknown keys are rejected"
    );
}

#[test]
fn cuts_device_templates_by_name() {
    let x = extract(
        root(),
        &parse("file: gemm/sgemm.cu\nkernel: sgemm_warptile_body\n").unwrap(),
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

/// Python lab files: a def or class by name (with decorators and comments above), `# ANCHOR`
/// regions, paths under kernels/labs/ only, and the line-count convention.
#[test]
fn cuts_python_defs_classes_and_anchors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("kernels/labs/demo");
    std::fs::create_dir_all(&dir).unwrap();
    let src = "import torch\n\n\n# Normalize each row.\nclass RMSNorm(torch.nn.Module):\n    \"\"\"Doc.\n\n    More doc.\n    \"\"\"\n\n    def forward(self, x):\n        # square\n        return x * 2\n\n\n@triton.jit\ndef kernel(\n    x_ptr,\n):\n    pass\n\n# ANCHOR: loop\nfor i in range(3):\n    print(i)\n# ANCHOR_END: loop\n";
    std::fs::write(dir.join("m.py"), src).unwrap();
    let cut = |b: &str| extract(tmp.path(), &parse(b).unwrap());
    let x = cut("file: labs/demo/m.py\nname: RMSNorm\n").unwrap();
    assert_eq!(x.lang, "python");
    assert!(
        x.code.starts_with("# Normalize each row.\nclass RMSNorm"),
        "{}",
        x.code
    );
    assert!(x.code.ends_with("        return x * 2"), "{}", x.code);
    assert_eq!(
        x.code_lines(),
        3,
        "class line, def line, return: docstring and comments excluded"
    );
    let k = cut("file: labs/demo/m.py\nname: kernel\n").unwrap();
    assert!(
        k.code.starts_with("@triton.jit\ndef kernel(") && k.code.ends_with("    pass"),
        "{}",
        k.code
    );
    let f = cut("file: labs/demo/m.py\nname: forward\n").unwrap();
    assert!(f.code.trim_start().starts_with("def forward") && f.code.ends_with("return x * 2"));
    let a = cut("file: labs/demo/m.py\nanchor: loop\n").unwrap();
    assert_eq!(a.code, "for i in range(3):\n    print(i)");
    let e = cut("file: labs/demo/m.py\nname: nope\n").unwrap_err();
    assert!(
        e.contains("no def or class `nope`") && e.contains("RMSNorm, forward, kernel"),
        "{e}"
    );
    assert!(cut("file: labs/demo/m.py\nkernel: kernel\n")
        .unwrap_err()
        .contains("name:"));
    assert!(cut("file: labs/../m.py\n").is_err());
    assert!(cut("file: demo/m.py\n").is_err(), "python files live under labs/");
    assert!(cut("file: /etc/passwd\n").is_err());
    assert_eq!(
        hdlc::include::count_code_lines("// c\n\nint x;\n/* a\n * b */\ny();\n", "cuda"),
        2
    );
}
