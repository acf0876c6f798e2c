//! The SQL that recreates a database's schema (`schema.sql` of `EXPORT DATABASE`):
//! sequences, tables with their defaults, identity columns and constraints, views and
//! indexes, each in an order in which every statement finds what it names.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use kura_storage::catalog::IndexEntry;
use kura_storage::rules::TableRules;
use kura_storage::sequence::{Identity, SequenceEntry};
use kura_storage::{Catalog, Storage};

/// What `EXPORT DATABASE` writes besides the data: the schema, and the tables in the
/// order their data loads.
pub(crate) struct Script {
    /// Sequences, tables, views and indexes (DuckDB's `load.sql` may hold only COPY;
    /// kura's import builds the indexes after the data, see `load::deferred`).
    pub schema: String,
    /// Tables in an order that loads every referenced table before its references.
    pub tables: Vec<String>,
}

/// The script of `catalog`'s committed schema; sequences as they stand in `storage` now.
pub(crate) fn render(catalog: &Catalog, storage: &Storage) -> Script {
    let sequences: Vec<&SequenceEntry> = catalog.sequences().collect();
    let mut schema = String::new();
    // `setval` of used-up sequences, once they all exist.
    let mut after_load = String::new();
    // Free sequences first: a table's DEFAULT may draw on one.
    for s in sequences.iter().filter(|s| s.def.owned_by.is_none()) {
        let _ = writeln!(schema, "{}", create_sequence(s, storage, &mut after_load));
    }
    let tables = load_order(catalog);
    for name in &tables {
        let Some(table) = catalog.table(name) else {
            continue;
        };
        let rules = catalog.rules(name);
        let identity_of = |column: &str| {
            sequences.iter().copied().find(|s| {
                s.def.identity.is_some()
                    && s.def
                        .owned_by
                        .as_ref()
                        .is_some_and(|o| o.table == *name && o.column == column)
            })
        };
        let mut lines = Vec::new();
        for c in &table.schema().columns {
            let mut line = format!("    {} {}", ident(&c.name), type_name(&c.data_type));
            if !c.nullable {
                line.push_str(" NOT NULL");
            }
            // An identity column's default is its sequence's: the clause says both.
            if let Some(s) = identity_of(&c.name) {
                let _ = write!(line, " {}", identity(s, storage, &mut after_load));
            } else if let Some(sql) = rules.and_then(|r| r.default_of(&c.name)) {
                let _ = write!(line, " DEFAULT {sql}");
            }
            lines.push(line);
        }
        if let Some(rules) = rules {
            lines.extend(constraints(rules));
        }
        let _ = writeln!(
            schema,
            "CREATE TABLE {} (\n{}\n);",
            ident(name),
            lines.join(",\n")
        );
    }
    // A serial column's sequence, owned by its column: after the table it names.
    for s in sequences
        .iter()
        .filter(|s| s.def.owned_by.is_some() && s.def.identity.is_none())
    {
        let _ = writeln!(schema, "{}", create_sequence(s, storage, &mut after_load));
    }
    for (name, view) in view_order(catalog) {
        let columns = if view.columns.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = view.columns.iter().map(|c| ident(c)).collect();
            format!(" ({})", names.join(", "))
        };
        let sql = view.sql.trim().trim_end_matches(';');
        let _ = writeln!(schema, "CREATE VIEW {}{columns} AS {sql};", ident(&name));
    }
    schema.push_str(&after_load);
    for name in &tables {
        let keys: BTreeSet<&str> = catalog
            .rules(name)
            .map(|r| r.keys.iter().map(|k| k.name.as_str()).collect())
            .unwrap_or_default();
        for index in catalog.indexes_on(name) {
            // A key's index is made by its constraint.
            if !keys.contains(index.name.as_str()) {
                let _ = writeln!(schema, "{}", create_index(index));
            }
        }
    }
    Script { schema, tables }
}

/// A column type as PostgreSQL, DuckDB and kura all read it.
fn type_name(t: &kura_common::DataType) -> String {
    match t {
        kura_common::DataType::Double => "DOUBLE PRECISION".into(),
        t => t.to_string(),
    }
}

