//! Every deterministic policy against a slow, obviously-correct model written
//! straight from its paper with plain vectors: on random traces both must report the
//! same hits and the same victims. A second property drives every policy with pinned
//! (non-evictable) blocks and checks the resident set never goes wrong.

use std::collections::{HashSet, VecDeque};

use kura_cache::{make_policy, serve, BlockId, Outcome, Policy};
use proptest::prelude::*;

trait Model {
    fn request(&mut self, x: BlockId) -> Outcome;
}

fn miss(victim: Option<BlockId>) -> Outcome {
    Outcome::Miss {
        victim,
        cached: true,
    }
}

fn remove_from(q: &mut VecDeque<BlockId>, x: BlockId) -> bool {
    match q.iter().position(|&y| y == x) {
        Some(i) => {
            q.remove(i);
            true
        }
        None => false,
    }
}

/// LRU, MRU, FIFO: index 0 = most recent.
struct RecencyModel {
    c: usize,
    kind: &'static str,
    q: VecDeque<BlockId>,
}

impl Model for RecencyModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        if self.q.contains(&x) {
            if self.kind != "fifo" {
                remove_from(&mut self.q, x);
                self.q.push_front(x);
            }
            return Outcome::Hit;
        }
        let victim = (self.q.len() == self.c).then(|| match self.kind {
            "mru" => self.q.pop_front().unwrap(),
            _ => self.q.pop_back().unwrap(),
        });
        self.q.push_front(x);
        miss(victim)
    }
}

struct ClockModel {
    c: usize,
    slots: Vec<(BlockId, bool)>,
    hand: usize,
}

impl Model for ClockModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        if let Some(s) = self.slots.iter_mut().find(|s| s.0 == x) {
            s.1 = true;
            return Outcome::Hit;
        }
        if self.slots.len() < self.c {
            self.slots.push((x, false));
            return miss(None);
        }
        loop {
            let h = self.hand;
            self.hand = (h + 1) % self.c;
            if self.slots[h].1 {
                self.slots[h].1 = false;
            } else {
                let v = self.slots[h].0;
                self.slots[h] = (x, false);
                return miss(Some(v));
            }
        }
    }
}

struct LfuModel {
    c: usize,
    t: u64,
    e: Vec<(BlockId, u64, u64)>,
}

impl Model for LfuModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        self.t += 1;
        if let Some(e) = self.e.iter_mut().find(|e| e.0 == x) {
            e.1 += 1;
            e.2 = self.t;
            return Outcome::Hit;
        }
        let mut victim = None;
        if self.e.len() == self.c {
            let i = (0..self.e.len())
                .min_by_key(|&i| (self.e[i].1, self.e[i].2))
                .unwrap();
            victim = Some(self.e.remove(i).0);
        }
        self.e.push((x, 1, self.t));
        miss(victim)
    }
}

struct FixModel {
    c: usize,
    s: Vec<BlockId>,
}

impl Model for FixModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        if self.s.contains(&x) {
            Outcome::Hit
        } else if self.s.len() < self.c {
            self.s.push(x);
            miss(None)
        } else {
            Outcome::Miss {
                victim: None,
                cached: false,
            }
        }
    }
}

/// Johnson & Shasha's full 2Q pseudocode.
struct TwoQModel {
    c: usize,
    kin: usize,
    kout: usize,
    a1in: VecDeque<BlockId>,
    a1out: VecDeque<BlockId>,
    am: VecDeque<BlockId>,
}

impl Model for TwoQModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        if remove_from(&mut self.am, x) {
            self.am.push_front(x);
            return Outcome::Hit;
        }
        if self.a1in.contains(&x) {
            return Outcome::Hit;
        }
        let was_out = self.a1out.contains(&x);
        let mut victim = None;
        if self.a1in.len() + self.am.len() == self.c {
            if self.a1in.len() > self.kin || self.am.is_empty() {
                let y = self.a1in.pop_back().unwrap();
                self.a1out.push_front(y);
                if self.a1out.len() > self.kout {
                    self.a1out.pop_back();
                }
                victim = Some(y);
            } else {
                victim = self.am.pop_back();
            }
        }
        if was_out {
            remove_from(&mut self.a1out, x);
            self.am.push_front(x);
        } else {
            self.a1in.push_front(x);
        }
        miss(victim)
    }
}

