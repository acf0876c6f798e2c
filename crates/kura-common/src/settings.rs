//! Settings (`SET name = value`, `SHOW name`, `SHOW ALL`, `pg_settings`,
//! `current_setting`): one typed registry, [`SETTINGS`], every layer reads
//! from, so the planner, the executor, the buffer manager, the catalogs and the
//! README's table see one source of truth. Each setting has a name, a type
//! (which validates what `SET` is given), a default defined once, a scope
//! (session, database or server) and a description.
//!
//! A value is parsed once, when set: [`Settings`] keeps its canonical text
//! (what `SHOW` prints) with the typed value, and the typed accessors
//! ([`Settings::flag`], [`Settings::size`], [`Settings::duration`],
//! [`Settings::integer`]) read the latter without parsing again.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// What a setting holds, and so what `SET` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingType {
    /// `on` / `off`; `SET` also takes PostgreSQL's other spellings (`true`,
    /// `false`, `yes`, `no`, `1`, `0` and unambiguous prefixes, any case).
    Bool,
    /// One of these (lower case).
    Enum(&'static [&'static str]),
    /// A byte size (`64MB`, `4GB`, `16384`; units are binary, as PostgreSQL's:
    /// 1 GB = 1024³ bytes), or one of the words in `none` (the setting then
    /// holds no size: unlimited, off).
    Size { none: &'static [&'static str] },
    /// A PostgreSQL time: a bare integer is milliseconds; `us`, `ms`, `s`,
    /// `min`, `h`, `d` may follow. From 0 to `i32::MAX` ms.
    Duration,
    /// A whole number from `min` to `max`.
    Integer { min: i64, max: i64 },
    /// Free text, lower-cased unless `keep_case` (a path); what it names is
    /// checked by the layer that applies it (an index name, a policy name).
    Text { keep_case: bool },
}

/// A parsed setting value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingValue {
    Bool(bool),
    Enum(&'static str),
    /// Bytes; `None` for a `none` word (unlimited, off).
    Size(Option<u64>),
    /// Milliseconds.
    Duration(u64),
    Integer(i64),
    Text(String),
}

/// Whom a setting affects, and so who may change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The session that sets it; anyone may.
    Session,
    /// Every session of the database (the buffer pool, its tier, the LLC):
    /// only a superuser may, as PostgreSQL's `ALTER SYSTEM`. Every session
    /// reads the database's one value.
    Database,
    /// Fixed when the database is opened, from its startup options (`--buffer`,
    /// `--max-memory`): shown, never changed by `SET` (55P02, as PostgreSQL's
    /// `postmaster` parameters).
    Server,
}

impl Scope {
    /// `pg_settings.context` of a setting of this scope.
    pub fn context(self) -> &'static str {
        match self {
            Scope::Session => "user",
            Scope::Database => "superuser",
            Scope::Server => "postmaster",
        }
    }
}

/// One known setting.
#[derive(Debug)]
pub struct SettingSpec {
    pub name: &'static str,
    pub ty: SettingType,
    /// The default, in the text `SET` takes. For a [`Scope::Server`] setting,
    /// how the opener chooses it (the value is always the open database's).
    pub default: &'static str,
    pub description: &'static str,
    pub scope: Scope,
}

/// Where a setting's current value came from (`pg_settings.source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Never set.
    Default,
    /// A startup option of the database (`--buffer`, `--buffer-policy`, ...).
    Startup,
    /// `SET` in this session.
    Session,
    /// `SET` of a database-wide setting, by any session.
    Database,
}

impl Source {
    /// The name `pg_settings.source` shows.
    pub fn name(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::Startup => "command line",
            Source::Session => "session",
            Source::Database => "database",
        }
    }
}

/// Why `SET` refused a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingError {
    /// No setting by that name.
    Unknown(String),
    /// A value the setting's type does not accept.
    Invalid { name: &'static str, message: String },
    /// A [`Scope::Server`] setting (SQLSTATE 55P02).
    ReadOnly(&'static str),
}

impl SettingError {
    /// PostgreSQL's code for it.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            // kura has always answered an unknown name with 22023.
            SettingError::Unknown(_) | SettingError::Invalid { .. } => "22023",
            SettingError::ReadOnly(_) => "55P02",
        }
    }
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingError::Unknown(name) => {
                write!(f, "unrecognized configuration parameter \"{name}\"")
            }
            SettingError::Invalid { name, message } => {
                write!(f, "invalid value for parameter \"{name}\": {message}")
            }
            SettingError::ReadOnly(name) => write!(
                f,
                "parameter \"{name}\" cannot be changed without restarting the server"
            ),
        }
    }
}

