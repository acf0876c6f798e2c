//! The set-associative CPU-cache model on hand-worked streams: which level serves
//! each access, CAT way masks protecting a warmed object from a scan, and the 3C
//! classification of misses on small crafted streams.

use kura_cache::cpu::{Geometry, Hierarchy, LevelConfig, MissClass, Replacement};

const LINE: u64 = 64;

/// L1: 2 sets × 2 ways (256 B); L2: 4 sets × 4 ways (1 KiB).
fn two_levels(classify: bool) -> Hierarchy {
    let level = |size, ways| LevelConfig {
        geometry: Geometry::new(1, size, ways, LINE as u32).unwrap(),
        replacement: Replacement::Lru,
        classify,
    };
    Hierarchy::new(vec![level(256, 2), level(1024, 4)]).unwrap()
}

/// Byte address of line `i`.
fn at(i: u64) -> u64 {
    i * LINE
}

#[test]
fn accesses_are_served_by_the_first_level_holding_the_line() {
    let mut h = two_levels(false);
    assert_eq!(h.access(at(0), 0).served_by, 2, "cold: memory");
    assert_eq!(h.access(at(0) + 8, 0).served_by, 0, "same line: L1");
    // lines 2 and 4 share L1 set 0 with line 0: two ways, so line 0 leaves L1
    h.access(at(2), 0);
    h.access(at(4), 0);
    let a = h.access(at(0), 0);
    assert_eq!(
        (a.served_by, a.hit_level(2)),
        (1, Some(1)),
        "L2 still holds it"
    );
    assert_eq!(h.access(at(100), 0).hit_level(2), None);
    let c = h.counters(0);
    assert_eq!((c[0].accesses, c[0].hits, c[0].misses), (6, 1, 5));
    assert_eq!((c[1].accesses, c[1].hits, c[1].misses), (5, 1, 4));
    assert_eq!(
        h.counters(3)[0].accesses,
        0,
        "classes never seen count nothing"
    );
}

#[test]
fn three_c_classification_on_crafted_streams() {
    // Conflict: three lines of one L1 set (2 ways) while L1 holds 4 lines in all.
    let mut h = two_levels(true);
    let kinds: Vec<MissClass> = [0, 2, 4, 0]
        .iter()
        .map(|&l| h.access(at(l), 0).misses[0])
        .collect();
    assert_eq!(
        kinds,
        vec![
            MissClass::Compulsory,
            MissClass::Compulsory,
            MissClass::Compulsory,
            MissClass::Conflict
        ]
    );
    // Capacity: five lines cycled through a 4-line L1, evenly over the sets.
    let mut h = two_levels(true);
    for l in 0..5 {
        h.access(at(l), 0);
    }
    assert_eq!(h.access(at(0), 0).misses[0], MissClass::Capacity);
    let c = h.counters(0)[0];
    assert_eq!(
        (c.compulsory, c.capacity, c.conflict, c.misses),
        (5, 1, 0, 6)
    );
    // L2 (16 lines) saw the same six lines: five first touches, then a hit.
    let l2 = h.counters(0)[1];
    assert_eq!((l2.compulsory, l2.hits), (5, 1));
    // After a flush, a line seen before misses as capacity (not compulsory, and not
    // conflict although it was recently used).
    h.flush();
    let a = h.access(at(0), 0);
    assert_eq!(
        (a.served_by, a.misses[0], a.misses[1]),
        (2, MissClass::Capacity, MissClass::Capacity)
    );
}

#[test]
fn llc_way_masks_protect_a_warmed_object_from_a_scan() {
    let run = |partitioned: bool| {
        let mut h = two_levels(false);
        if partitioned {
            h.set_llc_way_mask(1, 0b0011).unwrap(); // sensitive: 2 of 4 ways
            h.set_llc_way_mask(2, 0b1100).unwrap(); // scan: the other 2
        }
        let object: Vec<u64> = (0..8).map(at).collect(); // 8 lines = half the L2
        for &a in &object {
            h.access(a, 1);
        }
        for l in 1000..1400 {
            h.access(at(l), 2); // a scan of 25× the L2
        }
        object
            .iter()
            .filter(|&&a| h.access(a, 1).served_by == 2)
            .count()
    };
    assert_eq!(run(false), 8, "unpartitioned, the scan flushed the object");
    assert_eq!(run(true), 0, "partitioned, the object stays in the L2");
    let mut h = two_levels(false);
    assert!(h.set_llc_way_mask(1, 0b1010).is_err());
    assert!(h.set_way_mask(5, 1, 0b1).is_err());
}

#[test]
fn reads_this_machines_geometry_when_sysfs_describes_it() {
    let root = std::path::Path::new(kura_cache::cpu::SYSFS_CACHE_DIR);
    if !root.exists() {
        return; // not Linux, or a container without sysfs: the parser has its own tests
    }
    let h = Hierarchy::from_sysfs(root, false).unwrap();
    assert!(h.levels() >= 1);
    assert_eq!(h.level(0).geometry().level, 1);
}

/// Write-invalidate: a line another core wrote misses at every level next time,
/// in narrow (8- and 16-way) and wide (32-way) sets alike; other lines stay.
#[test]
fn an_invalidated_line_misses_everywhere_and_its_neighbours_stay() {
    use kura_cache::cpu::geometry::Geometry;
    use kura_cache::cpu::hierarchy::{Hierarchy, LevelConfig};
    for (w1, w2) in [(8u32, 16u32), (16, 32)] {
        let mut h = Hierarchy::new(vec![
            LevelConfig::lru(Geometry::new(1, 32 << 10, w1, 64).unwrap()),
            LevelConfig::lru(Geometry::new(2, 1 << 20, w2, 64).unwrap()),
        ])
        .unwrap();
        for a in [0u64, 64, 128] {
            h.access(a, 0);
        }
        assert_eq!(h.access(64, 0).served_by, 0);
        h.invalidate(64);
        assert_eq!(h.access(0, 0).served_by, 0, "{w1}/{w2}: a neighbour stays");
        assert_eq!(
            h.access(64, 0).served_by,
            2,
            "{w1}/{w2}: missed at both levels"
        );
        assert_eq!(h.access(64, 0).served_by, 0, "{w1}/{w2}: filled again");
        // Invalidating the line just looked up (the L1 shortcut) works too.
        h.invalidate(64);
        assert_eq!(h.access(64, 0).served_by, 2);
        // A line not cached: nothing happens.
        h.invalidate(1 << 30);
        assert_eq!(h.access(128, 0).served_by, 0);
    }
}
