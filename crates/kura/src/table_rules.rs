//! CREATE TABLE's column options and table constraints turned into what kura
//! keeps: the schema (types, NOT NULL), the table's rules (DEFAULT, CHECK,
//! PRIMARY KEY / UNIQUE, FOREIGN KEY) and the unique indexes behind its keys.
//! Every option sqlparser parses that kura does not implement is refused
//! (0A000) here — never accepted and ignored.

use sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder;
use sqlparser::ast::{
    self, CharacterLength, ColumnOption, CreateTable, ExactNumberInfo, Expr, Ident, IndexColumn,
    TableConstraint,
};

use kura_common::decimal::MAX_PRECISION;
use kura_common::DataType;
use kura_storage::rules::{CheckConstraint, ColumnDefault, ForeignKey, KeyConstraint, TableRules};
use kura_storage::sequence::{Identity, OwnedBy, SequenceDef};
use kura_storage::{ColumnDef, Schema};

use crate::error::{KuraError, KuraResult};
use crate::names::{ident, object_name};

/// A table as CREATE TABLE defines it.
pub(crate) struct TableDefinition {
    pub schema: Schema,
    pub rules: TableRules,
    /// The sequences of its `serial` and identity columns (created with it).
    pub sequences: Vec<SequenceDef>,
}

fn unsupported<T>(what: impl Into<String>) -> KuraResult<T> {
    Err(KuraError::Unsupported(what.into()))
}

/// Refuses every CREATE TABLE clause other than the columns, constraints,
/// IF NOT EXISTS, AS query [WITH [NO] DATA], TEMPORARY (handled by the
/// caller) and UNLOGGED (every kura table is as durable as a logged one,
/// which UNLOGGED permits). `CREATE TABLE … AS` takes no column definitions
/// (PostgreSQL's column names without types sqlparser does not read).
pub(crate) fn check_clauses(ct: &CreateTable) -> KuraResult<()> {
    if ct.query.is_some() && !(ct.columns.is_empty() && ct.constraints.is_empty()) {
        return Err(KuraError::Syntax(
            "CREATE TABLE … AS takes no column definitions or constraints".into(),
        ));
    }
    if ct.with_data.is_some() && ct.query.is_none() {
        return Err(KuraError::Syntax(
            "WITH [NO] DATA belongs to CREATE TABLE … AS".into(),
        ));
    }
    if ct.with_data.is_some_and(|w| w.statistics.is_some()) {
        return unsupported("WITH DATA AND [NO] STATISTICS");
    }
    // Named first: the clauses users of other databases write most.
    let named: [(bool, &str); 10] = [
        (ct.or_replace, "CREATE OR REPLACE TABLE"),
        (ct.partition_by.is_some(), "PARTITION BY"),
        (ct.inherits.is_some(), "INHERITS"),
        (ct.like.is_some(), "CREATE TABLE … LIKE"),
        (
            !matches!(ct.table_options, ast::CreateTableOptions::None),
            "table options (WITH (…), TABLESPACE, ENGINE …)",
        ),
        (ct.partition_of.is_some(), "PARTITION OF"),
        (ct.on_commit.is_some() && !ct.temporary, "ON COMMIT"),
        (ct.external, "CREATE EXTERNAL TABLE"),
        (ct.clone.is_some(), "CREATE TABLE … CLONE"),
        (ct.comment.is_some(), "COMMENT on a table"),
    ];
    if let Some((_, what)) = named.iter().find(|(present, _)| *present) {
        return unsupported(*what);
    }
    // Everything else: the statement must equal one built from the clauses
    // kura reads, so an option of a later sqlparser is refused too.
    let mut plain = CreateTableBuilder::new(ct.name.clone())
        .columns(ct.columns.clone())
        .constraints(ct.constraints.clone())
        .if_not_exists(ct.if_not_exists)
        .temporary(ct.temporary)
        .build();
    plain.unlogged = ct.unlogged;
    plain.query = ct.query.clone();
    plain.with_data = ct.with_data;
    plain.on_commit = ct.on_commit;
    if plain != *ct {
        return unsupported(format!("CREATE TABLE clauses in: {ct}"));
    }
    Ok(())
}

