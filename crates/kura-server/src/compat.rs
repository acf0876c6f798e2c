//! PostgreSQL session statements the server answers itself so drivers connect
//! unchanged: transaction control (recognised here, carried out by the
//! session, which holds the transaction and its isolation level), the
//! client-side run-time parameters (`SET extra_float_digits`, `SHOW DateStyle` ...,
//! `SELECT current_setting('DateStyle')`). Everything else goes to the engine,
//! `version()`, `current_database()`, `current_user` ... included.

use std::collections::BTreeMap;

use crate::sql_scan::strip_leading_comments;

/// PostgreSQL parameters a client may set or show, with their defaults. kura's
/// own settings (execution_mode, ...) are not here: the engine owns those.
const CLIENT_PARAMETERS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("bytea_output", "hex"),
    ("client_encoding", "UTF8"),
    ("client_min_messages", "notice"),
    ("datestyle", "ISO, MDY"),
    ("default_table_access_method", "heap"),
    ("extra_float_digits", "1"),
    ("idle_in_transaction_session_timeout", "0"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("jit", "off"),
    ("lc_messages", "C"),
    ("max_identifier_length", "63"),
    ("search_path", "\"$user\", public"),
    ("server_encoding", "UTF8"),
    ("server_version", crate::SERVER_VERSION),
    ("server_version_num", crate::SERVER_VERSION_NUM),
    ("standard_conforming_strings", "on"),
    ("timezone", "UTC"),
];

/// Parameters that are reported but cannot be changed.
const READ_ONLY: &[&str] = &[
    "integer_datetimes",
    "max_identifier_length",
    "server_encoding",
    "server_version",
    "server_version_num",
];

/// A statement the server answers without the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Compat {
    /// `BEGIN` / `START TRANSACTION` with its modes, as the client wrote it.
    Begin(String),
    Commit,
    Rollback,
    /// `ROLLBACK TO [SAVEPOINT] name`, `COMMIT AND CHAIN`, `ROLLBACK AND
    /// CHAIN`, as the client wrote it: statements after which the session is
    /// in a transaction block (not a failed one) when they succeed, even run
    /// in a failed one.
    Resume(String),
    /// `SET name = value` for a client parameter (`value` None for RESET).
    Set {
        name: String,
        value: Option<String>,
    },
    /// `RESET ALL`.
    ResetAll,
    /// `SET TRANSACTION ...` / `SET SESSION CHARACTERISTICS ...`, as the
    /// client wrote it: the session sets the isolation level and access mode.
    SetTransaction(String),
    Show {
        name: String,
    },
    /// A one-row, one-text-column answer to a function call.
    Function {
        column: String,
        call: Function,
    },
    /// `DEALLOCATE [PREPARE] name | ALL`.
    Deallocate(Option<String>),
    Discard,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Function {
    /// `current_setting(name)` of a client parameter, which the connection
    /// keeps (the engine answers the other session functions, anywhere in a
    /// statement).
    CurrentSetting(String),
}

/// True when `name` is a client parameter the server keeps.
pub fn is_client_parameter(name: &str) -> bool {
    CLIENT_PARAMETERS
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case(name))
}

/// Client parameters of one connection.
#[derive(Debug, Clone, Default)]
pub struct ClientParameters {
    set: BTreeMap<String, String>,
}

impl ClientParameters {
    pub fn get(&self, name: &str) -> Option<String> {
        let key = name.to_ascii_lowercase();
        let default = CLIENT_PARAMETERS.iter().find(|(n, _)| *n == key)?.1;
        Some(
            self.set
                .get(&key)
                .cloned()
                .unwrap_or_else(|| default.to_string()),
        )
    }

    /// Sets (or with `None` resets) a parameter; read-only ones refuse.
    pub fn set(&mut self, name: &str, value: Option<String>) -> Result<(), String> {
        let key = name.to_ascii_lowercase();
        if READ_ONLY.contains(&key.as_str()) {
            return Err(format!("parameter \"{key}\" cannot be changed"));
        }
        match value {
            Some(v) => self.set.insert(key, v),
            None => self.set.remove(&key),
        };
        Ok(())
    }

    pub fn reset_all(&mut self) {
        self.set.clear();
    }
}

impl Compat {
    /// `BEGIN`, `COMMIT`, `ROLLBACK`, `SET TRANSACTION`: recognised here,
    /// carried out by the session.
    pub fn is_transaction_control(&self) -> bool {
        matches!(
            self,
            Compat::Begin(_)
                | Compat::Commit
                | Compat::Rollback
                | Compat::Resume(_)
                | Compat::SetTransaction(_)
        )
    }

