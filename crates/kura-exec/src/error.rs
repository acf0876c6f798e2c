//! Errors raised while running a physical plan, each with its PostgreSQL SQLSTATE.

use kura_common::DataType;
use thiserror::Error;

/// What went wrong executing a query.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ExecError {
    #[error("division by zero")]
    DivisionByZero,
    #[error("numeric value out of range: {0}")]
    OutOfRange(String),
    /// An integer beyond its type, worded as PostgreSQL words it (`smallint
    /// out of range`, `value "70000" is out of range for type smallint`).
    #[error("{0}")]
    IntegerOutOfRange(String),
    #[error("invalid input syntax for type {ty}: \"{text}\"")]
    InvalidText { ty: String, text: String },
    /// Text that is not an array literal; `detail` says why, as PostgreSQL's
    /// DETAIL does.
    #[error("malformed array literal: \"{text}\"")]
    MalformedArray { text: String, detail: &'static str },
    /// Text longer than the column it is stored into.
    #[error("value too long for type {0}")]
    StringTooLong(String),
    /// A value beyond a size limit (PostgreSQL's program_limit_exceeded).
    #[error("{0}")]
    TooLarge(String),
    #[error("invalid date \"{0}\"")]
    InvalidDate(String),
    /// Date arithmetic beyond 4713 BC .. 5874897 AD.
    #[error("date out of range")]
    DateOutOfRange,
    #[error(
        "out of memory: {what} needs more than the memory limit ({limit} bytes); raise it with SET memory_limit"
    )]
    OutOfMemory { what: &'static str, limit: u64 },
    #[error(
        "out of memory: {what} does not fit in the memory all running queries share ({limit} bytes); retry when fewer queries run, or raise the process's limit (kura --max-memory)"
    )]
    OutOfSharedMemory { what: &'static str, limit: u64 },
    /// A temporary file that could not be written: the disk (or
    /// `max_temp_directory_size`) is full.
    #[error("{0}")]
    DiskFull(String),
    #[error("canceling statement due to user request")]
    Canceled,
    #[error("more than one row returned by a subquery used as an expression")]
    SubqueryTooManyRows,
    #[error("storage error: {0}")]
    Storage(String),
    /// A page that fails its checksum or does not parse: the file is damaged.
    #[error("{0}")]
    DataCorrupted(String),
    #[error("unknown operator implementation {name:?} (registered: {known})")]
    UnknownOperator { name: String, known: String },
    /// A pattern of `~` that is no regular expression.
    #[error("invalid regular expression: {0}")]
    InvalidRegex(String),
    /// A name cast to `regtype` / `regclass` that names nothing.
    #[error("{0}")]
    UndefinedObject(String),
    /// A feature kura does not implement (a `to_char` pattern, a regular
    /// expression option): refused rather than answered wrongly.
    #[error("{0} is not supported")]
    Unsupported(String),
    /// An argument out of a function's domain (`split_part` field 0).
    #[error("{0}")]
    InvalidParameter(String),
    /// Text that does not match a `to_date` / `to_timestamp` template.
    #[error("{0}")]
    InvalidDatetimeFormat(String),
    /// A bad argument or frame offset of a window function (PostgreSQL's
    /// SQLSTATE for each: 22004, 22013, 22014, 22016).
    #[error("{message}")]
    WindowArgument { code: &'static str, message: String },
    /// An argument outside a mathematical function's domain, with
    /// PostgreSQL's code (2201E logarithm, 2201F power, 2201G width_bucket).
    #[error("{message}")]
    InvalidArgument { code: &'static str, message: String },
    /// A sequence function's error, with PostgreSQL's code.
    #[error("{message}")]
    Sequence { code: &'static str, message: String },
    /// A file read as a table (`read_parquet`) that is missing, unreadable or not in
    /// its format, with PostgreSQL's code (58P01 no such file, 42501, 22000 bad content).
    #[error("{message}")]
    File { code: &'static str, message: String },
    #[error("internal error: {0}")]
    Internal(String),
}

impl ExecError {
    /// The PostgreSQL SQLSTATE code of this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            ExecError::DivisionByZero => "22012",
            ExecError::OutOfRange(_) | ExecError::IntegerOutOfRange(_) => "22003",
            ExecError::InvalidText { .. } | ExecError::MalformedArray { .. } => "22P02",
            ExecError::InvalidDate(_) | ExecError::DateOutOfRange => "22008",
            ExecError::StringTooLong(_) => "22001",
            ExecError::TooLarge(_) => "54000",
            ExecError::OutOfMemory { .. } | ExecError::OutOfSharedMemory { .. } => "53200",
            ExecError::DiskFull(_) => "53100",
            ExecError::Canceled => "57014",
            ExecError::SubqueryTooManyRows => "21000",
            ExecError::Storage(_) => "58030",
            ExecError::DataCorrupted(_) => "XX001",
            ExecError::UnknownOperator { .. } => "42704",
            ExecError::InvalidRegex(_) => "2201B",
            ExecError::UndefinedObject(_) => "42704",
            ExecError::Unsupported(_) => "0A000",
            ExecError::InvalidParameter(_) => "22023",
            ExecError::InvalidDatetimeFormat(_) => "22007",
            ExecError::WindowArgument { code, .. }
            | ExecError::Sequence { code, .. }
            | ExecError::InvalidArgument { code, .. }
            | ExecError::File { code, .. } => code,
            ExecError::Internal(_) => "XX000",
        }
    }
}

impl ExecError {
    /// Whether the error is the query's or the server's memory limit.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(
            self,
            ExecError::OutOfMemory { .. } | ExecError::OutOfSharedMemory { .. }
        )
    }

    /// An integer result or conversion that does not fit integer type `t`.
    pub fn integer_out_of_range(t: DataType) -> ExecError {
        ExecError::IntegerOutOfRange(format!("{} out of range", integer_name(t)))
    }

    /// Text that reads as a number beyond integer type `t`.
    pub fn integer_text_out_of_range(t: DataType, text: &str) -> ExecError {
        ExecError::IntegerOutOfRange(format!(
            "value \"{text}\" is out of range for type {}",
            integer_name(t)
        ))
    }
}