/// Maps a SQL column type to kura's type, with a clear error for what kura
/// lacks. The names are the binder's (`CAST` reads the same ones); a column
/// is stricter: its lengths and DECIMAL precision are checked, not
/// clamped, and arrays, catalog vectors and serial pseudo-types (only
/// CREATE TABLE makes those, [`define`]) are refused.
pub fn convert_type(t: &ast::DataType) -> KuraResult<DataType> {
    use ast::DataType as T;
    match t {
        T::Varchar(Some(CharacterLength::IntegerLength { length, .. }))
        | T::CharacterVarying(Some(CharacterLength::IntegerLength { length, .. }))
        | T::Char(Some(CharacterLength::IntegerLength { length, .. }))
        | T::Character(Some(CharacterLength::IntegerLength { length, .. }))
            if *length == 0 || u32::try_from(*length).is_err() =>
        {
            return Err(KuraError::Invalid(format!(
                "invalid length {length} for type {t}"
            )))
        }
        T::Decimal(info) | T::Numeric(info) => {
            let (p, s) = match info {
                ExactNumberInfo::None => (MAX_PRECISION as u64, 0),
                ExactNumberInfo::Precision(p) => (*p, 0),
                ExactNumberInfo::PrecisionAndScale(p, s) => (*p, (*s).max(0) as u64),
            };
            if p == 0 || p > MAX_PRECISION as u64 || s > p {
                return Err(KuraError::Invalid(format!(
                    "DECIMAL precision must be 1..{MAX_PRECISION} and scale 0..precision (got {p},{s})"
                )));
            }
        }
        T::Array(_) => {
            return Err(KuraError::Unsupported(format!(
                "array column type {} (tables cannot store arrays yet)",
                t.to_string().to_ascii_lowercase()
            )))
        }
        // Other systems' names the binder's CAST reads but PostgreSQL has no
        // column type of: a column keeps to PostgreSQL's (FLOAT64 excepted,
        // which CREATE TABLE always read as double precision).
        T::TinyInt(_) | T::Nvarchar(_) | T::Datetime(_) | T::TimestampNtz(_) => {
            return Err(KuraError::UndefinedType(t.to_string().to_ascii_lowercase()))
        }
        T::Float64 => return Ok(DataType::Double),
        T::Custom(name, _) if crate::sequences::serial_type(t).is_some() => {
            return Err(KuraError::UndefinedType(format!(
                "{} (serial types exist only as CREATE TABLE column types)",
                name.to_string().to_ascii_lowercase()
            )))
        }
        _ => {}
    }
    match kura_sql::binder::types::sql_type(t, kura_sql::error::Pos::default()) {
        Ok(DataType::Vector(_)) => Err(KuraError::Unsupported(format!(
            "column type {} (a catalog type)",
            t.to_string().to_ascii_lowercase()
        ))),
        Ok(ty) => Ok(ty),
        Err(kura_sql::SqlError::UnknownType { name, .. }) => Err(KuraError::UndefinedType(name)),
        Err(e) => Err(e.into()),
    }
}

