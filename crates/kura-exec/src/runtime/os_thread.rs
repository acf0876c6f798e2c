//! Operating-system thread support: pinning a thread to a core, per-thread CPU
//! clocks (for the timeline's busy %), and the eventfds that wake sleeping workers.

use std::io;
use std::os::unix::io::RawFd;

/// The cores this process may run on, in ascending order.
pub(crate) fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&cpu| libc::CPU_ISSET(cpu, &set))
            .collect()
    }
}

/// Pins the calling thread to `cpu`.
pub(crate) fn pin_current_thread(cpu: usize) -> io::Result<()> {
    // SAFETY: as above; sched_setaffinity reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Marks the absence of a clock.
pub(crate) const NO_CLOCK: i64 = i64::MIN;

/// The CPU-time clock of the calling thread, readable from other threads
/// while this one lives; [`NO_CLOCK`] when unavailable.
pub(crate) fn current_thread_cpu_clock() -> i64 {
    let mut id: libc::clockid_t = 0;
    // SAFETY: pthread_self is always valid; id is written on success.
    if unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) } == 0 {
        i64::from(id)
    } else {
        NO_CLOCK
    }
}

/// Reads a clock in nanoseconds.
pub(crate) fn clock_ns(id: i64) -> Option<u64> {
    // Thread CPU clock ids are negative numbers, so "none" is a sentinel.
    if id == NO_CLOCK {
        return None;
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    if unsafe { libc::clock_gettime(id as libc::clockid_t, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// A new eventfd (counter semantics, close-on-exec).
pub(crate) fn eventfd() -> io::Result<RawFd> {
    // SAFETY: plain system call.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd)
    }
}

/// Signals an eventfd.
pub(crate) fn eventfd_signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a valid u64. A failure (counter overflow)
    // means a wake is already pending, which is all we need.
    unsafe {
        libc::write(fd, (&one as *const u64).cast(), 8);
    }
}

/// Blocks until an eventfd is signalled, then resets it.
pub(crate) fn eventfd_wait(fd: RawFd) {
    let mut value: u64 = 0;
    // SAFETY: reads 8 bytes into a valid u64; EINTR just returns early.
    unsafe {
        libc::read(fd, (&mut value as *mut u64).cast(), 8);
    }
}

/// Closes a descriptor.
pub(crate) fn close(fd: RawFd) {
    // SAFETY: the caller owns fd.
    unsafe {
        libc::close(fd);
    }
}
