//! Tests of the settings registry and of session/database values.

use super::*;
use std::sync::Arc;
use std::time::Duration;

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
