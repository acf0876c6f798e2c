//! Paper 000's warm-and-protect partition and per-pipeline classes on top of a
//! [`Resctrl`] handle: which ways a protected object gets, the groups that hold the
//! protected, sensitive and streaming threads, and moving threads between them.
//! Every group lives only as long as the [`Partition`] (and its handle).

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{io, RdtError};
use crate::group::Group;
use crate::info::{validate_mask, L3Info};
use crate::resctrl::Resctrl;

/// The way masks of a warm-and-protect partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProtectMasks {
    /// The ways the protected object was warmed into (its group fills only these).
    pub protected: u64,
    /// Every other thread's mask: all ways but the protected ones.
    pub others: u64,
}

/// Splits the ways for an object of `object_bytes` in an LLC of `llc_bytes`: the
/// object gets the highest ways it needs (rounded up, at least `min_cbm_bits`),
/// and the others keep at least `min_cbm_bits` ways below them. Both masks are
/// contiguous, as CAT requires.
pub fn protect_masks(
    info: &L3Info,
    object_bytes: u64,
    llc_bytes: u64,
) -> Result<ProtectMasks, RdtError> {
    let ways = info.ways();
    let min = info.min_cbm_bits.max(1);
    if ways < 2 * min {
        return Err(RdtError::InvalidMask {
            mask: info.cbm_mask,
            reason: format!("{ways} ways cannot be split in two masks of at least {min} ways each"),
        });
    }
    let way_bytes = (llc_bytes / u64::from(ways)).max(1);
    let needed = object_bytes.div_ceil(way_bytes).max(u64::from(min)) as u32;
    if needed > ways - min {
        return Err(RdtError::InvalidMask {
            mask: info.cbm_mask,
            reason: format!(
                "the object ({object_bytes} bytes) needs {needed} of {ways} ways, leaving fewer than {min} to everything else"
            ),
        });
    }
    // cbm_mask is contiguous from its lowest bit; the protected ways are its top.
    let low = info.cbm_mask.trailing_zeros();
    let others = ((1u64 << (ways - needed)) - 1) << low;
    let protected = info.cbm_mask & !others;
    validate_mask(info, protected)?;
    validate_mask(info, others)?;
    Ok(ProtectMasks { protected, others })
}

/// The class of service a worker runs a pipeline in (paper 000's future work:
/// HANA-style classes per operator, here per pipeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    /// Reuses data that fits the LLC (index probes, hash tables, small tables): full mask.
    Sensitive,
    /// Streams more data than the LLC holds: a small mask, so it cannot evict the rest.
    Streaming,
}

/// kura's groups on one resctrl mount: `protect` (the warmer of a protected object),
/// `sensitive` and `streaming`. Threads are moved in by id; dropping the handle
/// removes the groups and the kernel returns their threads to the default group.
pub struct Partition {
    rdt: Resctrl,
    protect: Option<(Group, ProtectMasks)>,
    sensitive: Group,
    streaming: Group,
}

impl Partition {
    /// Creates the `sensitive` (all ways) and `streaming` (`streaming_ways` lowest
    /// ways) groups.
    pub fn new(mut rdt: Resctrl, streaming_ways: u32) -> Result<Self, RdtError> {
        let info = rdt.info().clone();
        let low = info.cbm_mask.trailing_zeros();
        let n = streaming_ways.clamp(info.min_cbm_bits.max(1), info.ways());
        let streaming_mask = ((1u64 << n) - 1) << low;
        validate_mask(&info, streaming_mask)?;
        let sensitive = rdt.create_group("sensitive")?;
        let streaming = rdt.create_group("streaming")?;
        rdt.write_schemata(&sensitive, info.cbm_mask)?;
        rdt.write_schemata(&streaming, streaming_mask)?;
        Ok(Self {
            rdt,
            protect: None,
            sensitive,
            streaming,
        })
    }

    pub fn resctrl(&self) -> &Resctrl {
        &self.rdt
    }

    pub fn group(&self, class: Class) -> &Group {
        match class {
            Class::Sensitive => &self.sensitive,
            Class::Streaming => &self.streaming,
        }
    }

    /// Moves thread `tid` into `class`'s group (one write to its `tasks`).
    pub fn enter(&self, tid: u32, class: Class) -> Result<(), RdtError> {
        self.rdt.add_task(self.group(class), tid)
    }

    /// Warm-and-protect, step 1: a `protect` group with the object's ways; the
    /// calling thread `warmer` is moved into it so that touching the object fills
    /// only those ways. Call [`Partition::protect`] after warming.
    pub fn begin_warm(
        &mut self,
        warmer: u32,
        object_bytes: u64,
        llc_bytes: u64,
    ) -> Result<ProtectMasks, RdtError> {
        let masks = protect_masks(self.rdt.info(), object_bytes, llc_bytes)?;
        let group = match self.protect.take() {
            Some((g, _)) => g,
            None => self.rdt.create_group("protect")?,
        };
        self.rdt.write_schemata(&group, masks.protected)?;
        self.rdt.add_task(&group, warmer)?;
        self.protect = Some((group, masks));
        Ok(masks)
    }