/// The schema and rules of `CREATE TABLE name (columns, constraints)`.
pub(crate) fn define(ct: &CreateTable) -> KuraResult<TableDefinition> {
    let table = object_name(&ct.name);
    let mut columns = Vec::new();
    let mut rules = TableRules {
        table: table.clone(),
        ..TableRules::default()
    };
    let mut namer = Namer::new(&table);
    let mut sequences = Vec::new();
    for c in &ct.columns {
        if let ast::DataType::Array(_) = &c.data_type {
            // Refused rather than stored as something else: arrays live in
            // expressions and results only.
            return Err(KuraError::Unsupported(format!(
                "array column \"{}\" of type {} (tables cannot store arrays yet)",
                c.name.value,
                c.data_type.to_string().to_ascii_lowercase()
            )));
        }
        let name = ident(&c.name);
        let mut nullable = true;
        let serial = crate::sequences::serial_type(&c.data_type);
        let data_type = match serial {
            Some((t, _, _)) => t,
            None => convert_type(&c.data_type)?,
        };
        if let Some(range) = serial {
            nullable = false;
            // `serial`: an integer column, NOT NULL, whose default draws on a
            // sequence the column owns (PostgreSQL's expansion).
            sequences.push(owned_sequence(
                &mut namer,
                &mut rules,
                &table,
                &name,
                range,
                &[],
                None,
            )?);
        }
        for opt in &c.options {
            let given = opt.name.as_ref().map(ident);
            match &opt.option {
                ColumnOption::NotNull => nullable = false,
                ColumnOption::Null => nullable = true,
                ColumnOption::Default(_) if rules.default_of(&name).is_some() => {
                    return Err(KuraError::Syntax(format!(
                        "multiple default values specified for column \"{name}\" of table \"{table}\""
                    )))
                }
                ColumnOption::Default(e) => {
                    check_default(e)?;
                    rules.defaults.push(ColumnDefault {
                        column: name.clone(),
                        sql: e.to_string(),
                    });
                }
                ColumnOption::PrimaryKey(pk) => {
                    key_options(&pk.index_name, pk.index_type.is_some(), &pk.include, &pk.index_options)?;
                    characteristics(&pk.characteristics)?;
                    nullable = false;
                    let name_ = given.unwrap_or_else(|| namer.primary());
                    rules.keys.push(KeyConstraint {
                        name: name_,
                        primary: true,
                        columns: vec![name.clone()],
                    });
                }
                ColumnOption::Unique(u) => {
                    unique_options(u)?;
                    let name_ = given.unwrap_or_else(|| namer.unique(std::slice::from_ref(&name)));
                    rules.keys.push(KeyConstraint {
                        name: name_,
                        primary: false,
                        columns: vec![name.clone()],
                    });
                }
                ColumnOption::Check(chk) => {
                    if chk.no_inherit || chk.enforced == Some(false) {
                        return unsupported("CHECK … NO INHERIT / NOT ENFORCED");
                    }
                    let name_ = given
                        .or_else(|| chk.name.as_ref().map(ident))
                        .unwrap_or_else(|| namer.check(Some(&name)));
                    rules.checks.push(CheckConstraint {
                        name: name_,
                        sql: chk.expr.to_string(),
                    });
                }
                ColumnOption::ForeignKey(fk) => {
                    let mut fk = fk.clone();
                    if fk.columns.is_empty() {
                        fk.columns = vec![c.name.clone()];
                    }
                    let name_ = given
                        .or_else(|| fk.name.as_ref().map(ident))
                        .unwrap_or_else(|| namer.foreign(std::slice::from_ref(&name)));
                    rules.foreign_keys.push(foreign_key(name_, &fk)?);
                }
                ColumnOption::Collation(_)
                    if !matches!(data_type, DataType::Varchar(_) | DataType::Char(_)) =>
                {
                    return Err(KuraError::State {
                        sqlstate: "42804",
                        message: format!(
                            "collations are not supported by type {}",
                            c.data_type.to_string().to_ascii_lowercase()
                        ),
                    })
                }
                ColumnOption::Collation(c) => match object_name(c).as_str() {
                    // kura compares text bytewise, as the C collation does.
                    "c" | "posix" | "C" | "POSIX" | "default" => {}
                    other => return unsupported(format!("collation \"{other}\"")),
                },
                ColumnOption::Generated {
                    generated_as: generated_as @ (ast::GeneratedAs::Always | ast::GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    if serial.is_some() || rules.default_of(&name).is_some() {
                        return Err(KuraError::Syntax(format!(
                            "both default and identity specified for column \"{name}\" of table \"{table}\""
                        )));
                    }
                    let range = crate::sequences::identity_type(&c.data_type)?;
                    let kind = match generated_as {
                        ast::GeneratedAs::Always => Identity::Always,
                        _ => Identity::ByDefault,
                    };
                    nullable = false;
                    let options = sequence_options.as_deref().unwrap_or(&[]);
                    sequences.push(owned_sequence(
                        &mut namer,
                        &mut rules,
                        &table,
                        &name,
                        range,
                        options,
                        Some(kind),
                    )?);
                }
                ColumnOption::Identity(_) => {
                    return unsupported(format!(
                        "IDENTITY(seed, increment) on column \"{name}\" (write GENERATED BY DEFAULT AS IDENTITY)"
                    ))
                }
                ColumnOption::Generated { .. } => {
                    return unsupported(format!("generated column \"{name}\""))
                }
                other => return unsupported(format!("column option {other}")),
            }
        }
        columns.push(ColumnDef {
            name,
            data_type,
            nullable,
        });
    }
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey(pk) => {
                key_options(
                    &pk.index_name,
                    pk.index_type.is_some(),
                    &pk.include,
                    &pk.index_options,
                )?;
                characteristics(&pk.characteristics)?;
                let cols = key_columns(&pk.columns)?;
                for col in &mut columns {
                    if cols.contains(&col.name) {
                        col.nullable = false;
                    }
                }
                rules.keys.push(KeyConstraint {
                    name: pk
                        .name
                        .as_ref()
                        .map(ident)
                        .unwrap_or_else(|| namer.primary()),
                    primary: true,
                    columns: cols,
                });
            }
            TableConstraint::Unique(u) => {
                unique_options(u)?;
                let cols = key_columns(&u.columns)?;
                rules.keys.push(KeyConstraint {
                    name: u
                        .name
                        .as_ref()
                        .map(ident)
                        .unwrap_or_else(|| namer.unique(&cols)),
                    primary: false,
                    columns: cols,
                });
            }
            TableConstraint::Check(chk) => {
                if chk.no_inherit || chk.enforced == Some(false) {
                    return unsupported("CHECK … NO INHERIT / NOT ENFORCED");
                }
                rules.checks.push(CheckConstraint {
                    name: chk
                        .name
                        .as_ref()
                        .map(ident)
                        .unwrap_or_else(|| namer.check(None)),
                    sql: chk.expr.to_string(),
                });
            }
            TableConstraint::ForeignKey(fk) => {
                let cols: Vec<String> = fk.columns.iter().map(ident).collect();
                let name = fk
                    .name
                    .as_ref()
                    .map(ident)
                    .unwrap_or_else(|| namer.foreign(&cols));
                rules.foreign_keys.push(foreign_key(name, fk)?);
            }
            other => return unsupported(format!("table constraint {other}")),
        }
    }
    if rules.keys.iter().filter(|k| k.primary).count() > 1 {
        return Err(KuraError::Syntax(format!(
            "multiple primary keys for table \"{table}\" are not allowed"
        )));
    }
    let schema = Schema::new(columns);
    validate(&table, &schema, &rules)?;
    Ok(TableDefinition {
        schema,
        rules,
        sequences,
    })
}