    /// Statements a failed transaction accepts: those that end or recover it.
    pub fn ends_failed_transaction(&self) -> bool {
        matches!(self, Compat::Commit | Compat::Rollback | Compat::Resume(_))
    }
}

/// Whether `COMMIT`/`ROLLBACK` words (after the first) keep the session in a
/// transaction block: `[WORK | TRANSACTION] TO ...` (rollback) or
/// `[WORK | TRANSACTION] AND CHAIN`.
fn resumes(rest: &[&str], rollback: bool) -> bool {
    let rest: Vec<String> = rest.iter().map(|w| w.to_ascii_lowercase()).collect();
    let rest = match rest.first().map(String::as_str) {
        Some("work" | "transaction") => &rest[1..],
        _ => &rest[..],
    };
    match rest {
        [to, ..] if rollback && to == "to" => true,
        [and, chain] => and == "and" && chain == "chain",
        _ => false,
    }
}

/// Recognises a statement the server answers itself.
pub fn recognise(sql: &str) -> Option<Compat> {
    let s = strip_leading_comments(sql)
        .trim()
        .trim_end_matches(';')
        .trim();
    let words: Vec<&str> = s.split_whitespace().collect();
    let first = words.first()?.to_ascii_lowercase();
    let lower = s.to_ascii_lowercase();
    match first.as_str() {
        "begin" | "start"
            if first == "begin"
                || words
                    .get(1)
                    .is_some_and(|w| w.eq_ignore_ascii_case("transaction")) =>
        {
            Some(Compat::Begin(s.to_string()))
        }
        "commit" | "end" | "rollback" | "abort" => {
            let rollback = matches!(first.as_str(), "rollback" | "abort");
            Some(if resumes(&words[1..], rollback) {
                Compat::Resume(s.to_string())
            } else if rollback {
                Compat::Rollback
            } else {
                Compat::Commit
            })
        }
        "set" => recognise_set(&words[1..]).map(|c| match c {
            Compat::SetTransaction(_) => Compat::SetTransaction(s.to_string()),
            other => other,
        }),
        "reset" => match words.get(1).map(|w| w.to_ascii_lowercase()) {
            Some(n) if n == "all" => Some(Compat::ResetAll),
            Some(n) if is_client_parameter(&n) => Some(Compat::Set {
                name: n,
                value: None,
            }),
            _ => None,
        },
        "show" => {
            let rest = words[1..].join(" ").to_ascii_lowercase();
            let name = match rest.as_str() {
                "transaction isolation level" => "transaction_isolation".to_string(),
                "time zone" => "timezone".to_string(),
                other => other.to_string(),
            };
            is_client_parameter(&name).then_some(Compat::Show { name })
        }
        "deallocate" => {
            let mut rest = &words[1..];
            if rest
                .first()
                .is_some_and(|w| w.eq_ignore_ascii_case("prepare"))
            {
                rest = &rest[1..];
            }
            match rest {
                [w] if w.eq_ignore_ascii_case("all") => Some(Compat::Deallocate(None)),
                // Folded as PostgreSQL folds a name: quoted kept, else lower case.
                [name] if name.starts_with('"') => {
                    Some(Compat::Deallocate(Some(name.trim_matches('"').to_string())))
                }
                [name] => Some(Compat::Deallocate(Some(name.to_ascii_lowercase()))),
                _ => None,
            }
        }
        // DISCARD ALL and TEMP drop the session's temporary tables: the engine's.
        "discard"
            if words.get(1).is_some_and(|w| {
                w.eq_ignore_ascii_case("plans") || w.eq_ignore_ascii_case("sequences")
            }) =>
        {
            Some(Compat::Discard)
        }
        "select" => recognise_function(&lower[6..]),
        _ => None,
    }
}

fn recognise_set(words: &[&str]) -> Option<Compat> {
    let mut words = words;
    if words
        .first()
        .is_some_and(|w| w.eq_ignore_ascii_case("session") || w.eq_ignore_ascii_case("local"))
    {
        if words
            .get(1)
            .is_some_and(|w| w.eq_ignore_ascii_case("characteristics"))
        {
            return Some(Compat::SetTransaction(String::new()));
        }
        words = &words[1..];
    }
    let joined = words.join(" ");
    let lower = joined.to_ascii_lowercase();
    if lower.starts_with("transaction") {
        return Some(Compat::SetTransaction(String::new()));
    }
    let (name, value) = if let Some(v) = lower.strip_prefix("time zone ") {
        (
            "timezone".to_string(),
            joined[joined.len() - v.len()..].to_string(),
        )
    } else if let Some(v) = lower.strip_prefix("names ") {
        (
            "client_encoding".to_string(),
            joined[joined.len() - v.len()..].to_string(),
        )
    } else {
        let split = joined.find(|c: char| c == '=' || c.is_whitespace())?;
        let name = joined[..split].trim().to_ascii_lowercase();
        let mut rest = joined[split..].trim_start();
        if let Some(r) = rest.strip_prefix('=') {
            rest = r;
        } else if rest.len() >= 2 && rest[..2].eq_ignore_ascii_case("to") {
            rest = &rest[2..];
        } else {
            return None;
        }
        (name, rest.trim().to_string())
    };
    if !is_client_parameter(&name) {
        return None;
    }
    let value = if value.eq_ignore_ascii_case("default") || value.eq_ignore_ascii_case("local") {
        None
    } else {
        Some(
            value
                .split(',')
                .map(|v| v.trim().trim_matches('\'').trim_matches('"'))
                .collect::<Vec<_>>()
                .join(", "),
        )
    };
    Some(Compat::Set { name, value })
}

