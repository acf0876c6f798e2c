//! The physical plan IR that kura-sql produces and kura-exec runs.
//!
//! It lives here, in the execution layer, and kura-sql depends on kura-exec (not the
//! reverse): a plan is a description of which registered operators to run over
//! which inputs, so it belongs with the operators and their registry; the SQL layer
//! is one producer of plans (tests and tools build plans directly), and the executor
//! never needs to know SQL.

use std::fmt::Write as _;
use std::ops::Bound;
use std::sync::Arc;

use kura_common::{DataType, Value};

use crate::context::OperatorStats;
use crate::expr::{BinaryOp, PhysExpr};
use crate::index_source::IndexSource;
use crate::source::TableSource;
pub use kura_storage::index::{KeyRange, LastColumn};

/// Join semantics. The probe input is the preserved / filtered side; the build input
/// is loaded into the join's table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JoinType {
    Inner,
    /// Probe rows without a match are kept, with NULL build columns.
    Left,
    /// Like `Left`, but more than one match for a probe row is an error (scalar subqueries).
    Single,
    /// `Left`, plus the build rows without a match, with NULL probe columns, after
    /// every probe row has been joined.
    Full,
    /// The probe rows with a match, joined, plus the build rows without one, with NULL
    /// probe columns, after every probe row has been joined: a LEFT join with its
    /// preserved side built, chosen when that side is the smaller one (TPC-H Q13
    /// builds on customer instead of on orders).
    Right,
    /// Build rows that at least one probe row matches, build columns only, once
    /// every probe row has been joined: a semi join (EXISTS / IN) with its
    /// preserved side built, chosen when that side is the smaller one (TPC-H Q21
    /// builds its 76,000 late line items instead of the 740,000 others of their
    /// orders).
    RightSemi,
    /// Build rows that no probe row matches (NOT EXISTS), build columns only,
    /// once every probe row has been joined: `RightSemi`'s complement.
    RightAnti,
    /// Probe rows with at least one match (EXISTS / IN).
    Semi,
    /// Probe rows without a match (NOT EXISTS).
    Anti,
    /// NOT IN: like `Anti`, but a row whose `IN` is unknown (NULL) is dropped too. The
    /// last key pair is the `IN` key; the keys before it and the residual are the
    /// subquery's correlation, which selects the set each probe row is compared with.
    NullAwareAnti,
    /// Every probe row plus a BOOLEAN column: whether it has a match (EXISTS). Never NULL.
    Mark,
    /// Every probe row plus a BOOLEAN column holding `x IN (subquery)` with SQL's
    /// three-valued logic: true on a match; NULL when there is none but the row's set
    /// holds a NULL or `x` is NULL (and the set is not empty); false otherwise. The last
    /// key pair is the `IN` key, as for `NullAwareAnti`.
    NullAwareMark,
}

impl JoinType {
    /// Whether the output carries the build side's columns.
    pub fn emits_build_columns(self) -> bool {
        matches!(
            self,
            JoinType::Inner | JoinType::Left | JoinType::Single | JoinType::Full | JoinType::Right
        )
    }

    /// Whether build rows without a match are emitted once the probe side has ended.
    pub fn keeps_unmatched_build(self) -> bool {
        matches!(self, JoinType::Full | JoinType::Right | JoinType::RightAnti)
    }

    /// Whether probe rows without a match are emitted (with NULLs, a mark or
    /// alone): the joins for which dropping such a row early changes the output.
    pub fn keeps_unmatched_probe(self) -> bool {
        matches!(
            self,
            JoinType::Left
                | JoinType::Full
                | JoinType::Anti
                | JoinType::Mark
                | JoinType::Single
                | JoinType::NullAwareAnti
                | JoinType::NullAwareMark
        )
    }

    /// Whether the join records which build rows were matched (their rows, or
    /// the others, are emitted once the probe side has ended).
    pub fn marks_build(self) -> bool {
        self.keeps_unmatched_build() || self == JoinType::RightSemi
    }

    /// Whether the output carries the probe side's columns (all but the
    /// right semi and anti joins, which emit build rows only).
    pub fn emits_probe_columns(self) -> bool {
        !matches!(self, JoinType::RightSemi | JoinType::RightAnti)
    }

