//! The subway map's promises, measured: on random books (many paths, shared stations, random
//! prerequisite DAGs up to ~150 cards and 26 paths) and on the real book, the layout has no
//! label overlaps, no station overlaps and only octilinear segments, and it is deterministic.

use hdlc::graph::ConceptGraph;
use hdlc::model::{Book, Card, LearningPath};
use hdlc::render::map::{self, MapStats};
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// A small deterministic generator (xorshift64*), so one u64 describes a whole book.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }
}

const WORDS: &[&str] = &[
    "행렬",
    "곱셈",
    "메모리",
    "이동량",
    "산술",
    "강도",
    "커널",
    "타일링",
    "어텐션",
    "양자화",
    "정밀도",
    "병렬화",
    "샤딩",
    "캐시",
    "추론",
    "학습",
    "Roofline",
    "FLOPs",
    "GEMM",
    "KV",
    "cache",
    "FlashAttention",
    "FP8",
    "BF16",
    "Tensor",
    "Core",
    "warp",
    "occupancy",
    "softmax",
    "RMSNorm",
    "MoE",
    "pipeline",
    "스케줄러",
    "배치",
];

fn title(rng: &mut Rng) -> String {
    let n = 1 + rng.below(4);
    let mut t: Vec<&str> = (0..n).map(|_| WORDS[rng.below(WORDS.len())]).collect();
    t.dedup();
    let mut s = t.join(" ");
    if rng.chance(0.5) {
        s.push_str(" (English Gloss)");
    }
    s
}

fn card(id: String, title: String, requires: Vec<String>) -> Card {
    Card {
        file: PathBuf::from(format!("cards/{id}.md")),
        id,
        title,
        summary: String::new(),
        requires,
        tags: Vec::new(),
        source: String::new(),
        body_offset: 0,
        key_lines: Default::default(),
    }
}

const COLORS: &[&str] = &[
    "#e6194b", "#3cb44b", "#4363d8", "#f58231", "#911eb4", "#0fa3b1", "#f032e6", "#8fb339",
];

/// A random book: a prerequisite DAG over `n` cards and `p` paths that mostly follow it, with
/// hub cards shared by many paths; a few paths visit cards in an order of their own.
fn random_book(n: usize, p: usize, seed: u64) -> Book {
    let mut rng = Rng(seed | 1);
    let ids: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
    let mut cards = Vec::new();
    for i in 0..n {
        let mut req = Vec::new();
        if i > 0 {
            for _ in 0..rng.below(4) {
                let j = rng.below(i);
                if !req.contains(&ids[j]) {
                    req.push(ids[j].clone());
                }
            }
        }
        cards.push(card(ids[i].clone(), title(&mut rng), req));
    }
    let hubs: Vec<usize> = (0..(n / 10).max(1)).map(|_| rng.below(n)).collect();
    let mut paths = Vec::new();
    for k in 0..p {
        let len = 2 + rng.below(14);
        let mut st: Vec<usize> = Vec::new();
        let free_order = rng.chance(0.1);
        for _ in 0..len {
            let c = if rng.chance(0.3) {
                hubs[rng.below(hubs.len())]
            } else {
                rng.below(n)
            };
            if !st.contains(&c) {
                st.push(c);
            }
        }
        if !free_order {
            st.sort();
        }
        paths.push(LearningPath {
            id: format!("p{k}"),
            title: format!("{} 경로 {k}", title(&mut rng)),
            summary: String::new(),
            color: COLORS[k % COLORS.len()].to_string(),
            start: if k < 3 { Some(k as u32 + 1) } else { None },
            planned: false,
            stations: st.iter().map(|&i| ids[i].clone()).collect(),
            line: k + 1,
            station_lines: Vec::new(),
        });
    }
    Book {
        root: PathBuf::from("."),
        cards,
        paths,
        paths_ok: true,
        ..Book::default()
    }
}

/// With HDLC_MAP_DUMP=<dir>, write the SVG there to look at.
fn dump(name: &str, svg: &str) {
    if let Ok(dir) = std::env::var("HDLC_MAP_DUMP") {
        std::fs::write(Path::new(&dir).join(format!("{name}.svg")), svg).unwrap();
    }
}

