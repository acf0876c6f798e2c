//! The optimized set-associative model against the straightforward reference
//! ([`kura_cache::cpu::reference`]) on random streams: every lookup's outcome and
//! evicted line, every level's counters and 3C classes, with LRU and tree-PLRU, up
//! to 64 ways, CAT way masks for several classes, and flushes in between.

use kura_cache::cpu::{
    Geometry, Hierarchy, LevelConfig, Lookup, ReferenceHierarchy, ReferenceSetAssoc, Replacement,
    SetAssoc,
};
use proptest::prelude::*;

/// One step of a random workload.
#[derive(Clone, Debug)]
enum Step {
    Access { line: u64, class: usize },
    Flush,
}

fn steps(lines: u64) -> impl Strategy<Value = Vec<Step>> {
    // Mostly accesses over a footprint a few times the cache, with runs of one line
    // (the repeated-line shortcut) and an occasional flush.
    let step = prop_oneof![
        40 => (0..lines, 0..3usize).prop_map(|(line, class)| Step::Access { line, class }),
        1 => Just(Step::Flush),
    ];
    prop::collection::vec((step, 1..3usize), 1..600).prop_map(|v| {
        v.into_iter()
            .flat_map(|(s, repeat)| std::iter::repeat_n(s, repeat))
            .collect()
    })
}

/// A geometry with `ways` ways (1 to 64) and 1 to 8 sets of 64-byte lines.
fn geometry(ways: u32, set_bits: u32) -> Geometry {
    sized(ways, set_bits, 64)
}

fn sized(ways: u32, set_bits: u32, line: u32) -> Geometry {
    Geometry::new(1, u64::from(ways * line) << set_bits, ways, line).unwrap()
}

/// A contiguous way mask within `ways` from two random numbers.
fn way_mask(ways: u32, a: u32, b: u32) -> u64 {
    let lo = a % ways;
    let len = 1 + b % (ways - lo);
    let run = if len == 64 {
        u64::MAX
    } else {
        (1u64 << len) - 1
    };
    run << lo
}

