//! Page-aligned I/O buffers, usable with O_DIRECT reads.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Arc;

/// Where a pooled buffer goes when it is dropped (the worker's pool). A trait,
/// so buffers need not know the pool that hands them out.
pub(crate) trait ReturnTo: Send + Sync {
    /// Takes back memory that `alloc_raw(cap)` allocated.
    fn give_back(&self, ptr: NonNull<u8>, cap: usize);
}

/// Alignment of every I/O buffer: O_DIRECT needs the memory, the offset and
/// the length aligned to the device's logical block; 4 KiB covers all
/// common devices.
pub const IO_ALIGN: usize = 4096;

/// A heap buffer aligned to [`IO_ALIGN`] whose capacity is a multiple of it.
/// When it came from a worker's pool it returns there when dropped.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
    pool: Option<Arc<dyn ReturnTo>>,
}

// SAFETY: the buffer exclusively owns its allocation, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for AlignedBuf {}

pub(crate) fn round_up(len: usize) -> usize {
    len.max(1).div_ceil(IO_ALIGN) * IO_ALIGN
}

pub(crate) fn layout(cap: usize) -> Layout {
    Layout::from_size_align(cap, IO_ALIGN).expect("I/O buffer size overflows a Layout")
}

/// Allocates `cap` zeroed, aligned bytes (`cap` a multiple of IO_ALIGN).
pub(crate) fn alloc_raw(cap: usize) -> NonNull<u8> {
    let layout = layout(cap);
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe { alloc::alloc_zeroed(layout) };
    NonNull::new(ptr).unwrap_or_else(|| alloc::handle_alloc_error(layout))
}

/// Frees memory obtained from `alloc_raw(cap)`.
///
/// # Safety
/// `ptr` must come from `alloc_raw(cap)` and not be used afterwards.
pub(crate) unsafe fn free_raw(ptr: NonNull<u8>, cap: usize) {
    alloc::dealloc(ptr.as_ptr(), layout(cap));
}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes from the global allocator.
    pub fn new(len: usize) -> AlignedBuf {
        let cap = round_up(len);
        AlignedBuf {
            ptr: alloc_raw(cap),
            len,
            cap,
            pool: None,
        }
    }

    pub(crate) fn from_pool(
        ptr: NonNull<u8>,
        len: usize,
        cap: usize,
        pool: Arc<dyn ReturnTo>,
    ) -> Self {
        AlignedBuf {
            ptr,
            len,
            cap,
            pool: Some(pool),
        }
    }

    /// Usable length (what a read fills).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the usable length is zero.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Allocated bytes (a multiple of [`IO_ALIGN`]).
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Changes the usable length, up to the capacity.
    pub fn set_len(&mut self, len: usize) {
        assert!(len <= self.cap, "AlignedBuf::set_len beyond capacity");
        self.len = len;
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for cap >= len initialised (zeroed at allocation) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and we hold the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        match self.pool.take() {
            Some(pool) => pool.give_back(self.ptr, self.cap),
            // SAFETY: allocated by alloc_raw(self.cap) in `new`.
            None => unsafe { free_raw(self.ptr, self.cap) },
        }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("cap", &self.cap)
            .field("pooled", &self.pool.is_some())
            .finish()
    }
}
