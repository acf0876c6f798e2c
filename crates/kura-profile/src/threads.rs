//! Threads as the kernel lists them — this process's or another's — the
//! caller's id, a thread's process, and whether one has begun to exit (the
//! profiler opens counters on each).

use crate::ProfileError;

/// The calling thread's id.
pub fn current_tid() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    (unsafe { libc::gettid() }) as u32
}

/// The thread ids listed in a `/proc/.../task` directory.
fn task_ids(dir: std::fs::ReadDir) -> Vec<u32> {
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// Threads of this process, from /proc/self/task.
pub fn own_threads() -> Result<Vec<u32>, ProfileError> {
    let dir = std::fs::read_dir("/proc/self/task")
        .map_err(|e| ProfileError::io("listing /proc/self/task", e))?;
    Ok(task_ids(dir))
}

/// Threads of process `pid`, from /proc (none if it is gone or hidden).
pub fn threads_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(task_ids)
        .unwrap_or_default()
}

/// The process of thread `tid` (its thread group), while it exists.
pub fn process_of(tid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The kernel's flag on a task that has begun to exit (`PF_EXITING`).
const PF_EXITING: u64 = 0x4;

/// Whether thread `tid` of this process is gone or has begun to exit. The
/// kernel refuses counters on an exiting thread with several errors (ESRCH,
/// EINVAL, ENODEV, depending on how far the exit got), so the error alone does
/// not say it; the thread's flags in `/proc` do, and stay set until it is gone.
pub fn thread_ending(tid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{tid}/stat")) else {
        return true;
    };
    // The command name, in parentheses, may hold spaces: fields follow the last ')'.
    let Some(after_name) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
        return false;
    };
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let zombie = matches!(fields.first(), Some(&"Z") | Some(&"X"));
    let flags = fields
        .get(6)
        .and_then(|f| f.parse::<u64>().ok())
        .unwrap_or(0);
    zombie || flags & PF_EXITING != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_thread_is_not_ending_and_a_joined_one_is() {
        let me = current_tid();
        assert!(!thread_ending(me));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(current_tid()).unwrap())
            .join()
            .unwrap();
        assert!(thread_ending(rx.recv().unwrap()));
    }
}
