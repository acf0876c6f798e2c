//! The façade's error: every layer's error joined in one type, each with the
//! SQLSTATE a PostgreSQL client expects.

use thiserror::Error;

use kura_storage::StorageError;

#[derive(Debug, Error)]
pub enum KuraError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Sql(#[from] kura_sql::SqlError),
    #[error(transparent)]
    Exec(#[from] kura_exec::ExecError),
    /// SQL text that does not parse.
    #[error("syntax error: {0}")]
    Syntax(String),
    /// Valid SQL that kura does not support (yet).
    #[error("not supported: {0}")]
    Unsupported(String),
    /// A type name kura does not know.
    #[error("type \"{0}\" does not exist")]
    UndefinedType(String),
    /// A column name the table does not have.
    #[error("{0}")]
    UndefinedColumn(String),
    /// A request that makes no sense (bad option value, wrong argument).
    #[error("{0}")]
    Invalid(String),
    /// A statement nested too deeply to run safely (PostgreSQL's `max_stack_depth`).
    #[error("stack depth limit exceeded: {0}")]
    TooDeep(String),
    /// A statement text longer than kura accepts.
    #[error("statement too long: {0}")]
    TooLong(String),
    /// A request this session may not make (server files over the wire).
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// A statement inside a transaction that an earlier error aborted.
    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    InFailedTransaction,
    #[error("canceling statement due to user request")]
    Canceled,
    #[error("canceling statement due to statement timeout")]
    StatementTimeout,
    /// An error PostgreSQL reports with its own code (unknown prepared
    /// statement 26000, unknown cursor 34000, no transaction block 25P01 ...).
    #[error("{message}")]
    State {
        sqlstate: &'static str,
        message: String,
    },
    /// A bug caught before it reached the user (a panic inside a query).
    #[error("internal error: {0}")]
    Internal(String),
}

pub type KuraResult<T> = Result<T, KuraError>;

impl KuraError {
    /// Where in the statement's text the error is, when known: line and
    /// column, from 1 (a binding error's message starts with them, a parse
    /// error's ends with sqlparser's `at Line: l, Column: c`).
    pub fn position(&self) -> Option<(u64, u64)> {
        match self {
            KuraError::Syntax(m) | KuraError::Sql(kura_sql::SqlError::Syntax(m)) => {
                let (_, at) = m.rsplit_once(" at Line: ")?;
                let (line, column) = at.split_once(", Column: ")?;
                let column: String = column.chars().take_while(char::is_ascii_digit).collect();
                Some((line.trim().parse().ok()?, column.parse().ok()?))
            }
            KuraError::Sql(e) => e.pos().map(|p| (p.line, p.column)),
            _ => None,
        }
    }

    /// The PostgreSQL error code for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            KuraError::Storage(e) => match e {
                StorageError::NoSuchTable(_) | StorageError::NoSuchView(_) => "42P01",
                StorageError::NoSuchIndex(_) => "42704",
                StorageError::TableExists(_) | StorageError::RelationExists(_) => "42P07",
                StorageError::NotNull { .. } => "23502",
                StorageError::UniqueViolation { .. } => "23505",
                StorageError::DependentObjects(_) => "2BP01",
                StorageError::TypeMismatch { .. } => "42804",
                StorageError::BadInput { code, .. } => code,
                StorageError::Sequence { code, .. } => code,
                StorageError::Checksum { .. } | StorageError::Corrupt { .. } => "XX001",
                StorageError::BufferExhausted { .. } | StorageError::ResidentTooLarge { .. } => {
                    "53200"
                }
                StorageError::Io { .. } => "58030",
                StorageError::InUse { .. } => "55006",
                StorageError::NotADatabase { .. } | StorageError::HeaderDamaged { .. } => "XX001",
                StorageError::FormatVersion { .. } | StorageError::Unsupported(_) => "0A000",
                StorageError::TooLarge(_) => "54000",
                StorageError::Invalid(_) | StorageError::Policy(_) => "22023",
            },
            KuraError::Sql(e) => e.sqlstate(),
            KuraError::Exec(e) => e.sqlstate(),
            KuraError::Syntax(_) => "42601",
            KuraError::Unsupported(_) => "0A000",
            KuraError::UndefinedType(_) => "42704",
            KuraError::Invalid(_) => "22023",
            KuraError::UndefinedColumn(_) => "42703",
            KuraError::TooDeep(_) => "54001",
            KuraError::TooLong(_) => "54000",
            KuraError::PermissionDenied(_) => "42501",
            KuraError::InFailedTransaction => "25P02",
            KuraError::Canceled | KuraError::StatementTimeout => "57014",
            KuraError::State { sqlstate, .. } => sqlstate,
            KuraError::Internal(_) => "XX000",
        }
    }
}