fn check(book: &Book) -> (MapStats, String) {
    let graph = ConceptGraph::build(book);
    let layout = map::layout(book, &graph);
    let stats = layout.stats();
    let svg = map::global(book, &layout, "cards/");
    assert_eq!(stats.label_overlaps, 0, "label overlaps\n{stats}");
    assert_eq!(stats.station_overlaps, 0, "station overlaps\n{stats}");
    assert_eq!(stats.non_octilinear, 0, "non-octilinear segments\n{stats}");
    assert!(
        !svg.contains('\n'),
        "one line of SVG (a blank line would end mdBook's HTML block)"
    );
    (stats, svg)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_books_lay_out_clean(n in 2usize..150, p in 1usize..27, seed in any::<u64>()) {
        let book = random_book(n, p, seed);
        let (_, svg) = check(&book);
        // Deterministic: the same input gives the same SVG.
        let again = map::global(&book, &map::layout(&book, &ConceptGraph::build(&book)), "cards/");
        prop_assert_eq!(svg, again);
    }
}

#[test]
fn a_large_random_book_lays_out_clean() {
    let book = random_book(150, 26, 0x5eed);
    let t = std::time::Instant::now();
    let (stats, svg) = check(&book);
    eprintln!("layout + stats + svg: {:?}", t.elapsed());
    eprintln!("150 cards, 26 paths:\n{stats}");
    dump("random-150", &svg);
}

#[test]
fn the_real_book_lays_out_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let site = hdlc::site::Site::load(&root);
    let (stats, svg) = check(&site.book);
    eprintln!("real book:\n{stats}");
    dump("real", &svg);
    assert_eq!(stats.stations, site.book.cards.len());
    for c in &site.book.cards {
        assert!(
            svg.contains(&format!(r#"href="cards/{}.html""#, c.id)),
            "station {} links to its card",
            c.id
        );
    }
}

/// A report, not a test: layout time and measures over many random books.
/// `SWEEP=60 cargo test --release --test map_layout timing_sweep -- --ignored --nocapture`
#[test]
#[ignore]
fn timing_sweep() {
    let mut rng = Rng(12345);
    let count: usize = std::env::var("SWEEP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let (mut total_jogs, mut total_bends, mut total_cross, mut total_overlaps) = (0, 0, 0, 0);
    for _ in 0..count {
        let n = 2 + rng.below(148);
        let p = 1 + rng.below(26);
        let seed = rng.next();
        let book = random_book(n, p, seed);
        let t = std::time::Instant::now();
        let layout = map::layout(&book, &ConceptGraph::build(&book));
        let el = t.elapsed();
        let st = layout.stats();
        let jogs: usize = layout
            .lines
            .iter()
            .map(|l| {
                l.points
                    .windows(2)
                    .filter(|w| {
                        let (dx, dy) = ((w[1].x - w[0].x).abs(), (w[1].y - w[0].y).abs());
                        dx > 0.0 && dy > 0.0 && dy < 8.0
                    })
                    .count()
            })
            .sum();
        total_jogs += jogs;
        total_bends += st.bends;
        total_cross += st.line_crossings;
        total_overlaps += st.line_overlaps;
        eprintln!(
            "seed={seed} n={n:3} p={p:2} rounds={:2} {:>8.1?} {}x{} clean={} cross={} overlaps={} bends={} jogs={jogs}",
            layout.rounds,
            el,
            st.width,
            st.height,
            st.is_clean(),
            st.line_crossings,
            st.line_overlaps,
            st.bends
        );
    }
    eprintln!(
        "TOTAL jogs={total_jogs} bends={total_bends} crossings={total_cross} overlaps={total_overlaps}"
    );
}

fn path(id: &str, stations: &[&str]) -> LearningPath {
    LearningPath {
        id: id.to_string(),
        title: format!("{id} 경로"),
        summary: String::new(),
        color: "#e6194b".to_string(),
        start: None,
        planned: false,
        stations: stations.iter().map(|s| s.to_string()).collect(),
        line: 1,
        station_lines: Vec::new(),
    }
}

#[test]
fn edge_cases_lay_out_clean() {
    let cards = |ids: &[&str]| -> Vec<Card> {
        ids.iter()
            .map(|i| card(i.to_string(), format!("카드 {i}"), Vec::new()))
            .collect()
    };
    let books = [
        // Nothing at all.
        Book::default(),
        // One card on no path, one card on a one-stop path.
        Book {
            cards: cards(&["a", "b"]),
            paths: vec![path("p", &["b"])],
            ..Book::default()
        },
        // A line that turns back (a → b → a), another through both, and an unknown stop.
        Book {
            cards: cards(&["a", "b", "c"]),
            paths: vec![
                path("p", &["a", "b", "a", "c"]),
                path("q", &["c", "a", "zz", "b"]),
                path("r", &[]),
            ],
            ..Book::default()
        },
    ];
    for book in &books {
        let (stats, svg) = check(book);
        assert_eq!(stats.stations, book.cards.len());
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }
}