/// `SELECT current_setting('name')` of a client parameter; `rest` follows
/// `select`, lower case.
fn recognise_function(rest: &str) -> Option<Compat> {
    let squashed: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
    let squashed = squashed.strip_prefix("pg_catalog.").unwrap_or(&squashed);
    let arg = squashed
        .strip_prefix("current_setting('")?
        .strip_suffix("')")?;
    is_client_parameter(arg).then(|| Compat::Function {
        column: "current_setting".into(),
        call: Function::CurrentSetting(arg.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_control() {
        assert_eq!(recognise("BEGIN"), Some(Compat::Begin("BEGIN".into())));
        assert_eq!(
            recognise("start transaction isolation level read committed;"),
            Some(Compat::Begin(
                "start transaction isolation level read committed".into()
            ))
        );
        assert_eq!(recognise("commit;"), Some(Compat::Commit));
        assert_eq!(recognise("ROLLBACK"), Some(Compat::Rollback));
        assert_eq!(recognise("rollback and no chain"), Some(Compat::Rollback));
        for sql in [
            "ROLLBACK TO SAVEPOINT \"_pg3_1\"",
            "rollback work to s",
            "ROLLBACK TO s",
            "commit and chain",
            "ABORT TRANSACTION AND CHAIN",
        ] {
            assert_eq!(recognise(sql), Some(Compat::Resume(sql.into())), "{sql}");
        }
        assert_eq!(recognise("commit to s"), Some(Compat::Commit));
        assert_eq!(recognise("start something"), None);
    }

    #[test]
    fn client_parameters_are_kept_kura_settings_are_not() {
        assert_eq!(
            recognise("SET extra_float_digits = 3"),
            Some(Compat::Set {
                name: "extra_float_digits".into(),
                value: Some("3".into())
            })
        );
        assert_eq!(
            recognise("set DateStyle to 'ISO', 'YMD'"),
            Some(Compat::Set {
                name: "datestyle".into(),
                value: Some("ISO, YMD".into())
            })
        );
        assert_eq!(
            recognise("SET TIME ZONE 'Europe/Paris'"),
            Some(Compat::Set {
                name: "timezone".into(),
                value: Some("Europe/Paris".into())
            })
        );
        assert_eq!(recognise("SET execution_mode = 'serial'"), None);
        assert_eq!(recognise("SHOW execution_mode"), None);
        // The session owns the transaction's modes.
        assert_eq!(recognise("show transaction isolation level"), None);
        assert_eq!(recognise("SET lock_timeout = '1s'"), None);
        assert_eq!(
            recognise("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY"),
            Some(Compat::SetTransaction(
                "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY".into()
            ))
        );
    }

    #[test]
    fn parameters_keep_values_and_defaults() {
        let mut p = ClientParameters::default();
        assert_eq!(p.get("DateStyle").unwrap(), "ISO, MDY");
        p.set("datestyle", Some("ISO, YMD".into())).unwrap();
        assert_eq!(p.get("DATESTYLE").unwrap(), "ISO, YMD");
        p.set("datestyle", None).unwrap();
        assert_eq!(p.get("datestyle").unwrap(), "ISO, MDY");
        assert!(p.set("server_version", Some("1".into())).is_err());
        assert!(p.get("execution_mode").is_none());
    }

    #[test]
    fn functions() {
        // The engine answers these, inside any expression too.
        assert_eq!(recognise("select version()"), None);
        assert_eq!(recognise("SELECT current_user"), None);
        assert!(matches!(
            recognise("select current_setting('server_version_num')"),
            Some(Compat::Function {
                call: Function::CurrentSetting(_),
                ..
            })
        ));
        assert_eq!(recognise("select version() from lineitem"), None);
        assert_eq!(recognise("select count(*) from t"), None);
    }
}
