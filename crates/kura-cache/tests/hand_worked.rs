//! Each policy against short traces worked out by hand: which requests hit and which
//! block each miss evicts.

use kura_cache::{make_policy, serve, BlockId, Outcome};

/// Runs `trace` through a fresh `policy` of `capacity` blocks and returns, per
/// request, `H` for a hit, `-` for a miss without eviction, or the victim id.
fn run(policy: &str, capacity: usize, trace: &[BlockId]) -> Vec<String> {
    let mut p = make_policy(policy, capacity).unwrap();
    trace
        .iter()
        .map(|&id| match serve(p.as_mut(), id) {
            Outcome::Hit => "H".to_string(),
            Outcome::Miss { victim: None, .. } => "-".to_string(),
            Outcome::Miss {
                victim: Some(v), ..
            } => v.to_string(),
        })
        .collect()
}

fn expect(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

#[test]
fn lru_evicts_least_recently_used() {
    // cache 3: 1 2 3 fill; 1 hit (order 1,3,2 from newest); 4 evicts 2; 2 evicts 3;
    // 1 hit; 3 evicts 4.
    let trace = [1, 2, 3, 1, 4, 2, 1, 3];
    assert_eq!(run("lru", 3, &trace), expect("- - - H 2 3 H 4"));
}

#[test]
fn mru_evicts_most_recently_used() {
    // 1 2 3 fill; 1 hit → MRU is 1; 4 evicts 1; 2 hit; 1 evicts 2 (MRU); 3 hit.
    let trace = [1, 2, 3, 1, 4, 2, 1, 3];
    assert_eq!(run("mru", 3, &trace), expect("- - - H 1 H 2 H"));
}

#[test]
fn fifo_ignores_hits() {
    // 1 2 3 fill; 1 hit (no reorder); 4 evicts 1; 2 hit; 1 evicts 2; 3 hit.
    let trace = [1, 2, 3, 1, 4, 2, 1, 3];
    assert_eq!(run("fifo", 3, &trace), expect("- - - H 1 H 2 H"));
    // and differs from LRU where a hit should have protected a block
    let trace = [1, 2, 1, 3, 1];
    assert_eq!(run("fifo", 2, &trace), expect("- - H 1 2"));
    assert_eq!(run("lru", 2, &trace), expect("- - H 2 H"));
}

#[test]
fn clock_gives_referenced_blocks_a_second_chance() {
    // slots [1 2 3], hand at 1. 1 hit sets 1's bit. 4: hand clears 1, evicts 2,
    // slot of 2 gets 4, hand at 3. 5: 3 clear → evicted, hand at 1 (slot 0).
    // 1 hit sets bit again. 6: 1 set → cleared, 4 clear → evicted.
    let trace = [1, 2, 3, 1, 4, 5, 1, 6];
    assert_eq!(run("clock", 3, &trace), expect("- - - H 2 3 H 4"));
}

#[test]
fn clock_without_hits_is_fifo() {
    let trace = [1, 2, 3, 4, 5, 6, 1];
    assert_eq!(run("clock", 3, &trace), expect("- - - 1 2 3 4"));
}

#[test]
fn fix_keeps_the_first_blocks_forever() {
    let trace = [1, 2, 3, 1, 3, 2, 1];
    let out = run("fix", 2, &trace);
    assert_eq!(out, expect("- - - H - H H"));
    let mut p = make_policy("fix", 2).unwrap();
    for id in [1, 2, 3] {
        serve(p.as_mut(), id);
    }
    assert!(p.contains(1) && p.contains(2) && !p.contains(3));
    assert!(!p.admits());
    assert_eq!(p.evict(&mut |_| true), None);
}

#[test]
fn rand_is_reproducible_per_seed_and_evicts_resident_blocks() {
    let trace: Vec<BlockId> = (0..200).map(|i| (i * 7919) % 37).collect();
    let a = run("rand", 8, &trace);
    let b = run("rand", 8, &trace);
    assert_eq!(a, b, "same seed, same victims");
    let mut p = kura_cache::make_policy_seeded("rand", 8, 1).unwrap();
    let mut q = kura_cache::make_policy_seeded("rand", 8, 2).unwrap();
    let va: Vec<_> = trace.iter().map(|&id| serve(p.as_mut(), id)).collect();
    let vb: Vec<_> = trace.iter().map(|&id| serve(q.as_mut(), id)).collect();
    assert_ne!(
        va, vb,
        "different seeds should choose differently on 200 requests"
    );
}

#[test]
fn lfu_evicts_least_frequently_used_then_least_recent() {
    // cap 2: 1 (f1) 1 (f2) 2 (f1); 3 evicts 2 (f1 < f2); 2 evicts 3 (f1, older); 4 evicts 2.
    let trace = [1, 1, 2, 3, 2, 4];
    assert_eq!(run("lfu", 2, &trace), expect("- H - 2 3 2"));
    assert_eq!(run("lru", 2, &trace), expect("- H - 1 H 3"));
}

#[test]
fn two_q_is_scan_resistant() {
    // cap 4 → Kin 1, Kout 2. 1..4 fill A1in; 5 pushes 1 to A1out; 1 returns → Am
    // (evicting 2 to A1out); 6 evicts 3; 1 hit in Am; 2 was in A1out → Am although
    // its own eviction of 4 trimmed A1out; then the scan 7 8 9 10 only cycles A1in,
    // and 2 and 1 still hit.
    let trace = [1, 2, 3, 4, 5, 1, 6, 1, 2, 7, 8, 9, 10, 2, 1];
    assert_eq!(
        run("2q", 4, &trace),
        expect("- - - - 1 2 3 H 4 5 6 7 8 H H")
    );
    assert_eq!(
        run("lru", 4, &trace),
        expect("- - - - 1 2 3 H 4 5 6 1 2 7 8")
    );
}

#[test]
fn mq_promotes_by_log2_frequency_and_remembers_evicted_counts() {
    use kura_cache::policies::Mq;
    // 3 queues, long lifetime. 1 reaches f3 (queue 1); 2 and 3 are f1 (queue 0) and
    // go first; 2 comes back from Qout with f2 → queue 1; then queue 0 is empty and
    // queue 1's LRU (1) goes.
    let mut mq = Mq::with_params(2, 3, 100, 4);
    let out: Vec<Outcome> = [1, 1, 1, 2, 3, 2, 4]
        .iter()
        .map(|&id| serve(&mut mq, id))
        .collect();
    let victims: Vec<Option<BlockId>> = out
        .iter()
        .map(|o| match o {
            Outcome::Hit => Some(0),
            Outcome::Miss { victim, .. } => *victim,
        })
        .collect();
    assert_eq!(
        victims,
        vec![None, Some(0), Some(0), None, Some(2), Some(3), Some(1)]
    );
}

#[test]
fn mq_expired_blocks_drop_a_queue() {
    use kura_cache::policies::Mq;
    let run_mq = |lifetime| {
        let mut mq = Mq::with_params(2, 3, lifetime, 4);
        [1, 1, 2, 3, 4, 5, 6]
            .iter()
            .filter_map(|&id| match serve(&mut mq, id) {
                Outcome::Miss { victim, .. } => victim,
                Outcome::Hit => None,
            })
            .collect::<Vec<_>>()
    };
    // lifetime 2: block 1 (queue 1, expires at t4) drops to queue 0 at t5 and is
    // evicted at t7. With a long lifetime it stays in queue 1 and 5 goes instead.
    assert_eq!(run_mq(2), vec![2, 3, 4, 1]);
    assert_eq!(run_mq(100), vec![2, 3, 4, 5]);
}

#[test]
fn arc_adapts_its_target_on_ghost_hits() {
    use kura_cache::policies::Arc;
    let mut arc = Arc::new(2);
    let mut victims = Vec::new();
    let mut targets = Vec::new();
    for id in [1, 2, 1, 3, 2, 1, 3] {
        if let Outcome::Miss {
            victim: Some(v), ..
        } = serve(&mut arc, id)
        {
            victims.push(v);
        }
        targets.push(arc.target_t1());
    }
    // Worked with the FAST'03 pseudocode: 3 pushes 2 (T1) to B1; 2 hits B1 → p = 1
    // and T2's 1 goes to B2; 1 hits B2 → p = 0 and T1's 3 goes; 3 hits B1 → p = 1.
    assert_eq!(victims, vec![2, 1, 3, 2]);
    assert_eq!(targets, vec![0, 0, 0, 0, 1, 0, 1]);
}

#[test]
fn sieve_keeps_visited_blocks_in_place() {
    // [3 2 1] newest first; 1 visited. 4: hand at 1 clears it, evicts 2, hand → 3.
    // 5 evicts 3 (hand → 4); 6 evicts 4; 1 still resident.
    let trace = [1, 2, 3, 1, 4, 5, 6, 1];
    assert_eq!(run("sieve", 3, &trace), expect("- - - H 2 3 4 H"));
    assert_eq!(run("clock", 3, &trace), expect("- - - H 2 3 1 4"));
}

#[test]
fn s3fifo_filters_one_hit_wonders_and_readmits_ghosts() {
    // cap 10 → S target 1, M 9. 1..10 fill S; 11 evicts 1 (to G); 2 is hit twice,
    // so 12 moves 2 to M and evicts 3; 1 is in G: 4 goes, 1 enters M; 1, 2 hit.
    let mut trace: Vec<BlockId> = (1..=10).collect();
    trace.extend([11, 2, 2, 12, 1, 1, 2]);
    let mut want = vec!["-"; 10];
    want.extend(["1", "H", "H", "3", "4", "H", "H"]);
    assert_eq!(run("s3fifo", 10, &trace), want);
}

#[test]
fn names_are_case_insensitive_and_unknown_names_list_the_valid_ones() {
    for name in kura_cache::POLICY_NAMES {
        let p = make_policy(&name.to_uppercase(), 4).unwrap();
        assert_eq!(&p.name(), name);
    }
    let err = make_policy("belady", 4).err().unwrap().to_string();
    assert!(
        err.contains("belady") && err.contains("s3fifo") && err.contains("2q"),
        "{err}"
    );
    let err = kura_cache::make_buffer_policy("FIX", 4)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("FIX never replaces"), "{err}");
    assert!(kura_cache::make_buffer_policy("clock", 4).is_ok());
    assert!(make_policy("lru", 0).is_err());
}

