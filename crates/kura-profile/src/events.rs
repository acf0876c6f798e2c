//! The events kura profiles — their names on the command line, whether they need a
//! hardware PMU — and the one check of whether this machine has one.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ProfileError;

/// A countable or sampleable event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Event {
    Cycles,
    Instructions,
    CacheReferences,
    CacheMisses,
    L1dReadMisses,
    LlcMisses,
    DtlbMisses,
    BranchMisses,
    /// Precise load samples: Intel PEBS load latency or AMD IBS op.
    MemLoads,
    TaskClock,
    CpuClock,
    PageFaults,
    ContextSwitches,
    CpuMigrations,
}

impl Event {
    pub const ALL: [Event; 14] = [
        Event::Cycles,
        Event::Instructions,
        Event::CacheReferences,
        Event::CacheMisses,
        Event::L1dReadMisses,
        Event::LlcMisses,
        Event::DtlbMisses,
        Event::BranchMisses,
        Event::MemLoads,
        Event::TaskClock,
        Event::CpuClock,
        Event::PageFaults,
        Event::ContextSwitches,
        Event::CpuMigrations,
    ];

    /// The counter group of counting mode where the CPU has a PMU.
    pub const HARDWARE_GROUP: [Event; 8] = [
        Event::Cycles,
        Event::Instructions,
        Event::CacheReferences,
        Event::CacheMisses,
        Event::L1dReadMisses,
        Event::LlcMisses,
        Event::DtlbMisses,
        Event::BranchMisses,
    ];

    /// The counter group where it has none (every virtual machine without PMU
    /// pass-through): the kernel's software events still count.
    pub const SOFTWARE_GROUP: [Event; 4] = [
        Event::TaskClock,
        Event::PageFaults,
        Event::ContextSwitches,
        Event::CpuMigrations,
    ];

    /// The name on the command line and in reports (perf's names).
    pub fn name(self) -> &'static str {
        match self {
            Event::Cycles => "cycles",
            Event::Instructions => "instructions",
            Event::CacheReferences => "cache-references",
            Event::CacheMisses => "cache-misses",
            Event::L1dReadMisses => "L1-dcache-load-misses",
            Event::LlcMisses => "LLC-load-misses",
            Event::DtlbMisses => "dTLB-load-misses",
            Event::BranchMisses => "branch-misses",
            Event::MemLoads => "mem-loads",
            Event::TaskClock => "task-clock",
            Event::CpuClock => "cpu-clock",
            Event::PageFaults => "page-faults",
            Event::ContextSwitches => "context-switches",
            Event::CpuMigrations => "cpu-migrations",
        }
    }

    /// Parses a name (case-insensitive; `-` and `_` alike); the error lists the names.
    pub fn parse(name: &str) -> Result<Event, ProfileError> {
        let want = name.trim().to_ascii_lowercase().replace('_', "-");
        Event::ALL
            .into_iter()
            .find(|e| e.name().to_ascii_lowercase() == want)
            .ok_or_else(|| {
                let names: Vec<&str> = Event::ALL.iter().map(|e| e.name()).collect();
                ProfileError::Invalid(format!(
                    "unknown event '{name}' (known: {})",
                    names.join(", ")
                ))
            })
    }

    /// Whether counting it needs the CPU's performance monitoring unit.
    pub fn is_hardware(self) -> bool {
        !matches!(
            self,
            Event::TaskClock
                | Event::CpuClock
                | Event::PageFaults
                | Event::ContextSwitches
                | Event::CpuMigrations
        )
    }

    /// Whether its count is a number of nanoseconds (the clocks).
    pub fn is_time(self) -> bool {
        matches!(self, Event::TaskClock | Event::CpuClock)
    }
}

/// What the machine offers, read from sysfs (`/sys` in production, a directory
/// laid out like it in tests).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pmu {
    /// A core PMU (`cpu`, or `cpu_core` on hybrid Intel parts) exists.
    pub hardware: bool,
    /// AMD's instruction-based sampling PMU for ops, with its perf type.
    pub ibs_op: Option<u32>,
}

impl Pmu {
    /// Reads `<sys>/bus/event_source/devices`.
    pub fn detect(sys: &Path) -> Pmu {
        let devices = sys.join("bus/event_source/devices");
        let hardware = ["cpu", "cpu_core", "armv8_pmuv3_0"]
            .iter()
            .any(|d| devices.join(d).exists());
        let ibs_op = std::fs::read_to_string(devices.join("ibs_op/type"))
            .ok()
            .and_then(|t| t.trim().parse().ok());
        Pmu { hardware, ibs_op }
    }

    /// This machine's PMU.
    pub fn this_machine() -> Pmu {
        Pmu::detect(Path::new("/sys"))
    }

