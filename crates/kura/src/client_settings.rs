//! PostgreSQL client parameters that mean nothing to kura, and the values it reports for them.

/// Parameters PostgreSQL clients set or ask for that have no meaning in
/// kura, with the values kura reports for them.
pub(crate) const CLIENT_SETTINGS: &[(&str, &str)] = &[
    ("server_version", crate::identity::PG_VERSION),
    ("server_version_num", crate::identity::PG_VERSION_NUM),
    ("server_encoding", "UTF8"),
    ("client_encoding", "UTF8"),
    ("datestyle", "ISO, MDY"),
    ("default_table_access_method", "heap"),
    ("timezone", "UTC"),
    ("standard_conforming_strings", "on"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    // PostgreSQL's build-time limit on an index's columns, which pgjdbc
    // reads before it lists keys; kura's indexes take as many.
    ("max_index_keys", "32"),
    ("search_path", "public"),
    ("application_name", ""),
    ("extra_float_digits", ""),
];

/// The value kura reports for client parameter `name` (`time zone` is SET's
/// spelling of `timezone`).
pub(crate) fn client_setting_value(name: &str) -> Option<&'static str> {
    let name = if name == "time zone" {
        "timezone"
    } else {
        name
    };
    CLIENT_SETTINGS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
}

pub(crate) fn is_client_setting(name: &str) -> bool {
    client_setting_value(name).is_some()
}
