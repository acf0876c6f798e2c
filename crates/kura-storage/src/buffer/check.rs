//! A consistency check of the pool's frames, page table and policy, for tests.

use super::*;

impl BufferManager {
    /// Checks the pool's bookkeeping (tests and stress runs, with no fix in
    /// progress): every frame is free and on the free list once, or holds a
    /// page listed in the page table (and, unless resident, in the policy), or
    /// is detached and still pinned; no frame is latched.
    pub fn check_consistency(&self) -> Result<(), String> {
        let core = &*self.core;
        let mut inner = core.lock();
        core.drain_hits(&mut inner);
        core.reclaim_detached(&mut inner);
        let mut on_free = vec![false; core.frames.len()];
        for &f in &inner.free {
            if std::mem::replace(&mut on_free[f as usize], true) {
                return Err(format!("frame {f} is on the free list twice"));
            }
        }
        let mut in_policy = 0;
        for (f, frame) in core.frames.iter().enumerate() {
            let st = frame.state.load(Ordering::Acquire);
            let page = frame.page.load(Ordering::Acquire);
            if st & LATCH != 0 {
                return Err(format!("frame {f} is latched"));
            }
            let resident = frame.resident.load(Ordering::Acquire);
            match kind(st) {
                FREE if !on_free[f] => return Err(format!("free frame {f} is lost")),
                FREE => {}
                _ if on_free[f] => return Err(format!("frame {f} is in use and on the free list")),
                READY | LOADING => {
                    if core.table.get(page) != Some(f as u32) {
                        return Err(format!("frame {f} holds page {page}, not listed there"));
                    }
                    if resident != inner.resident.contains(&(f as u32)) {
                        return Err(format!("frame {f}: resident flag and list disagree"));
                    }
                    if !resident {
                        if !inner.policy.contains(page) {
                            return Err(format!("page {page} (frame {f}) is not in the policy"));
                        }
                        in_policy += 1;
                    }
                }
                _ => {
                    if pins(st) == 0 {
                        return Err(format!("detached frame {f} has no pin and is lost"));
                    }
                }
            }
        }
        if inner.policy.len() != in_policy {
            return Err(format!(
                "the policy holds {} pages, the frames {in_policy}",
                inner.policy.len()
            ));
        }
        Ok(())
    }
}