    /// Whether the last key pair is an `IN` key with SQL's NULL semantics.
    pub fn null_aware(self) -> bool {
        matches!(self, JoinType::NullAwareAnti | JoinType::NullAwareMark)
    }

    /// Whether the output adds a BOOLEAN mark column.
    pub fn emits_mark(self) -> bool {
        matches!(self, JoinType::Mark | JoinType::NullAwareMark)
    }
}

/// An aggregate function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// `bool_and` / `every`.
    BoolAnd,
    BoolOr,
    /// One of the moment statistics over doubles (see [`Moment`]); the
    /// two-argument ones read `y` from `arg` and `x` from `extra[0]`.
    Moment(Moment),
    /// `string_agg(value, delimiter [ORDER BY ...])`: `extra[0]` is the delimiter.
    StringAgg,
    /// `array_agg(value [ORDER BY ...])`: every row's value, NULLs included, as
    /// an array; `extra[0]` is the row's FILTER condition (TRUE without one),
    /// since a NULL argument is an element here rather than a skipped row.
    ArrayAgg,
    /// `jsonb_agg(value [ORDER BY ...])` / `json_agg` (by the result type):
    /// every row's value as json (NULL as `null`); `extra[0]` is the FILTER
    /// condition, as for `array_agg`. The argument is the value's json text.
    JsonAgg,
    /// `jsonb_object_agg(key, value)` / `json_object_agg`: the argument is the
    /// key's text, `extra[0]` the FILTER condition, `extra[1]` the value's json.
    JsonObjectAgg,
    /// `percentile_cont(f) WITHIN GROUP (ORDER BY arg)` (and `median`):
    /// `extra[0]` is the constant fraction.
    PercentileCont,
    /// `percentile_disc(f) WITHIN GROUP (ORDER BY arg)`.
    PercentileDisc,
    /// `mode() WITHIN GROUP (ORDER BY arg)`.
    Mode,
}

/// Statistics computed from a group's count, sums and sums of squared
/// deviations (PostgreSQL's float8 aggregates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Moment {
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
    Corr,
    CovarPop,
    CovarSamp,
    RegrSlope,
    RegrIntercept,
    RegrR2,
    RegrAvgX,
    RegrAvgY,
    RegrSxx,
    RegrSyy,
    RegrSxy,
}

impl AggFunc {
    /// Whether partial results of this aggregate combine by `sum`, `min` or
    /// `max` of the partials (what eager aggregation below a join needs).
    pub fn splits(self) -> bool {
        matches!(
            self,
            AggFunc::CountStar | AggFunc::Count | AggFunc::Sum | AggFunc::Min | AggFunc::Max
        )
    }

    /// Whether the aggregate reads its rows in an order (`order` of the call).
    pub fn ordered(self) -> bool {
        matches!(
            self,
            AggFunc::StringAgg
                | AggFunc::ArrayAgg
                | AggFunc::JsonAgg
                | AggFunc::JsonObjectAgg
                | AggFunc::PercentileCont
                | AggFunc::PercentileDisc
                | AggFunc::Mode
        )
    }
}

/// One aggregate computed by an aggregation node.
#[derive(Debug, Clone, PartialEq)]
pub struct AggCall {
    pub func: AggFunc,
    pub arg: Option<PhysExpr>,
    /// Arguments after the first (see [`AggFunc`]); empty for most aggregates.
    pub extra: Vec<PhysExpr>,
    /// `ORDER BY` inside the call (`string_agg`) or of `WITHIN GROUP` (whose
    /// single key is `arg` itself).
    pub order: Vec<SortKey>,
    pub distinct: bool,
    pub data_type: DataType,
}

impl AggCall {
    /// A call of `func` over one argument (none for `count(*)`).
    pub fn simple(func: AggFunc, arg: Option<PhysExpr>, data_type: DataType) -> AggCall {
        AggCall {
            func,
            arg,
            extra: Vec::new(),
            order: Vec::new(),
            distinct: false,
            data_type,
        }
    }

