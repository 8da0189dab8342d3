//! The elasticlunr index, built and written the way mdBook's searcher reads it, without building
//! elasticlunr's `Index` and a `serde_json::Value` of it.
//!
//! Why by hand: mdBook serializes its index through a `Value` so that every object's keys come
//! out sorted; for a book of this size that tree is most of the search index's cost (it was a
//! fifth of a whole build). Here the postings are kept in a trie like elasticlunr's and written
//! straight out in the same order, with the same number and string formatting (serde_json's).
//! Documents are numbered locally while they are added — the card documents are indexed while
//! mdBook is still building, before the number of mdBook's own documents is known — and given
//! their references (`"0"`, `"1"`, …) only when written. The test beside this module compares
//! the result with elasticlunr's own.

use super::korean::FieldPostings;
use crate::search_docs::Doc;
use std::collections::BTreeMap;
use std::io::Write;

/// The indexed fields, in elasticlunr's order.
pub const FIELDS: [&str; 3] = ["title", "body", "breadcrumbs"];

/// Marks the local number of a card document (the others are mdBook's pages).
pub const CARD: u32 = 1 << 31;

/// mdBook's tokenizer: elasticlunr's English split (whitespace and `-`), lowercased, words over
/// 80 bytes dropped.
fn tokenize(text: &str) -> Vec<String> {
    text.split(|c: char| c.is_whitespace() || c == '-')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().to_lowercase())
        .filter(|s| s.len() <= 80)
        .collect()
}

/// elasticlunr's English pipeline (trimmer, stop words, stemmer), as mdBook's index uses it.
pub fn pipeline() -> elasticlunr::pipeline::Pipeline {
    use elasticlunr::lang::Language;
    elasticlunr::lang::English::new().make_pipeline()
}

/// A node of a field's token trie: the documents whose token ends here, and the next letters.
#[derive(Default)]
struct Node {
    docs: Vec<(u32, f64)>,
    children: BTreeMap<char, Node>,
}

impl Node {
    fn add(&mut self, token: &str, doc: u32, tf: f64) {
        if token.is_empty() {
            return;
        }
        let mut node = self;
        for c in token.chars() {
            node = node.children.entry(c).or_default();
        }
        node.docs.push((doc, tf));
    }
}

/// Postings of the documents added so far.
#[derive(Default)]
pub struct Index {
    /// One trie per field of [`FIELDS`].
    tries: [Node; 3],
    /// Tokens per field of each document, by local number.
    lengths: Vec<(u32, [usize; 3])>,
    /// Korean words of titles and bodies.
    pub korean: [FieldPostings; 2],
}

impl Index {
    /// Index `doc` under the local number `id`, as elasticlunr's `add_doc` would.
    pub fn add(&mut self, pipeline: &elasticlunr::pipeline::Pipeline, id: u32, doc: &Doc) {
        let mut lengths = [0; 3];
        for (f, text) in [&doc.title, &doc.body, &doc.breadcrumbs].into_iter().enumerate() {
            let tokens = pipeline.run(tokenize(text));
            lengths[f] = tokens.len();
            let mut freq: BTreeMap<String, u64> = BTreeMap::new();
            for t in tokens {
                *freq.entry(t).or_default() += 1;
            }
            for (token, n) in freq {
                self.tries[f].add(&token, id, (n as f64).sqrt());
            }
        }
        self.lengths.push((id, lengths));
        self.korean[0].add(id, &doc.title);
        self.korean[1].add(id, &doc.body);
    }
}

/// References of the documents: local number → position, and the order of their strings.
pub struct Refs {
    /// Number of mdBook's documents (they come first).
    pub pages: usize,
    /// Reference string of each position.
    strings: Vec<String>,
    /// Rank of each position's string among all references (their sort order).
    rank: Vec<usize>,
}

impl Refs {
    pub fn new(pages: usize, total: usize) -> Refs {
        let strings: Vec<String> = (0..total).map(|i| i.to_string()).collect();
        let mut order: Vec<usize> = (0..total).collect();
        order.sort_by(|&a, &b| strings[a].cmp(&strings[b]));
        let mut rank = vec![0; total];
        for (r, &i) in order.iter().enumerate() {
            rank[i] = r;
        }
        Refs { pages, strings, rank }
    }

    /// Position of the document with local number `id`.
    pub fn pos(&self, id: u32) -> usize {
        match id & CARD {
            0 => id as usize,
            _ => self.pages + (id & !CARD) as usize,
        }
    }

    /// Positions in the order of their reference strings.
    fn sorted(&self) -> Vec<usize> {
        let mut v: Vec<usize> = (0..self.strings.len()).collect();
        v.sort_by_key(|&i| self.rank[i]);
        v
    }

    /// `docs` as (position, tf), in the order of their reference strings.
    pub fn sort(&self, docs: &[(u32, f64)]) -> Vec<(usize, f64)> {
        let mut v: Vec<(usize, f64)> = docs.iter().map(|&(id, tf)| (self.pos(id), tf)).collect();
        v.sort_by_key(|&(p, _)| self.rank[p]);
        v
    }

