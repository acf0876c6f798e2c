//! kura-common: the vocabulary every kura crate shares — SQL data types, scalar
//! values, column vectors and batches (the unit of vectorized execution), date and
//! decimal arithmetic helpers, size parsing, and the error type of this layer.
//! It depends on nothing else in kura.

pub mod allocator;
pub mod array;
pub mod binary;
pub mod date;
pub mod decimal;
pub mod error;
pub mod interval;
pub mod json;
pub mod memobj;
pub mod probe;
pub mod record;
pub mod settings;
pub mod size;
pub mod timestamp;
pub mod types;
pub mod value;
pub mod vector;

pub use error::{CommonError, CommonResult};
pub use types::{DataType, ElemType};
pub use value::Value;
/// Longest text value kura stores or builds, in bytes (16 MiB, the longest
/// statement text): a value longer than a page goes to overflow pages up to it.
pub const MAX_VALUE_BYTES: usize = 16 << 20;

pub use vector::{Batch, ColumnData, StrVec, Vector, BATCH_SIZE};
