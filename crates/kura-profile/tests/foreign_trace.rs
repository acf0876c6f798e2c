//! `kura profile -- COMMAND`'s engine on real programs: a shell that forks and
//! executes two more, traced under lackey with each process in its own cache model.

use std::path::PathBuf;

use kura_profile::foreign::{self, ForeignProfile, TraceOptions};

fn options(script: &str, scratch: &str) -> TraceOptions {
    TraceOptions {
        valgrind: PathBuf::from("valgrind"),
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        geometry_root: PathBuf::from(kura_cache::cpu::SYSFS_CACHE_DIR),
        scratch: std::env::temp_dir()
            .join(format!("kura-foreign-{}-{scratch}", std::process::id())),
        count_from_start: true,
        run_as: None,
        output: None,
    }
}

#[test]
fn a_forking_shell_is_traced_process_by_process() {
    let t = foreign::start(&options("ls / > /dev/null; ls /usr > /dev/null", "fork")).unwrap();
    let trace = t.finish().unwrap();
    assert!(trace.status.success());
    // The shell and its two children (each a fork, then an exec of ls).
    let pids: std::collections::BTreeSet<u32> = trace.processes.iter().map(|p| p.pid).collect();
    assert!(pids.len() >= 3, "{pids:?}");
    for p in &trace.processes {
        assert_eq!(p.malformed, 0, "pid {} had malformed lines", p.pid);
    }
    let ls = trace
        .processes
        .iter()
        .filter(|p| p.command.contains("ls"))
        .count();
    assert!(
        ls >= 2,
        "{:?}",
        trace
            .processes
            .iter()
            .map(|p| &p.command)
            .collect::<Vec<_>>()
    );
    let profile = ForeignProfile::from_trace(trace, vec!["test".into()]);
    let l1 = profile.metric("L1d").unwrap();
    assert!(profile.totals[0] > 100_000, "{:?}", profile.totals);
    assert!(profile.totals[l1] > 0 && profile.totals[l1] < profile.totals[0]);
    // Misses land in named functions of libc, the loader or the programs.
    let named: u64 = profile
        .functions
        .iter()
        .filter(|f| f.context != "?" && !f.name.contains("+0x"))
        .map(|f| f.values[l1])
        .sum();
    assert!(
        named * 2 > profile.totals[l1],
        "{named} of {} L1 misses named: {:?}",
        profile.totals[l1],
        profile.top_functions(l1, 10)
    );
    let text = profile.render(5);
    assert!(text.contains("Processes"), "{text}");
}

#[test]
fn a_region_opened_late_counts_only_what_follows() {
    // A shell that waits for a file, then works: counting opens before the work.
    let dir = std::env::temp_dir().join(format!("kura-foreign-late-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let flag = dir.join("go");
    let script = format!(
        "while [ ! -e {f} ]; do sleep 0.1; done; ls / > /dev/null",
        f = flag.display()
    );
    let t = foreign::start(&TraceOptions {
        count_from_start: false,
        ..options(&script, "late")
    })
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    t.count_from_now();
    std::fs::write(&flag, b"").unwrap();
    let trace = t.finish().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let counted: u64 = trace.processes.iter().map(|p| p.accesses).sum();
    assert!(counted > 0);
    // The shell's start-up (loading, its first loop) was not counted: the ls
    // child, which began after the region opened, did most of what was.
    let ls: u64 = trace
        .processes
        .iter()
        .filter(|p| p.command.contains("ls"))
        .map(|p| p.accesses)
        .sum();
    assert!(ls * 2 > counted, "ls {ls} of {counted}");
}

/// A C program whose parent and child take turns incrementing one counter: in a
/// MAP_SHARED page each one's writes take the line from the other's caches; in a
/// MAP_PRIVATE page (copy on write) nothing is taken.
#[test]
fn writes_to_shared_memory_take_the_line_from_the_other_process() {
    let dir = std::env::temp_dir().join(format!("kura-foreign-shm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("pingpong.c");
    std::fs::write(
        &src,
        r#"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int flags = strcmp(argv[1], "shared") == 0 ? MAP_SHARED : MAP_PRIVATE;
    volatile long *c = mmap(0, 4096, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
    pid_t child = fork();
    for (long i = 0; i < 1000000; i++) c[0] += 1;
    if (child) waitpid(child, 0, 0);
    return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("pingpong");
    let cc = std::process::Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .expect("a C compiler (cc)");
    assert!(cc.success());
    let taken = |mode: &str| -> u64 {
        let t = foreign::start(&TraceOptions {
            program: exe.clone().into_os_string(),
            args: vec![mode.into()],
            ..options("", mode)
        })
        .unwrap();
        let trace = t.finish().unwrap();
        assert!(trace.status.success());
        assert_eq!(trace.processes.len(), 2, "parent and child");
        trace.processes.iter().map(|p| p.invalidated).sum()
    };
    let shared = taken("shared");
    let private = taken("private");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(shared > 0, "shared: {shared} lines taken");
    assert_eq!(private, 0, "private memory is never taken");
}
