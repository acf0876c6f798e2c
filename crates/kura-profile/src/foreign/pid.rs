//! Profiles processes that are already running (`kura profile --pid`): every
//! thread of each is sampled with perf_event_open — cpu-clock where the machine
//! has no PMU, a cache event where it has one — for a while, and the samples are
//! named by function and source line from the process's memory map.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::ProfileError;
use crate::events::Pmu;
use crate::sampling::{process_of, LiveSampler, SampleConfig};
use crate::simulated::child::{parse_maps, Mapping};

use super::procfs::{command_line, merge_code_maps};

use super::report::{rows_from_addresses, ForeignProfile, ProcessRow};

/// Executable file mappings of `pid` added to `maps` (kept after it ends).
fn remember_maps(pid: u32, maps: &mut Vec<Mapping>) {
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
        merge_code_maps(&parse_maps(&text), maps);
    }
}

/// Samples `pids` for `duration` (or until they have all ended, or `interrupt`
/// is set) and builds the profile.
pub fn sample_processes(
    pids: &[u32],
    cfg: SampleConfig,
    pmu: &Pmu,
    duration: Duration,
    interrupt: &AtomicBool,
) -> Result<ForeignProfile, ProfileError> {
    if pids.is_empty() {
        return Err(ProfileError::Invalid("no process to profile".into()));
    }
    let mut maps: HashMap<u32, Vec<Mapping>> = HashMap::new();
    let mut commands: HashMap<u32, String> = HashMap::new();
    // tid → pid, learnt while the threads live.
    let mut owner: HashMap<u32, u32> = HashMap::new();
    let mut learn = |maps: &mut HashMap<u32, Vec<Mapping>>, owner: &mut HashMap<u32, u32>| {
        for &pid in pids {
            remember_maps(pid, maps.entry(pid).or_default());
            for tid in crate::sampling::threads_of(pid) {
                owner.insert(tid, pid);
            }
            let c = command_line(pid);
            if !c.is_empty() {
                commands.insert(pid, c);
            }
        }
    };
    learn(&mut maps, &mut owner);
    let start = Instant::now();
    let sampler = LiveSampler::start_on_processes(cfg, pmu, pids.to_vec())?;
    let mut ended = false;
    while start.elapsed() < duration && !interrupt.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100).min(duration));
        learn(&mut maps, &mut owner);
        if pids
            .iter()
            .all(|&p| crate::sampling::threads_of(p).is_empty())
        {
            ended = true;
            break;
        }
    }
    let elapsed = start.elapsed();
    let drained = sampler.stop()?;
    let mut per_pid: HashMap<u32, HashMap<u64, Vec<u64>>> = HashMap::new();
    let mut counts: HashMap<u32, u64> = HashMap::new();
    for s in &drained.samples {
        let pid = owner
            .get(&s.tid)
            .copied()
            .or_else(|| process_of(s.tid))
            .unwrap_or(pids[0]);
        per_pid
            .entry(pid)
            .or_default()
            .entry(s.ip)
            .or_insert_with(|| vec![0])[0] += 1;
        *counts.entry(pid).or_default() += 1;
    }
    let processes = pids
        .iter()
        .map(|&pid| ProcessRow {
            pid,
            command: commands.get(&pid).cloned().unwrap_or_default(),
            instructions: 0,
            invalidated: 0,
            values: vec![counts.get(&pid).copied().unwrap_or(0)],
        })
        .collect();
    let (functions, lines) = rows_from_addresses(
        per_pid
            .into_iter()
            .map(|(pid, ips)| (ips, maps.remove(&pid).unwrap_or_default()))
            .collect(),
    );
    let event = cfg.event.name();
    let mut header = vec![format!(
        "sampled process{} {} for {:.1} s{}: {} samples of {event} every {}{}",
        if pids.len() == 1 { "" } else { "es" },
        pids.iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        elapsed.as_secs_f64(),
        if ended { " (until it ended)" } else { "" },
        drained.samples.len(),
        cfg.period,
        if matches!(
            cfg.event,
            crate::events::Event::CpuClock | crate::events::Event::TaskClock
        ) {
            " ns"
        } else {
            " events"
        },
    )];
    if drained.lost > 0 {
        header.push(format!(
            "{} samples were lost (ring buffer full)",
            drained.lost
        ));
    }
    if !pmu.hardware {
        header.push(
            "this machine has no hardware PMU: samples say where time goes, not where caches miss; \
             for simulated misses per function start the program under `kura profile -- COMMAND`"
                .into(),
        );
    }
    Ok(ForeignProfile {
        header,
        metrics: vec![format!("{event} samples")],
        totals: vec![drained.samples.len() as u64],
        functions,
        lines,
        processes,
        groups: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Event;

    /// A busy child process is sampled from outside and its samples are named.
    #[test]
    fn a_busy_child_process_is_sampled_and_named() {
        let mut child = std::process::Command::new("sh")
            .arg("-c")
            .arg("i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done")
            .spawn()
            .expect("sh runs");
        let pmu = Pmu::this_machine();
        let cfg = SampleConfig::new(Event::CpuClock, 1_000_000, &pmu).unwrap();
        let stop = AtomicBool::new(false);
        let p = sample_processes(&[child.id()], cfg, &pmu, Duration::from_millis(400), &stop);
        let _ = child.kill();
        let _ = child.wait();
        let p = p.expect("sampling a child works");
        assert!(p.totals[0] > 50, "{} samples", p.totals[0]);
        assert_eq!(p.processes[0].values[0], p.totals[0]);
        let named: u64 = p
            .functions
            .iter()
            .filter(|f| f.context != "?")
            .map(|f| f.values[0])
            .sum();
        assert!(
            named * 2 > p.totals[0],
            "most samples fall in a mapped file: {:?}",
            p.functions
        );
        assert!(p.render(5).contains("cpu-clock samples"));
    }

    #[test]
    fn a_missing_process_is_refused() {
        let pmu = Pmu::this_machine();
        let cfg = SampleConfig::new(Event::CpuClock, 1_000_000, &pmu).unwrap();
        let stop = AtomicBool::new(false);
        let e = sample_processes(&[u32::MAX - 1], cfg, &pmu, Duration::from_millis(10), &stop)
            .unwrap_err();
        assert!(e.to_string().contains("no process"), "{e}");
    }
}
