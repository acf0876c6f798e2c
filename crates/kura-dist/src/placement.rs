//! Where a table's rows live across a cluster's shards (paper 003 §2): whole on every shard,
//! or split by a key column. Split tables of one *partitioning* hold equal keys on the same
//! shard (ORDERS and LINEITEM by order key), so a join on those keys needs no exchange.
//!
//! The shard map stores it as text: `replicated`, `COLUMN` (split, partitioning unknown: never
//! joined on the shards), or `COLUMN:PARTITIONING`.

use serde::{Deserialize, Serialize};

use crate::shard::REPLICATED;

/// How a table is spread over the shards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Placement {
    /// Every shard holds all of it.
    Replicated,
    /// Each shard holds a slice, by `column`; tables of the same `partitioning` put equal
    /// keys on the same shard.
    Split {
        column: String,
        partitioning: Option<String>,
    },
}

impl Placement {
    /// Reads the shard map's text.
    pub fn parse(text: &str) -> Placement {
        if text == REPLICATED {
            return Placement::Replicated;
        }
        match text.split_once(':') {
            Some((column, p)) if !p.is_empty() => Placement::Split {
                column: column.to_string(),
                partitioning: Some(p.to_string()),
            },
            _ => Placement::Split {
                column: text.trim_end_matches(':').to_string(),
                partitioning: None,
            },
        }
    }

    pub fn is_replicated(&self) -> bool {
        matches!(self, Placement::Replicated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_shard_maps_text() {
        assert_eq!(Placement::parse("replicated"), Placement::Replicated);
        assert_eq!(
            Placement::parse("l_orderkey:orderkey"),
            Placement::Split {
                column: "l_orderkey".into(),
                partitioning: Some("orderkey".into())
            }
        );
        assert_eq!(
            Placement::parse("c_custkey"),
            Placement::Split {
                column: "c_custkey".into(),
                partitioning: None
            }
        );
    }
}
