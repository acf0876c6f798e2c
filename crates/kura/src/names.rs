//! Names between SQL text and the catalog: a relation's key, a folded identifier, a quoted name.

use sqlparser::ast::ObjectName;

/// Name of a table as the catalog keys it (last part of a qualified name).
pub fn object_name(name: &ObjectName) -> String {
    name.0
        .last()
        .map(|p| match p.as_ident() {
            Some(id) if id.quote_style.is_some() => id.value.clone(),
            Some(id) => id.value.to_ascii_lowercase(),
            None => p.to_string(),
        })
        .unwrap_or_default()
}

/// An identifier as the catalog keys it: folded to lower case unless quoted.
pub(crate) use kura_sql::binder::norm as ident;

/// `name` as a quoted SQL identifier (catalog names are stored as written).
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