/// `name` as SQL writes it: bare when it reads back as itself, quoted otherwise.
pub(crate) fn ident(name: &str) -> String {
    kura_sql::binder::quote_ident(name)
}

/// The table constraints of `rules`, each named as it is.
fn constraints(rules: &TableRules) -> Vec<String> {
    let list = |cols: &[String]| cols.iter().map(|c| ident(c)).collect::<Vec<_>>().join(", ");
    let mut out = Vec::new();
    for k in &rules.keys {
        let kind = if k.primary { "PRIMARY KEY" } else { "UNIQUE" };
        out.push(format!(
            "    CONSTRAINT {} {kind} ({})",
            ident(&k.name),
            list(&k.columns)
        ));
    }
    for c in &rules.checks {
        out.push(format!(
            "    CONSTRAINT {} CHECK ({})",
            ident(&c.name),
            c.sql
        ));
    }
    for f in &rules.foreign_keys {
        out.push(format!(
            "    CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({})",
            ident(&f.name),
            list(&f.columns),
            ident(&f.ref_table),
            list(&f.ref_columns)
        ));
    }
    out
}

/// Where a sequence resumes: the value its next `nextval` returns, or `None` when it
/// is used up (no CYCLE): then it starts at its last value, marked used by `setval`.
fn resume_at(s: &SequenceEntry, storage: &Storage) -> Option<i64> {
    let state = storage.sequence_state(s.def.id).unwrap_or(s.state);
    s.def.next_after(state)
}

/// The options a sequence is created with, resuming where it stands; a used-up one gets
/// its `setval` in `after_load` (run once every sequence exists).
fn sequence_options(s: &SequenceEntry, storage: &Storage, after_load: &mut String) -> String {
    let d = &s.def;
    let start = match resume_at(s, storage) {
        Some(v) => v,
        None => {
            let state = storage.sequence_state(d.id).unwrap_or(s.state);
            let _ = writeln!(
                after_load,
                "SELECT setval('{}', {}, true);",
                d.name.replace('\'', "''"),
                state.last
            );
            state.last
        }
    };
    format!(
        "INCREMENT BY {} MINVALUE {} MAXVALUE {} START WITH {start}{}",
        d.increment,
        d.min,
        d.max,
        if d.cycle { " CYCLE" } else { " NO CYCLE" }
    )
}

fn create_sequence(s: &SequenceEntry, storage: &Storage, after_load: &mut String) -> String {
    let d = &s.def;
    let typed = if d.type_name == "bigint" {
        String::new()
    } else {
        format!(" AS {}", d.type_name)
    };
    let owner = d
        .owned_by
        .as_ref()
        .map(|o| format!(" OWNED BY {}.{}", ident(&o.table), ident(&o.column)))
        .unwrap_or_default();
    format!(
        "CREATE SEQUENCE {}{typed} {}{owner};",
        ident(&d.name),
        sequence_options(s, storage, after_load)
    )
}

/// An identity column's clause, its sequence resuming where it stands.
fn identity(s: &SequenceEntry, storage: &Storage, after_load: &mut String) -> String {
    let kind = match s.def.identity {
        Some(Identity::Always) => "ALWAYS",
        _ => "BY DEFAULT",
    };
    // sqlparser reads `NO CYCLE` only in CREATE SEQUENCE: the default is left unsaid.
    let options = sequence_options(s, storage, after_load).replace(" NO CYCLE", "");
    format!("GENERATED {kind} AS IDENTITY ({options})")
}

fn create_index(index: &IndexEntry) -> String {
    let list = |cols: &[String]| cols.iter().map(|c| ident(c)).collect::<Vec<_>>().join(", ");
    let include = if index.include.is_empty() {
        String::new()
    } else {
        format!(" INCLUDE ({})", list(&index.include))
    };
    format!(
        "CREATE {}INDEX {} ON {} ({}){include};",
        if index.unique { "UNIQUE " } else { "" },
        ident(&index.name),
        ident(&index.table),
        list(&index.columns)
    )
}