    /// Every expression the call reads: `arg`, `extra`, then the order keys.
    pub fn exprs(&self) -> impl Iterator<Item = &PhysExpr> {
        self.arg
            .iter()
            .chain(&self.extra)
            .chain(self.order.iter().map(|k| &k.expr))
    }

    /// [`AggCall::exprs`], to rewrite in place.
    pub fn exprs_mut(&mut self) -> impl Iterator<Item = &mut PhysExpr> {
        self.arg
            .iter_mut()
            .chain(&mut self.extra)
            .chain(self.order.iter_mut().map(|k| &mut k.expr))
    }

    /// Replaces every expression the call reads by `f` of it.
    pub fn try_map_exprs<E>(
        &mut self,
        mut f: impl FnMut(&PhysExpr) -> Result<PhysExpr, E>,
    ) -> Result<(), E> {
        for e in self.exprs_mut() {
            *e = f(e)?;
        }
        Ok(())
    }

    /// [`AggCall::try_map_exprs`] with an infallible `f`.
    pub fn map_exprs(&mut self, mut f: impl FnMut(&PhysExpr) -> PhysExpr) {
        let _ = self.try_map_exprs(|e| Ok::<_, std::convert::Infallible>(f(e)));
    }
}

pub use crate::window_plan::{FrameBound, FramePick, FrameUnits, WindowFrame, WindowFunc};

/// One ORDER BY key.
#[derive(Debug, Clone, PartialEq)]
pub struct SortKey {
    pub expr: PhysExpr,
    pub descending: bool,
    pub nulls_first: bool,
}

/// `column op constant`, checked against page min/max to skip pages.
#[derive(Debug, Clone, PartialEq)]
pub struct ZonePredicate {
    /// Column index in the table (not in the scan's output).
    pub table_column: usize,
    pub op: BinaryOp,
    pub value: Value,
}