    /// The one line saying what the profiler does without a PMU; `None` with one.
    pub fn note(&self) -> Option<String> {
        (!self.hardware).then(|| {
            "no hardware PMU here (no cpu device in /sys/bus/event_source/devices): \
             counting software events (task-clock, page faults, context switches) and \
             sampling cpu-clock"
                .to_string()
        })
    }

    /// The counter group counting mode opens.
    pub fn counting_group(&self) -> Vec<Event> {
        if self.hardware {
            Event::HARDWARE_GROUP.to_vec()
        } else {
            Event::SOFTWARE_GROUP.to_vec()
        }
    }

    /// The event sampling uses when none is named: precise loads where the CPU
    /// samples them, else cycles, else the software clock.
    pub fn default_sample_event(&self) -> Event {
        if self.ibs_op.is_some() {
            Event::MemLoads
        } else if self.hardware {
            Event::Cycles
        } else {
            Event::CpuClock
        }
    }

    /// Refuses a hardware event on a machine without PMU, in one line.
    pub fn check(&self, event: Event) -> Result<(), ProfileError> {
        if event == Event::MemLoads && !self.hardware && self.ibs_op.is_none() {
            return Err(ProfileError::Unavailable(
                "mem-loads needs Intel PEBS or AMD IBS; this machine has neither (no hardware PMU)"
                    .into(),
            ));
        }
        if event.is_hardware() && !self.hardware {
            return Err(ProfileError::Unavailable(format!(
                "event {} needs a hardware PMU, and this machine has none; use cpu-clock",
                event.name()
            )));
        }
        Ok(())
    }
}

/// Whether the kernel lets this process use perf events at all
/// (`kernel.perf_event_paranoid` 3 and above, as some distributions set it,
/// forbids every use by unprivileged processes).
pub fn check_perf_allowed(proc_sys: &Path, privileged: bool) -> Result<(), ProfileError> {
    let level = std::fs::read_to_string(proc_sys.join("kernel/perf_event_paranoid"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    match level {
        None => Err(ProfileError::Unavailable(
            "perf events are not available (no kernel/perf_event_paranoid: kernel built without perf events?)".into(),
        )),
        Some(l) if l >= 3 && !privileged => Err(ProfileError::Unavailable(format!(
            "perf events are disabled (kernel.perf_event_paranoid = {l}); lower it to 2 or run as root"
        ))),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_unknown_names_say_which() {
        for e in Event::ALL {
            assert_eq!(Event::parse(e.name()).unwrap(), e);
        }
        assert_eq!(Event::parse("CPU_CLOCK").unwrap(), Event::CpuClock);
        let err = Event::parse("cycels").unwrap_err().to_string();
        assert!(err.starts_with("unknown event 'cycels'") && err.contains("cpu-clock"));
        assert!(!err.contains('\n'));
    }

    #[test]
    fn pmu_is_read_from_a_sysfs_tree() {
        let dir = tempfile::tempdir().unwrap();
        let devices = dir.path().join("bus/event_source/devices");
        std::fs::create_dir_all(devices.join("software")).unwrap();
        let none = Pmu::detect(dir.path());
        assert!(!none.hardware && none.ibs_op.is_none());
        assert!(none.note().unwrap().starts_with("no hardware PMU"));
        assert_eq!(none.counting_group(), Event::SOFTWARE_GROUP.to_vec());
        assert_eq!(none.default_sample_event(), Event::CpuClock);
        assert!(none.check(Event::Cycles).is_err());
        assert!(none.check(Event::PageFaults).is_ok());

        std::fs::create_dir_all(devices.join("cpu")).unwrap();
        std::fs::create_dir_all(devices.join("ibs_op")).unwrap();
        std::fs::write(devices.join("ibs_op/type"), "11\n").unwrap();
        let amd = Pmu::detect(dir.path());
        assert_eq!(
            amd,
            Pmu {
                hardware: true,
                ibs_op: Some(11)
            }
        );
        assert!(amd.note().is_none());
        assert_eq!(amd.counting_group(), Event::HARDWARE_GROUP.to_vec());
        assert_eq!(amd.default_sample_event(), Event::MemLoads);
        assert!(amd.check(Event::LlcMisses).is_ok());
    }

    #[test]
    fn paranoid_three_disables_perf_for_the_unprivileged() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_perf_allowed(dir.path(), true).is_err());
        std::fs::create_dir_all(dir.path().join("kernel")).unwrap();
        std::fs::write(dir.path().join("kernel/perf_event_paranoid"), "3\n").unwrap();
        let e = check_perf_allowed(dir.path(), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("disabled") && e.contains("= 3"), "{e}");
        assert!(check_perf_allowed(dir.path(), true).is_ok());
        std::fs::write(dir.path().join("kernel/perf_event_paranoid"), "2\n").unwrap();
        assert!(check_perf_allowed(dir.path(), false).is_ok());
    }
}