/// Every table, each after the tables its foreign keys reference (by name where the
/// references leave a choice; a cycle of references is broken by name).
fn load_order(catalog: &Catalog) -> Vec<String> {
    let names = catalog.table_names();
    let needs: BTreeMap<String, BTreeSet<String>> = names
        .iter()
        .map(|n| {
            let refs = catalog
                .rules(n)
                .map(|r| {
                    r.foreign_keys
                        .iter()
                        .map(|f| f.ref_table.clone())
                        .filter(|t| t != n)
                        .collect()
                })
                .unwrap_or_default();
            (n.clone(), refs)
        })
        .collect();
    topological(names, |n, done| needs[n].iter().all(|r| done.contains(r)))
}

/// Every view, each after the views its SQL names.
fn view_order(catalog: &Catalog) -> Vec<(String, kura_storage::catalog::ViewDef)> {
    let names = catalog.view_names();
    let words: BTreeMap<String, BTreeSet<String>> = names
        .iter()
        .filter_map(|n| {
            let view = catalog.view(n)?;
            Some((n.clone(), words_of(&view.sql)))
        })
        .collect();
    let views: BTreeSet<&String> = names.iter().collect();
    let order = topological(names.clone(), |n, done| {
        words.get(n).is_none_or(|ws| {
            ws.iter()
                .all(|w| w == n || !views.contains(w) || done.contains(w))
        })
    });
    order
        .into_iter()
        .filter_map(|n| catalog.view(&n).cloned().map(|v| (n, v)))
        .collect()
}

/// The words of `sql`, folded as names are (identifiers and keywords alike).
fn words_of(sql: &str) -> BTreeSet<String> {
    use sqlparser::tokenizer::{Token, Tokenizer};
    let Ok(tokens) = Tokenizer::new(&sqlparser::dialect::PostgreSqlDialect {}, sql).tokenize()
    else {
        return BTreeSet::new();
    };
    tokens
        .into_iter()
        .filter_map(|t| match t {
            Token::Word(w) if w.quote_style.is_some() => Some(w.value),
            Token::Word(w) => Some(w.value.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// `names` ordered so that each comes once `ready(name, placed so far)`; what never gets
/// ready (a cycle) follows in the order given.
fn topological(
    names: Vec<String>,
    ready: impl Fn(&String, &BTreeSet<String>) -> bool,
) -> Vec<String> {
    let mut done = BTreeSet::new();
    let mut order = Vec::with_capacity(names.len());
    let mut left = names;
    loop {
        let (now, later): (Vec<String>, Vec<String>) =
            left.into_iter().partition(|n| ready(n, &done));
        if now.is_empty() {
            order.extend(later);
            return order;
        }
        done.extend(now.iter().cloned());
        order.extend(now);
        left = later;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_quoted_only_where_they_must_be() {
        assert_eq!(ident("lineitem"), "lineitem");
        assert_eq!(ident("_x1"), "_x1");
        assert_eq!(ident("order"), "\"order\"");
        assert_eq!(ident("Mixed"), "\"Mixed\"");
        assert_eq!(ident("a b"), "\"a b\"");
        assert_eq!(ident("1st"), "\"1st\"");
        assert_eq!(ident("q\"t"), "\"q\"\"t\"");
    }

    #[test]
    fn a_table_comes_after_what_it_references_and_a_cycle_still_ends() {
        let refs = |n: &String| -> Vec<&str> {
            match n.as_str() {
                "a" => vec!["c"],
                "c" => vec!["b"],
                _ => vec![],
            }
        };
        let names = vec!["a".to_string(), "b".into(), "c".into()];
        let order = topological(names, |n, done| refs(n).iter().all(|r| done.contains(*r)));
        assert_eq!(order, vec!["b", "c", "a"]);
        let cyclic = topological(vec!["x".into(), "y".into()], |_, _| false);
        assert_eq!(cyclic, vec!["x", "y"]);
    }
}