/// Density with an object map: a small index (blocks 0..4) and a large table
/// (blocks 1000..1400).
fn density_with_objects(capacity: usize) -> Box<dyn kura_cache::Policy> {
    let mut map = kura_cache::ObjectMap::new();
    map.add("index", 0..4);
    map.add("table", 1000..1400);
    let mut p = make_policy("density", capacity).unwrap();
    p.set_objects(std::sync::Arc::new(map));
    p
}

#[test]
fn density_keeps_a_small_hot_object_through_a_scan_of_a_large_one() {
    let mut density = density_with_objects(8);
    let mut lru = make_policy("lru", 8).unwrap();
    let mut index_hits = [0, 0];
    // Probe the 4 index pages, then scan 8 table pages; repeated: per byte, the
    // index is accessed far more often than the table.
    for round in 0..20u64 {
        for (i, p) in [density.as_mut(), lru.as_mut()].into_iter().enumerate() {
            for id in 0..4 {
                if serve(p, id).is_hit() {
                    index_hits[i] += 1;
                }
            }
            for id in 0..8 {
                serve(p, 1000 + (round * 8 + id) % 400);
            }
        }
    }
    // LRU loses the index to every scan; density keeps it after the first round.
    assert_eq!(index_hits[1], 0, "lru");
    assert_eq!(index_hits[0], 19 * 4, "density");
}

