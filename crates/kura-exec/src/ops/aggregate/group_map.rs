//! Folding one aggregation's groups into another's (a spilled partition's into the
//! one being built): `ids[g]` maps the other side's group `g` to a group here.

/// The group number in a merge's `ids` for a group left where it is (not folded).
pub(crate) const SKIP: u32 = u32::MAX;