impl std::error::Error for SettingError {}

/// PostgreSQL's Boolean spellings: `on`, `off`, `true`, `false`, `yes`, `no`,
/// `1`, `0`, and unambiguous prefixes of the words (`t`, `f`, `y`, `n`, `of`),
/// in any case.
pub fn parse_bool(v: &str) -> Option<bool> {
    let v = v.trim().to_ascii_lowercase();
    let prefix = |word: &str, min: usize| v.len() >= min && word.starts_with(v.as_str());
    if v == "1" || prefix("true", 1) || prefix("yes", 1) || prefix("on", 2) {
        Some(true)
    } else if v == "0" || prefix("false", 1) || prefix("no", 1) || prefix("off", 2) {
        Some(false)
    } else {
        None
    }
}

/// A PostgreSQL time setting: a bare integer is milliseconds; units `us`,
/// `ms`, `s`, `min`, `h`, `d` may follow (with or without a space).
pub fn parse_duration_ms(v: &str) -> Result<u64, String> {
    let v = v.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let (num, unit) = (v[..split].trim(), v[split..].trim());
    let n: f64 = num
        .parse()
        .map_err(|_| format!("\"{v}\" is not a duration (e.g. 1000, 500ms, 30s, 5min)"))?;
    let per_unit = match unit {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1e3,
        "min" => 60e3,
        "h" => 3_600e3,
        "d" => 86_400e3,
        other => {
            return Err(format!(
                "unit \"{other}\" is not one of us, ms, s, min, h, d"
            ))
        }
    };
    let ms = n * per_unit;
    if !ms.is_finite() || ms > i32::MAX as f64 {
        return Err(format!(
            "{v} is outside the valid range (0 .. {} ms)",
            i32::MAX
        ));
    }
    Ok(ms.round() as u64)
}

impl SettingType {
    /// Reads `text` as `SET` does: the canonical text `SHOW` prints and the
    /// typed value; the error says what is accepted.
    pub fn parse(self, text: &str) -> Result<(String, SettingValue), String> {
        let raw = text.trim();
        let lower = raw.to_ascii_lowercase();
        match self {
            SettingType::Bool => match parse_bool(raw) {
                Some(b) => Ok((if b { "on" } else { "off" }.into(), SettingValue::Bool(b))),
                None => Err(format!(
                    "\"{text}\" (expected a Boolean: on, off, true, false, yes, no, 1, 0)"
                )),
            },
            SettingType::Enum(choices) => match choices.iter().find(|c| **c == lower) {
                Some(c) => Ok((c.to_string(), SettingValue::Enum(c))),
                None => Err(format!(
                    "\"{text}\" (expected one of: {})",
                    choices.join(", ")
                )),
            },
            SettingType::Size { none } => {
                if none.contains(&lower.as_str()) {
                    return Ok((lower, SettingValue::Size(None)));
                }
                match crate::size::parse_size(raw) {
                    Ok(bytes) => Ok((lower, SettingValue::Size(Some(bytes)))),
                    Err(e) if none.is_empty() => Err(e.to_string()),
                    Err(e) => Err(format!("{e} (or {})", none.join(", "))),
                }
            }
            SettingType::Duration => {
                parse_duration_ms(&lower).map(|ms| (lower, SettingValue::Duration(ms)))
            }
            SettingType::Integer { min, max } => match raw.parse::<i64>() {
                Ok(n) if (min..=max).contains(&n) => Ok((n.to_string(), SettingValue::Integer(n))),
                _ => Err(format!(
                    "\"{text}\" (expected a whole number from {min} to {max})"
                )),
            },
            SettingType::Text { keep_case } => {
                let t = if keep_case { raw.to_string() } else { lower };
                Ok((t.clone(), SettingValue::Text(t)))
            }
        }
    }

