//! Detection of resctrl and an open handle on it: kura's groups (named `kura-<pid>-…`,
//! removed when the handle is dropped and, if a crashed process left them, at the next
//! start), schemata writes checked before they reach the kernel, tasks moved in and
//! out, LLC occupancy read — all under an exclusive lock on the resctrl root.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::{io, RdtError};
use crate::group::{remove_dir, write_control, Group, WriteMode};
use crate::info::{validate_mask, L3Info};
use crate::lock::RootLock;

/// Where Linux mounts resctrl.
pub const DEFAULT_ROOT: &str = "/sys/fs/resctrl";
/// Every group kura creates is named `kura-<pid>-<label>`.
pub const GROUP_PREFIX: &str = "kura-";

/// How long [`Resctrl::open`] waits for another process's lock.
const LOCK_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detection {
    Available(L3Info),
    /// Why not, in one line.
    Absent(String),
}

impl Detection {
    /// One line for the user.
    pub fn summary(&self) -> String {
        match self {
            Detection::Available(i) => format!(
                "resctrl: L3 cache allocation with {} ways (cbm_mask {:#x}), {} classes of service, min {} ways per mask",
                i.ways(),
                i.cbm_mask,
                i.num_closids,
                i.min_cbm_bits
            ),
            Detection::Absent(why) => why.clone(),
        }
    }
}

/// Whether resctrl with L3 allocation is usable at `root`.
pub fn detect(root: &Path) -> Detection {
    let shown = root.display();
    if !root.join("info").is_dir() {
        return Detection::Absent(format!(
            "resctrl is not mounted at {shown} (no Intel RDT / AMD PQoS here, or not mounted): cache partitioning can only be simulated"
        ));
    }
    if !root.join("info").join("L3").is_dir() {
        return Detection::Absent(format!(
            "resctrl at {shown} offers no L3 cache allocation (no info/L3): cache partitioning can only be simulated"
        ));
    }
    match L3Info::read(root) {
        Ok(info) => Detection::Available(info),
        Err(e) => Detection::Absent(format!("resctrl at {shown} is unusable: {e}")),
    }
}

/// A locked handle on a resctrl mount. Dropping it removes every group it created
/// (their tasks return to the default group), so kura leaves nothing behind.
pub struct Resctrl {
    root: PathBuf,
    info: L3Info,
    groups: Vec<Group>,
    stale_removed: Vec<String>,
    _lock: RootLock,
}

impl Resctrl {
    /// Locks `root`, reads `info/L3` and removes groups left by dead kura processes.
    pub fn open(root: &Path) -> Result<Self, RdtError> {
        Self::open_with_timeout(root, LOCK_TIMEOUT)
    }

    pub fn open_with_timeout(root: &Path, lock_timeout: Duration) -> Result<Self, RdtError> {
        if let Detection::Absent(why) = detect(root) {
            return Err(RdtError::Unavailable(why));
        }
        let lock = RootLock::acquire(root, lock_timeout)?;
        let info = L3Info::read(root)?;
        let mut handle = Self {
            root: root.to_path_buf(),
            info,
            groups: Vec::new(),
            stale_removed: Vec::new(),
            _lock: lock,
        };
        handle.stale_removed = handle.remove_stale_groups()?;
        Ok(handle)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn info(&self) -> &L3Info {
        &self.info
    }

    /// Groups of crashed kura processes removed when it opened.
    pub fn stale_removed(&self) -> &[String] {
        &self.stale_removed
    }

    /// Groups this handle created and has not removed.
    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// L3 cache domain ids, from the `L3:` line of the default group's schemata.
    pub fn domains(&self) -> Result<Vec<u32>, RdtError> {
        let path = self.root.join("schemata");
        let text = fs::read_to_string(&path).map_err(|e| io(&path, e))?;
        let parse_err = || RdtError::Parse {
            path: path.clone(),
            content: text.trim().to_string(),
        };
        let line = text
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix("L3:"))
            .ok_or_else(parse_err)?;
        line.split(';')
            .map(|d| {
                d.split_once('=')
                    .and_then(|(id, _)| id.trim().parse().ok())
                    .ok_or_else(parse_err)
            })
            .collect()
    }

