//! `kura cluster up --local N`: a cluster on one machine for trying it out — N worker
//! processes of the same binary on loopback ports, one per shard database, stopped with the
//! process that started them.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{DistError, DistResult};

/// How long a worker may take to open its shard and listen.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Worker processes started here; dropping this stops them.
pub struct LocalWorkers {
    children: Vec<Child>,
    /// Each worker's `host:port`, in shard order.
    pub addrs: Vec<String>,
}

/// The address a worker's start line (`kura cluster worker: shard … on HOST:PORT`) names.
pub fn listening_address(line: &str) -> Option<&str> {
    if !line.starts_with("kura cluster worker:") {
        return None;
    }
    line.rsplit_once(" on ").map(|(_, addr)| addr.trim())
}

impl LocalWorkers {
    /// Starts `exe cluster worker --shard-db DB --listen 127.0.0.1:0` for each of
    /// `shard_dbs` (with `--buffer` when given) and waits until each listens.
    pub fn start(exe: &Path, shard_dbs: &[PathBuf], buffer: Option<u64>) -> DistResult<Self> {
        let mut workers = LocalWorkers {
            children: Vec::new(),
            addrs: Vec::new(),
        };
        for db in shard_dbs {
            let mut cmd = Command::new(exe);
            cmd.args(["cluster", "worker", "--listen", "127.0.0.1:0", "--shard-db"])
                .arg(db)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            if let Some(b) = buffer {
                cmd.arg("--buffer").arg(b.to_string());
            }
            // A worker outlives no killed parent: the kernel stops it with its parent.
            // SAFETY: prctl is async-signal-safe and touches only the child being started.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                    Ok(())
                });
            }
            let mut child = cmd.spawn().map_err(|e| DistError::Io {
                what: format!("starting a worker for {}", db.display()),
                source: e,
            })?;
            let stderr = child.stderr.take().expect("piped stderr");
            workers.children.push(child);
            let (tx, rx) = mpsc::channel();
            // Reads the start line, then keeps draining (and echoing) what the worker says.
            std::thread::spawn(move || {
                let mut said = Vec::new();
                let mut tx = Some(tx);
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    match (listening_address(&line), tx.as_ref()) {
                        (Some(addr), Some(t)) => {
                            let _ = t.send(Ok(addr.to_string()));
                            tx = None;
                        }
                        (None, Some(_)) => said.push(line),
                        (_, None) => eprintln!("{line}"),
                    }
                }
                if let Some(t) = tx {
                    let _ = t.send(Err(said.join("\n")));
                }
            });
            match rx.recv_timeout(START_TIMEOUT) {
                Ok(Ok(addr)) => workers.addrs.push(addr),
                Ok(Err(said)) => {
                    return Err(DistError::Cluster(format!(
                        "the worker for {} stopped: {said}",
                        db.display()
                    )))
                }
                Err(_) => {
                    return Err(DistError::Cluster(format!(
                        "the worker for {} did not listen within {} s",
                        db.display(),
                        START_TIMEOUT.as_secs()
                    )))
                }
            }
        }
        Ok(workers)
    }

    /// The worker processes' ids, in shard order.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }
}

impl Drop for LocalWorkers {
    fn drop(&mut self) {
        for c in &mut self.children {
            // SIGTERM lets a worker close its shard database; a kill is the fallback.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
        }
        for c in &mut self.children {
            for _ in 0..50 {
                if matches!(c.try_wait(), Ok(Some(_))) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_line_names_the_address() {
        let line = "kura cluster worker: shard 0 of 3 (d/shard0.db) of cluster c on 127.0.0.1:4001";
        assert_eq!(listening_address(line), Some("127.0.0.1:4001"));
        assert_eq!(listening_address("something else on x"), None);
    }
}
