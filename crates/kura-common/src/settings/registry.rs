//! The registry: every setting kura knows, with its default and description,
//! and the README's table made from it.

use super::value::{Scope, SettingSpec, SettingType};

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
        description: "where operators past memory_limit spill (hash joins, aggregations, sorts, windows); empty = beside the database file (<file>.tmp)",
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
        name: "enable_ordered_aggregate",
        ty: SettingType::Bool,
        default: "on",
        description: "let a GROUP BY on one column its table is stored in the order of group by runs as rows stream past, without a hash table",
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
