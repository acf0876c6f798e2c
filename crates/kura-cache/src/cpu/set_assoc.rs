//! One set-associative cache level: tags per set, LRU or tree-PLRU within a set,
//! and Intel CAT semantics — a class of service may *fill* only into the ways of
//! its capacity bitmask, while a hit may be in any way (paper 000).
//!
//! Laid out for replaying hundreds of millions of accesses: with at most 16 ways a
//! set's metadata is one 32-byte record — a 7-bit fingerprint per way with a valid
//! bit (as in Swiss tables), compared against the line's fingerprint for all ways
//! at once in a few integer operations, and the LRU order as a permutation of 4-bit
//! way numbers (move-to-front in a few operations; the victim is the last nibble).
//! A lookup reads the full tag of a candidate way only (and of the victim on a
//! miss), so a miss costs one metadata load instead of a scan of every tag. A
//! tree-PLRU touch is one and-or with the way's precomputed path. Wider sets (up to
//! 64 ways) scan their tags and keep LRU stamps.

use crate::error::CacheError;

use super::geometry::Geometry;

/// Ways up to which a set keeps fingerprints and a nibble permutation.
const NARROW_WAYS: usize = 16;

/// `0x1111…`: one in every nibble.
const NIBBLES: u64 = 0x1111_1111_1111_1111;

/// A set's fingerprint bytes, one per way: 8 up to 8 ways, 16 up to 16 (so the
/// common 8-way sets use half the memory). Kept as bytes so that a fill writes one
/// byte instead of shifting a 128-bit word.
pub(crate) trait FpWord: Copy {
    /// What a set record holds besides fingerprints and order.
    type Tags: Copy + std::fmt::Debug;
    const EMPTY: Self;
    const NO_TAGS: Self::Tags;
    /// The bytes as one little-endian word.
    fn widen(&self) -> u128;
    fn set(&mut self, way: usize, fp: u8);
    fn metas(cache: &SetAssoc) -> &[Meta<Self>];
    fn metas_mut(cache: &mut SetAssoc) -> &mut [Meta<Self>];
    fn tag(cache: &SetAssoc, set: usize, way: usize) -> u64;
    fn tag_mut(cache: &mut SetAssoc, set: usize, way: usize) -> &mut u64;
}

/// Up to 8 ways the tags sit in the set's record (80 bytes): a random lookup's tag
/// check then reads the cache line its fingerprint compare already brought in.
impl FpWord for [u8; 8] {
    type Tags = [u64; 8];
    const EMPTY: Self = [0; 8];
    const NO_TAGS: [u64; 8] = [0; 8];
    #[inline(always)]
    fn widen(&self) -> u128 {
        u128::from(u64::from_le_bytes(*self))
    }
    #[inline(always)]
    fn set(&mut self, way: usize, fp: u8) {
        self[way] = fp;
    }
    #[inline(always)]
    fn metas(cache: &SetAssoc) -> &[Meta<Self>] {
        &cache.meta8
    }
    #[inline(always)]
    fn metas_mut(cache: &mut SetAssoc) -> &mut [Meta<Self>] {
        &mut cache.meta8
    }
    #[inline(always)]
    fn tag(cache: &SetAssoc, set: usize, way: usize) -> u64 {
        cache.meta8[set].tags[way]
    }
    #[inline(always)]
    fn tag_mut(cache: &mut SetAssoc, set: usize, way: usize) -> &mut u64 {
        &mut cache.meta8[set].tags[way]
    }
}

