//! What a setting is: its type (which parses and validates what `SET` is
//! given), its parsed value, its scope, where its value came from, and why
//! `SET` refused one.

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
