//! A database's shared setting values and a session's view of them.

use super::registry::SETTINGS;
use super::value::{Scope, SettingError, SettingSpec, SettingValue, Source};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

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