/// 9 to 16 ways a record with tags would span three cache lines: the tags are in
/// [`SetAssoc::tags`], way by way, so a sequential stream writes neighbouring words.
impl FpWord for [u8; 16] {
    type Tags = ();
    const EMPTY: Self = [0; 16];
    const NO_TAGS: () = ();
    #[inline(always)]
    fn widen(&self) -> u128 {
        u128::from_le_bytes(*self)
    }
    #[inline(always)]
    fn set(&mut self, way: usize, fp: u8) {
        self[way] = fp;
    }
    #[inline(always)]
    fn metas(cache: &SetAssoc) -> &[Meta<Self>] {
        &cache.meta16
    }
    #[inline(always)]
    fn metas_mut(cache: &mut SetAssoc) -> &mut [Meta<Self>] {
        &mut cache.meta16
    }
    #[inline(always)]
    fn tag(cache: &SetAssoc, set: usize, way: usize) -> u64 {
        cache.tags[way << cache.set_bits | set]
    }
    #[inline(always)]
    fn tag_mut(cache: &mut SetAssoc, set: usize, way: usize) -> &mut u64 {
        &mut cache.tags[way << cache.set_bits | set]
    }
}

/// What [`SetAssoc::last_line`] is before any lookup.
const NO_LINE: u64 = u64::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replacement {
    /// True LRU within a set.
    Lru,
    /// Tree pseudo-LRU (one bit per inner node of a binary tree over the ways), as
    /// many real L1/L2 caches do; needs a power-of-two number of ways.
    TreePlru,
}

/// What one lookup did at this level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    Hit,
    /// The line was filled into a way; `evicted` is the line it replaced, if any.
    Miss {
        evicted: Option<u64>,
    },
}

/// Fingerprint bytes of sets of up to 8 ways.
pub(crate) type Fp8 = [u8; 8];
/// Fingerprint bytes of sets of 9 to 16 ways.
pub(crate) type Fp16 = [u8; 16];

/// A set's metadata when it has at most 16 ways (16 or 32 bytes: whole sets per
/// cache line).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(16))]
pub(crate) struct Meta<F: FpWord> {
    /// Byte w: 0 if way w is empty, else 0x80 | the 7-bit fingerprint of its line.
    fps: F,
    /// LRU: the ways from most to least recent, one nibble each (nibble 0 = most
    /// recent; nibbles past the ways hold 0xF). Tree-PLRU: the node bits.
    order: u64,
    /// The line per way, where the record holds them (meaningful where valid).
    tags: F::Tags,
}