/// Zhou, Philbin & Li's MQ pseudocode (Access, EvictBlock, Adjust).
struct MqModel {
    c: usize,
    m: usize,
    life: u64,
    hist: usize,
    time: u64,
    queues: Vec<VecDeque<BlockId>>,
    /// id → (freq, expire) for resident blocks.
    meta: Vec<(BlockId, u64, u64)>,
    qout: VecDeque<(BlockId, u64)>,
}

impl MqModel {
    fn queue_of(&self, f: u64) -> usize {
        ((f as f64).log2().floor() as usize).min(self.m - 1)
    }
    fn meta(&mut self, x: BlockId) -> &mut (BlockId, u64, u64) {
        self.meta.iter_mut().find(|e| e.0 == x).unwrap()
    }
}

impl Model for MqModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        self.time += 1;
        let hit = self.meta.iter().any(|e| e.0 == x);
        let mut victim = None;
        let freq;
        if hit {
            for q in &mut self.queues {
                remove_from(q, x);
            }
            freq = self.meta(x).1 + 1;
        } else {
            if self.meta.len() == self.c {
                let k = (0..self.m).find(|&k| !self.queues[k].is_empty()).unwrap();
                let v = self.queues[k].pop_back().unwrap();
                let i = self.meta.iter().position(|e| e.0 == v).unwrap();
                let (_, vf, _) = self.meta.remove(i);
                self.qout.push_front((v, vf));
                if self.qout.len() > self.hist {
                    self.qout.pop_back();
                }
                victim = Some(v);
            }
            freq = match self.qout.iter().position(|e| e.0 == x) {
                Some(i) => self.qout.remove(i).unwrap().1 + 1,
                None => 1,
            };
            self.meta.push((x, 0, 0));
        }
        let (t, life) = (self.time, self.life);
        *self.meta(x) = (x, freq, t + life);
        let k = self.queue_of(freq);
        self.queues[k].push_front(x);
        for k in 1..self.m {
            if let Some(&b) = self.queues[k].back() {
                if self.meta(b).2 < t {
                    self.queues[k].pop_back();
                    self.queues[k - 1].push_front(b);
                    self.meta(b).2 = t + life;
                }
            }
        }
        if hit {
            Outcome::Hit
        } else {
            miss(victim)
        }
    }
}

/// Megiddo & Modha's ARC(c), figure 4 of the FAST'03 paper, case by case.
struct ArcModel {
    c: usize,
    p: usize,
    t1: VecDeque<BlockId>,
    t2: VecDeque<BlockId>,
    b1: VecDeque<BlockId>,
    b2: VecDeque<BlockId>,
}

impl ArcModel {
    fn replace(&mut self, x_in_b2: bool) -> BlockId {
        let t1 = self.t1.len();
        if t1 >= 1 && (t1 > self.p || (x_in_b2 && t1 == self.p)) {
            let v = self.t1.pop_back().unwrap();
            self.b1.push_front(v);
            v
        } else {
            let v = self.t2.pop_back().unwrap();
            self.b2.push_front(v);
            v
        }
    }
}

impl Model for ArcModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        // Case I: hit in T1 or T2.
        if remove_from(&mut self.t1, x) || remove_from(&mut self.t2, x) {
            self.t2.push_front(x);
            return Outcome::Hit;
        }
        let (b1, b2) = (self.b1.len(), self.b2.len());
        // Case II: ghost hit in B1.
        if self.b1.contains(&x) {
            let d = if b1 >= b2 { 1 } else { b2 / b1 };
            self.p = (self.p + d).min(self.c);
            let v = self.replace(false);
            remove_from(&mut self.b1, x);
            self.t2.push_front(x);
            return miss(Some(v));
        }
        // Case III: ghost hit in B2.
        if self.b2.contains(&x) {
            let d = if b2 >= b1 { 1 } else { b1 / b2 };
            self.p = self.p.saturating_sub(d);
            let v = self.replace(true);
            remove_from(&mut self.b2, x);
            self.t2.push_front(x);
            return miss(Some(v));
        }
        // Case IV: a complete miss.
        let mut victim = None;
        let l1 = self.t1.len() + b1;
        let total = l1 + self.t2.len() + b2;
        if l1 == self.c {
            if self.t1.len() < self.c {
                self.b1.pop_back();
                victim = Some(self.replace(false));
            } else {
                victim = self.t1.pop_back();
            }
        } else if total >= self.c {
            if total == 2 * self.c {
                self.b2.pop_back();
            }
            if self.t1.len() + self.t2.len() == self.c {
                victim = Some(self.replace(false));
            }
        }
        self.t1.push_front(x);
        miss(victim)
    }
}

