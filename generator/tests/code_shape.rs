//! The code stays readable where new work lands: no function in `generator/src` is over 100
//! lines, and none in `measure/` (the harness, where kernel families and labs are added) or in
//! `render/mod.rs` (the page pipeline) is over 60. A function is counted from its `fn` line to
//! its closing brace, as `syn` parses it; `#[cfg(test)]` modules are not counted.

use std::path::Path;
use syn::spanned::Spanned;
use syn::visit::Visit;

/// (length in lines, name, first line) of every function with a body.
#[derive(Default)]
struct Functions(Vec<(usize, String, usize)>);

impl Functions {
    fn add(&mut self, name: &syn::Ident, (start, end): (usize, usize)) {
        self.0.push((end - start + 1, name.to_string(), start));
    }
}

/// Where the `fn` keyword stands to where the body closes (doc comments and attributes are not
/// the function's length).
fn span(sig: &syn::Signature, block: &syn::Block) -> (usize, usize) {
    (sig.fn_token.span.start().line, block.span().end().line)
}

/// `#[cfg(test)]` (or any `cfg` that names `test`) marks a module the limits do not cover.
fn is_test_module(m: &syn::ItemMod) -> bool {
    m.attrs.iter().any(|a| match &a.meta {
        syn::Meta::List(l) => l.path.is_ident("cfg") && l.tokens.to_string().contains("test"),
        _ => false,
    })
}

impl<'a> Visit<'a> for Functions {
    fn visit_item_fn(&mut self, f: &'a syn::ItemFn) {
        self.add(&f.sig.ident, span(&f.sig, &f.block));
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'a syn::ImplItemFn) {
        self.add(&f.sig.ident, span(&f.sig, &f.block));
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'a syn::TraitItemFn) {
        if let Some(b) = &f.default {
            self.add(&f.sig.ident, span(&f.sig, b));
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
    fn visit_item_mod(&mut self, m: &'a syn::ItemMod) {
        if !is_test_module(m) {
            syn::visit::visit_item_mod(self, m);
        }
    }
}

fn functions(code: &str) -> Vec<(usize, String, usize)> {
    let file = syn::parse_file(code).expect("the source parses");
    let mut v = Functions::default();
    v.visit_file(&file);
    v.0
}

#[test]
fn no_function_is_too_long() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut long = Vec::new();
    let mut counted = 0;
    for e in walkdir::WalkDir::new(&src).into_iter().flatten() {
        let p = e.path();
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let rel = p.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(p).unwrap();
        let limit = if rel.starts_with("measure/") || rel == "render/mod.rs" {
            60
        } else {
            100
        };
        for (len, name, line) in functions(&text) {
            counted += 1;
            if len > limit {
                long.push(format!("{rel}:{line} {name}: {len} lines (limit {limit})"));
            }
        }
    }
    assert!(counted > 500, "the scan found the functions ({counted})");
    assert!(long.is_empty(), "functions over the limit:\n{}", long.join("\n"));
}

#[test]
fn the_counter_counts_bodies_not_braces_in_strings() {
    let code = "/// doc\nfn a() {\n    let s = \"{{\";\n    let c = '{';\n}\nstruct S;\nimpl S {\n    pub(crate) fn c<'x>(v: &'x str) -> &'x str {\n        v\n    }\n}\n#[cfg(test)]\nmod tests {\n    fn t() {}\n}\n";
    let f = functions(code);
    assert_eq!(f, vec![(4, "a".to_string(), 2), (3, "c".to_string(), 8)]);
}