    /// Creates group `kura-<pid>-<label>`.
    pub fn create_group(&mut self, label: &str) -> Result<Group, RdtError> {
        if label.is_empty()
            || !label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(RdtError::Unavailable(format!(
                "group label '{label}' must be letters, digits, '-' or '_'"
            )));
        }
        let name = format!("{GROUP_PREFIX}{}-{label}", std::process::id());
        let path = self.root.join(&name);
        if let Err(e) = fs::create_dir(&path) {
            return Err(match e.raw_os_error() {
                Some(libc::ENOSPC) => RdtError::Unavailable(format!(
                    "{}: no free class of service (num_closids = {}, the default group included)",
                    path.display(),
                    self.info.num_closids
                )),
                _ => io(&path, e),
            });
        }
        let group = Group { name, path };
        self.groups.push(group.clone());
        Ok(group)
    }

    /// Removes one of this handle's groups (its tasks return to the default group).
    pub fn remove_group(&mut self, group: &Group) -> Result<(), RdtError> {
        remove_dir(&group.path)?;
        self.groups.retain(|g| g != group);
        Ok(())
    }

    /// Sets the L3 way mask of `group` on every cache domain. The mask is checked
    /// first, as the kernel would; a write the kernel still refuses reports
    /// `info/last_cmd_status`.
    pub fn write_schemata(&self, group: &Group, mask: u64) -> Result<(), RdtError> {
        let domains = self.domains()?;
        let per_domain: Vec<(u32, u64)> = domains.into_iter().map(|d| (d, mask)).collect();
        self.write_schemata_per_domain(group, &per_domain)
    }

    pub fn write_schemata_per_domain(
        &self,
        group: &Group,
        masks: &[(u32, u64)],
    ) -> Result<(), RdtError> {
        for &(_, mask) in masks {
            validate_mask(&self.info, mask)?;
        }
        let line = masks
            .iter()
            .map(|(d, m)| format!("{d}={m:x}"))
            .collect::<Vec<_>>()
            .join(";");
        write_control(
            &self.root,
            &group.path.join("schemata"),
            &format!("L3:{line}\n"),
            WriteMode::Replace,
        )
    }

    /// The L3 masks of `group` per domain, as the kernel reports them.
    pub fn read_schemata(&self, group: &Group) -> Result<Vec<(u32, u64)>, RdtError> {
        let path = group.path.join("schemata");
        let text = fs::read_to_string(&path).map_err(|e| io(&path, e))?;
        let bad = || RdtError::Parse {
            path: path.clone(),
            content: text.trim().to_string(),
        };
        let Some(line) = text
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix("L3:"))
        else {
            return Err(bad());
        };
        line.split(';')
            .map(|d| {
                let (id, mask) = d.split_once('=').ok_or_else(bad)?;
                Ok((
                    id.trim().parse().map_err(|_| bad())?,
                    u64::from_str_radix(mask.trim(), 16).map_err(|_| bad())?,
                ))
            })
            .collect()
    }

    /// Moves thread `tid` into `group`.
    pub fn add_task(&self, group: &Group, tid: u32) -> Result<(), RdtError> {
        write_control(
            &self.root,
            &group.path.join("tasks"),
            &format!("{tid}\n"),
            WriteMode::Append,
        )
    }

    /// Moves thread `tid` back to the default group.
    pub fn remove_task(&self, tid: u32) -> Result<(), RdtError> {
        write_control(
            &self.root,
            &self.root.join("tasks"),
            &format!("{tid}\n"),
            WriteMode::Append,
        )
    }

    /// Thread ids in `group`.
    pub fn tasks(&self, group: &Group) -> Result<Vec<u32>, RdtError> {
        let path = group.path.join("tasks");
        let text = fs::read_to_string(&path).map_err(|e| io(&path, e))?;
        text.split_whitespace()
            .map(|t| {
                t.parse().map_err(|_| RdtError::Parse {
                    path: path.clone(),
                    content: t.to_string(),
                })
            })
            .collect()
    }

    /// LLC occupancy in bytes per monitoring domain (`mon_data/mon_L3_*`), sorted.
    pub fn llc_occupancy(&self, group: &Group) -> Result<Vec<(String, u64)>, RdtError> {
        let dir = group.path.join("mon_data");
        let entries = fs::read_dir(&dir).map_err(|e| io(&dir, e))?;
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| io(&dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("mon_L3_") {
                continue;
            }
            let path = entry.path().join("llc_occupancy");
            let text = fs::read_to_string(&path).map_err(|e| io(&path, e))?;
            let bytes = text.trim().parse().map_err(|_| RdtError::Parse {
                path: path.clone(),
                content: text.trim().to_string(),
            })?;
            out.push((name, bytes));
        }
        if out.is_empty() {
            return Err(RdtError::Unavailable(format!(
                "{}: no LLC occupancy monitoring (no mon_L3_* domains)",
                dir.display()
            )));
        }
        out.sort();
        Ok(out)
    }

    /// Removes `kura-<pid>-*` groups whose process no longer exists.
    fn remove_stale_groups(&self) -> Result<Vec<String>, RdtError> {
        let entries = fs::read_dir(&self.root).map_err(|e| io(&self.root, e))?;
        let mut removed = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix(GROUP_PREFIX)
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            if pid != std::process::id() && !process_alive(pid) && entry.path().is_dir() {
                remove_dir(&entry.path())?;
                removed.push(name);
            }
        }
        removed.sort();
        Ok(removed)
    }
}

fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

impl Drop for Resctrl {
    fn drop(&mut self) {
        for group in std::mem::take(&mut self.groups) {
            // Nothing better to do with an error while dropping; the next start
            // removes what is left (the pid in the name is then dead).
            let _ = remove_dir(&group.path);
        }
    }
}
