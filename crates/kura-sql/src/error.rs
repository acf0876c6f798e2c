//! Errors of the SQL layer (parse, bind, plan), with the position in the SQL text
//! where one is known and the PostgreSQL SQLSTATE.

use std::fmt;

use thiserror::Error;

/// A position in the SQL text (1-based); displays as the `line L, column C: ` prefix
/// of a message, nothing when unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u64,
    pub column: u64,
}

impl Pos {
    pub fn from_span(span: sqlparser::tokenizer::Span) -> Pos {
        Pos {
            line: span.start.line,
            column: span.start.column,
        }
    }
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            Ok(())
        } else {
            write!(f, "line {}, column {}: ", self.line, self.column)
        }
    }
}

fn hint(h: &Option<String>) -> String {
    h.as_ref()
        .map_or(String::new(), |h| format!(" (did you mean {h}?)"))
}

/// What was wrong with a statement.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SqlError {
    #[error("syntax error: {0}")]
    Syntax(String),
    #[error("{pos}relation \"{name}\" does not exist{}", hint(.suggestion))]
    UnknownTable {
        name: String,
        pos: Pos,
        suggestion: Option<String>,
    },
    #[error("{pos}column \"{name}\" does not exist{}", hint(.suggestion))]
    UnknownColumn {
        name: String,
        pos: Pos,
        suggestion: Option<String>,
    },
    /// `(value).field` naming no field of the value's type (42703).
    #[error("{pos}column \"{field}\" not found in data type {ty}")]
    NoSuchField { field: String, ty: String, pos: Pos },
    #[error("{pos}column reference \"{name}\" is ambiguous")]
    AmbiguousColumn { name: String, pos: Pos },
    #[error("{pos}function {name} does not exist{}", hint(.suggestion))]
    UnknownFunction {
        name: String,
        pos: Pos,
        suggestion: Option<String>,
    },
    /// A call that several functions fit equally well (42725).
    /// An operator with no match for its operand types (PostgreSQL's
    /// `operator does not exist`, `could not identify an equality operator`).
    #[error("{pos}{message}")]
    UndefinedOperator { message: String, pos: Pos },
    #[error("{pos}function {name} is not unique")]
    AmbiguousFunction { name: String, pos: Pos },
    #[error("{pos}type \"{name}\" does not exist")]
    UnknownType { name: String, pos: Pos },
    #[error("{pos}{message}")]
    TypeMismatch { message: String, pos: Pos },
    #[error("{pos}column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function")]
    NotGrouped { name: String, pos: Pos },
    /// An aggregate where none may be (42803, like a grouping error).
    #[error("{pos}{message}")]
    Grouping { message: String, pos: Pos },
    /// A function used as the kind it is not (42809), e.g. WITHIN GROUP on an
    /// aggregate that is not an ordered-set one.
    #[error("{pos}{message}")]
    WrongObjectType { message: String, pos: Pos },
    /// A window function where none may be (42P20, windowing error).
    #[error("{pos}{message}")]
    Windowing { message: String, pos: Pos },
    #[error("{pos}invalid date \"{text}\"")]
    InvalidDate { text: String, pos: Pos },
    #[error("{pos}{message}")]
    InvalidValue { message: String, pos: Pos },
    /// A value refused with its own SQLSTATE (22007 bad datetime syntax,
    /// 22008 field overflow, a constant's JSON input error ...).
    #[error("{pos}{message}")]
    Data {
        message: String,
        code: &'static str,
        pos: Pos,
    },
    /// A constant beyond its type, such as `70000::smallint` (22003).
    #[error("{pos}{message}")]
    OutOfRange { message: String, pos: Pos },
    /// A cast between types that have none (42846), e.g. integer to integer[].
    #[error("{pos}{message}")]
    CannotCoerce { message: String, pos: Pos },
    /// A value whose type nothing determines, such as `ARRAY[]` (42P18).
    #[error("{pos}{message}")]
    Indeterminate { message: String, pos: Pos },
    /// A constant that does not read as its type, such as a malformed array
    /// literal (22P02, invalid_text_representation).
    #[error("{pos}{message}")]
    InvalidText { message: String, pos: Pos },
    #[error("{pos}{what} is not supported")]
    Unsupported { what: String, pos: Pos },
    /// A name that resolves to nothing, other than a table, column, function
    /// or type (a window of the WINDOW clause): 42704.
    #[error("{0}")]
    UndefinedObject(String),
    /// A statement beyond one of PostgreSQL's planning limits, with its code
    /// (grouping sets: 54001, GROUPING arguments: 54023).
    #[error("{message}")]
    Limit { message: String, code: &'static str },
    /// A column where only constants may be (a frame offset), an ORDER BY of a
    /// DISTINCT aggregate beyond its arguments: 42P10.
    #[error("{pos}{message}")]
    InvalidColumnReference { message: String, pos: Pos },
    /// A bad TABLESAMPLE argument: 2202H (its percentage) or 2202G (its seed).
    #[error("{pos}{message}")]
    TableSample {
        message: String,
        pos: Pos,
        sqlstate: &'static str,
    },
    #[error("relation \"{0}\" already exists")]
    DuplicateTable(String),
    #[error("there is no parameter ${0}")]
    MissingParameter(usize),
    /// An expression nested deeper than the binder allows (PostgreSQL's
    /// `max_stack_depth` error): refused before any pass could exhaust the stack.
    #[error("{pos}stack depth limit exceeded: {what} nests deeper than {limit} levels")]
    TooDeep {
        what: String,
        limit: usize,
        pos: Pos,
    },
    /// A query whose result has more columns than a target list may (54011).
    #[error("target lists can have at most {limit} entries (this one has {columns})")]
    TooManyColumns { columns: usize, limit: usize },
    /// Cancelled (or out of time) while being planned: 57014.
    #[error("canceling statement due to user request")]
    Canceled,
    #[error("internal planner error: {0}")]
    Internal(String),
}

