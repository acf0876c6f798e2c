//! The Python the client tests run: one virtual environment under the
//! target directory with every package they use (psycopg, SQLAlchemy 2,
//! pandas), made once and shared by every test binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// What the client tests import; the environment is remade when one is missing.
const PACKAGES: &[&str] = &["psycopg[binary]", "sqlalchemy>=2", "pandas"];
const IMPORTS: &str = "import psycopg, sqlalchemy, pandas";

/// The environment's `python`, made on first use.
pub fn python() -> &'static Path {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let venv = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("python-clients-venv");
        let py = venv.join("bin/python");
        if ready(&py) {
            return py;
        }
        // Made aside and moved into place, so that test binaries run at once
        // never see (or use) a half-installed environment.
        let aside = venv.with_extension(format!("tmp{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&aside);
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&aside)
            .status()
            .expect("python3")
            .success();
        assert!(ok, "python3 -m venv failed");
        let ok = Command::new(aside.join("bin/python"))
            .args(["-m", "pip", "install", "-q"])
            .args(PACKAGES)
            .status()
            .expect("pip")
            .success();
        assert!(ok, "pip install {PACKAGES:?} failed");
        let _ = std::fs::remove_dir_all(&venv);
        if std::fs::rename(&aside, &venv).is_err() {
            // Another test binary moved its own in first.
            let _ = std::fs::remove_dir_all(&aside);
        }
        assert!(
            ready(&py),
            "the Python environment at {} is not usable",
            venv.display()
        );
        py
    })
}

fn ready(py: &Path) -> bool {
    Command::new(py)
        .args(["-c", IMPORTS])
        .output()
        .is_ok_and(|o| o.status.success())
}