/// SIEVE: `q[0]` is the oldest; the hand is an index (None = start at the oldest).
struct SieveModel {
    c: usize,
    q: Vec<(BlockId, bool)>,
    hand: Option<usize>,
}

impl Model for SieveModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        if let Some(e) = self.q.iter_mut().find(|e| e.0 == x) {
            e.1 = true;
            return Outcome::Hit;
        }
        let mut victim = None;
        if self.q.len() == self.c {
            let mut i = self.hand.unwrap_or(0);
            while self.q[i].1 {
                self.q[i].1 = false;
                i = (i + 1) % self.q.len();
            }
            victim = Some(self.q.remove(i).0);
            self.hand = (i < self.q.len()).then_some(i);
        }
        self.q.push((x, false));
        miss(victim)
    }
}

/// S3-FIFO's Algorithm 1 with the single-victim rule (front = newest).
struct S3FifoModel {
    c: usize,
    s: VecDeque<(BlockId, u8)>,
    m: VecDeque<(BlockId, u8)>,
    g: VecDeque<BlockId>,
}

impl S3FifoModel {
    fn small_target(&self) -> usize {
        (self.c / 10).max(1)
    }
    fn main_target(&self) -> usize {
        self.c.saturating_sub(self.small_target()).max(1)
    }
    fn evict_m(&mut self) -> Option<BlockId> {
        while let Some((id, f)) = self.m.pop_back() {
            if f > 0 {
                self.m.push_front((id, f - 1));
            } else {
                return Some(id);
            }
        }
        None
    }
    fn evict_s(&mut self) -> Option<BlockId> {
        while let Some((id, f)) = self.s.pop_back() {
            if f > 1 {
                self.m.push_front((id, f));
                if self.m.len() > self.main_target() {
                    return self.evict_m();
                }
            } else {
                self.g.push_front(id);
                if self.g.len() > self.main_target() {
                    self.g.pop_back();
                }
                return Some(id);
            }
        }
        None
    }
}

impl Model for S3FifoModel {
    fn request(&mut self, x: BlockId) -> Outcome {
        for e in self.s.iter_mut().chain(self.m.iter_mut()) {
            if e.0 == x {
                e.1 = (e.1 + 1).min(3);
                return Outcome::Hit;
            }
        }
        let mut victim = None;
        if self.s.len() + self.m.len() == self.c {
            victim = if self.s.len() >= self.small_target() || self.m.is_empty() {
                self.evict_s().or_else(|| self.evict_m())
            } else {
                self.evict_m()
            };
        }
        if remove_from(&mut self.g, x) {
            self.m.push_front((x, 0));
        } else {
            self.s.push_front((x, 0));
        }
        miss(victim)
    }
}

fn model(name: &str, c: usize) -> Box<dyn Model> {
    match name {
        "lru" | "mru" | "fifo" => Box::new(RecencyModel {
            c,
            kind: match name {
                "lru" => "lru",
                "mru" => "mru",
                _ => "fifo",
            },
            q: VecDeque::new(),
        }),
        "clock" => Box::new(ClockModel {
            c,
            slots: Vec::new(),
            hand: 0,
        }),
        "lfu" => Box::new(LfuModel {
            c,
            t: 0,
            e: Vec::new(),
        }),
        "fix" => Box::new(FixModel { c, s: Vec::new() }),
        "2q" => Box::new(TwoQModel {
            c,
            kin: (c / 4).max(1),
            kout: (c / 2).max(1),
            a1in: VecDeque::new(),
            a1out: VecDeque::new(),
            am: VecDeque::new(),
        }),
        "mq" => Box::new(MqModel {
            c,
            m: 8,
            life: c as u64,
            hist: 4 * c,
            time: 0,
            queues: vec![VecDeque::new(); 8],
            meta: Vec::new(),
            qout: VecDeque::new(),
        }),
        "arc" => Box::new(ArcModel {
            c,
            p: 0,
            t1: VecDeque::new(),
            t2: VecDeque::new(),
            b1: VecDeque::new(),
            b2: VecDeque::new(),
        }),
        "sieve" => Box::new(SieveModel {
            c,
            q: Vec::new(),
            hand: None,
        }),
        "s3fifo" => Box::new(S3FifoModel {
            c,
            s: VecDeque::new(),
            m: VecDeque::new(),
            g: VecDeque::new(),
        }),
        _ => unreachable!("no model for {name}"),
    }
}