/// The sequence of a `serial` or identity column `column` (named
/// `table_column_seq`), whose `nextval` becomes the column's default.
fn owned_sequence(
    namer: &mut Namer,
    rules: &mut TableRules,
    table: &str,
    column: &str,
    range: (kura_common::DataType, i64, i64),
    options: &[ast::SequenceOptions],
    identity: Option<Identity>,
) -> KuraResult<SequenceDef> {
    let seq = namer.fresh(format!("{table}_{column}_seq"));
    rules.defaults.push(ColumnDefault {
        column: column.to_string(),
        sql: crate::sequences::nextval_sql(&seq),
    });
    crate::sequences::definition(
        &seq,
        range,
        options,
        Some(OwnedBy {
            table: table.to_string(),
            column: column.to_string(),
        }),
        identity,
    )
}

/// Names every column a rule mentions against the schema, and refuses two
/// constraints of one name.
fn validate(table: &str, schema: &Schema, rules: &TableRules) -> KuraResult<()> {
    let missing = |c: &String| {
        KuraError::UndefinedColumn(format!(
            "column \"{c}\" named in a constraint does not exist in table \"{table}\""
        ))
    };
    for k in &rules.keys {
        for c in &k.columns {
            let i = schema.index_of(c).ok_or_else(|| missing(c))?;
            json_key(schema.columns[i].data_type)?;
        }
    }
    for f in &rules.foreign_keys {
        for c in &f.columns {
            schema.index_of(c).ok_or_else(|| missing(c))?;
        }
    }
    let mut names: Vec<&str> = rules.constraint_names().collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(KuraError::State {
            sqlstate: "42710",
            message: format!(
                "constraint \"{}\" for relation \"{table}\" already exists",
                w[0]
            ),
        });
    }
    Ok(())
}

/// A key or index column of json or jsonb is refused: json has no equality
/// (PostgreSQL's 42704), and keys compare as their text, where equal jsonb
/// values may differ (`1.0`, `1`).
pub(crate) fn json_key(t: kura_common::DataType) -> KuraResult<()> {
    match t {
        kura_common::DataType::Json => Err(KuraError::State {
            sqlstate: "42704",
            message: "data type json has no default operator class for access method \"btree\""
                .into(),
        }),
        kura_common::DataType::Jsonb => Err(KuraError::Unsupported(
            "a key or index on a jsonb column (kura compares jsonb by value only in expressions)"
                .into(),
        )),
        _ => Ok(()),
    }
}

/// A DEFAULT may not read columns or run a query (PostgreSQL: 0A000/42P10).
fn check_default(e: &Expr) -> KuraResult<()> {
    use std::ops::ControlFlow;
    let found = ast::visit_expressions(e, |x| match x {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => ControlFlow::Break("column reference"),
        Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
            ControlFlow::Break("subquery")
        }
        _ => ControlFlow::Continue(()),
    });
    match found {
        ControlFlow::Break("column reference") => Err(KuraError::State {
            sqlstate: "0A000",
            message: format!("cannot use column reference in DEFAULT expression: {e}"),
        }),
        ControlFlow::Break(_) => Err(KuraError::State {
            sqlstate: "0A000",
            message: format!("cannot use subquery in DEFAULT expression: {e}"),
        }),
        ControlFlow::Continue(()) => Ok(()),
    }
}

