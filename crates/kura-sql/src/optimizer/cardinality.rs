//! What a cardinality estimate is: a plan's rows, with per-column distinct
//! counts, ranges and base-table sizes (computed in `estimate`, remembered per
//! node in `estimate_memo`).

use std::collections::HashMap;

use kura_exec::expr::PhysExpr;

use crate::logical::ColId;

/// Estimated size of a plan's output, with per-column distinct counts and ranges.
#[derive(Debug, Clone, Default)]
pub struct Estimate {
    pub rows: f64,
    pub ndv: HashMap<ColId, f64>,
    pub range: HashMap<ColId, (f64, f64)>,
    /// Text columns' min and max, for LIKE prefixes; only while a scan's own
    /// filters are estimated (not carried upward).
    pub text: HashMap<ColId, (String, String)>,
    /// Rows of the stored table a column comes from (before any filter): bounds
    /// the distinct combinations of a composite key.
    pub base: HashMap<ColId, f64>,
}

impl Estimate {
    pub(super) fn ndv_of(&self, e: &PhysExpr) -> f64 {
        match e {
            PhysExpr::Column { index, .. } => {
                self.ndv.get(index).copied().unwrap_or(self.rows.max(1.0))
            }
            PhysExpr::Cast { expr, .. } => self.ndv_of(expr),
            _ => self.rows.max(1.0),
        }
    }

    /// Takes in the per-column statistics of `other` (the other input of a join).
    pub fn absorb(&mut self, other: &Estimate) {
        self.ndv.extend(other.ndv.iter().map(|(k, v)| (*k, *v)));
        self.range.extend(other.range.iter().map(|(k, v)| (*k, *v)));
        self.base.extend(other.base.iter().map(|(k, v)| (*k, *v)));
    }

    pub(super) fn cap(&mut self) {
        let r = self.rows.max(1.0);
        for v in self.ndv.values_mut() {
            *v = v.min(r).max(1.0);
        }
    }
}