    /// `pg_settings.vartype`.
    pub fn vartype(self) -> &'static str {
        match self {
            SettingType::Bool => "bool",
            SettingType::Enum(_) => "enum",
            SettingType::Size { .. } | SettingType::Duration | SettingType::Integer { .. } => {
                "integer"
            }
            SettingType::Text { .. } => "string",
        }
    }

    /// `pg_settings.unit`: bytes and milliseconds, in which `setting` is given.
    pub fn unit(self) -> Option<&'static str> {
        match self {
            SettingType::Size { .. } => Some("B"),
            SettingType::Duration => Some("ms"),
            _ => None,
        }
    }

    /// `pg_settings.min_val` and `max_val`.
    pub fn range(self) -> Option<(i64, i64)> {
        match self {
            SettingType::Size { none } => Some((if none.is_empty() { 0 } else { -1 }, i64::MAX)),
            SettingType::Duration => Some((0, i32::MAX as i64)),
            SettingType::Integer { min, max } => Some((min, max)),
            _ => None,
        }
    }

    /// `pg_settings.enumvals`.
    pub fn choices(self) -> Option<&'static [&'static str]> {
        match self {
            SettingType::Enum(c) => Some(c),
            _ => None,
        }
    }

    /// What the README's table says the setting takes.
    pub fn describe(self) -> String {
        match self {
            SettingType::Bool => "on \\| off".into(),
            SettingType::Enum(c) => c.join(" \\| "),
            SettingType::Size { none: [] } => "size".into(),
            SettingType::Size { none } => format!("size \\| {}", none[0]),
            SettingType::Duration => "duration".into(),
            SettingType::Integer { min, max } => format!("integer {min} .. {max}"),
            SettingType::Text { .. } => "text".into(),
        }
    }
}