#[test]
fn density_evicts_the_least_recent_page_of_the_sparsest_object() {
    // Without a map, objects are extents of 64 ids: 0..64 and 64..128.
    // cache 3: 0 1 fill (extent 0: 2 accesses), 64 fills (extent 1: 1 access);
    // 65: extent 1 has density 1/64 < 2/64 → evicts its only page 64;
    // 0 hits; 66: extent 1 (2/64) vs extent 0 (3/64) → evicts 65.
    // 2: both extents at 3/64; extent 0 was used longer ago (the hit on 0 came
    // before 66), so it gives its least recent page: 1 (0 was hit since).
    assert_eq!(
        run("density", 3, &[0, 1, 64, 65, 0, 66, 2]),
        expect("- - - 64 H 65 1")
    );
}

#[test]
fn density_ages_counts_so_a_formerly_hot_object_loses_its_place() {
    let mut p = density_with_objects(4);
    // The index is hot for a long time...
    for _ in 0..50 {
        for id in 0..4 {
            serve(p.as_mut(), id);
        }
    }
    // ...then only the table is read. Without aging its 200 accesses would keep
    // the index resident forever; with halving per `capacity` requests the table
    // pages win the frames within a few hundred requests.
    let mut late_hits = 0;
    for i in 0..400u64 {
        if serve(p.as_mut(), 1000 + i % 4).is_hit() && i >= 200 {
            late_hits += 1;
        }
    }
    assert_eq!(
        late_hits, 200,
        "the table's 4 pages should all be resident by now"
    );
    assert!(
        (0..4).all(|id| !p.contains(id)),
        "index pages still resident"
    );
}