    /// Warm-and-protect, step 2: every class loses the protected ways and every
    /// thread of `threads` (normally all of this process) leaves the protect group
    /// for the sensitive one, so nothing of kura's can evict the warmed lines (CAT
    /// restricts fills, not hits: they are still read by everyone).
    pub fn protect(&self, threads: &[u32]) -> Result<(), RdtError> {
        let Some((_, masks)) = &self.protect else {
            return Err(RdtError::Unavailable(
                "nothing was warmed: begin_warm comes first".into(),
            ));
        };
        let streaming = self.rdt.read_schemata(&self.streaming)?;
        let narrowed = streaming
            .first()
            .map(|&(_, m)| m & masks.others)
            .filter(|&m| validate_mask(self.rdt.info(), m).is_ok())
            .unwrap_or(masks.others);
        self.rdt.write_schemata(&self.sensitive, masks.others)?;
        self.rdt.write_schemata(&self.streaming, narrowed)?;
        for &tid in threads {
            self.rdt.add_task(&self.sensitive, tid)?;
        }
        Ok(())
    }

    /// Gives the protected ways back: the protect group is removed (its threads
    /// return to the default group) and the sensitive class gets every way again.
    pub fn release(&mut self) -> Result<(), RdtError> {
        if let Some((group, _)) = self.protect.take() {
            self.rdt.remove_group(&group)?;
        }
        let all = self.rdt.info().cbm_mask;
        self.rdt.write_schemata(&self.sensitive, all)
    }

    pub fn protected(&self) -> Option<ProtectMasks> {
        self.protect.as_ref().map(|(_, m)| *m)
    }
}

/// The thread ids of this process (`/proc/self/task`).
pub fn process_threads() -> Result<Vec<u32>, RdtError> {
    // Listing /proc/self/task is not atomic: a thread that exits during the
    // listing shifts the ones after it, and one of them can be skipped (a test
    // once missed its own thread while the harness's other threads ended).
    // Two listings in a row that agree make that unlikely.
    let mut tids = list_threads()?;
    for _ in 0..8 {
        let again = list_threads()?;
        if again == tids {
            break;
        }
        tids = again;
    }
    Ok(tids)
}

/// One listing of /proc/self/task, sorted.
fn list_threads() -> Result<Vec<u32>, RdtError> {
    let dir = Path::new("/proc/self/task");
    let mut tids: Vec<u32> = fs::read_dir(dir)
        .map_err(|e| io(dir, e))?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .collect();
    tids.sort_unstable();
    Ok(tids)
}

/// The calling thread's id, as resctrl's `tasks` files name threads.
pub fn current_tid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

/// What moving a thread between two groups costs: `rounds` round trips (two
/// `tasks` writes each) of the calling thread; the mean time per write.
pub fn measure_switch(partition: &Partition, rounds: u32) -> Result<Duration, RdtError> {
    let tid = current_tid();
    let rounds = rounds.max(1);
    let t0 = Instant::now();
    for _ in 0..rounds {
        partition.enter(tid, Class::Streaming)?;
        partition.enter(tid, Class::Sensitive)?;
    }
    Ok(t0.elapsed() / (2 * rounds))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(mask: u64, min: u32) -> L3Info {
        L3Info {
            cbm_mask: mask,
            min_cbm_bits: min,
            num_closids: 16,
            shareable_bits: 0,
        }
    }

    #[test]
    fn the_object_gets_the_top_ways_it_needs() {
        // 11 ways of 1 MiB: a 5 MiB index (paper 000's micro-benchmark) needs 5.
        let i = info(0x7ff, 2);
        let m = protect_masks(&i, 5 << 20, 11 << 20).unwrap();
        assert_eq!(m.protected, 0x7c0);
        assert_eq!(m.others, 0x03f);
        assert_eq!(m.protected & m.others, 0);
        assert_eq!(m.protected | m.others, i.cbm_mask);
        // a tiny object still gets min_cbm_bits ways
        assert_eq!(protect_masks(&i, 1, 11 << 20).unwrap().protected, 0x600);
        // too big: the others would keep fewer than min_cbm_bits
        let err = protect_masks(&i, 10 << 20, 11 << 20).unwrap_err();
        assert!(err.to_string().contains("leaving fewer"), "{err}");
        // a mask that does not start at bit 0
        let m = protect_masks(&info(0xff0, 1), 1 << 20, 8 << 20).unwrap();
        assert_eq!((m.protected, m.others), (0x800, 0x7f0));
        assert!(protect_masks(&info(0x3, 2), 1, 1 << 20).is_err());
    }

    #[test]
    fn this_process_has_threads() {
        let tids = process_threads().unwrap();
        assert!(tids.contains(&current_tid()));
    }
}