fn key_options(
    index_name: &Option<Ident>,
    index_type: bool,
    include: &[Ident],
    index_options: &[ast::IndexOption],
) -> KuraResult<()> {
    if let Some(name) = index_name {
        return unsupported(format!(
            "index name {name} in a key constraint (MySQL's; CONSTRAINT name is PostgreSQL's)"
        ));
    }
    if index_type || !include.is_empty() || !index_options.is_empty() {
        return unsupported("index options of a key constraint (USING, INCLUDE …)");
    }
    Ok(())
}

fn unique_options(u: &ast::UniqueConstraint) -> KuraResult<()> {
    key_options(
        &u.index_name,
        u.index_type.is_some(),
        &u.include,
        &u.index_options,
    )?;
    if !u.index_type_display.is_none() {
        return unsupported(format!("UNIQUE {} (MySQL's)", u.index_type_display));
    }
    characteristics(&u.characteristics)?;
    if matches!(u.nulls_distinct, ast::NullsDistinctOption::NotDistinct) {
        return unsupported("UNIQUE NULLS NOT DISTINCT");
    }
    Ok(())
}

/// Constraints are checked at the end of each statement (NOT DEFERRABLE).
fn characteristics(c: &Option<ast::ConstraintCharacteristics>) -> KuraResult<()> {
    if let Some(c) = c {
        if c.deferrable == Some(true)
            || matches!(c.initially, Some(ast::DeferrableInitial::Deferred))
            || c.enforced == Some(false)
        {
            return unsupported("DEFERRABLE / INITIALLY DEFERRED / NOT ENFORCED constraints");
        }
    }
    Ok(())
}

fn key_columns(cols: &[IndexColumn]) -> KuraResult<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            Expr::Identifier(id)
                if c.operator_class.is_none()
                    && c.column.options.sort.is_none()
                    && c.column.options.nulls_first.is_none() =>
            {
                Ok(ident(id))
            }
            other => unsupported(format!("key on {other}")),
        })
        .collect()
}

fn foreign_key(name: String, fk: &ast::ForeignKeyConstraint) -> KuraResult<ForeignKey> {
    let no_action = |a: &Option<ast::ReferentialAction>| {
        matches!(
            a,
            None | Some(ast::ReferentialAction::NoAction) | Some(ast::ReferentialAction::Restrict)
        )
    };
    if !no_action(&fk.on_delete) || !no_action(&fk.on_update) {
        return unsupported("ON DELETE / ON UPDATE actions other than NO ACTION and RESTRICT");
    }
    // MATCH SIMPLE is how kura checks a key: not at all when a column is NULL.
    if let Some(
        m @ (ast::ConstraintReferenceMatchKind::Full | ast::ConstraintReferenceMatchKind::Partial),
    ) = &fk.match_kind
    {
        return unsupported(format!("{m} in a foreign key"));
    }
    if let Some(name) = &fk.index_name {
        return unsupported(format!(
            "index name {name} in a foreign key (MySQL's; CONSTRAINT name is PostgreSQL's)"
        ));
    }
    characteristics(&fk.characteristics)?;
    Ok(ForeignKey {
        name,
        columns: fk.columns.iter().map(ident).collect(),
        ref_table: object_name(&fk.foreign_table),
        ref_columns: fk.referred_columns.iter().map(ident).collect(),
    })
}

/// PostgreSQL's names for constraints given none: `t_pkey`, `t_a_key`,
/// `t_a_check`, `t_a_fkey` (a number appended when taken).
struct Namer {
    table: String,
    taken: Vec<String>,
}

impl Namer {
    fn new(table: &str) -> Namer {
        Namer {
            table: table.to_string(),
            taken: Vec::new(),
        }
    }

    fn fresh(&mut self, base: String) -> String {
        let mut name = base.clone();
        let mut n = 0;
        while self.taken.contains(&name) {
            n += 1;
            name = format!("{base}{n}");
        }
        self.taken.push(name.clone());
        name
    }

    fn primary(&mut self) -> String {
        self.fresh(format!("{}_pkey", self.table))
    }

    fn unique(&mut self, cols: &[String]) -> String {
        self.fresh(format!("{}_{}_key", self.table, cols.join("_")))
    }

    fn check(&mut self, col: Option<&str>) -> String {
        match col {
            Some(c) => self.fresh(format!("{}_{c}_check", self.table)),
            None => self.fresh(format!("{}_check", self.table)),
        }
    }

    fn foreign(&mut self, cols: &[String]) -> String {
        self.fresh(format!("{}_{}_fkey", self.table, cols.join("_")))
    }
}
