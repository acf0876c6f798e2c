//! Who and where a session is: the user, database name, process id and
//! version text that `current_user`, `current_database()`, `pg_backend_pid()`
//! and `version()` report, and whether the user may change what every session
//! shares (a superuser).

/// The PostgreSQL version kura speaks for (`server_version`, `version()`).
pub const PG_VERSION: &str = "16.6";
/// The same as a number (`server_version_num`).
pub const PG_VERSION_NUM: &str = "160006";

/// A session's identity.
#[derive(Debug, Clone)]
pub struct Identity {
    pub user: String,
    pub database: String,
    pub backend_pid: i32,
    pub version: String,
    /// May change database-wide settings (`SET tier2`, `SET resident_indexes` ...).
    pub superuser: bool,
}

impl Default for Identity {
    /// The shell's: the operating-system user, this process.
    fn default() -> Self {
        Identity {
            user: std::env::var("USER").unwrap_or_else(|_| "kura".into()),
            database: "kura".into(),
            backend_pid: std::process::id() as i32,
            version: version_text(),
            // The shell and tools open the file themselves: its owner.
            superuser: true,
        }
    }
}

/// The text of `version()`: PostgreSQL's form (drivers parse its start), then kura's.
pub fn version_text() -> String {
    format!(
        "PostgreSQL {PG_VERSION} (kura {}) on {}-linux",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}
