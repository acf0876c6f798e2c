//! SELECT DISTINCT ON and FETCH … WITH TIES: the first rows of each group, or the rows tied
//! with the last kept, by numbering windows and a filter.

use super::*;

impl Binder<'_> {
    /// `SELECT DISTINCT ON (keys)`: the first row of each set of rows equal
    /// on `keys` (NULLs equal), first in the ORDER BY's order `order` — whose
    /// leading keys must be the DISTINCT ON keys, as PostgreSQL requires. The
    /// row is the one `row_number()` over the keys' partitions numbers 1.
    pub(super) fn plan_distinct_on(
        &mut self,
        plan: Logical,
        on_keys: Vec<PhysExpr>,
        order: &[LSortKey],
    ) -> SqlResult<Logical> {
        if order
            .iter()
            .take(on_keys.len())
            .any(|k| !on_keys.contains(&k.expr))
        {
            return Err(SqlError::InvalidColumnReference {
                message: "SELECT DISTINCT ON expressions must match initial ORDER BY expressions"
                    .into(),
                pos: Pos::default(),
            });
        }
        for k in &on_keys {
            crate::binder::json_fn::refuse_json_key(k.data_type(), "DISTINCT ON", false)?;
        }
        let rn = self.cols.add("?row_number?", DataType::BigInt);
        let numbered = Logical::Window {
            input: Box::new(plan),
            partition: on_keys,
            order: order.to_vec(),
            funcs: vec![(kura_exec::window_plan::WindowFunc::RowNumber, rn)],
        };
        Ok(Logical::Filter {
            input: Box::new(numbered),
            predicate: PhysExpr::Binary {
                op: kura_exec::expr::BinaryOp::Eq,
                left: Box::new(col(rn, DataType::BigInt)),
                right: Box::new(PhysExpr::literal(Value::BigInt(1), DataType::BigInt)),
                data_type: DataType::Boolean,
            },
        })
    }

    /// `OFFSET m FETCH FIRST n ROWS WITH TIES` over rows sorted by `keys`: the
    /// rows after the first `m` up to the `m + n`-th and those tied with it —
    /// the rows numbered past `m` whose rank (ties share the lowest) is at
    /// most `m + n`.
    pub(super) fn with_ties(
        &mut self,
        plan: Logical,
        keys: &[LSortKey],
        offset: usize,
        n: usize,
    ) -> Logical {
        use kura_exec::expr::BinaryOp;
        use kura_exec::window_plan::WindowFunc;
        let rn = self.cols.add("?row_number?", DataType::BigInt);
        let rank = self.cols.add("?rank?", DataType::BigInt);
        let big = |v: usize| {
            PhysExpr::literal(
                Value::BigInt(v.min(i64::MAX as usize) as i64),
                DataType::BigInt,
            )
        };
        let compare = |op, id, v| PhysExpr::Binary {
            op,
            left: Box::new(col(id, DataType::BigInt)),
            right: Box::new(big(v)),
            data_type: DataType::Boolean,
        };
        let numbered = Logical::Window {
            input: Box::new(plan),
            partition: Vec::new(),
            order: keys.to_vec(),
            funcs: vec![(WindowFunc::RowNumber, rn), (WindowFunc::Rank, rank)],
        };
        Logical::Filter {
            input: Box::new(numbered),
            predicate: conjunction(vec![
                compare(BinaryOp::Gt, rn, offset),
                compare(BinaryOp::LtEq, rank, offset.saturating_add(n)),
            ])
            .unwrap_or_else(|| PhysExpr::literal(Value::Boolean(true), DataType::Boolean)),
        }
    }
}
