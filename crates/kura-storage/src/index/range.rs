//! Index search conditions and their translation into byte ranges of entries:
//! equality on leading key columns, then on the next column a range (`=`, `<`,
//! `<=`, `>`, `>=`, `BETWEEN`, `IS NOT NULL`) or a text prefix (`LIKE 'p%'`).

use std::ops::Bound;

use kura_common::{DataType, Value};

use super::key::{self, prefix_successor, ColumnKey, VALUE_MARK};
use crate::error::{StorageError, StorageResult};

/// What an index search asks for on the column after the equality prefix.
#[derive(Debug, Clone, PartialEq)]
pub enum LastColumn {
    /// No condition (NULLs included): the equality prefix alone.
    Any,
    /// Non-NULL values within the bounds; `(Unbounded, Unbounded)` is `IS NOT NULL`.
    Range {
        lower: Bound<Value>,
        upper: Bound<Value>,
    },
    /// Text values starting with the given text (`LIKE 'prefix%'`).
    Prefix(String),
}

/// A search condition on an index: `eq[i]` constrains key column `i` (a NULL there
/// means `IS NULL`), `last` the column after them.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRange {
    pub eq: Vec<Value>,
    pub last: LastColumn,
}

/// A range of entries in byte order: `lo` inclusive, `hi` exclusive, `None` unbounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedRange {
    pub lo: Option<Vec<u8>>,
    pub hi: Option<Vec<u8>>,
}

impl EncodedRange {
    /// Every entry.
    pub fn all() -> Self {
        EncodedRange { lo: None, hi: None }
    }

    /// Entries whose bytes start with `prefix`.
    pub fn with_prefix(prefix: Vec<u8>) -> Self {
        let hi = prefix_successor(&prefix);
        EncodedRange {
            lo: Some(prefix),
            hi,
        }
    }

    /// Whether `entry` lies in the range.
    pub fn contains(&self, entry: &[u8]) -> bool {
        self.lo.as_deref().is_none_or(|lo| entry >= lo)
            && self.hi.as_deref().is_none_or(|hi| entry < hi)
    }

    /// True when no entry can lie in the range.
    pub fn is_empty(&self) -> bool {
        matches!((&self.lo, &self.hi), (Some(lo), Some(hi)) if lo >= hi)
    }
}

impl KeyRange {
    /// Every entry of the index.
    pub fn all() -> Self {
        KeyRange {
            eq: Vec::new(),
            last: LastColumn::Any,
        }
    }

    /// Entries whose leading key columns equal `values` (a point lookup when all
    /// key columns are given).
    pub fn eq(values: Vec<Value>) -> Self {
        KeyRange {
            eq: values,
            last: LastColumn::Any,
        }
    }

    /// Entries with leading columns equal to `eq` and the next column within bounds.
    pub fn range(eq: Vec<Value>, lower: Bound<Value>, upper: Bound<Value>) -> Self {
        KeyRange {
            eq,
            last: LastColumn::Range { lower, upper },
        }
    }

    /// Entries with leading columns equal to `eq` and the next (text) column
    /// starting with `prefix`.
    pub fn prefix(eq: Vec<Value>, prefix: &str) -> Self {
        KeyRange {
            eq,
            last: LastColumn::Prefix(prefix.to_string()),
        }
    }

    /// Whether the entries found still need the original predicate applied: true for
    /// a text prefix ending in blanks and for a strict text bound, because keys are
    /// stored without trailing blanks and the search widens to include the ties.
    /// (A VARCHAR search also finds values that differ only in trailing blanks; scans
    /// apply their predicate to every entry for that reason.)
    pub fn needs_recheck(&self) -> bool {
        let strict_text = |b: &Bound<Value>| matches!(b, Bound::Excluded(Value::Text(_)));
        match &self.last {
            LastColumn::Prefix(p) => p.ends_with(' '),
            LastColumn::Range { lower, upper } => strict_text(lower) || strict_text(upper),
            LastColumn::Any => false,
        }
    }

