//! Session settings (`SET name = value`, `SHOW name`): a small typed registry
//! every layer reads from, so the planner, the executor and the buffer manager see
//! one source of truth.

use std::collections::BTreeMap;

/// Checks a free-form setting value; the error says what is wrong.
pub type Validator = fn(&str) -> Result<(), String>;

/// One known setting: its name, default, and the values it accepts.
pub struct SettingSpec {
    pub name: &'static str,
    pub default: &'static str,
    pub description: &'static str,
    /// Accepted values (lower case); empty means free-form (checked by `validate`).
    pub choices: &'static [&'static str],
    pub validate: Option<Validator>,
    pub scope: Scope,
}

/// Whom a setting affects, and so who may change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The session that sets it; anyone may.
    Session,
    /// Every session of the database (the buffer pool, its tier, the LLC):
    /// only a superuser may, as PostgreSQL's `ALTER SYSTEM`.
    Database,
}

fn validate_size(v: &str) -> Result<(), String> {
    crate::size::parse_size(v)
        .map(|_| ())
        .map_err(|e| e.to_string())
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

/// `unlimited` (or -1, PostgreSQL's spelling), or a size.
fn validate_size_or_unlimited(v: &str) -> Result<(), String> {
    if matches!(v.trim(), "unlimited" | "-1") {
        return Ok(());
    }
    validate_size(v)
}

/// Settings whose value is a path: kept as written, not lower-cased.
const CASE_KEPT: &[&str] = &["temp_directory"];

/// `off`, or a size such as `64MB` (the second buffer tier's).
fn validate_tier2(v: &str) -> Result<(), String> {
    if v.trim().eq_ignore_ascii_case("off") {
        return Ok(());
    }
    validate_size(v)
}

/// Pages a serial or static scan reads ahead by default (1 MiB of 16 KiB
/// pages): `prefetch_window`'s default, which its spec spells as text.
pub const DEFAULT_PREFETCH_WINDOW: usize = 64;

/// `prefetch_window`'s value: a number of pages from 1 to 65536.
fn parse_window(v: &str) -> Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(n) if (1..=65_536).contains(&n) => Ok(n),
        _ => Err(format!(
            "prefetch_window must be a number of pages from 1 to 65536, got \"{v}\""
        )),
    }
}

fn validate_window(v: &str) -> Result<(), String> {
    parse_window(v).map(|_| ())
}

fn validate_duration(v: &str) -> Result<(), String> {
    parse_duration_ms(v).map(|_| ())
}