/// Names of `columns` of `table`, comma-separated.
fn column_names(table: &dyn TableSource, columns: &[usize]) -> String {
    columns
        .iter()
        .map(|&c| table.columns()[c].name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// An index search condition in words, with the key columns' names.
fn describe_range(table: &dyn TableSource, index: &IndexSource, r: &KeyRange) -> String {
    let name = |i: usize| {
        index
            .columns
            .get(i)
            .map_or("?", |&c| table.columns()[c].name.as_str())
    };
    let mut parts: Vec<String> =
        r.eq.iter()
            .enumerate()
            .map(|(i, v)| format!("{} = {v}", name(i)))
            .collect();
    let col = name(r.eq.len());
    match &r.last {
        LastColumn::Any => {}
        LastColumn::Prefix(p) => parts.push(format!("{col} LIKE '{p}%'")),
        LastColumn::Range { lower, upper } => {
            match lower {
                Bound::Included(v) => parts.push(format!("{col} >= {v}")),
                Bound::Excluded(v) => parts.push(format!("{col} > {v}")),
                Bound::Unbounded => {}
            }
            match upper {
                Bound::Included(v) => parts.push(format!("{col} <= {v}")),
                Bound::Excluded(v) => parts.push(format!("{col} < {v}")),
                Bound::Unbounded => {}
            }
            if matches!((lower, upper), (Bound::Unbounded, Bound::Unbounded)) {
                parts.push(format!("{col} IS NOT NULL"));
            }
        }
    }
    if parts.is_empty() {
        "all".into()
    } else {
        parts.join(" AND ")
    }
}

/// Whether output column `col` of `node` comes clustered: every batch a piece
/// of a table stored in ascending order of that column (a scan, through
/// filters and projections that keep it as it is), so that only a batch's
/// first and last runs of equal values can go on in other batches.
pub fn clustered_on(node: &PlanNode, col: usize) -> bool {
    match &node.kind {
        PlanKind::Scan { table, columns, .. } => {
            columns.get(col).is_some_and(|&c| table.ascending(c))
        }
        PlanKind::Filter { input, .. } => clustered_on(input, col),
        PlanKind::Project { input, exprs } => match exprs.get(col) {
            Some(PhysExpr::Column { index, .. }) => clustered_on(input, *index),
            _ => false,
        },
        _ => false,
    }
}

/// One node of a physical plan.
#[derive(Clone)]
pub struct PlanNode {
    /// Position in a pre-order walk, assigned by [`PlanNode::number`]; keys statistics.
    pub id: usize,
    /// Name of the registered operator implementation that runs this node.
    pub operator: String,
    pub kind: PlanKind,
    /// Output column types (names are the SQL layer's business).
    pub output: Vec<DataType>,
    /// The planner's row estimate (EXPLAIN).
    pub estimated_rows: f64,
    /// Set on a materializing node whose result another node of the same plan
    /// computes identically (see [`crate::shared`]): the executor runs the
    /// first one it reaches and hands its result to the others.
    pub shared: Option<usize>,
    /// Set on a join whose built table another join of the same plan builds
    /// identically (same build subtree, keys and join type; see
    /// [`crate::shared::mark_shared_builds`]): the first one builds it, the
    /// others probe that table (TPC-H Q21's two EXISTS over one restricted
    /// lineitem).
    pub shared_build: Option<usize>,
}

/// What a node does, with its inputs.
#[derive(Clone)]
pub enum PlanKind {
    Scan {
        table: Arc<dyn TableSource>,
        /// Table columns read, in output order.
        columns: Vec<usize>,
        zone_predicates: Vec<ZonePredicate>,
        /// Filter over the scan's output columns.
        filter: Option<PhysExpr>,
    },
    /// Rows an index finds in the union of `ranges` (disjoint), fetched by row id.
    IndexScan {
        table: Arc<dyn TableSource>,
        index: Arc<IndexSource>,
        ranges: Vec<KeyRange>,
        /// Table columns fetched, in output order.
        columns: Vec<usize>,
        /// Filter over the output columns (the whole predicate: the index range is
        /// a superset of its matches).
        filter: Option<PhysExpr>,
        /// The columns are decoded from the index entries (key and included
        /// columns): no table page is read.
        index_only: bool,
    },
    /// Index nested-loop join: each batch of probe rows looks its keys up in an
    /// index of the inner table and fetches the matching rows.
    IndexJoin {
        join_type: JoinType,
        probe: Box<PlanNode>,
        table: Arc<dyn TableSource>,
        index: Arc<IndexSource>,
        /// Over probe columns, one per leading key column, of that column's type.
        probe_keys: Vec<PhysExpr>,
        /// Inner table columns fetched, in output order.
        columns: Vec<usize>,
        /// Over the fetched inner columns: the inner table's own predicates.
        inner_filter: Option<PhysExpr>,
        /// Over probe columns followed by fetched inner columns.
        residual: Option<PhysExpr>,
        /// The inner columns are decoded from the index entries: no table page
        /// is read.
        index_only: bool,
    },
    /// Constant rows.
    Values {
        rows: Vec<Vec<Value>>,
    },
    Filter {
        input: Box<PlanNode>,
        predicate: PhysExpr,
    },
    Project {
        input: Box<PlanNode>,
        exprs: Vec<PhysExpr>,
    },
    Join {
        join_type: JoinType,
        probe: Box<PlanNode>,
        build: Box<PlanNode>,
        probe_keys: Vec<PhysExpr>,
        build_keys: Vec<PhysExpr>,
        /// Over probe columns followed by build columns.
        residual: Option<PhysExpr>,
        /// Per key pair: NULL matches NULL (`IS NOT DISTINCT FROM`); missing
        /// entries are false (SQL equality).
        null_safe: Vec<bool>,
    },
    Aggregate {
        input: Box<PlanNode>,
        group_by: Vec<PhysExpr>,
        aggregates: Vec<AggCall>,
        /// Of one integer group key: the range its values are estimated to span
        /// when they are dense in it, so that every worker numbers its groups
        /// by offset from the start however randomly the keys arrive (a hint:
        /// keys outside it are grouped all the same).
        key_range: Option<(i64, i64)>,
    },
    Sort {
        input: Box<PlanNode>,
        keys: Vec<SortKey>,
        limit: Option<usize>,
    },
    Limit {
        input: Box<PlanNode>,
        offset: usize,
        limit: Option<usize>,
    },
    UnionAll {
        inputs: Vec<PlanNode>,
    },
    /// Each input row `count` times (column `count` of the input, a BIGINT).
    Replicate {
        input: Box<PlanNode>,
        count: usize,
    },
    /// The input's columns followed by one column per window function, all over
    /// the same window (`PARTITION BY partition_by ORDER BY order_by`).
    Window {
        input: Box<PlanNode>,
        partition_by: Vec<PhysExpr>,
        order_by: Vec<SortKey>,
        functions: Vec<WindowFunc>,
    },
}

impl PlanNode {
    pub fn new(
        operator: &str,
        kind: PlanKind,
        output: Vec<DataType>,
        estimated_rows: f64,
    ) -> PlanNode {
        PlanNode {
            id: 0,
            operator: operator.to_string(),
            kind,
            output,
            estimated_rows,
            shared: None,
            shared_build: None,
        }
    }

    pub fn children(&self) -> Vec<&PlanNode> {
        match &self.kind {
            PlanKind::Scan { .. } | PlanKind::IndexScan { .. } | PlanKind::Values { .. } => {
                vec![]
            }
            PlanKind::Filter { input, .. }
            | PlanKind::Project { input, .. }
            | PlanKind::Aggregate { input, .. }
            | PlanKind::Sort { input, .. }
            | PlanKind::Limit { input, .. }
            | PlanKind::Replicate { input, .. }
            | PlanKind::Window { input, .. }
            | PlanKind::IndexJoin { probe: input, .. } => vec![input],
            PlanKind::Join { probe, build, .. } => vec![probe, build],
            PlanKind::UnionAll { inputs } => inputs.iter().collect(),
        }
    }

    pub(crate) fn children_mut(&mut self) -> Vec<&mut PlanNode> {
        match &mut self.kind {
            PlanKind::Scan { .. } | PlanKind::IndexScan { .. } | PlanKind::Values { .. } => {
                vec![]
            }
            PlanKind::Filter { input, .. }
            | PlanKind::Project { input, .. }
            | PlanKind::Aggregate { input, .. }
            | PlanKind::Sort { input, .. }
            | PlanKind::Limit { input, .. }
            | PlanKind::Replicate { input, .. }
            | PlanKind::Window { input, .. }
            | PlanKind::IndexJoin { probe: input, .. } => vec![input],
            PlanKind::Join { probe, build, .. } => vec![probe, build],
            PlanKind::UnionAll { inputs } => inputs.iter_mut().collect(),
        }
    }

    /// Assigns pre-order ids; returns the number of nodes.
    pub fn number(&mut self) -> usize {
        fn go(n: &mut PlanNode, next: &mut usize) {
            n.id = *next;
            *next += 1;
            for c in n.children_mut() {
                go(c, next);
            }
        }
        let mut next = 0;
        go(self, &mut next);
        next
    }

    fn describe(&self) -> String {
        match &self.kind {
            PlanKind::Scan {
                table,
                columns,
                zone_predicates,
                filter,
            } => {
                let cols = column_names(table.as_ref(), columns);
                let mut s = format!("{} [{}]", table.name(), cols);
                if let Some(sample) = table.sample() {
                    let _ = write!(s, " sample: {sample}");
                }
                if !zone_predicates.is_empty() {
                    let z: Vec<String> = zone_predicates
                        .iter()
                        .map(|p| {
                            format!(
                                "{} {} {}",
                                table.columns()[p.table_column].name,
                                p.op.symbol(),
                                p.value
                            )
                        })
                        .collect();
                    let _ = write!(s, " zone-skip: {}", z.join(" AND "));
                }
                if let Some(f) = filter {
                    let _ = write!(s, " filter: {f}");
                }
                s
            }
            PlanKind::IndexScan {
                table,
                index,
                ranges,
                columns,
                filter,
                index_only,
            } => {
                let cols = column_names(table.as_ref(), columns);
                let r: Vec<String> = ranges
                    .iter()
                    .map(|r| describe_range(table.as_ref(), index, r))
                    .collect();
                let mut s = format!(
                    "{} [{}] using {}{} where {}",
                    table.name(),
                    cols,
                    index.name,
                    if *index_only { " index-only" } else { "" },
                    r.join(" OR ")
                );
                if let Some(f) = filter {
                    let _ = write!(s, " filter: {f}");
                }
                s
            }
            PlanKind::IndexJoin {
                join_type,
                table,
                index,
                probe_keys,
                columns,
                inner_filter,
                residual,
                index_only,
                ..
            } => {
                let cols = column_names(table.as_ref(), columns);
                let keys: Vec<String> = probe_keys
                    .iter()
                    .zip(&index.columns)
                    .map(|(p, &c)| format!("{p} = {}", table.columns()[c].name))
                    .collect();
                let mut s = format!(
                    "{join_type:?} {} [{}] using {}{} on [{}]",
                    table.name(),
                    cols,
                    index.name,
                    if *index_only { " index-only" } else { "" },
                    keys.join(", ")
                );
                if let Some(f) = inner_filter {
                    let _ = write!(s, " inner filter: {f}");
                }
                if let Some(r) = residual {
                    let _ = write!(s, " residual: {r}");
                }
                s
            }
            PlanKind::Values { rows } => format!("{} rows", rows.len()),
            PlanKind::Filter { predicate, .. } => predicate.to_string(),
            PlanKind::Project { exprs, .. } => exprs
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            PlanKind::Join {
                join_type,
                probe_keys,
                build_keys,
                residual,
                null_safe,
                ..
            } => {
                let keys: Vec<String> = probe_keys
                    .iter()
                    .zip(build_keys)
                    .enumerate()
                    .map(|(i, (p, b))| {
                        let op = if null_safe.get(i).copied().unwrap_or(false) {
                            "IS NOT DISTINCT FROM"
                        } else {
                            "="
                        };
                        format!("{p} {op} build.{b}")
                    })
                    .collect();
                let mut s = format!("{join_type:?} on [{}]", keys.join(", "));
                if let Some(r) = residual {
                    let _ = write!(s, " residual: {r}");
                }
                s
            }
            PlanKind::Aggregate {
                group_by,
                aggregates,
                ..
            } => {
                let g: Vec<String> = group_by.iter().map(|e| e.to_string()).collect();
                let a: Vec<String> = aggregates
                    .iter()
                    .map(|a| {
                        let mut arg = a.arg.as_ref().map_or("*".to_string(), |e| e.to_string());
                        for e in &a.extra {
                            let _ = write!(arg, ", {e}");
                        }
                        for (i, k) in a.order.iter().enumerate() {
                            let by = if i == 0 { " ORDER BY " } else { ", " };
                            let dir = if k.descending { " DESC" } else { "" };
                            let _ = write!(arg, "{by}{}{dir}", k.expr);
                        }
                        format!(
                            "{:?}({}{arg})",
                            a.func,
                            if a.distinct { "DISTINCT " } else { "" }
                        )
                    })
                    .collect();
                format!("group by [{}] aggregates [{}]", g.join(", "), a.join(", "))
            }
            PlanKind::Sort { keys, limit, .. } => {
                let k: Vec<String> = keys
                    .iter()
                    .map(|k| format!("{}{}", k.expr, if k.descending { " DESC" } else { "" }))
                    .collect();
                match limit {
                    Some(l) => format!("[{}] top {l}", k.join(", ")),
                    None => format!("[{}]", k.join(", ")),
                }
            }
            PlanKind::Limit { offset, limit, .. } => format!("limit {limit:?} offset {offset}"),
            PlanKind::UnionAll { inputs } => format!("{} inputs", inputs.len()),
            PlanKind::Replicate { count, .. } => format!("rows repeated #{count} times"),
            PlanKind::Window {
                partition_by,
                order_by,
                functions,
                ..
            } => {
                let f: Vec<String> = functions.iter().map(|f| f.to_string()).collect();
                let p: Vec<String> = partition_by.iter().map(|e| e.to_string()).collect();
                let o: Vec<String> = order_by
                    .iter()
                    .map(|k| format!("{}{}", k.expr, if k.descending { " DESC" } else { "" }))
                    .collect();
                format!(
                    "[{}] partition by [{}] order by [{}]",
                    f.join(", "),
                    p.join(", "),
                    o.join(", ")
                )
            }
        }
    }

    /// One line naming the node: its operator and what it works on (EXPLAIN's
    /// text without the estimate), at most 80 characters.
    pub fn label(&self) -> String {
        let text = format!("{}: {}", self.operator, self.describe());
        match text.char_indices().nth(80) {
            Some((cut, _)) => format!("{}…", &text[..cut]),
            None => text,
        }
    }

    /// Indented text form for EXPLAIN; with `stats`, the measured counters per node.
    pub fn explain(&self, stats: Option<&[OperatorStats]>) -> Vec<String> {
        let mut out = Vec::new();
        self.explain_into(0, stats, &mut out);
        out
    }

    fn explain_into(&self, depth: usize, stats: Option<&[OperatorStats]>, out: &mut Vec<String>) {
        let mut line = format!(
            "{}{}: {}{} (est. rows {:.0})",
            "  ".repeat(depth),
            self.operator,
            self.describe(),
            self.shared
                .map_or(String::new(), |k| format!(" shared result #{k}"))
                + &self
                    .shared_build
                    .map_or(String::new(), |k| format!(" shared build #{k}")),
            self.estimated_rows
        );
        if let Some(st) = stats {
            let s = st.get(self.id).cloned().unwrap_or_default();
            let _ = write!(
                line,
                " [rows {} time {:.3} ms pages fixed {} read {}{}{}{}{}{}]",
                s.rows_out,
                s.nanos as f64 / 1e6,
                s.pages_fixed,
                s.pages_read,
                if s.skipped_rows > 0 {
                    format!(" rows skipped by zone maps {}", s.skipped_rows)
                } else {
                    String::new()
                },
                if s.join_filtered_rows > 0 {
                    format!(" rows dropped by join filter {}", s.join_filtered_rows)
                } else {
                    String::new()
                },
                if s.spill_files > 0 {
                    let runs = if s.spill_runs > 0 {
                        format!(
                            " ({} sorted runs, {} merge passes)",
                            s.spill_runs, s.spill_merge_passes
                        )
                    } else {
                        String::new()
                    };
                    format!(
                        " spilled {} bytes in {} files{runs}",
                        s.spilled_bytes, s.spill_files
                    )
                } else {
                    String::new()
                },
                if s.unspilled_probe_rows > 0 {
                    format!(
                        " probe rows without a build key not spilled {}",
                        s.unspilled_probe_rows
                    )
                } else {
                    String::new()
                },
                if s.partitions_in_memory > 0 {
                    format!(
                        " (hybrid: {} of {} partitions in memory)",
                        s.partitions_in_memory,
                        crate::spill::partitions::PARTITIONS
                    )
                } else {
                    String::new()
                }
            );
        }
        out.push(line);
        for c in self.children() {
            c.explain_into(depth + 1, stats, out);
        }
    }
}

/// The table column that output column `col` of `node` passes on unchanged, as
/// `table.column`, where the plan shows it (scans, filters, column projections,
/// joins, limits, sorts); for naming memory objects in profiles.
pub fn source_column_name(node: &PlanNode, col: usize) -> Option<String> {
    match &node.kind {
        PlanKind::Scan { table, columns, .. } | PlanKind::IndexScan { table, columns, .. } => {
            let c = table.columns().get(*columns.get(col)?)?;
            Some(format!("{}.{}", table.name(), c.name))
        }
        PlanKind::Filter { input, .. }
        | PlanKind::Sort { input, .. }
        | PlanKind::Limit { input, .. } => source_column_name(input, col),
        PlanKind::Project { input, exprs } => match exprs.get(col)? {
            PhysExpr::Column { index, .. } => source_column_name(input, *index),
            _ => None,
        },
        PlanKind::Join { probe, build, .. } => {
            let n = probe.output.len();
            if col < n {
                source_column_name(probe, col)
            } else {
                source_column_name(build, col - n)
            }
        }
        _ => None,
    }
}

/// `expr` over the output of `input`, with plain column references named by
/// [`source_column_name`] where possible (`#3` otherwise).
pub fn describe_over(input: &PlanNode, expr: &PhysExpr) -> String {
    match expr {
        PhysExpr::Column { index, .. } => {
            source_column_name(input, *index).unwrap_or_else(|| expr.to_string())
        }
        _ => expr.to_string(),
    }
}