impl SettingValue {
    /// The value as `pg_settings.setting` shows it: sizes in bytes and times in
    /// milliseconds (`unit`), `-1` for no size, as PostgreSQL's integer settings.
    pub fn pg_setting(&self, text: &str) -> String {
        match self {
            SettingValue::Size(Some(b)) => b.to_string(),
            SettingValue::Size(None) => "-1".into(),
            SettingValue::Duration(ms) => ms.to_string(),
            _ => text.to_string(),
        }
    }
}
/// Every setting kura knows. Layers add theirs here so `SHOW ALL`, `pg_settings`
/// and the README's table list them.
pub const SETTINGS: &[SettingSpec] = &[
    SettingSpec {
        name: "execution_mode",
        ty: SettingType::Enum(&["serial", "static", "ooo"]),
        default: "ooo",
        description: "serial | static | ooo (out-of-order, paper 003)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "join_algorithm",
        ty: SettingType::Enum(&["hash", "nested_loop"]),
        default: "hash",
        description: "which registered join operator equi-joins use",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "memory_limit",
        ty: SettingType::Size { none: &[] },
        default: "4GB",
        description: "bound on hash tables and sorts of one query",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "temp_directory",
        ty: SettingType::Text { keep_case: true },
        default: "",
        description: "where operators past memory_limit spill (hash aggregation); empty = beside the database file (<file>.tmp)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "max_temp_directory_size",
        ty: SettingType::Size { none: &["unlimited", "-1"] },
        default: "unlimited",
        description: "bound on the bytes one query's temporary files hold at once (e.g. 10GB), or unlimited; past it the query fails (53100)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "statement_timeout",
        ty: SettingType::Duration,
        default: "0",
        description: "cancel a statement that runs longer than this (ms, or with a unit: 30s, 5min); 0 = no limit",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "lock_timeout",
        ty: SettingType::Duration,
        default: "0",
        description: "give up waiting for another transaction's write lock after this long (55P03; ms, or with a unit); 0 = wait (bounded by statement_timeout)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "default_transaction_isolation",
        ty: SettingType::Enum(&["read committed", "read uncommitted", "repeatable read", "serializable"]),
        default: "read committed",
        description: "isolation of new transactions: read committed (a waiting writer re-reads the latest commit), repeatable read or serializable (one snapshot; a write after a concurrent commit fails with 40001)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "default_transaction_read_only",
        ty: SettingType::Bool,
        default: "off",
        description: "on: new transactions (and autocommit statements) may not write (25006)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "enable_index",
        ty: SettingType::Bool,
        default: "on",
        description: "let the optimizer choose index scans and index nested-loop joins",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "enable_right_join",
        ty: SettingType::Bool,
        default: "on",
        description: "let a LEFT, semi or anti join build its preserved side when that side is the smaller (a right hash join)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "enable_eager_aggregate",
        ty: SettingType::Bool,
        default: "on",
        description: "let an aggregation over joins pre-aggregate the inputs holding its arguments, then join the others to the partial groups",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "enable_seqscan",
        ty: SettingType::Bool,
        default: "on",
        description:
            "off: choose an applicable index scan or index join over a full scan whatever the cost",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "prefetch",
        ty: SettingType::Bool,
        default: "on",
        description: "sequential read-ahead of scans, in every execution mode",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "prefetch_window",
        ty: SettingType::Integer { min: 1, max: 65_536 },
        default: "64",
        description: "pages a serial or static scan reads ahead of itself (prefetch = on)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "resident_indexes",
        ty: SettingType::Text { keep_case: false },
        default: "none",
        description:
            "indexes whose pages the buffer pool holds (all | none | idx1,idx2; interior:... for interior nodes only); database-wide",
        scope: Scope::Database,
    },
    SettingSpec {
        name: "llc_protect",
        ty: SettingType::Text { keep_case: false },
        default: "none",
        description: "paper 000: warm an object into the LLC and protect it with CAT (index:NAME | column:TABLE.COLUMN | hash_join:KEY for the hash table of each running join on KEY | none); database-wide",
        scope: Scope::Database,
    },
    SettingSpec {
        name: "llc_classes",
        ty: SettingType::Bool,
        default: "off",
        description: "on: each pipeline runs in a cache-sensitive or streaming resctrl group chosen from its footprint (needs CAT)",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "llc_scan_policy",
        ty: SettingType::Enum(&["normal", "flush"]),
        default: "normal",
        description: "flush: a streaming pipeline (more than the LLC) flushes its pages from the CPU caches after each morsel",
        scope: Scope::Session,
    },
    SettingSpec {
        name: "buffer_policy",
        ty: SettingType::Text { keep_case: false },
        default: "clock",
        description: "buffer replacement policy (kura-cache)",
        scope: Scope::Database,
    },
    SettingSpec {
        name: "tier2",
        ty: SettingType::Size { none: &["off"] },
        default: "off",
        description: "second buffer tier below the pool, of this many bytes (e.g. 256MB), or off; database-wide (kind: tier2_kind)",
        scope: Scope::Database,
    },
    SettingSpec {
        name: "tier2_mode",
        ty: SettingType::Enum(&["exclusive", "inclusive"]),
        default: "exclusive",
        description: "second tier: exclusive (pool victims are demoted into it, a hit moves the page up; paper 004) or inclusive (pages read from disk go into both)",
        scope: Scope::Database,
    },
    SettingSpec {
        name: "tier2_kind",
        ty: SettingType::Enum(&["compressed", "page_cache"]),
        default: "compressed",
        description: "second tier: compressed (lz4 page images in kura's memory) or page_cache (the OS page cache of the database file, bounded by kura)",
        scope: Scope::Database,
    },
    SettingSpec {
        name: "tier2_policy",
        ty: SettingType::Text { keep_case: false },
        default: "lru",
        description: "replacement policy of the second tier (kura-cache)",
        scope: Scope::Database,
    },
    SettingSpec {
        name: "shared_buffers",
        ty: SettingType::Size { none: &[] },
        default: "a quarter of RAM, at least 64MB",
        description: "size of the buffer pool, fixed when the database is opened (--buffer)",
        scope: Scope::Server,
    },
    SettingSpec {
        name: "max_memory",
        ty: SettingType::Size { none: &[] },
        default: "three fifths of RAM, at least 256MB",
        description: "what all running queries of the database together may hold in hash tables, sorts and results, fixed when it is opened (--max-memory)",
        scope: Scope::Server,
    },
];

/// A setting's current value: the canonical text `SHOW` prints, the typed
/// value, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub text: String,
    pub value: SettingValue,
    pub source: Source,
}

impl SettingSpec {
    /// The default's entry. A [`Scope::Server`] setting's default says how
    /// the opener chooses it; read without a database, it is that text.
    fn default_entry(&self) -> Entry {
        let (text, value) = self.ty.parse(self.default).unwrap_or_else(|_| {
            (
                self.default.to_string(),
                SettingValue::Text(self.default.to_string()),
            )
        });
        Entry {
            text,
            value,
            source: Source::Default,
        }
    }
}

/// The values every session of one database shares: its database-wide
/// settings and the server settings it was opened with. A database holds one
/// and hands it to each session ([`Settings::for_database`]), so a `SET` of a
/// database-wide setting is what every session's `SHOW` reads.
#[derive(Debug, Default)]
pub struct DatabaseSettings {
    values: RwLock<BTreeMap<&'static str, Entry>>,
    /// The opener's defaults of server settings on this machine (`boot_val`).
    boot: RwLock<BTreeMap<&'static str, String>>,
}

