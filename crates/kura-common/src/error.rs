//! Errors of the common layer: values that cannot be parsed or converted.

use thiserror::Error;

/// What went wrong turning text into a typed value (or one type into another).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CommonError {
    #[error("invalid date {0:?} (expected YYYY-MM-DD)")]
    InvalidDate(String),
    #[error("invalid {ty} {text:?}")]
    InvalidNumber { ty: &'static str, text: String },
    #[error("value {text:?} out of range for {ty}")]
    OutOfRange { ty: String, text: String },
    #[error("value too long for {ty}: {len} characters")]
    TooLong { ty: String, len: usize },
    #[error("invalid size {0:?} (expected e.g. 256MB, 4GiB, 16384)")]
    InvalidSize(String),
    #[error("unknown type {0:?}")]
    UnknownType(String),
}

pub type CommonResult<T> = Result<T, CommonError>;