impl<F: FpWord> Meta<F> {
    fn empty(order: u64) -> Self {
        Self {
            fps: F::EMPTY,
            order,
            tags: F::NO_TAGS,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// At most 8 ways: `meta8`.
    Narrow8,
    /// 9 to 16 ways: `meta16`.
    Narrow16,
    /// More: `valid` and `stamps` or `plru`.
    Wide,
}

/// A class of service's way mask (bit w = way w).
#[derive(Clone, Copy, Debug)]
pub(crate) struct WayMask {
    bits: u64,
}

pub struct SetAssoc {
    geometry: Geometry,
    replacement: Replacement,
    ways: usize,
    /// How sets keep their state.
    kind: Kind,
    line_shift: u32,
    set_bits: u32,
    /// Narrow LRU: where the least recent way's nibble is, and the nibbles below it.
    last_rank_shift: u32,
    last_rank_below: u64,
    set_mask: u64,
    /// Line address per way (`sets × ways`); meaningful where valid. Sets of up to
    /// 16 ways store them way by way (way w of set s at `w × sets + s`): a sequential
    /// stream then fills neighbouring words instead of one cache line per access;
    /// wider sets store them set by set, for their scans.
    tags: Vec<u64>,
    /// Sets of at most 8 ways: per set.
    meta8: Vec<Meta<[u8; 8]>>,
    /// Sets of 9 to 16 ways: per set.
    meta16: Vec<Meta<[u8; 16]>>,
    /// Wide sets: valid ways per set.
    valid: Vec<u64>,
    /// Wide LRU sets: last-use stamp per way; larger is more recent.
    stamps: Vec<u64>,
    /// Wide tree-PLRU sets: node bits per set.
    plru: Vec<u64>,
    clock: u64,
    /// Every way.
    full: WayMask,
    /// Way masks per class of service; classes beyond get every way.
    masks: Vec<WayMask>,
    /// Tree-PLRU: per way, the node bits touching it clears and sets.
    plru_paths: Vec<(u64, u64)>,
    /// The last line looked up: repeated accesses to one line (sequential streams)
    /// skip the set search — its state is already "most recent" in its set.
    last_line: u64,
}

/// Way w at every rank below `ways`, 0xF above: the order of a cleared set (any
/// order would do: filling an empty way moves it to the front, so the ways that
/// hold lines are always in recency order among themselves).
fn initial_perm(ways: usize) -> u64 {
    (0..NARROW_WAYS).fold(0, |acc, rank| {
        let way = if rank < ways { rank as u64 } else { 0xF };
        acc | way << (4 * rank)
    })
}

/// Moves `way`, found at `rank`, to the front of a nibble permutation.
#[inline(always)]
fn perm_to_front(perm: u64, way: usize, rank: u32) -> u64 {
    let below = (1u64 << (4 * rank)) - 1;
    let through = below << 4 | 0xF;
    (perm & !through) | (perm & below) << 4 | way as u64
}

/// The rank of `way` in a nibble permutation: the lowest nibble equal to it (the
/// zero-nibble test errs only above a true zero, never below it).
#[inline(always)]
fn perm_rank(perm: u64, way: usize) -> u32 {
    let x = perm ^ (way as u64).wrapping_mul(NIBBLES);
    let zero = x.wrapping_sub(NIBBLES) & !x & NIBBLES << 3;
    zero.trailing_zeros() / 4
}

/// For a fingerprint word: bit w set where byte w equals `fp`, and bit w set where
/// byte w has its high (valid) bit — one byte compare and two movemasks.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[inline(always)]
fn byte_matches(fps: u128, fp: u8) -> (u32, u32) {
    use std::arch::x86_64::{_mm_cmpeq_epi8, _mm_movemask_epi8, _mm_set1_epi8, _mm_set_epi64x};
    // SAFETY: the cfg above guarantees SSE2 (part of every x86_64 CPU); these
    // intrinsics only compute on registers, they touch no memory. (LLVM does not
    // find this form itself: written as a loop over the bytes it stays scalar.)
    unsafe {
        let v = _mm_set_epi64x((fps >> 64) as i64, fps as i64);
        let eq = _mm_cmpeq_epi8(v, _mm_set1_epi8(fp as i8));
        (_mm_movemask_epi8(eq) as u32, _mm_movemask_epi8(v) as u32)
    }
}

/// The same elsewhere, one byte at a time.
#[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
#[inline(always)]
fn byte_matches(fps: u128, fp: u8) -> (u32, u32) {
    let (mut eq, mut valid) = (0u32, 0u32);
    for (w, &b) in fps.to_le_bytes().iter().enumerate() {
        eq |= u32::from(b == fp) << w;
        valid |= u32::from(b & 0x80 != 0) << w;
    }
    (eq, valid)
}

impl WayMask {
    fn new(bits: u64) -> Self {
        Self { bits }
    }
}

impl SetAssoc {
    pub fn new(geometry: Geometry, replacement: Replacement) -> Result<Self, CacheError> {
        let ways = geometry.ways as usize;
        if replacement == Replacement::TreePlru && !ways.is_power_of_two() {
            return Err(CacheError::InvalidConfig(format!(
                "tree-PLRU needs a power-of-two number of ways, {} has {ways}",
                geometry.describe()
            )));
        }
        let sets = geometry.sets as usize;
        let kind = match ways {
            0..=8 => Kind::Narrow8,
            9..=NARROW_WAYS => Kind::Narrow16,
            _ => Kind::Wide,
        };
        let wide = kind == Kind::Wide;
        let wide_lru = wide && replacement == Replacement::Lru;
        let wide_plru = wide && replacement == Replacement::TreePlru;
        let order = match replacement {
            Replacement::Lru => initial_perm(ways),
            Replacement::TreePlru => 0,
        };
        let full = WayMask::new(full_mask(ways));
        let mut cache = Self {
            replacement,
            ways,
            kind,
            line_shift: geometry.line_size.trailing_zeros(),
            set_bits: geometry.sets.trailing_zeros(),
            last_rank_shift: 4 * (ways.min(NARROW_WAYS) as u32 - 1),
            last_rank_below: (1u64 << (4 * (ways.min(NARROW_WAYS) - 1))) - 1,
            set_mask: u64::from(geometry.sets) - 1,
            tags: vec![
                0;
                if kind == Kind::Narrow8 {
                    0
                } else {
                    sets * ways
                }
            ],
            meta8: vec![Meta::empty(order); if kind == Kind::Narrow8 { sets } else { 0 }],
            meta16: vec![Meta::empty(order); if kind == Kind::Narrow16 { sets } else { 0 }],
            valid: vec![0; if wide { sets } else { 0 }],
            stamps: vec![0; if wide_lru { sets * ways } else { 0 }],
            plru: vec![0; if wide_plru { sets } else { 0 }],
            clock: 0,
            full,
            masks: vec![full],
            plru_paths: match replacement {
                Replacement::TreePlru => (0..ways)
                    .map(|w| (!plru_touch(u64::MAX, w, ways), plru_touch(0, w, ways)))
                    .collect(),
                Replacement::Lru => Vec::new(),
            },
            last_line: NO_LINE,
            geometry,
        };
        cache.clear();
        Ok(cache)
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    pub fn replacement(&self) -> Replacement {
        self.replacement
    }

    /// Sets the capacity bitmask of class `class` (CAT's CBM). Like resctrl, the
    /// mask must be non-empty, contiguous and within the ways.
    pub fn set_way_mask(&mut self, class: usize, mask: u64) -> Result<(), CacheError> {
        let all = self.full.bits;
        let run = mask.checked_shr(mask.trailing_zeros()).unwrap_or(0);
        let contiguous = mask != 0 && run & run.wrapping_add(1) == 0;
        if mask & !all != 0 || !contiguous {
            return Err(CacheError::InvalidConfig(format!(
                "way mask {mask:#x} must be a non-empty contiguous run of bits within {all:#x}"
            )));
        }
        if self.masks.len() <= class {
            self.masks.resize(class + 1, self.full);
        }
        self.masks[class] = WayMask::new(mask);
        Ok(())
    }

    #[inline(always)]
    pub fn way_mask(&self, class: usize) -> u64 {
        self.class_mask(class).bits
    }

    #[inline(always)]
    pub(crate) fn class_mask(&self, class: usize) -> WayMask {
        self.masks.get(class).copied().unwrap_or(self.full)
    }

    /// Line address (address without the offset bits).
    #[inline(always)]
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }

    #[inline(always)]
    pub fn set_of_line(&self, line: u64) -> usize {
        (line & self.set_mask) as usize
    }

    /// The line looked up last (already the most recent in its set).
    #[inline(always)]
    pub fn last_line(&self) -> u64 {
        self.last_line
    }

    /// The fingerprint byte of `line`: valid bit and the top 7 bits of a Fibonacci
    /// hash (they depend on every bit of the line, so lines of one set, which
    /// differ only in their tag bits, still spread over all 128 values).
    /// The same at every level of a hierarchy, so computed once per access.
    #[inline(always)]
    pub(crate) fn fingerprint(line: u64) -> u8 {
        0x80 | (line.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 57) as u8
    }

    /// The way of narrow set `set` holding `line`, if any: candidates by
    /// fingerprint, confirmed by the full tag.
    #[inline(always)]
    fn find_narrow<F: FpWord>(&self, set: usize, mut candidates: u32, line: u64) -> Option<usize> {
        while candidates != 0 {
            let way = candidates.trailing_zeros() as usize;
            if F::tag(self, set, way) == line {
                return Some(way);
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// The way of set `set` holding `line`, if any.
    #[inline(always)]
    fn find(&self, set: usize, line: u64) -> Option<usize> {
        let base = set * self.ways;
        if self.kind == Kind::Narrow8 {
            let (candidates, _) =
                byte_matches(self.meta8[set].fps.widen(), Self::fingerprint(line));
            self.find_narrow::<[u8; 8]>(set, candidates, line)
        } else if self.kind == Kind::Narrow16 {
            let (candidates, _) =
                byte_matches(self.meta16[set].fps.widen(), Self::fingerprint(line));
            self.find_narrow::<[u8; 16]>(set, candidates, line)
        } else {
            let valid = self.valid[set];
            self.tags[base..base + self.ways]
                .iter()
                .enumerate()
                .position(|(w, &t)| t == line && valid >> w & 1 == 1)
        }
    }

    /// Whether `line` is cached (no state change).
    pub fn holds(&self, line: u64) -> bool {
        self.find(self.set_of_line(line), line).is_some()
    }

    /// The fingerprint width of an LRU level whose sets have at most 16 ways (8 or
    /// 16), for batch loops specialised to it with [`Self::access_typed`].
    pub(crate) fn narrow_lru(&self) -> Option<usize> {
        match (self.kind, self.replacement) {
            (Kind::Narrow8, Replacement::Lru) => Some(8),
            (Kind::Narrow16, Replacement::Lru) => Some(16),
            _ => None,
        }
    }

    /// [`Self::access_hashed`] for a level [`Self::narrow_lru`] said is `F`-wide
    /// LRU: no dispatch on the kind of set or replacement. Whether it hit.
    #[inline(always)]
    pub(crate) fn access_typed<F: FpWord, const SHORTCUT: bool>(
        &mut self,
        line: u64,
        fp: u8,
        mask: WayMask,
    ) -> bool {
        if SHORTCUT {
            if line == self.last_line {
                return true;
            }
            self.last_line = line;
        }
        let set = self.set_of_line(line);
        self.access_narrow::<F, true>(set, line, fp, mask) == Lookup::Hit
    }

    /// [`Self::access_line`] without the repeated-line shortcut (for the levels
    /// below a hierarchy's first; see [`Self::access_hashed`]).
    #[inline]
    pub(crate) fn access_line_deep(&mut self, line: u64, class: usize) -> Lookup {
        let mask = self.class_mask(class);
        self.access_hashed::<false>(line, Self::fingerprint(line), mask)
    }

    /// Looks `line` up for class `class`: a hit refreshes it; a miss fills it into
    /// one of the class's ways, evicting that way's line.
    #[inline]
    pub fn access_line(&mut self, line: u64, class: usize) -> Lookup {
        if line == self.last_line {
            return Lookup::Hit;
        }
        let mask = self.class_mask(class);
        self.access_masked(line, mask)
    }

    /// [`Self::access_line`] with the class's way mask already looked up.
    #[inline(always)]
    pub(crate) fn access_masked(&mut self, line: u64, mask: WayMask) -> Lookup {
        self.access_hashed::<true>(line, Self::fingerprint(line), mask)
    }

    /// [`Self::access_masked`] with the line's [`Self::fingerprint`] computed, and
    /// without the repeated-line shortcut (nor its bookkeeping) when `SHORTCUT` is
    /// false. Skipping it changes nothing (a hit on the most recent line of a set
    /// leaves the set as it was), and below a hierarchy's first level it would
    /// almost never apply: the line a lower level saw last was filled above it, and
    /// while it stays there it does not come down again.
    #[inline(always)]
    pub(crate) fn access_hashed<const SHORTCUT: bool>(
        &mut self,
        line: u64,
        fp: u8,
        mask: WayMask,
    ) -> Lookup {
        if SHORTCUT {
            if line == self.last_line {
                return Lookup::Hit;
            }
            self.last_line = line;
        }
        let set = self.set_of_line(line);
        match self.kind {
            Kind::Narrow8 => self.access_narrow::<Fp8, false>(set, line, fp, mask),
            Kind::Narrow16 => self.access_narrow::<Fp16, false>(set, line, fp, mask),
            Kind::Wide => self.access_wide(set, line, mask),
        }
    }

    /// The lookup in a set of up to 16 ways; `LRU` says the replacement is known to
    /// be LRU (batch loops specialised per level skip the check).
    #[inline(always)]
    fn access_narrow<F: FpWord, const LRU: bool>(
        &mut self,
        set: usize,
        line: u64,
        fp: u8,
        mask: WayMask,
    ) -> Lookup {
        let Meta { fps, order, .. } = F::metas(self)[set];
        let (candidates, valid) = byte_matches(fps.widen(), fp);
        if let Some(way) = self.find_narrow::<F>(set, candidates, line) {
            F::metas_mut(self)[set].order = self.touched::<LRU>(order, way);
            return Lookup::Hit;
        }
        // The first empty way the class may fill, else the replacement's pick.
        let empty = !valid & mask.bits as u32;
        let (way, order) = if empty != 0 {
            let way = empty.trailing_zeros() as usize;
            (way, self.touched::<LRU>(order, way))
        } else if LRU || self.replacement == Replacement::Lru {
            if mask.bits == self.full.bits {
                // The least recent way is the last nibble: rotate it to the front.
                let way = (order >> self.last_rank_shift & 0xF) as usize;
                let below = self.last_rank_below;
                (
                    way,
                    order & !(below << 4 | 0xF) | (order & below) << 4 | way as u64,
                )
            } else {
                let rank = (0..self.ways as u32)
                    .rev()
                    .find(|r| mask.bits >> (order >> (4 * r) & 0xF) & 1 == 1)
                    .expect("way masks are non-empty");
                let way = (order >> (4 * rank) & 0xF) as usize;
                (way, perm_to_front(order, way, rank))
            }
        } else {
            let way = plru_victim(order, self.ways, mask.bits, self.full.bits);
            (way, self.touched::<false>(order, way))
        };
        let meta = &mut F::metas_mut(self)[set];
        meta.fps.set(way, fp);
        meta.order = order;
        let old = std::mem::replace(F::tag_mut(self, set, way), line);
        Lookup::Miss {
            evicted: (valid >> way & 1 == 1).then_some(old),
        }
    }

    /// `order` (a narrow set's) after a use of `way`.
    #[inline(always)]
    fn touched<const LRU: bool>(&self, order: u64, way: usize) -> u64 {
        match self.replacement {
            _ if LRU => perm_to_front(order, way, perm_rank(order, way)),
            Replacement::Lru => perm_to_front(order, way, perm_rank(order, way)),
            Replacement::TreePlru => {
                let (clear, set) = self.plru_paths[way];
                order & !clear | set
            }
        }
    }

    fn access_wide(&mut self, set: usize, line: u64, mask: WayMask) -> Lookup {
        let base = set * self.ways;
        let valid = self.valid[set];
        let way = match self.find(set, line) {
            Some(way) => way,
            None => {
                let empty = !valid & mask.bits;
                let way = if empty != 0 {
                    empty.trailing_zeros() as usize
                } else if self.replacement == Replacement::Lru {
                    let stamps = &self.stamps[base..base + self.ways];
                    (0..self.ways)
                        .filter(|w| mask.bits >> w & 1 == 1)
                        .min_by_key(|&w| stamps[w])
                        .expect("way masks are non-empty")
                } else {
                    plru_victim(self.plru[set], self.ways, mask.bits, self.full.bits)
                };
                self.valid[set] |= 1 << way;
                let old = std::mem::replace(&mut self.tags[base + way], line);
                self.touch_wide(set, base + way, way);
                return Lookup::Miss {
                    evicted: (valid >> way & 1 == 1).then_some(old),
                };
            }
        };
        self.touch_wide(set, base + way, way);
        Lookup::Hit
    }

    fn touch_wide(&mut self, set: usize, slot: usize, way: usize) {
        match self.replacement {
            Replacement::Lru => {
                self.clock += 1;
                self.stamps[slot] = self.clock;
            }
            Replacement::TreePlru => {
                let (clear, bits) = self.plru_paths[way];
                self.plru[set] = self.plru[set] & !clear | bits;
            }
        }
    }

    /// Replays byte addresses for one class; returns the number of misses.
    pub fn replay(&mut self, addrs: &[u64], class: usize) -> u64 {
        let mask = self.class_mask(class);
        match self.narrow_lru() {
            Some(8) => return self.replay_typed::<Fp8>(addrs, mask),
            Some(16) => return self.replay_typed::<Fp16>(addrs, mask),
            _ => {}
        }
        let mut misses = 0;
        for &addr in addrs {
            let line = self.line_of(addr);
            misses += u64::from(self.access_masked(line, mask) != Lookup::Hit);
        }
        misses
    }

    fn replay_typed<F: FpWord>(&mut self, addrs: &[u64], mask: WayMask) -> u64 {
        let mut misses = 0;
        for &addr in addrs {
            let line = self.line_of(addr);
            let fp = Self::fingerprint(line);
            misses += u64::from(!self.access_typed::<F, true>(line, fp, mask));
        }
        misses
    }

    /// Drops `line` if it is cached — another core wrote it (write-invalidate
    /// coherence). Its way becomes empty, the first to be filled; the next access
    /// to the line misses. Whether it was cached.
    pub fn invalidate(&mut self, line: u64) -> bool {
        let set = self.set_of_line(line);
        let Some(way) = self.find(set, line) else {
            return false;
        };
        match self.kind {
            Kind::Narrow8 => self.meta8[set].fps.set(way, 0),
            Kind::Narrow16 => self.meta16[set].fps.set(way, 0),
            Kind::Wide => self.valid[set] &= !(1u64 << way),
        }
        if self.last_line == line {
            self.last_line = NO_LINE;
        }
        true
    }

    /// Forgets every line (a cache flush); masks stay.
    pub fn clear(&mut self) {
        let order = match self.replacement {
            Replacement::Lru => initial_perm(self.ways),
            Replacement::TreePlru => 0,
        };
        self.meta8.fill(Meta::empty(order));
        self.meta16.fill(Meta::empty(order));
        self.valid.fill(0);
        self.stamps.fill(0);
        self.plru.fill(0);
        self.last_line = NO_LINE;
    }
}

fn full_mask(ways: usize) -> u64 {
    if ways >= 64 {
        u64::MAX
    } else {
        (1u64 << ways) - 1
    }
}

/// Tree-PLRU over `ways` leaves: node 0 is the root, node i's children are 2i+1
/// and 2i+2. A node bit of 0 means "the victim is on the left". Touching a way
/// points every node on its path away from it (used to precompute each way's path).
fn plru_touch(mut bits: u64, way: usize, ways: usize) -> u64 {
    let (mut node, mut lo, mut hi) = (0usize, 0usize, ways);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if way < mid {
            bits |= 1 << node; // victim side: right
            node = 2 * node + 1;
            hi = mid;
        } else {
            bits &= !(1 << node); // victim side: left
            node = 2 * node + 2;
            lo = mid;
        }
    }
    bits
}

/// Follows the tree's pointers to a victim, turning away from halves that hold no
/// way of `mask`.
#[inline]
fn plru_victim(bits: u64, ways: usize, mask: u64, full: u64) -> usize {
    let allowed = |lo: usize, hi: usize| mask == full || mask & full_mask(hi) & !full_mask(lo) != 0;
    let (mut node, mut lo, mut hi) = (0usize, 0usize, ways);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        let go_right = bits >> node & 1 == 1;
        let go_right = if go_right {
            allowed(mid, hi)
        } else {
            !allowed(lo, mid)
        };
        if go_right {
            node = 2 * node + 2;
            lo = mid;
        } else {
            node = 2 * node + 1;
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 sets × 4 ways of 64-byte lines (512 bytes).
    fn tiny(replacement: Replacement) -> SetAssoc {
        SetAssoc::new(Geometry::new(1, 512, 4, 64).unwrap(), replacement).unwrap()
    }

    /// Line addresses that all map to set 0 of [`tiny`].
    fn set0(i: u64) -> u64 {
        i * 2
    }

    #[test]
    fn lines_conflict_within_one_set_while_the_other_stays_empty() {
        let mut c = tiny(Replacement::Lru);
        for i in 0..4 {
            assert_eq!(c.access_line(set0(i), 0), Lookup::Miss { evicted: None });
        }
        assert_eq!(c.access_line(set0(0), 0), Lookup::Hit); // 0 is now most recent
                                                            // a fifth line in set 0 evicts the least recently used: line of i = 1
        assert_eq!(
            c.access_line(set0(4), 0),
            Lookup::Miss {
                evicted: Some(set0(1))
            }
        );
        assert!(!c.holds(set0(1)) && c.holds(set0(0)));
        // the cache is only half used: set 1 is empty
        assert_eq!(c.meta8[1].fps, [0; 8]);
    }

    #[test]
    fn way_masks_keep_a_class_out_of_protected_ways_but_hits_are_anywhere() {
        let mut c = tiny(Replacement::Lru);
        c.set_way_mask(1, 0b0011).unwrap(); // sensitive class: ways 0-1
        c.set_way_mask(2, 0b1100).unwrap(); // streaming class: ways 2-3
        c.access_line(set0(0), 1);
        c.access_line(set0(1), 1);
        // a scan by class 2 over many lines of set 0 never evicts class 1's lines
        for i in 10..100 {
            assert!(matches!(c.access_line(set0(i), 2), Lookup::Miss { .. }));
        }
        assert!(c.holds(set0(0)) && c.holds(set0(1)));
        // class 2 hits a line class 1 filled (hits in any way)
        assert_eq!(c.access_line(set0(0), 2), Lookup::Hit);
        // class 1 filling more lines evicts only its own
        assert_eq!(
            c.access_line(set0(200), 1),
            Lookup::Miss {
                evicted: Some(set0(1))
            }
        );
        assert!(c.set_way_mask(3, 0b0101).is_err(), "non-contiguous");
        assert!(c.set_way_mask(3, 0).is_err());
        assert!(c.set_way_mask(3, 0b10000).is_err(), "beyond the ways");
        assert_eq!(c.way_mask(7), 0b1111, "unknown classes get every way");
    }

    #[test]
    fn tree_plru_follows_its_pointers_and_respects_masks() {
        let mut c = tiny(Replacement::TreePlru);
        for i in 0..4 {
            c.access_line(set0(i), 0); // ways 0,1,2,3 in order
        }
        // after touching 3 the tree points left, then at way 0 (touched before 1)
        assert_eq!(
            c.access_line(set0(4), 0),
            Lookup::Miss {
                evicted: Some(set0(0))
            }
        );
        c.access_line(set0(1), 0); // way 1 touched: tree points right → way 2
        assert_eq!(
            c.access_line(set0(5), 0),
            Lookup::Miss {
                evicted: Some(set0(2))
            }
        );
        // restricted to ways 0-1, the right half is skipped
        c.set_way_mask(1, 0b0011).unwrap();
        let Lookup::Miss { evicted: Some(v) } = c.access_line(set0(6), 1) else {
            panic!("expected an eviction")
        };
        assert!(
            v == set0(4) || v == set0(1),
            "evicted {v} from a way outside the mask"
        );
        assert!(SetAssoc::new(
            Geometry::new(3, 768 * 4, 12, 64).unwrap(),
            Replacement::TreePlru
        )
        .is_err());
    }
}