    pub fn string(&self, pos: usize) -> &str {
        &self.strings[pos]
    }
}

/// A JSON string (or any value) as serde_json writes it.
pub fn value(out: &mut Vec<u8>, v: &(impl serde::Serialize + ?Sized)) {
    serde_json::to_writer(&mut *out, v).expect("writing JSON to memory cannot fail");
}

/// The index object (`"index": {…}`): the document store, the fields, the tries and the
/// pipeline's description. `docs` are all documents by position; `meta` is an empty elasticlunr
/// index as a JSON value, for the parts that describe the index (`lang`, `pipeline`, …).
pub fn write_index(out: &mut Vec<u8>, index: &Index, docs: &[&Doc], refs: &Refs, meta: &serde_json::Value) {
    let mut lengths = vec![[0usize; 3]; docs.len()];
    for &(id, l) in &index.lengths {
        lengths[refs.pos(id)] = l;
    }
    let order = refs.sorted();
    out.extend_from_slice(b"{\"documentStore\":{\"docInfo\":{");
    for (n, &p) in order.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        value(out, refs.string(p));
        let [t, b, c] = lengths[p];
        write!(out, ":{{\"body\":{b},\"breadcrumbs\":{c},\"title\":{t}}}").expect("in memory");
    }
    out.extend_from_slice(b"},\"docs\":{");
    for (n, &p) in order.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let (d, r) = (docs[p], refs.string(p));
        value(out, r);
        out.extend_from_slice(b":{\"body\":");
        value(out, &d.body);
        out.extend_from_slice(b",\"breadcrumbs\":");
        value(out, &d.breadcrumbs);
        out.extend_from_slice(b",\"id\":");
        value(out, r);
        out.extend_from_slice(b",\"title\":");
        value(out, &d.title);
        out.push(b'}');
    }
    write!(out, "}},\"length\":{},\"save\":", docs.len()).expect("in memory");
    value(out, &meta["documentStore"]["save"]);
    out.extend_from_slice(b"},\"fields\":");
    value(out, &FIELDS);
    // The tries by field name: body, breadcrumbs, title.
    out.extend_from_slice(b",\"index\":{");
    for (n, f) in [1, 2, 0].into_iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        value(out, FIELDS[f]);
        out.extend_from_slice(b":{\"root\":");
        write_node(out, &index.tries[f], refs);
        out.push(b'}');
    }
    out.push(b'}');
    for key in ["lang", "pipeline", "ref", "version"] {
        write!(out, ",\"{key}\":").expect("in memory");
        value(out, &meta[key]);
    }
    out.push(b'}');
}

/// A trie node as elasticlunr's serializer flattens it: `df`, `docs` and one key per next
/// letter, all in sorted order ("d" < "df" < "docs" < "e").
fn write_node(out: &mut Vec<u8>, node: &Node, refs: &Refs) {
    out.push(b'{');
    let mut first = true;
    let mut sep = |out: &mut Vec<u8>| {
        if !first {
            out.push(b',');
        }
        first = false;
    };
    let mut buf = [0u8; 4];
    let mut own_written = false;
    for (c, child) in &node.children {
        if *c > 'd' && !own_written {
            sep(out);
            write_own(out, node, refs);
            own_written = true;
        }
        sep(out);
        value(out, c.encode_utf8(&mut buf) as &str);
        out.push(b':');
        write_node(out, child, refs);
    }
    if !own_written {
        sep(out);
        write_own(out, node, refs);
    }
    out.push(b'}');
}

/// `"df":n,"docs":{ref:{"tf":x},…}` of one node.
fn write_own(out: &mut Vec<u8>, node: &Node, refs: &Refs) {
    write!(out, "\"df\":{},\"docs\":{{", node.docs.len()).expect("in memory");
    for (n, (p, tf)) in refs.sort(&node.docs).into_iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        value(out, refs.string(p));
        out.extend_from_slice(b":{\"tf\":");
        value(out, &tf);
        out.push(b'}');
    }
    out.push(b'}');
}

/// The Korean postings (`window.hdlcKo`): `{"body":{term:[[ref,tf],…]},"title":{…}}`.
pub fn write_korean(out: &mut Vec<u8>, korean: &[FieldPostings; 2], refs: &Refs) {
    out.push(b'{');
    for (n, (name, f)) in [("body", &korean[1]), ("title", &korean[0])]
        .into_iter()
        .enumerate()
    {
        if n > 0 {
            out.push(b',');
        }
        value(out, name);
        out.extend_from_slice(b":{");
        for (m, (term, docs)) in f.0.iter().enumerate() {
            if m > 0 {
                out.push(b',');
            }
            value(out, term);
            out.extend_from_slice(b":[");
            for (k, (p, tf)) in refs.sort(docs).into_iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                out.push(b'[');
                value(out, refs.string(p));
                out.push(b',');
                value(out, &tf);
                out.push(b']');
            }
            out.push(b']');
        }
        out.push(b'}');
    }
    out.push(b'}');
}