impl DatabaseSettings {
    /// Sets a database-wide or server setting as the database is opened: from
    /// a startup option (`explicit`) or the opener's default, which becomes
    /// a server setting's `boot_val` (`boot`).
    pub fn init(
        &self,
        name: &str,
        value: &str,
        boot: Option<&str>,
        explicit: bool,
    ) -> Result<(), SettingError> {
        let spec = Settings::spec(name).ok_or_else(|| SettingError::Unknown(name.into()))?;
        assert!(spec.scope != Scope::Session, "{name} is a session setting");
        let (text, value) = spec
            .ty
            .parse(value)
            .map_err(|message| SettingError::Invalid {
                name: spec.name,
                message,
            })?;
        let source = if explicit {
            Source::Startup
        } else {
            Source::Default
        };
        self.put(
            spec.name,
            Entry {
                text,
                value,
                source,
            },
        );
        if let Some(b) = boot {
            self.boot.write().unwrap().insert(spec.name, b.to_string());
        }
        Ok(())
    }

    fn get(&self, name: &str) -> Option<Entry> {
        self.values.read().unwrap().get(name).cloned()
    }

    fn put(&self, name: &'static str, entry: Entry) {
        self.values.write().unwrap().insert(name, entry);
    }
}

/// The settings a session reads: its own values of session settings, and its
/// database's of the others.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    own: BTreeMap<&'static str, Entry>,
    /// Shared with every session of the database (a `Settings` made with
    /// `default()` has a database of its own, without server values).
    database: Arc<DatabaseSettings>,
}

impl Settings {
    pub fn spec(name: &str) -> Option<&'static SettingSpec> {
        SETTINGS.iter().find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// A session's settings on the database whose shared values are `database`.
    pub fn for_database(database: Arc<DatabaseSettings>) -> Settings {
        Settings {
            own: BTreeMap::new(),
            database,
        }
    }

