//! Per-worker memory pool for task data (paper 003: "each thread allocates from its
//! own pool").
//!
//! What is pooled is the memory tasks do I/O into: aligned page buffers. Each
//! worker keeps free lists by power-of-two size class; a buffer taken on a worker
//! is first touched by that worker's thread (so, under Linux's first-touch policy,
//! it lives on that worker's NUMA node) and returns to the same worker's lists when
//! dropped, wherever it is dropped. Reused buffers are not cleared: a read
//! overwrites them.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::io::buf::{alloc_raw, free_raw, round_up, AlignedBuf, ReturnTo, IO_ALIGN};

/// Size classes 4 KiB, 8 KiB, ... 8 MiB; larger buffers are never cached.
const CLASSES: usize = 12;

struct FreeLists {
    lists: [Vec<NonNull<u8>>; CLASSES],
}

// SAFETY: the pointers are owned, unused allocations.
unsafe impl Send for FreeLists {}

/// The shared part of a pool, referenced by every buffer taken from it.
pub struct PoolShared {
    free: Mutex<FreeLists>,
    cached_bytes: AtomicUsize,
    max_cached_bytes: usize,
    reused: AtomicU64,
    allocated: AtomicU64,
}

/// One worker's buffer pool.
#[derive(Clone)]
pub struct BufferPool {
    shared: Arc<PoolShared>,
}

fn class_of(cap: usize) -> (usize, usize) {
    let pages = cap / IO_ALIGN;
    let class_pages = pages.next_power_of_two();
    (
        class_pages.trailing_zeros() as usize,
        class_pages * IO_ALIGN,
    )
}

impl BufferPool {
    /// A pool keeping at most `max_cached_bytes` of freed buffers.
    pub fn new(max_cached_bytes: usize) -> BufferPool {
        BufferPool {
            shared: Arc::new(PoolShared {
                free: Mutex::new(FreeLists {
                    lists: Default::default(),
                }),
                cached_bytes: AtomicUsize::new(0),
                max_cached_bytes,
                reused: AtomicU64::new(0),
                allocated: AtomicU64::new(0),
            }),
        }
    }

    /// A buffer of `len` usable bytes; its capacity is rounded up to the size class.
    pub fn take(&self, len: usize) -> AlignedBuf {
        let (class, cap) = class_of(round_up(len));
        if class >= CLASSES {
            self.shared.allocated.fetch_add(1, Ordering::Relaxed);
            return AlignedBuf::new(len);
        }
        let reused = self
            .shared
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lists[class]
            .pop();
        let ptr = match reused {
            Some(ptr) => {
                self.shared.cached_bytes.fetch_sub(cap, Ordering::Relaxed);
                self.shared.reused.fetch_add(1, Ordering::Relaxed);
                ptr
            }
            None => {
                self.shared.allocated.fetch_add(1, Ordering::Relaxed);
                alloc_raw(cap)
            }
        };
        // Named for the memory profiler while a task holds it.
        kura_common::memobj::register(ptr.as_ptr() as usize, cap, || {
            kura_common::memobj::Object::new(
                kura_common::memobj::ObjectKind::ReadBuffer,
                "worker I/O buffer pool",
            )
        });
        AlignedBuf::from_pool(ptr, len, cap, self.shared.clone())
    }

    /// (buffers served from the free lists, buffers freshly allocated).
    pub fn counts(&self) -> (u64, u64) {
        (
            self.shared.reused.load(Ordering::Relaxed),
            self.shared.allocated.load(Ordering::Relaxed),
        )
    }

    /// Bytes currently kept for reuse.
    pub fn cached_bytes(&self) -> usize {
        self.shared.cached_bytes.load(Ordering::Relaxed)
    }
}

impl ReturnTo for PoolShared {
    fn give_back(&self, ptr: NonNull<u8>, cap: usize) {
        kura_common::memobj::unregister(ptr.as_ptr() as usize, cap);
        let (class, class_cap) = class_of(cap);
        if class < CLASSES
            && class_cap == cap
            && self.cached_bytes.load(Ordering::Relaxed) + cap <= self.max_cached_bytes
        {
            self.cached_bytes.fetch_add(cap, Ordering::Relaxed);
            self.free.lock().unwrap_or_else(|e| e.into_inner()).lists[class].push(ptr);
        } else {
            // SAFETY: every pooled buffer was allocated by alloc_raw(cap).
            unsafe { free_raw(ptr, cap) };
        }
    }
}

impl Drop for PoolShared {
    fn drop(&mut self) {
        let free = self.free.get_mut().unwrap_or_else(|e| e.into_inner());
        for (class, list) in free.lists.iter_mut().enumerate() {
            let cap = (1usize << class) * IO_ALIGN;
            for ptr in list.drain(..) {
                // SAFETY: cached pointers were allocated by alloc_raw(cap) of their class.
                unsafe { free_raw(ptr, cap) };
            }
        }
    }
}