    /// The byte range of matching entries for keys of `types`; `None` when the
    /// condition can match nothing (e.g. `= 2.5` on an INTEGER column).
    pub fn encode(&self, types: &[DataType]) -> StorageResult<Option<EncodedRange>> {
        let needs_last = !matches!(self.last, LastColumn::Any);
        if self.eq.len() + needs_last as usize > types.len() {
            return Err(StorageError::Invalid(format!(
                "index search names {} key columns, the index has {}",
                self.eq.len() + needs_last as usize,
                types.len()
            )));
        }
        let mut p = Vec::new();
        for (t, v) in types.iter().zip(&self.eq) {
            if !key::encode_exact(&mut p, *t, v)? {
                return Ok(None);
            }
        }
        let t = types.get(self.eq.len()).copied();
        let r = match (&self.last, t) {
            (LastColumn::Any, _) if p.is_empty() => EncodedRange::all(),
            (LastColumn::Any, _) => EncodedRange::with_prefix(p),
            (LastColumn::Prefix(text), Some(t)) if t.is_text() => {
                p.push(VALUE_MARK);
                key::put_text_body(&mut p, key::trim_blanks(text.as_bytes()));
                EncodedRange::with_prefix(p)
            }
            (LastColumn::Prefix(_), t) => {
                return Err(StorageError::Invalid(format!(
                    "a prefix search needs a text key column, not {}",
                    t.map_or("none".to_string(), |t| t.to_string())
                )))
            }
            (LastColumn::Range { lower, upper }, Some(t)) => {
                let Some(lo) = lower_bound(&p, t, lower)? else {
                    return Ok(None);
                };
                let Some(hi) = upper_bound(&p, t, upper)? else {
                    return Ok(None);
                };
                EncodedRange { lo: Some(lo), hi }
            }
            (LastColumn::Range { .. }, None) => unreachable!("checked above"),
        };
        Ok(if r.is_empty() { None } else { Some(r) })
    }
}

fn null_bound() -> StorageError {
    StorageError::Invalid("an index range bound cannot be NULL".into())
}

fn joined(p: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = p.to_vec();
    out.extend_from_slice(b);
    out
}

/// Inclusive start of the entries at or after `bound` among the non-NULL values of
/// the column after prefix `p`; `None` when nothing qualifies.
/// Text keys are stored without trailing blanks, which VARCHAR comparisons count: a
/// strict text bound is searched as an inclusive one, and the scan's predicate (applied
/// to every entry found) drops the values that only tie without their blanks.
fn widen_text(t: DataType, bound: &Bound<Value>) -> Bound<Value> {
    match bound {
        Bound::Excluded(v) if t.is_text() => Bound::Included(v.clone()),
        other => other.clone(),
    }
}

fn lower_bound(p: &[u8], t: DataType, bound: &Bound<Value>) -> StorageResult<Option<Vec<u8>>> {
    let bound = &widen_text(t, bound);
    let non_null = joined(p, &[VALUE_MARK]);
    Ok(match bound {
        Bound::Unbounded => Some(non_null),
        Bound::Included(v) | Bound::Excluded(v) if v.is_null() => return Err(null_bound()),
        Bound::Included(v) => match key::column_key(t, v)? {
            ColumnKey::Exact(b) => Some(joined(p, &b)),
            ColumnKey::Between { ceil, .. } => ceil.map(|c| joined(p, &c)),
        },
        Bound::Excluded(v) => match key::column_key(t, v)? {
            ColumnKey::Exact(b) => prefix_successor(&joined(p, &b)),
            ColumnKey::Between { floor: Some(f), .. } => prefix_successor(&joined(p, &f)),
            ColumnKey::Between { floor: None, .. } => Some(non_null),
        },
    })
}

/// Exclusive end (`Ok(Some(None))`: unbounded) of the entries at or before `bound`
/// among the non-NULL values after prefix `p`; `Ok(None)` when nothing qualifies.
fn upper_bound(
    p: &[u8],
    t: DataType,
    bound: &Bound<Value>,
) -> StorageResult<Option<Option<Vec<u8>>>> {
    let bound = &widen_text(t, bound);
    let after_all = prefix_successor(&joined(p, &[VALUE_MARK]));
    Ok(match bound {
        Bound::Unbounded => Some(after_all),
        Bound::Included(v) | Bound::Excluded(v) if v.is_null() => return Err(null_bound()),
        Bound::Included(v) => match key::column_key(t, v)? {
            ColumnKey::Exact(b) => Some(prefix_successor(&joined(p, &b))),
            ColumnKey::Between { floor: Some(f), .. } => Some(prefix_successor(&joined(p, &f))),
            ColumnKey::Between { floor: None, .. } => None,
        },
        Bound::Excluded(v) => match key::column_key(t, v)? {
            ColumnKey::Exact(b) => Some(Some(joined(p, &b))),
            ColumnKey::Between { ceil: Some(c), .. } => Some(Some(joined(p, &c))),
            ColumnKey::Between { ceil: None, .. } => Some(after_all),
        },
    })
}
