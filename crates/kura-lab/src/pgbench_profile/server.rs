//! A throw-away PostgreSQL cluster for the pgbench profile: its binaries found,
//! the account it runs as (it refuses root), initdb, start and stop with pg_ctl,
//! and pgbench against it over a Unix socket.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::error::{At, LabError, LabResult};

/// The database user the cluster is made for (trust authentication).
pub const USER: &str = "kura";

/// The directory of PostgreSQL's server programs: `bindir` if given, else
/// PostgreSQL 15's Debian location, any other version's, then `pg_config`'s.
pub fn find_bindir(bindir: Option<&Path>) -> LabResult<PathBuf> {
    let has = |d: &Path| {
        ["postgres", "initdb", "pg_ctl", "pgbench"]
            .iter()
            .all(|p| d.join(p).is_file())
    };
    if let Some(d) = bindir {
        return if has(d) {
            Ok(d.to_path_buf())
        } else {
            Err(LabError::Unavailable(format!(
                "{} has no postgres, initdb, pg_ctl and pgbench",
                d.display()
            )))
        };
    }
    let mut candidates = vec![PathBuf::from("/usr/lib/postgresql/15/bin")];
    if let Ok(dir) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut others: Vec<PathBuf> = dir.flatten().map(|e| e.path().join("bin")).collect();
        others.sort();
        candidates.extend(others.into_iter().rev());
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        candidates.push(PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    }
    candidates.into_iter().find(|d| has(d)).ok_or_else(|| {
        LabError::Unavailable(
            "PostgreSQL's server programs were not found (postgres, initdb, pg_ctl, pgbench): \
             install them, e.g. `apt-get install postgresql-15`, or give --pg-bindir"
                .to_string(),
        )
    })
}

/// The server's version line, e.g. `postgres (PostgreSQL) 15.18 (Debian ...)`.
pub fn version(bindir: &Path) -> String {
    Command::new(bindir.join("postgres"))
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// The account to run the server as: none when not root; as root, `postgres`.
pub fn run_as() -> LabResult<Option<(u32, u32)>> {
    // SAFETY: geteuid has no arguments and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let name = std::ffi::CString::new("postgres").expect("no NUL");
    // SAFETY: getpwnam with a valid C string; the result is read at once, before
    // any other call could reuse its static buffer.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(LabError::Unavailable(
            "PostgreSQL refuses to run as root and there is no 'postgres' account to run it as"
                .into(),
        ));
    }
    // SAFETY: non-null result of getpwnam.
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Ok(Some((uid, gid)))
}

/// A cluster in a directory of its own.
pub struct Cluster {
    pub bindir: PathBuf,
    pub dir: PathBuf,
    pub data: PathBuf,
    pub log: PathBuf,
    pub port: u16,
    pub run_as: Option<(u32, u32)>,
}

