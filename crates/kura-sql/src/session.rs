//! What a statement may read from the session that runs it: the values behind
//! `version()`, `current_database()`, `current_user`, `pg_backend_pid()`,
//! `current_setting(name)` and the transaction's and statement's start times
//! (`now()`, `statement_timestamp()`).

/// The session's side of a statement, handed to the binder through the catalog
/// (see [`crate::CatalogProvider::session`]).
#[derive(Debug, Clone, Default)]
pub struct SessionInfo {
    /// The text of `version()`.
    pub version: String,
    /// `current_database()`.
    pub database: String,
    /// `current_user`, `session_user`, `user`.
    pub user: String,
    /// `pg_backend_pid()`.
    pub backend_pid: i32,
    /// When the transaction began (`now()`, `current_timestamp`), in
    /// microseconds since 1970-01-01 00:00 UTC.
    pub transaction_start: i64,
    /// When the statement began (`statement_timestamp()`), same unit.
    pub statement_start: i64,
    /// Run-time settings by lower-case name, read by `current_setting(name)`.
    pub settings: Vec<(String, String)>,
}

impl SessionInfo {
    /// The value of setting `name` (case-insensitive).
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}