    /// Sets a known setting after parsing the value; the error says what is
    /// accepted. A database-wide setting changes for every session (who may set
    /// it is the caller's to check); a server setting is refused.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), SettingError> {
        let spec = Self::spec(name).ok_or_else(|| SettingError::Unknown(name.into()))?;
        if spec.scope == Scope::Server {
            return Err(SettingError::ReadOnly(spec.name));
        }
        let (text, value) = spec
            .ty
            .parse(value)
            .map_err(|message| SettingError::Invalid {
                name: spec.name,
                message,
            })?;
        self.put(spec, text, value);
        Ok(())
    }

    fn put(&mut self, spec: &'static SettingSpec, text: String, value: SettingValue) {
        match spec.scope {
            Scope::Session => {
                let source = Source::Session;
                self.own.insert(
                    spec.name,
                    Entry {
                        text,
                        value,
                        source,
                    },
                );
            }
            Scope::Database | Scope::Server => {
                let source = Source::Database;
                self.database.put(
                    spec.name,
                    Entry {
                        text,
                        value,
                        source,
                    },
                )
            }
        }
    }

    /// Gives a session setting its default back (`RESET name`); the others
    /// are not one session's to reset.
    pub fn reset(&mut self, name: &str) -> Result<(), SettingError> {
        let spec = Self::spec(name).ok_or_else(|| SettingError::Unknown(name.into()))?;
        match spec.scope {
            Scope::Session => {
                self.own.remove(spec.name);
                Ok(())
            }
            Scope::Server => Err(SettingError::ReadOnly(spec.name)),
            Scope::Database => Err(SettingError::Invalid {
                name: spec.name,
                message: "it is database-wide: SET it to the value wanted".into(),
            }),
        }
    }

    /// Puts back an entry [`Settings::entry`] read (a database-wide change
    /// whose effect failed).
    pub fn restore(&mut self, name: &str, entry: Entry) {
        let spec = Self::spec(name).unwrap_or_else(|| panic!("setting {name} is not registered"));
        match spec.scope {
            Scope::Session => {
                self.own.insert(spec.name, entry);
            }
            Scope::Database | Scope::Server => self.database.put(spec.name, entry),
        }
    }

    /// The current entry (the default's when never set); `None` for an unknown name.
    pub fn entry(&self, name: &str) -> Option<Entry> {
        let spec = Self::spec(name)?;
        let set = match spec.scope {
            Scope::Session => self.own.get(spec.name).cloned(),
            Scope::Database | Scope::Server => self.database.get(spec.name),
        };
        Some(set.unwrap_or_else(|| spec.default_entry()))
    }

    /// The default's text (`pg_settings.boot_val`): for a server setting, the
    /// opener's default on this machine.
    pub fn boot(&self, name: &str) -> Option<String> {
        let spec = Self::spec(name)?;
        let opener = (spec.scope == Scope::Server)
            .then(|| self.database.boot.read().unwrap().get(spec.name).cloned())
            .flatten();
        Some(opener.unwrap_or_else(|| spec.default_entry().text))
    }

    /// Current value (the default when never set); `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<String> {
        self.entry(name).map(|e| e.text)
    }

    fn registered(&self, name: &str) -> Entry {
        self.entry(name)
            .unwrap_or_else(|| panic!("setting {name} is not registered"))
    }

    /// Current value of a known setting (panics on a name not in [`SETTINGS`]: a bug).
    pub fn value(&self, name: &str) -> String {
        self.registered(name).text
    }

    /// The typed value of a known setting.
    pub fn typed(&self, name: &str) -> SettingValue {
        self.registered(name).value
    }

    /// A [`SettingType::Bool`] setting.
    pub fn flag(&self, name: &str) -> bool {
        match self.typed(name) {
            SettingValue::Bool(b) => b,
            other => panic!("setting {name} is not on/off: {other:?}"),
        }
    }

    /// A [`SettingType::Size`] setting in bytes; `None` for a `none` word.
    pub fn size(&self, name: &str) -> Option<u64> {
        match self.typed(name) {
            SettingValue::Size(s) => s,
            other => panic!("setting {name} is not a size: {other:?}"),
        }
    }

    /// A [`SettingType::Duration`] setting.
    pub fn duration(&self, name: &str) -> Duration {
        match self.typed(name) {
            SettingValue::Duration(ms) => Duration::from_millis(ms),
            other => panic!("setting {name} is not a duration: {other:?}"),
        }
    }

    /// A [`SettingType::Integer`] setting.
    pub fn integer(&self, name: &str) -> i64 {
        match self.typed(name) {
            SettingValue::Integer(n) => n,
            other => panic!("setting {name} is not an integer: {other:?}"),
        }
    }

    /// `statement_timeout`; `None` when statements may run for any time.
    pub fn statement_timeout(&self) -> Option<Duration> {
        Some(self.duration("statement_timeout")).filter(|d| !d.is_zero())
    }

    /// `lock_timeout`; `None` to wait (bounded by `statement_timeout`).
    pub fn lock_timeout(&self) -> Option<Duration> {
        Some(self.duration("lock_timeout")).filter(|d| !d.is_zero())
    }

    /// `memory_limit` in bytes.
    pub fn memory_limit(&self) -> u64 {
        self.size("memory_limit")
            .expect("memory_limit takes no word for no size")
    }

    /// `max_temp_directory_size` in bytes (`u64::MAX` when unlimited).
    pub fn max_temp_directory_size(&self) -> u64 {
        self.size("max_temp_directory_size").unwrap_or(u64::MAX)
    }

    /// `prefetch_window` in pages (from 1 to 65536, as its type says).
    pub fn prefetch_window(&self) -> usize {
        self.integer("prefetch_window") as usize
    }
}

/// Pages a serial or static scan reads ahead when no settings say otherwise:
/// `prefetch_window`'s default.
pub fn default_prefetch_window() -> usize {
    Settings::default().prefetch_window()
}