/// PostgreSQL's name of an integer type, as its messages print it.
pub fn integer_name(t: DataType) -> &'static str {
    match t {
        DataType::SmallInt => "smallint",
        DataType::BigInt => "bigint",
        _ => "integer",
    }
}

pub type ExecResult<T> = Result<T, ExecError>;

impl From<kura_common::json::JsonError> for ExecError {
    /// JSON text that does not parse, with PostgreSQL's SQLSTATE.
    fn from(e: kura_common::json::JsonError) -> Self {
        ExecError::InvalidArgument {
            code: e.code,
            message: e.message,
        }
    }
}

impl ExecError {
    /// Array text `text` that does not read as an array.
    pub fn malformed_array(text: &str, e: kura_common::array::ArrayTextError) -> ExecError {
        match e {
            kura_common::array::ArrayTextError::Malformed(detail) => ExecError::MalformedArray {
                text: text.to_string(),
                detail,
            },
            kura_common::array::ArrayTextError::Unsupported(what) => {
                ExecError::Unsupported(what.to_string())
            }
        }
    }
}

impl From<kura_storage::StorageError> for ExecError {
    /// A storage failure met while executing: damage (checksum, corrupt page —
    /// SQLSTATE XX001) kept apart from I/O failures.
    fn from(e: kura_storage::StorageError) -> Self {
        use kura_storage::StorageError as S;
        match e {
            S::Checksum { .. }
            | S::Corrupt { .. }
            | S::NotADatabase { .. }
            | S::HeaderDamaged { .. } => ExecError::DataCorrupted(e.to_string()),
            S::TooLarge(what) => ExecError::TooLarge(what),
            S::Sequence { code, message } => ExecError::Sequence { code, message },
            other => ExecError::Storage(other.to_string()),
        }
    }
}