const MODELLED: &[&str] = &[
    "lru", "mru", "fifo", "clock", "lfu", "fix", "2q", "mq", "arc", "sieve", "s3fifo",
];

/// Traces with locality (a skewed id distribution) so that hits, ghost hits and
/// promotions all happen, over ids 0..24.
fn trace() -> impl Strategy<Value = Vec<BlockId>> {
    prop::collection::vec(
        prop_oneof![3 => 0u64..6, 2 => 0u64..12, 1 => 0u64..24],
        1..400,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn policies_match_their_reference_models(capacity in 1usize..14, trace in trace()) {
        for &name in MODELLED {
            let mut policy = make_policy(name, capacity).unwrap();
            let mut reference = model(name, capacity);
            for (i, &x) in trace.iter().enumerate() {
                let got = serve(policy.as_mut(), x);
                let want = reference.request(x);
                prop_assert_eq!(got, want, "{} (capacity {}) at request {} (id {})", name, capacity, i, x);
            }
            // Same trace with huge, scattered ids (hashed index instead of a table):
            // the same decisions, on the mapped ids.
            let big = |x: BlockId| x.wrapping_mul(0x9E37_79B9_7F4A_7C15) | (1 << 63);
            let mut small_ids = make_policy(name, capacity).unwrap();
            let mut big_ids = make_policy(name, capacity).unwrap();
            for &x in &trace {
                let want = match serve(small_ids.as_mut(), x) {
                    Outcome::Miss { victim, cached } => Outcome::Miss { victim: victim.map(big), cached },
                    hit => hit,
                };
                prop_assert_eq!(serve(big_ids.as_mut(), big(x)), want, "{} with big ids", name);
            }
        }
    }

    #[test]
    fn pinned_blocks_are_skipped_but_kept(
        capacity in 1usize..10,
        steps in prop::collection::vec((0u64..20, prop::collection::vec(0u64..20, 0..6)), 1..300),
    ) {
        for &name in kura_cache::POLICY_NAMES {
            let mut policy = make_policy(name, capacity).unwrap();
            let mut resident: HashSet<BlockId> = HashSet::new();
            for (x, pinned) in &steps {
                let pinned: HashSet<BlockId> = pinned.iter().copied().collect();
                check_step(policy.as_mut(), &mut resident, *x, &pinned)?;
            }
            for id in 0..20 {
                prop_assert_eq!(policy.contains(id), resident.contains(&id), "{} id {}", name, id);
            }
        }
    }
}

/// One request the way the buffer manager serves it: pinned blocks may not go.
fn check_step(
    policy: &mut dyn Policy,
    resident: &mut HashSet<BlockId>,
    x: BlockId,
    pinned: &HashSet<BlockId>,
) -> Result<(), TestCaseError> {
    let name = policy.name();
    if policy.contains(x) {
        prop_assert!(resident.contains(&x), "{name}: phantom hit on {x}");
        policy.access(x);
        return Ok(());
    }
    prop_assert!(!resident.contains(&x), "{name}: lost {x}");
    if !policy.admits() {
        return Ok(());
    }
    if policy.len() == policy.capacity() {
        match policy.evict_for(x, &mut |id| !pinned.contains(&id)) {
            Some(v) => {
                prop_assert!(!pinned.contains(&v), "{name}: evicted pinned {v}");
                prop_assert!(resident.remove(&v), "{name}: evicted non-resident {v}");
            }
            None => {
                let all_pinned = resident.iter().all(|id| pinned.contains(id));
                prop_assert!(
                    all_pinned || name == "fix",
                    "{name}: no victim though some unpinned"
                );
                return Ok(());
            }
        }
    }
    policy.insert(x);
    resident.insert(x);
    prop_assert_eq!(policy.len(), resident.len(), "{} len", name);
    prop_assert!(policy.len() <= policy.capacity());
    Ok(())
}

#[test]
fn remove_forgets_blocks_in_every_policy() {
    for &name in kura_cache::POLICY_NAMES {
        let mut p = make_policy(name, 4).unwrap();
        for id in [1, 2, 3] {
            serve(p.as_mut(), id);
        }
        assert!(p.remove(2), "{name}");
        assert!(!p.remove(2), "{name}");
        assert!(!p.contains(2) && p.contains(1) && p.contains(3), "{name}");
        assert_eq!(p.len(), 2, "{name}");
        // and the policy still works after the hole
        for id in 10..30 {
            serve(p.as_mut(), id);
        }
        assert!(p.len() <= 4, "{name}");
    }
}