/// Tree-PLRU for one in four levels that can have it.
fn replacement(plru: u8, ways: u32) -> Replacement {
    if plru.is_multiple_of(4) && ways.is_power_of_two() {
        Replacement::TreePlru
    } else {
        Replacement::Lru
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn one_level_matches_the_reference(
        ways in prop_oneof![1..=17u32, Just(32u32), Just(64u32), Just(8u32), Just(16u32)],
        set_bits in 0..4u32,
        plru in any::<u8>(),
        masks in prop::collection::vec((any::<u32>(), any::<u32>()), 2),
        seed_steps in steps(200),
    ) {
        let g = geometry(ways, set_bits);
        let r = replacement(plru, ways);
        let mut fast = SetAssoc::new(g.clone(), r).unwrap();
        let mut reference = ReferenceSetAssoc::new(&g, r).unwrap();
        for (class, &(a, b)) in masks.iter().enumerate() {
            let m = way_mask(ways, a, b);
            fast.set_way_mask(class + 1, m).unwrap();
            reference.set_way_mask(class + 1, m);
        }
        for (i, step) in seed_steps.iter().enumerate() {
            match *step {
                Step::Access { line, class } => {
                    let got = fast.access_line(line, class);
                    let want = reference.access_line(line, class);
                    prop_assert_eq!(got, want, "step {} ({:?})", i, step);
                }
                Step::Flush => {
                    fast.clear();
                    reference.clear();
                }
            }
        }
        for line in 0..200 {
            prop_assert_eq!(fast.holds(line), reference.holds(line), "line {}", line);
        }
    }

    #[test]
    fn hierarchies_match_the_reference(
        l1 in (1..=8u32, 0..3u32, any::<u8>()),
        l2 in (1..=16u32, 1..4u32, any::<u8>()),
        l3 in prop_oneof![Just(None), (prop_oneof![4..=17u32, Just(32u32)], 2..4u32, any::<u8>()).prop_map(Some)],
        classify in (any::<bool>(), any::<bool>(), any::<bool>()),
        masks in prop::collection::vec((any::<u32>(), any::<u32>()), 6),
        seed_steps in steps(400),
        batch in any::<bool>(),
        // Mostly one line size (the specialised batch loops), sometimes mixed.
        lines in prop_oneof![
            3 => Just([64u32; 3]),
            1 => prop::array::uniform3(prop_oneof![Just(32u32), Just(64), Just(128)]),
        ],
    ) {
        let mut configs = vec![(l1, classify.0), (l2, classify.1)];
        if let Some(l3) = l3 {
            configs.push((l3, classify.2));
        }
        let configs: Vec<LevelConfig> = configs
            .into_iter()
            .zip(lines)
            .map(|(((ways, set_bits, plru), classify), line)| LevelConfig {
                geometry: sized(ways, set_bits, line),
                replacement: replacement(plru, ways),
                classify,
            })
            .collect();
        let mut fast = Hierarchy::new(configs.clone()).unwrap();
        let mut reference = ReferenceHierarchy::new(&configs).unwrap();
        // Classes 1 and 2 get a random way mask at every level; class 0 has all ways.
        for (level, config) in configs.iter().enumerate() {
            for class in 1..3 {
                let (a, b) = masks[2 * level + class - 1];
                let m = way_mask(config.geometry.ways, a, b);
                fast.set_way_mask(level, class, m).unwrap();
                reference.set_way_mask(level, class, m);
            }
        }
        // Addresses: line × 64 plus an offset inside the line.
        let addr = |line: u64| line * 64 + line % 7 * 8;
        let mut pending: Vec<u64> = Vec::new();
        let mut pending_class = 0;
        for (i, step) in seed_steps.iter().enumerate() {
            match *step {
                Step::Access { line, class } if batch => {
                    // Batches of one class through `replay`, compared by counters.
                    if class != pending_class {
                        fast.replay(&pending, pending_class);
                        pending.clear();
                        pending_class = class;
                    }
                    pending.push(addr(line));
                    reference.access(addr(line), class);
                }
                Step::Access { line, class } => {
                    let got = fast.access(addr(line), class);
                    let want = reference.access(addr(line), class);
                    prop_assert_eq!(got, want, "step {} ({:?})", i, step);
                }
                Step::Flush => {
                    fast.replay(&pending, pending_class);
                    pending.clear();
                    fast.flush();
                    reference.flush();
                }
            }
        }
        fast.replay(&pending, pending_class);
        for class in 0..3 {
            prop_assert_eq!(fast.counters(class), reference.counters(class), "class {}", class);
        }
        for (level, config) in configs.iter().enumerate() {
            for line in 0..400 {
                let l = line * 64 / u64::from(config.geometry.line_size);
                prop_assert_eq!(fast.level(level).holds(l), reference.holds(level, l));
            }
        }
    }
}

/// The reference really is a different implementation: a crafted stream where LRU
/// and tree-PLRU disagree shows both models tell them apart the same way.
#[test]
fn lru_and_plru_differ_identically() {
    let g = geometry(4, 0);
    let stream = [0u64, 1, 2, 3, 0, 4, 1, 5, 2, 6];
    let run_fast = |r| {
        let mut c = SetAssoc::new(g.clone(), r).unwrap();
        stream
            .iter()
            .map(|&l| c.access_line(l, 0))
            .collect::<Vec<Lookup>>()
    };
    let run_ref = |r| {
        let mut c = ReferenceSetAssoc::new(&g, r).unwrap();
        stream
            .iter()
            .map(|&l| c.access_line(l, 0))
            .collect::<Vec<Lookup>>()
    };
    assert_ne!(run_fast(Replacement::Lru), run_fast(Replacement::TreePlru));
    assert_eq!(run_fast(Replacement::Lru), run_ref(Replacement::Lru));
    assert_eq!(
        run_fast(Replacement::TreePlru),
        run_ref(Replacement::TreePlru)
    );
}
