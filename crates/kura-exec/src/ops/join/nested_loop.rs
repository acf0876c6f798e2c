//! Nested-loop join: compares every probe row with every build row. Quadratic, but
//! needs no hash table; selectable with `SET join_algorithm = 'nested_loop'`.

use kura_common::Vector;

use super::{BuildSide, JoinAlgorithm, JoinIndex};
use crate::context::ExecContext;
use crate::error::ExecResult;
use crate::keys::encode_join_row;

/// Pairs rows by comparing encoded keys pairwise.
pub struct NestedLoopJoin;

struct NestedLoopIndex {
    /// Encoded key per build row, `None` for NULL keys.
    keys: Vec<Option<Vec<u8>>>,
    /// Per key: NULL matches NULL (`IS NOT DISTINCT FROM`).
    null_safe: Vec<bool>,
}

impl JoinAlgorithm for NestedLoopJoin {
    fn index(&self, build: &BuildSide, _ctx: &ExecContext) -> ExecResult<Box<dyn JoinIndex>> {
        let keys = (0..build.rows)
            .map(|r| {
                let mut b = Vec::new();
                encode_join_row(&build.keys, r, &build.null_safe, &mut b).then_some(b)
            })
            .collect();
        Ok(Box::new(NestedLoopIndex {
            keys,
            null_safe: build.null_safe.clone(),
        }))
    }
}

impl JoinIndex for NestedLoopIndex {
    fn candidates(
        &self,
        probe_keys: &[Vector],
        rows: usize,
        out: &mut Vec<(u32, u32)>,
    ) -> ExecResult<()> {
        let mut buf = Vec::new();
        for p in 0..rows {
            buf.clear();
            if !encode_join_row(probe_keys, p, &self.null_safe, &mut buf) {
                continue;
            }
            for (b, k) in self.keys.iter().enumerate() {
                if k.as_deref() == Some(buf.as_slice()) {
                    out.push((p as u32, b as u32));
                }
            }
        }
        Ok(())
    }

    fn bytes(&self) -> u64 {
        self.keys
            .iter()
            .map(|k| k.as_ref().map_or(8, |b| b.len() + 24))
            .sum::<usize>() as u64
    }
}