/// Every setting kura knows. Layers add theirs here so `SHOW ALL` lists them.
pub const SETTINGS: &[SettingSpec] = &[
    SettingSpec {
        name: "execution_mode",
        default: "ooo",
        description: "serial | static | ooo (out-of-order, paper 003)",
        choices: &["serial", "static", "ooo"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "join_algorithm",
        default: "hash",
        description: "which registered join operator equi-joins use",
        choices: &["hash", "nested_loop"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "memory_limit",
        default: "4GB",
        description: "bound on hash tables and sorts of one query",
        choices: &[],
        validate: Some(validate_size),
        scope: Scope::Session,
    },
    SettingSpec {
        name: "temp_directory",
        default: "",
        description: "where operators past memory_limit spill (hash aggregation); empty = beside the database file (<file>.tmp)",
        choices: &[],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "max_temp_directory_size",
        default: "unlimited",
        description: "bound on the bytes one query's temporary files hold at once (e.g. 10GB), or unlimited; past it the query fails (53100)",
        choices: &[],
        validate: Some(validate_size_or_unlimited),
        scope: Scope::Session,
    },
    SettingSpec {
        name: "statement_timeout",
        default: "0",
        description: "cancel a statement that runs longer than this (ms, or with a unit: 30s, 5min); 0 = no limit",
        choices: &[],
        validate: Some(validate_duration),
        scope: Scope::Session,
    },
    SettingSpec {
        name: "lock_timeout",
        default: "0",
        description: "give up waiting for another transaction's write lock after this long (55P03; ms, or with a unit); 0 = wait (bounded by statement_timeout)",
        choices: &[],
        validate: Some(validate_duration),
        scope: Scope::Session,
    },
    SettingSpec {
        name: "default_transaction_isolation",
        default: "read committed",
        description: "isolation of new transactions: read committed (a waiting writer re-reads the latest commit), repeatable read or serializable (one snapshot; a write after a concurrent commit fails with 40001)",
        choices: &["read committed", "read uncommitted", "repeatable read", "serializable"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "default_transaction_read_only",
        default: "off",
        description: "on: new transactions (and autocommit statements) may not write (25006)",
        choices: &["on", "off"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "enable_index",
        default: "on",
        description: "let the optimizer choose index scans and index nested-loop joins",
        choices: &["on", "off"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "enable_right_join",
        default: "on",
        description: "let a LEFT, semi or anti join build its preserved side when that side is the smaller (a right hash join)",
        choices: &["on", "off"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "enable_eager_aggregate",
        default: "on",
        description: "let an aggregation over joins pre-aggregate the inputs holding its arguments, then join the others to the partial groups",
        choices: &["on", "off"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "enable_seqscan",
        default: "on",
        description:
            "off: choose an applicable index scan or index join over a full scan whatever the cost",
        choices: &["on", "off"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "prefetch",
        default: "on",
        description: "sequential read-ahead of scans, in every execution mode",
        choices: &["on", "off"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "prefetch_window",
        default: "64",
        description: "pages a serial or static scan reads ahead of itself (prefetch = on)",
        choices: &[],
        validate: Some(validate_window),
        scope: Scope::Session,
    },
    SettingSpec {
        name: "resident_indexes",
        default: "none",
        description:
            "indexes whose pages the buffer pool holds (all | none | idx1,idx2; interior:... for interior nodes only); database-wide",
        choices: &[],
        validate: None,
        scope: Scope::Database,
    },
    SettingSpec {
        name: "llc_protect",
        default: "none",
        description: "paper 000: warm an object into the LLC and protect it with CAT (index:NAME | column:TABLE.COLUMN | hash_join:KEY for the hash table of each running join on KEY | none); database-wide",
        choices: &[],
        validate: None,
        scope: Scope::Database,
    },
    SettingSpec {
        name: "llc_classes",
        default: "off",
        description: "on: each pipeline runs in a cache-sensitive or streaming resctrl group chosen from its footprint (needs CAT)",
        choices: &["on", "off"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "llc_scan_policy",
        default: "normal",
        description: "flush: a streaming pipeline (more than the LLC) flushes its pages from the CPU caches after each morsel",
        choices: &["normal", "flush"],
        validate: None,
        scope: Scope::Session,
    },
    SettingSpec {
        name: "buffer_policy",
        default: "clock",
        description: "buffer replacement policy (kura-cache)",
        choices: &[],
        validate: None,
        scope: Scope::Database,
    },
    SettingSpec {
        name: "tier2",
        default: "off",
        description: "second buffer tier below the pool, of this many bytes (e.g. 256MB), or off; database-wide (kind: tier2_kind)",
        choices: &[],
        validate: Some(validate_tier2),
        scope: Scope::Database,
    },
    SettingSpec {
        name: "tier2_mode",
        default: "exclusive",
        description: "second tier: exclusive (pool victims are demoted into it, a hit moves the page up; paper 004) or inclusive (pages read from disk go into both)",
        choices: &["exclusive", "inclusive"],
        validate: None,
        scope: Scope::Database,
    },
    SettingSpec {
        name: "tier2_kind",
        default: "compressed",
        description: "second tier: compressed (lz4 page images in kura's memory) or page_cache (the OS page cache of the database file, bounded by kura)",
        choices: &["compressed", "page_cache"],
        validate: None,
        scope: Scope::Database,
    },
    SettingSpec {
        name: "tier2_policy",
        default: "lru",
        description: "replacement policy of the second tier (kura-cache)",
        choices: &[],
        validate: None,
        scope: Scope::Database,
    },
];

/// Current values of a session's settings.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    values: BTreeMap<String, String>,
}

impl Settings {
    pub fn spec(name: &str) -> Option<&'static SettingSpec> {
        SETTINGS.iter().find(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// Sets a known setting after validating the value; the error says what is accepted.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let spec = Self::spec(name)
            .ok_or_else(|| format!("unrecognized configuration parameter \"{name}\""))?;
        let v = if CASE_KEPT.contains(&spec.name) {
            value.trim().to_string()
        } else {
            value.trim().to_ascii_lowercase()
        };
        let v = match v.as_str() {
            "true" | "1" | "yes" if spec.choices == ["on", "off"] => "on".to_string(),
            "false" | "0" | "no" if spec.choices == ["on", "off"] => "off".to_string(),
            _ => v,
        };
        if !spec.choices.is_empty() && !spec.choices.contains(&v.as_str()) {
            return Err(format!(
                "invalid value for parameter \"{}\": \"{value}\" (expected one of: {})",
                spec.name,
                spec.choices.join(", ")
            ));
        }
        if let Some(check) = spec.validate {
            check(&v).map_err(|e| format!("invalid value for parameter \"{}\": {e}", spec.name))?;
        }
        self.values.insert(spec.name.to_string(), v);
        Ok(())
    }

    /// Current value (the default when never set); `None` for an unknown name.
    pub fn get(&self, name: &str) -> Option<String> {
        let spec = Self::spec(name)?;
        Some(
            self.values
                .get(spec.name)
                .cloned()
                .unwrap_or_else(|| spec.default.to_string()),
        )
    }

    /// Current value of a known setting (panics on a name not in [`SETTINGS`]: a bug).
    pub fn value(&self, name: &str) -> String {
        self.get(name)
            .unwrap_or_else(|| panic!("setting {name} is not registered"))
    }

    pub fn flag(&self, name: &str) -> bool {
        self.value(name) == "on"
    }

    /// `statement_timeout`; `None` when statements may run for any time.
    pub fn statement_timeout(&self) -> Option<std::time::Duration> {
        match parse_duration_ms(&self.value("statement_timeout")) {
            Ok(0) | Err(_) => None,
            Ok(ms) => Some(std::time::Duration::from_millis(ms)),
        }
    }

    /// `memory_limit` in bytes.
    pub fn memory_limit(&self) -> u64 {
        crate::size::parse_size(&self.value("memory_limit")).unwrap_or(u64::MAX)
    }

    /// `max_temp_directory_size` in bytes (`u64::MAX` when unlimited).
    pub fn max_temp_directory_size(&self) -> u64 {
        crate::size::parse_size(&self.value("max_temp_directory_size")).unwrap_or(u64::MAX)
    }

    /// `prefetch_window` in pages (validated when set, so always in range).
    pub fn prefetch_window(&self) -> usize {
        parse_window(&self.value("prefetch_window")).unwrap_or(DEFAULT_PREFETCH_WINDOW)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(s.prefetch_window(), DEFAULT_PREFETCH_WINDOW);
        let spec = Settings::spec("prefetch_window").unwrap();
        assert_eq!(parse_window(spec.default), Ok(DEFAULT_PREFETCH_WINDOW));
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
            .contains("expected one of"));
        assert!(s.set("nope", "1").is_err());
        s.set("enable_index", "false").unwrap();
        assert!(!s.flag("enable_index"));
        assert_eq!(s.statement_timeout(), None);
        s.set("statement_timeout", "1500").unwrap();
        assert_eq!(
            s.statement_timeout(),
            Some(std::time::Duration::from_millis(1500))
        );
        s.set("statement_timeout", "2 s").unwrap();
        assert_eq!(
            s.statement_timeout(),
            Some(std::time::Duration::from_secs(2))
        );
        s.set("statement_timeout", "1min").unwrap();
        assert_eq!(
            s.statement_timeout(),
            Some(std::time::Duration::from_secs(60))
        );
        assert!(s.set("statement_timeout", "soon").is_err());
        assert!(s.set("statement_timeout", "5 weeks").is_err());
        assert!(s.set("statement_timeout", "-1").is_err());
        s.set("statement_timeout", "0").unwrap();
        assert_eq!(s.statement_timeout(), None);
        assert!(s.set("memory_limit", "lots").is_err());
        s.set("memory_limit", "1MB").unwrap();
        assert_eq!(s.memory_limit(), 1 << 20);
    }
}
