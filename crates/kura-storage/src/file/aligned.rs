//! Page-aligned heap buffers, as O_DIRECT requires for every read and write.
//! Large buffers (the buffer pool's frames) come straight from an anonymous
//! mmap: zeroed lazily by the kernel, so a 6 GiB pool costs nothing until used
//! (the allocator's aligned zeroing would touch every byte up front).

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Alignment of every I/O buffer: the usual logical block size of NVMe and SSDs.
pub const IO_ALIGN: usize = 4096;

/// Buffers at least this large are mapped rather than allocated.
const MMAP_THRESHOLD: usize = 1 << 20;

/// A zeroed, 4 KiB-aligned byte buffer.
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
    mapped: bool,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    pub fn new(len: usize) -> Self {
        let len = len.max(IO_ALIGN).div_ceil(IO_ALIGN) * IO_ALIGN;
        if len >= MMAP_THRESHOLD {
            // SAFETY: an anonymous private mapping with no address hint.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p != libc::MAP_FAILED {
                return AlignedBuf {
                    ptr: p.cast(),
                    len,
                    mapped: true,
                };
            }
        }
        let layout = Layout::from_size_align(len, IO_ALIGN).expect("valid layout");
        // SAFETY: layout has non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf {
            ptr,
            len,
            mapped: false,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }
}

impl std::ops::Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes for the buffer's lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl std::ops::DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees exclusivity.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: mapped in `new` with exactly this length.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
            return;
        }
        let layout = Layout::from_size_align(self.len, IO_ALIGN).expect("valid layout");
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, layout) }
    }
}