impl Cluster {
    /// Makes `dir` afresh and runs initdb in it.
    pub fn init(bindir: &Path, dir: &Path, port: u16) -> LabResult<Cluster> {
        let run_as = run_as()?;
        if dir.exists() {
            std::fs::remove_dir_all(dir).at(format_args!("removing {}", dir.display()))?;
        }
        std::fs::create_dir_all(dir).at(format_args!("creating {}", dir.display()))?;
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(dir, Some(uid), Some(gid)).at(format_args!(
                "handing {} to the postgres account",
                dir.display()
            ))?;
        }
        let c = Cluster {
            bindir: bindir.to_path_buf(),
            dir: dir.to_path_buf(),
            data: dir.join("data"),
            log: dir.join("server.log"),
            port,
            run_as,
        };
        c.tool(
            "initdb",
            &[
                "-D".into(),
                c.data.clone().into(),
                "-U".into(),
                USER.into(),
                "--auth=trust".into(),
                "--locale=C".into(),
                "-E".into(),
                "UTF8".into(),
                "--no-sync".into(),
            ],
        )?;
        Ok(c)
    }

    /// The server's options: a Unix socket in the cluster's directory only, and
    /// no fsync (it would only wait; the code paths are the same).
    pub fn server_args(&self) -> Vec<OsString> {
        vec![
            "-D".into(),
            self.data.clone().into(),
            "-p".into(),
            self.port.to_string().into(),
            "-k".into(),
            self.dir.clone().into(),
            "-c".into(),
            "listen_addresses=".into(),
            "-c".into(),
            "fsync=off".into(),
        ]
    }

    /// Runs one of PostgreSQL's programs (as the server's account); its output.
    pub fn tool(&self, program: &str, args: &[OsString]) -> LabResult<Output> {
        let mut cmd = Command::new(self.bindir.join(program));
        cmd.args(args);
        if let Some((uid, gid)) = self.run_as {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(gid);
            // Its home is not ours: programs that look for one find theirs.
            cmd.env("HOME", &self.dir);
        }
        let out = cmd.output().at(format_args!("starting {program}"))?;
        if !out.status.success() {
            return Err(LabError::External(format!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&out.stderr).trim(),
                self.log_tail()
            )));
        }
        Ok(out)
    }

    /// The end of the server's log, to explain a failure.
    pub fn log_tail(&self) -> String {
        std::fs::read_to_string(&self.log)
            .map(|t| {
                let lines: Vec<&str> = t.lines().collect();
                let from = lines.len().saturating_sub(8);
                format!("\nserver log:\n{}", lines[from..].join("\n"))
            })
            .unwrap_or_default()
    }

    /// Starts the server with pg_ctl (untraced) and waits for it.
    pub fn start(&self) -> LabResult<()> {
        let opts = self
            .server_args()
            .iter()
            .skip(2)
            .map(|a| {
                a.to_string_lossy()
                    .replace("listen_addresses=", "listen_addresses=''")
            })
            .collect::<Vec<_>>()
            .join(" ");
        self.tool(
            "pg_ctl",
            &[
                "-D".into(),
                self.data.clone().into(),
                "-l".into(),
                self.log.clone().into(),
                "-w".into(),
                "-o".into(),
                opts.into(),
                "start".into(),
            ],
        )
        .map(|_| ())
    }

    /// Stops the server (fast: sessions are ended, then a checkpoint).
    pub fn stop(&self) -> LabResult<()> {
        self.tool(
            "pg_ctl",
            &[
                "-D".into(),
                self.data.clone().into(),
                "-m".into(),
                "fast".into(),
                "-w".into(),
                "-t".into(),
                "600".into(),
                "stop".into(),
            ],
        )
        .map(|_| ())
    }

    /// How long the server's log is now: `wait_ready` reads only what follows.
    pub fn log_len(&self) -> u64 {
        std::fs::metadata(&self.log).map(|m| m.len()).unwrap_or(0)
    }

    /// Waits until the server says in its log (past `log_from`) that it takes
    /// connections, then checks once with pg_isready; or `gave_up` says stop.
    ///
    /// The log is watched rather than probed because under Valgrind every probe
    /// forks a traced backend that takes seconds to start: probes every half
    /// second that give up after pg_isready's 3 s leave backends piling up until
    /// the server refuses everyone ("too many clients already").
    pub fn wait_ready(
        &self,
        timeout: Duration,
        log_from: u64,
        mut gave_up: impl FnMut() -> bool,
    ) -> LabResult<()> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.log_says_ready(log_from) {
                let left = timeout.saturating_sub(start.elapsed()).as_secs().max(30);
                let ready = Command::new(self.bindir.join("pg_isready"))
                    .args(["-q", "-t", &left.to_string(), "-h"])
                    .arg(&self.dir)
                    .args(["-p", &self.port.to_string(), "-U", USER, "-d", "postgres"])
                    .status()
                    .is_ok_and(|s| s.success());
                if ready {
                    return Ok(());
                }
                return Err(LabError::External(format!(
                    "the server said it was ready but did not answer within {left} s{}",
                    self.log_tail()
                )));
            }
            if gave_up() {
                return Err(LabError::External(format!(
                    "the server ended before it was ready{}",
                    self.log_tail()
                )));
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        Err(LabError::External(format!(
            "the server was not ready after {} s{}",
            timeout.as_secs(),
            self.log_tail()
        )))
    }

    /// Whether the log, past `from`, has the postmaster's "ready" line.
    fn log_says_ready(&self, from: u64) -> bool {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = std::fs::File::open(&self.log) else {
            return false;
        };
        let mut text = String::new();
        f.seek(SeekFrom::Start(from)).is_ok()
            && f.read_to_string(&mut text).is_ok()
            && text.contains("ready to accept connections")
    }

    /// Runs pgbench with `args` against database `postgres`; its standard output.
    pub fn pgbench(&self, args: &[String]) -> LabResult<String> {
        let mut all: Vec<OsString> = vec![
            "-h".into(),
            self.dir.clone().into(),
            "-p".into(),
            self.port.to_string().into(),
            "-U".into(),
            USER.into(),
        ];
        all.extend(args.iter().map(OsString::from));
        all.push("postgres".into());
        let out = self.tool("pgbench", &all)?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Cluster {
    /// Runs pgbench with `args` and `-P 1`, calling `on_running` at its first
    /// progress report (all clients connected, transactions under way) and
    /// passing the reports on to `progress`; its standard output.
    pub fn pgbench_reporting(
        &self,
        args: &[String],
        on_running: impl FnOnce(),
        progress: &mut dyn std::io::Write,
    ) -> LabResult<String> {
        use std::io::BufRead;
        let mut cmd = Command::new(self.bindir.join("pgbench"));
        cmd.args(["-h"])
            .arg(&self.dir)
            .args(["-p", &self.port.to_string(), "-U", USER, "-P", "1"])
            .args(args)
            .arg("postgres")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().at("starting pgbench")?;
        let stdout = child.stdout.take().expect("piped");
        let reader = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut { stdout }, &mut text);
            text
        });
        let mut on_running = Some(on_running);
        let mut errors = Vec::new();
        for line in std::io::BufReader::new(child.stderr.take().expect("piped")).lines() {
            let Ok(line) = line else { break };
            if line.starts_with("progress:") {
                if let Some(f) = on_running.take() {
                    f();
                }
                let _ = writeln!(progress, "pgbench {line}");
            } else if !line.trim().is_empty() {
                errors.push(line);
            }
        }
        let status = child.wait().at("waiting for pgbench")?;
        let text = reader.join().unwrap_or_default();
        if !status.success() {
            return Err(LabError::External(format!(
                "pgbench failed: {}{}",
                errors.join("\n"),
                self.log_tail()
            )));
        }
        if on_running.is_some() {
            return Err(LabError::External(
                "pgbench finished without a progress report (under a second?)".into(),
            ));
        }
        Ok(text)
    }
}

impl Drop for Cluster {
    /// A server left running by an error is stopped at once; the cluster goes.
    fn drop(&mut self) {
        if self.data.join("postmaster.pid").exists() {
            let _ = self.tool(
                "pg_ctl",
                &[
                    "-D".into(),
                    self.data.clone().into(),
                    "-m".into(),
                    "immediate".into(),
                    "-w".into(),
                    "stop".into(),
                ],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// pgbench's `tps = 123.4 (without initial connection time)` → 123.4.
pub fn tps(report: &str) -> Option<f64> {
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix("tps = "))
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// pgbench's `number of transactions actually processed: 100/100` → 100.
pub fn transactions(report: &str) -> Option<u64> {
    report
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("number of transactions actually processed: ")
        })
        .and_then(|t| t.split('/').next())
        .and_then(|n| n.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgbench_reports_are_read() {
        let r = "transaction type: <builtin: TPC-B (sort of)>\nnumber of transactions actually processed: 200/200\nlatency average = 5.1 ms\ntps = 1960.784314 (without initial connection time)\n";
        assert_eq!(transactions(r), Some(200));
        assert_eq!(tps(r), Some(1960.784314));
        assert_eq!(tps("nothing"), None);
    }
}
