//! What `/proc` says of another process while it runs: the code it has mapped
//! (to name its instructions after it ends) and its command line.

use crate::simulated::child::Mapping;

/// Adds the executable file mappings of `seen` (a parsed `/proc/PID/maps`)
/// that `maps` does not hold yet; Valgrind's own files are left out.
pub(crate) fn merge_code_maps(seen: &[Mapping], maps: &mut Vec<Mapping>) {
    for m in seen {
        if m.path.starts_with('/')
            && m.perms.contains('x')
            && !m.path.contains("/valgrind/")
            && !maps.iter().any(|k| k.start == m.start && k.path == m.path)
        {
            maps.push(m.clone());
        }
    }
}

/// Process `pid`'s command line, words joined by spaces (empty once it is gone).
pub(crate) fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| {
            String::from_utf8_lossy(&c)
                .split('\0')
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}
