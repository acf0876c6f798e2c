//! Ctrl-C seen without the GIL. A RecordBatchReader's consumer reads with the GIL released
//! (pyarrow's `read_next_batch`, or a consumer on a thread of its own), so the reader cannot ask
//! Python whether a signal arrived. While readers exist, kura's own SIGINT handler counts the
//! signal and then calls the handler that was installed before it (Python's), so Python still
//! raises KeyboardInterrupt as usual; a reader that sees the count change cancels its query.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// SIGINTs seen by kura's handler since the process started.
static SEEN: AtomicU64 = AtomicU64::new(0);

/// The disposition kura's handler chains to: 0 when none (not installed).
static PREVIOUS_HANDLER: AtomicUsize = AtomicUsize::new(0);
/// Whether the previous disposition takes three arguments (`SA_SIGINFO`).
static PREVIOUS_SIGINFO: AtomicUsize = AtomicUsize::new(0);

/// Installs and checks under one lock, so two readers made at once install once.
static INSTALL: Mutex<()> = Mutex::new(());

extern "C" fn on_sigint(sig: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // Async-signal-safe: an atomic add and a call through a saved pointer.
    SEEN.fetch_add(1, Ordering::SeqCst);
    let previous = PREVIOUS_HANDLER.load(Ordering::SeqCst);
    if previous == 0 {
        return;
    }
    if PREVIOUS_SIGINFO.load(Ordering::SeqCst) != 0 {
        // SAFETY: the previous action's sa_sigaction, saved when kura's handler was installed.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(previous) };
        f(sig, info, context);
    } else {
        // SAFETY: the previous action's sa_handler, saved when kura's handler was installed.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(previous) };
        f(sig);
    }
}

/// A mark taken when a reader starts waiting: [`Watch::fired`] says whether Ctrl-C came since.
#[derive(Clone, Copy)]
pub struct Watch {
    seen: u64,
    active: bool,
}

impl Watch {
    /// Makes sure kura's handler is in place (unless SIGINT is ignored or left to its default,
    /// which kura respects: then Ctrl-C is not watched) and marks the present count.
    pub fn start() -> Watch {
        let _guard = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
        let active = ensure_installed();
        Watch {
            seen: SEEN.load(Ordering::SeqCst),
            active,
        }
    }

    /// Whether a SIGINT arrived since the mark.
    pub fn fired(&self) -> bool {
        self.active && SEEN.load(Ordering::SeqCst) != self.seen
    }
}

/// Installs kura's handler in front of the present one if it is not already there. Python
/// may have replaced it since (`signal.signal`), so the present disposition is read each time.
fn ensure_installed() -> bool {
    // SAFETY: sigaction with a null new action only reads the present disposition.
    let mut present: libc::sigaction = unsafe { std::mem::zeroed() };
    if unsafe { libc::sigaction(libc::SIGINT, std::ptr::null(), &mut present) } != 0 {
        return false;
    }
    let ours = on_sigint as *const () as usize;
    if present.sa_sigaction == ours {
        return true;
    }
    if present.sa_sigaction == libc::SIG_DFL || present.sa_sigaction == libc::SIG_IGN {
        return false;
    }
    PREVIOUS_HANDLER.store(present.sa_sigaction, Ordering::SeqCst);
    PREVIOUS_SIGINFO.store(
        usize::from(present.sa_flags & libc::SA_SIGINFO != 0),
        Ordering::SeqCst,
    );
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = ours;
    // The previous action's mask and flags (Python's: none), with SA_SIGINFO for our signature.
    action.sa_mask = present.sa_mask;
    action.sa_flags = present.sa_flags | libc::SA_SIGINFO;
    // SAFETY: a valid action whose handler only does async-signal-safe work.
    unsafe { libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut()) == 0 }
}