/// The README's table of settings, made from [`SETTINGS`]
/// (`crates/kura/tests/settings_registry.rs` keeps the README equal to it).
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| setting | takes | default | scope | what it does |\n|---|---|---|---|---|\n",
    );
    for s in SETTINGS {
        let default = match (s.scope, s.default) {
            (Scope::Server, d) => d.to_string(),
            (_, "") => "empty".to_string(),
            (_, d) => format!("`{d}`"),
        };
        let scope = match s.scope {
            Scope::Session => "session",
            Scope::Database => "database (superuser)",
            Scope::Server => "server (read-only)",
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            s.name,
            s.ty.describe(),
            default,
            scope,
            s.description
                .replace('|', "\\|")
                .replace('<', "\\<")
                .replace('>', "\\>")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_parses_as_its_type() {
        for s in SETTINGS.iter().filter(|s| s.scope != Scope::Server) {
            let (text, _) =
                s.ty.parse(s.default)
                    .unwrap_or_else(|e| panic!("{}'s default: {e}", s.name));
            assert!(
                text.eq_ignore_ascii_case(s.default),
                "{}'s default is canonical",
                s.name
            );
        }
        for s in SETTINGS {
            assert_eq!(
                SETTINGS.iter().filter(|o| o.name == s.name).count(),
                1,
                "{} is registered once",
                s.name
            );
        }
    }

    #[test]
    fn bools_take_postgresqls_spellings() {
        for t in ["on", "ON", "true", "t", "TRUE", "yes", "y", "1", " On "] {
            assert_eq!(parse_bool(t), Some(true), "{t}");
        }
        for t in ["off", "of", "false", "f", "no", "n", "0", "FALSE"] {
            assert_eq!(parse_bool(t), Some(false), "{t}");
        }
        for t in ["o", "", "2", "nope", "onn", "tru e"] {
            assert_eq!(parse_bool(t), None, "{t}");
        }
        let mut s = Settings::default();
        s.set("enable_index", "No").unwrap();
        assert_eq!(s.value("enable_index"), "off");
        assert!(!s.flag("enable_index"));
        s.set("enable_index", "t").unwrap();
        assert_eq!(s.value("enable_index"), "on");
        let e = s.set("enable_index", "maybe").unwrap_err();
        assert_eq!(e.sqlstate(), "22023");
        assert!(e
            .to_string()
            .starts_with("invalid value for parameter \"enable_index\""));
    }

    #[test]
    fn enums_take_their_choices_in_any_case() {
        let ty = SettingType::Enum(&["serial", "static", "ooo"]);
        assert_eq!(
            ty.parse(" Static "),
            Ok(("static".into(), SettingValue::Enum("static")))
        );
        assert!(ty
            .parse("fast")
            .unwrap_err()
            .contains("expected one of: serial, static, ooo"));
    }

    #[test]
    fn sizes_are_binary_and_may_have_a_word_for_none() {
        let plain = SettingType::Size { none: &[] };
        assert_eq!(
            plain.parse("1GB").unwrap().1,
            SettingValue::Size(Some(1 << 30))
        );
        assert_eq!(plain.parse("64MB").unwrap().0, "64mb");
        assert!(plain.parse("off").is_err());
        let off = SettingType::Size { none: &["off"] };
        assert_eq!(
            off.parse("OFF"),
            Ok(("off".into(), SettingValue::Size(None)))
        );
        assert!(off.parse("lots").unwrap_err().contains("(or off)"));
        assert_eq!(off.vartype(), "integer");
        assert_eq!(off.range(), Some((-1, i64::MAX)));
        assert_eq!(SettingValue::Size(None).pg_setting("off"), "-1");
        assert_eq!(SettingValue::Size(Some(1024)).pg_setting("1kb"), "1024");
    }

    #[test]
    fn durations_are_milliseconds_or_have_a_unit() {
        let d = SettingType::Duration;
        assert_eq!(d.parse("1500").unwrap().1, SettingValue::Duration(1500));
        assert_eq!(d.parse("2 s").unwrap().1, SettingValue::Duration(2000));
        assert_eq!(
            d.parse("1MIN").unwrap(),
            ("1min".into(), SettingValue::Duration(60_000))
        );
        assert!(d.parse("soon").is_err());
        assert!(d.parse("5 weeks").is_err());
        assert!(d.parse("-1").is_err());
        assert!(d
            .parse("30d")
            .unwrap_err()
            .contains("outside the valid range"));
        assert_eq!(d.unit(), Some("ms"));
    }

    #[test]
    fn integers_are_bounded() {
        let i = SettingType::Integer { min: 1, max: 10 };
        assert_eq!(i.parse(" 8 "), Ok(("8".into(), SettingValue::Integer(8))));
        assert!(i.parse("0").unwrap_err().contains("from 1 to 10"));
        assert!(i.parse("11").is_err());
        assert!(i.parse("1.5").is_err());
        assert_eq!(i.range(), Some((1, 10)));
    }

    #[test]
    fn text_is_lower_cased_unless_its_case_is_kept() {
        let t = SettingType::Text { keep_case: false };
        assert_eq!(t.parse(" LRU ").unwrap().0, "lru");
        let p = SettingType::Text { keep_case: true };
        assert_eq!(p.parse(" /Data/Spill ").unwrap().0, "/Data/Spill");
        assert_eq!(t.vartype(), "string");
    }

    #[test]
    fn temp_directory_keeps_its_case_and_the_temp_size_may_be_unlimited() {
        let mut s = Settings::default();
        assert_eq!(s.value("temp_directory"), "");
        s.set("temp_directory", " /Data/Spill ").unwrap();
        assert_eq!(s.value("temp_directory"), "/Data/Spill");
        assert_eq!(s.max_temp_directory_size(), u64::MAX);
        s.set("max_temp_directory_size", "1GB").unwrap();
        assert_eq!(s.max_temp_directory_size(), 1 << 30);
        s.set("max_temp_directory_size", "-1").unwrap();
        assert_eq!(s.max_temp_directory_size(), u64::MAX);
        assert!(s.set("max_temp_directory_size", "lots").is_err());
    }

    #[test]
    fn prefetch_window_is_typed_and_its_default_is_one_number() {
        let mut s = Settings::default();
        assert_eq!(s.prefetch_window(), 64);
        assert_eq!(default_prefetch_window(), 64);
        s.set("prefetch_window", " 8 ").unwrap();
        assert_eq!(s.prefetch_window(), 8);
        assert!(s.set("prefetch_window", "0").is_err());
        assert!(s.set("prefetch_window", "65537").is_err());
        assert_eq!(s.prefetch_window(), 8);
    }

    #[test]
    fn set_and_get() {
        let mut s = Settings::default();
        assert_eq!(s.value("execution_mode"), "ooo");
        s.set("EXECUTION_MODE", "Serial").unwrap();
        assert_eq!(s.value("execution_mode"), "serial");
        assert!(s
            .set("execution_mode", "fast")
            .unwrap_err()
            .to_string()
            .contains("expected one of"));
        assert_eq!(
            s.set("nope", "1"),
            Err(SettingError::Unknown("nope".into()))
        );
        s.set("enable_index", "false").unwrap();
        assert!(!s.flag("enable_index"));
        assert_eq!(s.statement_timeout(), None);
        s.set("statement_timeout", "1500").unwrap();
        assert_eq!(s.statement_timeout(), Some(Duration::from_millis(1500)));
        s.set("statement_timeout", "2 s").unwrap();
        assert_eq!(s.statement_timeout(), Some(Duration::from_secs(2)));
        s.set("statement_timeout", "0").unwrap();
        assert_eq!(s.statement_timeout(), None);
        assert!(s.set("memory_limit", "lots").is_err());
        s.set("memory_limit", "1MB").unwrap();
        assert_eq!(s.memory_limit(), 1 << 20);
        assert_eq!(s.entry("memory_limit").unwrap().source, Source::Session);
        s.reset("memory_limit").unwrap();
        assert_eq!(s.memory_limit(), 4 << 30);
        assert_eq!(s.entry("memory_limit").unwrap().source, Source::Default);
    }

    #[test]
    fn database_settings_are_shared_and_server_settings_read_only() {
        let db = Arc::new(DatabaseSettings::default());
        db.init("shared_buffers", "8MB", Some("1GB"), true).unwrap();
        db.init("buffer_policy", "lru", None, true).unwrap();
        let mut a = Settings::for_database(db.clone());
        let b = Settings::for_database(db);
        assert_eq!(b.value("buffer_policy"), "lru");
        assert_eq!(b.entry("buffer_policy").unwrap().source, Source::Startup);
        a.set("buffer_policy", "ARC").unwrap();
        assert_eq!(b.value("buffer_policy"), "arc");
        assert_eq!(b.entry("buffer_policy").unwrap().source, Source::Database);
        assert_eq!(b.size("shared_buffers"), Some(8 << 20));
        assert_eq!(b.boot("shared_buffers").unwrap(), "1GB");
        let e = a.set("shared_buffers", "16MB").unwrap_err();
        assert_eq!(e, SettingError::ReadOnly("shared_buffers"));
        assert_eq!(e.sqlstate(), "55P02");
        assert_eq!(
            e.to_string(),
            "parameter \"shared_buffers\" cannot be changed without restarting the server"
        );
        assert_eq!(
            a.reset("max_memory"),
            Err(SettingError::ReadOnly("max_memory"))
        );
        assert_eq!(b.value("shared_buffers"), "8mb");
    }

    #[test]
    fn the_table_has_a_row_per_setting() {
        let t = markdown_table();
        assert_eq!(t.lines().count(), SETTINGS.len() + 2);
        assert!(t.contains("| `execution_mode` | serial \\| static \\| ooo | `ooo` | session |"));
        assert!(t.contains("| `shared_buffers` | size |"));
    }
}
