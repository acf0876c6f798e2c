//! Temporary tables (`CREATE TEMP|TEMPORARY TABLE`): a session's private kura
//! storage in an unlinked file of the temporary directory, so the tables are
//! seen by that session only, go when it ends, and a crash leaves nothing.
//!
//! The catalog a statement binds against is the temporary one first, then the
//! database's (PostgreSQL's `pg_temp` first in the search path): a temporary
//! table hides a permanent one of its name. Writes to a temporary table go
//! through the private storage's own write transaction, which never waits for
//! the database's one writer. Inside `BEGIN ... COMMIT` the private storage
//! follows the session's transaction: COMMIT commits the database's part and
//! then this one, ROLLBACK (or a failed COMMIT) forgets both, and savepoints
//! are set, released and gone back to in both parts alike.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use sqlparser::ast::{self, ObjectName, ObjectType, Statement};

use kura_storage::{Storage, StorageOptions};

use crate::error::{KuraError, KuraResult};
use crate::names::object_name;
use crate::result::QueryResult;
use crate::txn::{TempTables, Tx};

/// Buffer pool of a session's temporary storage: temporary tables are scratch
/// space, and every session may have some.
const TEMP_BUFFER_BYTES: u64 = 32 << 20;

/// A fresh file name in the temporary directory.
fn temp_path() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "kura-temp-{}-{}-{}.kura",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ))
}

/// A session's private storage, in a fresh file of the temporary directory.
fn open_private_storage(page_size: usize) -> KuraResult<Arc<Storage>> {
    let path = temp_path();
    let storage = Storage::open(
        &path,
        StorageOptions {
            page_size,
            buffer_bytes: TEMP_BUFFER_BYTES,
            // The temporary directory may be a tmpfs, which has no O_DIRECT.
            direct_io: false,
            ..StorageOptions::default()
        },
    );
    // The open file lives on unlinked: nothing of it outlives the
    // session, nor a crash, nor is it ever visible by name.
    let _ = std::fs::remove_file(&path);
    Ok(storage?)
}

/// After the session's COMMIT (`committed`: its writes are durable) or
/// ROLLBACK: the temporary part is committed or forgotten with it.
pub(crate) fn end_transaction(temp: &TempTables, committed: bool) -> KuraResult<()> {
    let mut state = temp.lock();
    if committed {
        crate::txn::commit(&mut state)?;
    } else {
        crate::txn::rollback(&mut state);
    }
    Ok(())
}

/// Refuses temporary relations kura cannot keep private: temporary views (and
/// GLOBAL TEMPORARY tables, which PostgreSQL also rejects).
pub(crate) fn refuse_unsupported(stmt: &Statement) -> KuraResult<()> {
    let what = match stmt {
        Statement::CreateTable(ct) if ct.global.is_some() => "GLOBAL and LOCAL temporary tables",
        Statement::CreateTable(ct)
            if ct.on_commit.is_some() && ct.on_commit != Some(ast::OnCommit::PreserveRows) =>
        {
            if !ct.temporary {
                return Err(KuraError::State {
                    sqlstate: "42P16",
                    message: "ON COMMIT can only be used on temporary tables".into(),
                });
            }
            "ON COMMIT DELETE ROWS and ON COMMIT DROP"
        }
        Statement::CreateView(v) if v.temporary => "temporary views",
        _ => return Ok(()),
    };
    Err(KuraError::Unsupported(what.into()))
}

/// The private storage's transaction for DDL (`what`) on temporary tables:
/// refused in a READ ONLY transaction, as PostgreSQL refuses it, though the
/// rows of temporary tables may be written there.
pub(crate) fn ddl_tx<'a>(tx: &Tx<'a>, what: &str) -> KuraResult<Tx<'a>> {
    if tx.read_only_block() {
        return Err(KuraError::State {
            sqlstate: "25006",
            message: format!("cannot execute {what} in a read-only transaction"),
        });
    }
    tx.temp_tx()
        .ok_or_else(|| KuraError::Internal("no temporary storage".into()))
}

/// The transaction a `CREATE TEMP TABLE` writes: the private storage's.
pub(crate) fn create_tx<'a>(tx: &Tx<'a>) -> KuraResult<Tx<'a>> {
    if tx.read_only_block() {
        return ddl_tx(tx, "CREATE TABLE");
    }
    tx.temp
        .storage_or_open(|| open_private_storage(tx.storage.page_size()))?;
    tx.temp_tx()
        .ok_or_else(|| KuraError::Internal("no temporary storage".into()))
}

/// `CREATE TEMP TABLE name (columns...)`. A foreign key may reference only
/// temporary tables: the private storage cannot see the database's, nor can
/// a write of the database's check rows of the private one.
pub(crate) fn create_table(tx: &Tx, ct: &ast::CreateTable) -> KuraResult<QueryResult> {
    crate::table_rules::check_clauses(ct)?;
    let name = object_name(&ct.name);
    let def = crate::table_rules::define(ct)?;
    if def
        .rules
        .foreign_keys
        .iter()
        .any(|fk| fk.ref_table != name && !tx.is_temp(&fk.ref_table))
    {
        return Err(KuraError::Unsupported(
            "a foreign key from a temporary table to a permanent table".into(),
        ));
    }
    if !def.sequences.is_empty() {
        // Its sequence would live in the private storage, where nextval
        // does not look.
        return Err(KuraError::Unsupported(
            "serial and identity columns of temporary tables".into(),
        ));
    }
    crate::ddl::create_table(&create_tx(tx)?, ct)
}

/// `DROP TABLE a, b`: temporary tables are dropped from the private storage,
/// the others from the database; one statement dropping both kinds would need
/// the two commits to be one, so it is refused.
pub(crate) fn drop_tables(
    tx: &Tx,
    object_type: ObjectType,
    if_exists: bool,
    names: &[ObjectName],
) -> KuraResult<QueryResult> {
    if object_type != ObjectType::Table {
        return crate::ddl::drop_tables(tx, object_type, if_exists, names);
    }
    // A name of neither kind goes with the others (IF EXISTS skips it, or
    // it is the error).
    let temp = names.iter().any(|n| tx.is_temp(&object_name(n)));
    let permanent = names.iter().any(|n| {
        let n = object_name(n);
        !tx.is_temp(&n) && tx.catalog().table(&n).is_some()
    });
    match (temp, permanent) {
        (false, _) => crate::ddl::drop_tables(tx, object_type, if_exists, names),
        (true, false) => {
            crate::ddl::drop_tables(&ddl_tx(tx, "DROP TABLE")?, object_type, if_exists, names)
        }
        _ => Err(KuraError::Unsupported(
            "DROP TABLE of temporary and permanent tables in one statement".into(),
        )),
    }
}

/// `DROP INDEX a, b`: from the storage holding the first index.
pub(crate) fn drop_indexes(
    tx: &Tx,
    if_exists: bool,
    names: &[ObjectName],
) -> KuraResult<QueryResult> {
    let temp = |n: &ObjectName| {
        tx.temp_catalog()
            .is_some_and(|c| c.index(&object_name(n)).is_some())
    };
    match names.iter().filter(|n| temp(n)).count() {
        0 => crate::ddl::drop_indexes(tx, if_exists, names),
        n if n == names.len() => {
            crate::ddl::drop_indexes(&ddl_tx(tx, "DROP INDEX")?, if_exists, names)
        }
        _ => Err(KuraError::Unsupported(
            "DROP INDEX of indexes on temporary and permanent tables in one statement".into(),
        )),
    }
}
