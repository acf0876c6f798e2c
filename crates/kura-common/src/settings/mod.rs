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

mod registry;
mod session;
mod value;

pub use registry::{markdown_table, SETTINGS};
pub use session::{default_prefetch_window, DatabaseSettings, Entry, Settings};
pub use value::{
    parse_bool, parse_duration_ms, Scope, SettingError, SettingSpec, SettingType, SettingValue,
    Source,
};

#[cfg(test)]
mod tests;
