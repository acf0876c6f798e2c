//! pg_database, pg_roles, pg_user, pg_settings, pg_collation and the like: the server and
//! its users.

use super::*;

/// `pg_catalog.pg_database`.
pub(super) const PG_DATABASE: SystemRelation = rel(
    PG,
    "pg_database",
    1262,
    "r",
    "oid:o datname:t datdba:o encoding:i datlocprovider:t datistemplate:b \
         datallowconn:b datconnlimit:i dattablespace:o datcollate:t datctype:t \
         daticulocale:t daticurules:t datcollversion:t datacl:a",
    pg_database_rows,
);

fn pg_database_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    vec![vec![
        o(DATABASE_OID),
        s(&snap.database),
        o(OWNER_OID),
        Value::Integer(6),
        s("c"),
        b(false),
        b(true),
        Value::Integer(-1),
        o(1663),
        s("C"),
        s("C"),
        N,
        N,
        N,
        N,
    ]]
}

/// `pg_catalog.pg_roles`.
pub(super) const PG_ROLES: SystemRelation = rel(
    PG,
    "pg_roles",
    12001,
    "v",
    "rolname:t rolsuper:b rolinherit:b rolcreaterole:b rolcreatedb:b \
         rolcanlogin:b rolreplication:b rolconnlimit:i rolpassword:t \
         rolvaliduntil:t rolbypassrls:b rolconfig:a oid:o",
    pg_roles_rows,
);

fn pg_roles_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    vec![vec![
        s(OWNER),
        b(true),
        b(true),
        b(true),
        b(true),
        b(true),
        b(false),
        Value::Integer(-1),
        s("********"),
        N,
        b(true),
        N,
        o(OWNER_OID),
    ]]
}

/// `pg_catalog.pg_auth_members`.
pub(super) const PG_AUTH_MEMBERS: SystemRelation = rel(
    PG,
    "pg_auth_members",
    1261,
    "r",
    "roleid:o member:o grantor:o admin_option:b",
    no_rows,
);

/// `pg_catalog.pg_user`.
pub(super) const PG_USER: SystemRelation = rel(
    PG,
    "pg_user",
    12002,
    "v",
    "usename:t usesysid:o usecreatedb:b usesuper:b userepl:b usebypassrls:b \
         passwd:t valuntil:t useconfig:a",
    pg_user_rows,
);

fn pg_user_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    vec![vec![
        s(OWNER),
        o(OWNER_OID),
        b(true),
        b(true),
        b(false),
        b(true),
        s("********"),
        N,
        N,
    ]]
}

/// `pg_catalog.pg_settings`.
pub(super) const PG_SETTINGS: SystemRelation = rel(
    PG,
    "pg_settings",
    12003,
    "v",
    "name:t setting:t unit:t category:t short_desc:t extra_desc:t context:t \
         vartype:t source:t min_val:t max_val:t enumvals:x boot_val:t reset_val:t \
         sourcefile:t sourceline:i pending_restart:b",
    pg_settings_rows,
);

fn pg_settings_rows(snap: &Snapshot) -> Vec<Vec<Value>> {
    snap.settings
        .iter()
        .map(|st| {
            let text = |v: &Option<String>| v.as_deref().map_or(N, s);
            let enumvals = st.enumvals.as_ref().map_or(N, |vals| {
                let vals: Vec<Value> = vals.iter().map(|v| s(v)).collect();
                Value::Text(kura_common::array::format_values(&vals))
            });
            vec![
                s(&st.name),
                s(&st.setting),
                text(&st.unit),
                s(&st.category),
                s(&st.description),
                N,
                s(&st.context),
                s(&st.vartype),
                s(&st.source),
                text(&st.min_val),
                text(&st.max_val),
                enumvals,
                s(&st.boot_val),
                s(&st.reset_val),
                N,
                N,
                b(false),
            ]
        })
        .collect()
}

/// `pg_catalog.pg_collation`.
pub(super) const PG_COLLATION: SystemRelation = rel(
    PG,
    "pg_collation",
    3456,
    "r",
    "oid:o collname:t collnamespace:o collowner:o collprovider:t \
         collisdeterministic:b collencoding:i collcollate:t collctype:t \
         colliculocale:t collicurules:t collversion:t",
    pg_collation_rows,
);

fn pg_collation_rows(_snap: &Snapshot) -> Vec<Vec<Value>> {
    [
        (100, "default", "d", N),
        (950, "C", "c", s("C")),
        (951, "POSIX", "c", s("POSIX")),
    ]
    .into_iter()
    .map(|(oid, name, provider, locale)| {
        vec![
            o(oid),
            s(name),
            o(PG_CATALOG_OID),
            o(OWNER_OID),
            s(provider),
            b(true),
            Value::Integer(-1),
            locale.clone(),
            locale,
            N,
            N,
            N,
        ]
    })
    .collect()
}

/// `pg_catalog.pg_extension`.
pub(super) const PG_EXTENSION: SystemRelation = rel(
    PG,
    "pg_extension",
    3079,
    "r",
    "oid:o extname:t extowner:o extnamespace:o extrelocatable:b extversion:t \
         extconfig:a extcondition:a",
    no_rows,
);