impl SqlError {
    /// The PostgreSQL SQLSTATE code of this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            SqlError::Syntax(_) => "42601",
            SqlError::UnknownTable { .. } => "42P01",
            SqlError::UnknownColumn { .. } | SqlError::NoSuchField { .. } => "42703",
            SqlError::AmbiguousColumn { .. } => "42702",
            SqlError::UnknownFunction { .. } | SqlError::UndefinedOperator { .. } => "42883",
            SqlError::AmbiguousFunction { .. } => "42725",
            SqlError::UnknownType { .. } => "42704",
            SqlError::TypeMismatch { .. } => "42804",
            SqlError::NotGrouped { .. } | SqlError::Grouping { .. } => "42803",
            SqlError::Windowing { .. } => "42P20",
            SqlError::WrongObjectType { .. } => "42809",
            SqlError::InvalidDate { .. } => "22007",
            SqlError::InvalidValue { .. } => "22023",
            SqlError::Data { code, .. } => code,
            SqlError::OutOfRange { .. } => "22003",
            SqlError::InvalidText { .. } => "22P02",
            SqlError::Indeterminate { .. } => "42P18",
            SqlError::CannotCoerce { .. } => "42846",
            SqlError::Unsupported { .. } => "0A000",
            SqlError::UndefinedObject(_) => "42704",
            SqlError::Limit { code, .. } => code,
            SqlError::InvalidColumnReference { .. } => "42P10",
            SqlError::TableSample { sqlstate, .. } => sqlstate,
            SqlError::DuplicateTable(_) => "42P07",
            SqlError::MissingParameter(_) => "42P02",
            SqlError::TooDeep { .. } => "54001",
            SqlError::TooManyColumns { .. } => "54011",
            SqlError::Canceled => "57014",
            SqlError::Internal(_) => "XX000",
        }
    }

    /// Where in the statement's text the error is, when known: the line and
    /// column (from 1) its message starts with.
    pub fn pos(&self) -> Option<Pos> {
        let pos = match self {
            SqlError::UnknownTable { pos, .. }
            | SqlError::UnknownColumn { pos, .. }
            | SqlError::NoSuchField { pos, .. }
            | SqlError::AmbiguousColumn { pos, .. }
            | SqlError::UnknownFunction { pos, .. }
            | SqlError::AmbiguousFunction { pos, .. }
            | SqlError::UnknownType { pos, .. }
            | SqlError::TypeMismatch { pos, .. }
            | SqlError::NotGrouped { pos, .. }
            | SqlError::Grouping { pos, .. }
            | SqlError::WrongObjectType { pos, .. }
            | SqlError::Windowing { pos, .. }
            | SqlError::InvalidDate { pos, .. }
            | SqlError::InvalidValue { pos, .. }
            | SqlError::Data { pos, .. }
            | SqlError::UndefinedOperator { pos, .. }
            | SqlError::OutOfRange { pos, .. }
            | SqlError::CannotCoerce { pos, .. }
            | SqlError::Indeterminate { pos, .. }
            | SqlError::InvalidText { pos, .. }
            | SqlError::Unsupported { pos, .. }
            | SqlError::InvalidColumnReference { pos, .. }
            | SqlError::TableSample { pos, .. }
            | SqlError::TooDeep { pos, .. } => *pos,
            SqlError::Syntax(_)
            | SqlError::UndefinedObject(_)
            | SqlError::Limit { .. }
            | SqlError::DuplicateTable(_)
            | SqlError::MissingParameter(_)
            | SqlError::TooManyColumns { .. }
            | SqlError::Canceled
            | SqlError::Internal(_) => return None,
        };
        (pos.line > 0).then_some(pos)
    }

    pub fn unsupported(what: impl Into<String>, pos: Pos) -> SqlError {
        SqlError::Unsupported {
            what: what.into(),
            pos,
        }
    }

    pub fn mismatch(message: impl Into<String>, pos: Pos) -> SqlError {
        SqlError::TypeMismatch {
            message: message.into(),
            pos,
        }
    }
}

pub type SqlResult<T> = Result<T, SqlError>;

/// The closest candidate to `name` by edit distance, if it is close enough to be a
/// plausible typo.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let name = name.to_ascii_lowercase();
    let limit = (name.len() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (strsim::levenshtein(&name, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.to_string())
}
