//! Resident pages (paper 001): pages pinned in the pool for the whole run, and the frames
//! left for queries.

use super::*;

impl BufferManager {
    /// Frames held resident right now.
    pub fn resident_frames(&self) -> usize {
        self.core.lock().resident.len()
    }

    /// Frames queries may use: all but those held resident.
    pub fn available_frames(&self) -> usize {
        self.core.frames.len() - self.core.lock().resident.len()
    }

    /// Holds `pages` in the pool until [`BufferManager::release_resident`]:
    /// each is fixed (read if needed, in the order given) and keeps one pin, so
    /// no policy can evict it. Pages already resident stay so. Refused, before
    /// anything is read, when the resident pages would leave fewer than
    /// [`frames_reserved_for_queries`] frames. Returns the frames now resident.
    pub fn make_resident(self: &Arc<Self>, pages: &[PageId]) -> StorageResult<usize> {
        let core = &*self.core;
        let frames = core.frames.len();
        let reserve = frames_reserved_for_queries(frames);
        let already: std::collections::HashSet<PageId> = {
            let inner = core.lock();
            inner
                .resident
                .iter()
                .map(|&f| core.frames[f as usize].page.load(Ordering::Acquire))
                .collect()
        };
        let mut wanted: Vec<PageId> = Vec::with_capacity(pages.len());
        let mut seen = std::collections::HashSet::new();
        for &p in pages {
            if !already.contains(&p) && seen.insert(p) {
                wanted.push(p);
            }
        }
        let total = already.len() + wanted.len();
        if total > frames - reserve {
            return Err(StorageError::ResidentTooLarge {
                pages: total as u64,
                frames,
                reserve,
            });
        }
        for page in wanted {
            let guard = self.fix(page)?;
            if guard.private.is_some() {
                // A private copy holds no frame; nothing to keep.
                continue;
            }
            let mut inner = core.lock();
            core.drain_hits(&mut inner);
            let frame = &core.frames[guard.frame as usize];
            if kind(frame.state.load(Ordering::Acquire)) == READY
                && !frame.resident.swap(true, Ordering::AcqRel)
            {
                // The guard's pin keeps the frame from being latched meanwhile.
                frame.state.fetch_add(1, Ordering::AcqRel);
                inner.policy.remove(page);
                inner.resident.push(guard.frame);
            }
            drop(inner);
            drop(guard);
        }
        Ok(self.resident_frames())
    }

    /// Lets every resident page be evicted again (they stay cached until then).
    pub fn release_resident(&self) {
        let core = &*self.core;
        let mut inner = core.lock();
        core.drain_hits(&mut inner);
        let frames = std::mem::take(&mut inner.resident);
        for f in frames {
            let frame = &core.frames[f as usize];
            if !frame.resident.swap(false, Ordering::AcqRel) {
                continue;
            }
            if kind(frame.state.load(Ordering::Acquire)) == READY {
                let page = frame.page.load(Ordering::Acquire);
                // Room is guaranteed: resident frames were outside the policy.
                inner.policy.insert(page);
            }
            core.unpin_locked(&mut inner, f);
        }
    }

    /// Pages resident right now.
    pub fn resident_pages(&self) -> usize {
        let _inner = self.core.lock();
        self.core.resident_count()
    }
}

impl Core {
    pub(super) fn resident_count(&self) -> usize {
        self.frames
            .iter()
            .filter(|fr| matches!(kind(fr.state.load(Ordering::Acquire)), READY | LOADING))
            .count()
    }
}
