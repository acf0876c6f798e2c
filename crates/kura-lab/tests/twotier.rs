//! `kura bench twotier` on TPC-H SF 0.01: every configuration runs every query in
//! every pass, a tier of either kind in either mode reads fewer pages from disk
//! than the pool alone, and the CSV and the chart are written.

use kura::tpch::load::Source;
use kura::{Database, OpenOptions};
use kura_lab::twotier::{run, Config};

#[test]
fn twotier_reads_less_from_disk_with_a_compressed_tier() {
    twotier_reads_less_from_disk_with_a_tier(kura_storage::TierKind::Compressed);
}

#[test]
fn twotier_reads_less_from_disk_with_a_page_cache_tier() {
    twotier_reads_less_from_disk_with_a_tier(kura_storage::TierKind::PageCache);
}

fn twotier_reads_less_from_disk_with_a_tier(kind: kura_storage::TierKind) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tpch.kura");
    {
        let d = Database::open(&db, OpenOptions::default()).unwrap();
        let mut s = d.session();
        kura::tpch::load(&mut s, Source::Generate(0.01), &|_, _| {}).unwrap();
    }
    let cfg = Config {
        db,
        // Less than the 31 pages of Q1's and Q6's columns (1 MiB held them all
        // once lineitem's flags were dictionary-coded), but not 16 frames: two
        // workers' pinned morsels, their read-ahead and a tier's staging then
        // pinned every frame now and then ("buffer pool exhausted", about one
        // run in five).
        buffer: 24 << 14,
        tier2: 2 << 20,
        kind,
        tier_policy: "lru".into(),
        queries: vec!["1".into(), "6".into()],
        passes: 2,
        // The page-cache tier needs O_DIRECT reads for the pool.
        buffered_io: kind == kura_storage::TierKind::Compressed,
        out: dir.path().join("out"),
    };
    let mut text = Vec::new();
    let points = run(&cfg, &mut text).unwrap();
    assert_eq!(points.len(), 3 * 2 * 2);
    let reads = |c: &str| -> u64 {
        points
            .iter()
            .filter(|p| p.config == c)
            .map(|p| p.stats.pages_read)
            .sum()
    };
    let alone = reads("pool only");
    assert!(alone > 0);
    for c in ["inclusive", "exclusive"] {
        assert!(reads(c) < alone, "{c}: {} vs pool only {alone}", reads(c));
    }
    assert!(points
        .iter()
        .filter(|p| p.config == "pool only")
        .all(|p| p.stats.tier_hits == 0));
    assert!(cfg.out.join("twotier.csv").is_file());
    assert!(cfg.out.join("twotier_reads.png").is_file());
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("exclusive") && text.contains(kind.name()),
        "{text}"
    );
    println!("{text}");
}
