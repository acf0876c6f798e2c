//! What one cluster query moved between processes and where its time went, read from the
//! metrics datafusion-distributed gathers from every task of an executed plan: rows and bytes
//! through each kind of exchange, kura's time running fragments on the shards, DataFusion's
//! on the workers and in the coordinator (paper 003 §2's shared-nothing configuration, seen
//! from inside; the input of `kura bench cluster-model`).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::{
    DistributedLeafExec, NetworkBoundaryExt, NetworkBroadcastExec, NetworkShuffleExec, Stage,
};

use crate::exec::KuraShardScanExec;

/// Whether `plan` is a shard leaf: the leaf itself, or the per-task variants of one (on a
/// worker each task runs its variant; its metrics come back in the variants' place).
fn is_shard_leaf(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.downcast_ref::<KuraShardScanExec>().is_some()
        || plan
            .downcast_ref::<DistributedLeafExec>()
            .is_some_and(|l| l.original().downcast_ref::<KuraShardScanExec>().is_some())
}

/// Data that crossed one kind of exchange.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Moved {
    /// Exchanges of this kind in the plan.
    pub exchanges: usize,
    pub rows: u64,
    /// Encoded bytes received (Arrow IPC, compressed as the session says).
    pub bytes: u64,
    /// Time the receivers spent polling and decoding.
    pub time: Duration,
}

/// The kinds of exchange, by datafusion-distributed's boundary nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExchangeKind {
    /// Repartitioning by hash between worker stages (`NetworkShuffleExec`).
    Shuffle,
    /// One side of a join sent whole to every task (`NetworkBroadcastExec`).
    Broadcast,
    /// Tasks' outputs gathered by one consumer, most often the coordinator
    /// (`NetworkCoalesceExec`).
    Gather,
}

impl ExchangeKind {
    pub const ALL: [ExchangeKind; 3] = [Self::Shuffle, Self::Broadcast, Self::Gather];

    pub fn name(self) -> &'static str {
        match self {
            Self::Shuffle => "shuffle",
            Self::Broadcast => "broadcast",
            Self::Gather => "gather",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One executed query's profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryProfile {
    /// The query's wall time in the coordinator (planning included).
    pub wall: Duration,
    pub shards: usize,
    /// kura's time on its fragments, summed over shards and leaves (time blocked on a full
    /// channel to DataFusion excluded).
    pub shard_kura: Duration,
    /// Rows the fragments sent to DataFusion.
    pub shard_rows: u64,
    /// DataFusion's operators in the workers' stages (joins and aggregations across shards).
    pub worker_datafusion: Duration,
    /// DataFusion's operators in the coordinator's stage.
    pub coordinator: Duration,
    /// By [`ExchangeKind`].
    pub moved: [Moved; 3],
}

impl QueryProfile {
    /// The profile of `executed`, a plan after [`datafusion_distributed::rewrite_distributed_plan_with_metrics`].
    pub fn of(executed: &Arc<dyn ExecutionPlan>, wall: Duration, shards: usize) -> QueryProfile {
        let mut p = QueryProfile {
            wall,
            shards,
            ..QueryProfile::default()
        };
        p.visit(executed, true);
        p
    }

    pub fn moved(&self, kind: ExchangeKind) -> Moved {
        self.moved[kind.index()]
    }

    fn visit(&mut self, plan: &Arc<dyn ExecutionPlan>, in_coordinator: bool) {
        let metrics = plan.metrics().unwrap_or_default();
        if let Some(boundary) = plan.as_network_boundary() {
            let kind = if plan.downcast_ref::<NetworkShuffleExec>().is_some() {
                ExchangeKind::Shuffle
            } else if plan.downcast_ref::<NetworkBroadcastExec>().is_some() {
                ExchangeKind::Broadcast
            } else {
                ExchangeKind::Gather
            };
            let m = &mut self.moved[kind.index()];
            m.exchanges += 1;
            m.rows += metrics.output_rows().unwrap_or(0) as u64;
            m.bytes += named(&metrics, "bytes_transferred");
            m.time += nanos(metrics.elapsed_compute());
            if let Stage::Local(stage) = boundary.input_stage() {
                self.visit(&stage.plan, false);
            }
            return;
        }
        let compute = nanos(metrics.elapsed_compute());
        if is_shard_leaf(plan) {
            self.shard_kura += compute;
            self.shard_rows += metrics.output_rows().unwrap_or(0) as u64;
        } else if in_coordinator {
            self.coordinator += compute;
        } else {
            self.worker_datafusion += compute;
        }
        for child in plan.children() {
            self.visit(child, in_coordinator);
        }
    }

    /// All rows and bytes that crossed an exchange.
    pub fn total_moved(&self) -> Moved {
        let mut t = Moved::default();
        for m in &self.moved {
            t.exchanges += m.exchanges;
            t.rows += m.rows;
            t.bytes += m.bytes;
            t.time += m.time;
        }
        t
    }

    /// One line of `key=value` pairs (milliseconds, rows, bytes) for scripts: the benchmark
    /// reads it from `EXPLAIN ANALYZE` through the front door.
    pub fn line(&self) -> String {
        let ms = |d: Duration| format!("{:.3}", d.as_secs_f64() * 1e3);
        let mut s = format!(
            "kura-cluster-profile: wall_ms={} shards={} shard_kura_ms={} shard_rows={} worker_datafusion_ms={} coordinator_ms={}",
            ms(self.wall),
            self.shards,
            ms(self.shard_kura),
            self.shard_rows,
            ms(self.worker_datafusion),
            ms(self.coordinator)
        );
        for kind in ExchangeKind::ALL {
            let m = self.moved(kind);
            let k = kind.name();
            s.push_str(&format!(
                " {k}_exchanges={} {k}_rows={} {k}_bytes={} {k}_ms={}",
                m.exchanges,
                m.rows,
                m.bytes,
                ms(m.time)
            ));
        }
        s
    }
}

impl fmt::Display for QueryProfile {
    /// For people: what moved, and each part's share of the time the parts were busy.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total = self.total_moved();
        writeln!(
            f,
            "moved {} rows, {} bytes through {} exchanges ({})",
            total.rows,
            total.bytes,
            total.exchanges,
            ExchangeKind::ALL
                .iter()
                .map(|k| {
                    let m = self.moved(*k);
                    format!("{}: {} rows, {} bytes", k.name(), m.rows, m.bytes)
                })
                .collect::<Vec<_>>()
                .join("; ")
        )?;
        let parts = [
            ("kura on the shards", self.shard_kura),
            ("DataFusion on the workers", self.worker_datafusion),
            ("exchanges (receive, decode)", total.time),
            ("coordinator", self.coordinator),
        ];
        let busy: f64 = parts.iter().map(|(_, d)| d.as_secs_f64()).sum();
        let shares: Vec<String> = parts
            .iter()
            .map(|(what, d)| {
                let share = if busy > 0.0 {
                    100.0 * d.as_secs_f64() / busy
                } else {
                    0.0
                };
                format!("{what} {:.1} ms ({share:.0} %)", d.as_secs_f64() * 1e3)
            })
            .collect();
        writeln!(
            f,
            "wall {:.1} ms on {} shards; busy time: {}",
            self.wall.as_secs_f64() * 1e3,
            self.shards,
            shares.join(", ")
        )?;
        write!(f, "{}", self.line())
    }
}

fn nanos(n: Option<usize>) -> Duration {
    Duration::from_nanos(n.unwrap_or(0) as u64)
}

/// The sum of the metrics called `name` (a datafusion-distributed bytes counter: a custom
/// metric, which `MetricsSet::sum_by_name` does not match), 0 if absent.
fn named(metrics: &MetricsSet, name: &str) -> u64 {
    metrics
        .iter()
        .filter(|m| m.value().name() == name)
        .map(|m| m.value().as_usize() as u64)
        .sum()
}

/// Reads a [`QueryProfile::line`] back (the benchmark does this in Python; the test here
/// keeps the two in step).
pub fn parse_line(line: &str) -> Option<Vec<(String, f64)>> {
    let rest = line.trim().strip_prefix("kura-cluster-profile:")?;
    rest.split_whitespace()
        .map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_reads_back_with_every_part() {
        let mut p = QueryProfile {
            wall: Duration::from_millis(120),
            shards: 2,
            shard_kura: Duration::from_millis(150),
            shard_rows: 1000,
            worker_datafusion: Duration::from_millis(20),
            coordinator: Duration::from_millis(5),
            ..QueryProfile::default()
        };
        p.moved[ExchangeKind::Gather.index()] = Moved {
            exchanges: 1,
            rows: 1000,
            bytes: 64_000,
            time: Duration::from_millis(3),
        };
        let parsed = parse_line(&p.line()).unwrap();
        let get = |k: &str| parsed.iter().find(|(n, _)| n == k).unwrap().1;
        assert_eq!(get("wall_ms"), 120.0);
        assert_eq!(get("shard_kura_ms"), 150.0);
        assert_eq!(get("gather_bytes"), 64_000.0);
        assert_eq!(get("shuffle_rows"), 0.0);
        assert_eq!(parsed.len(), 6 + 4 * 3);
        let text = p.to_string();
        assert!(
            text.contains("moved 1000 rows, 64000 bytes through 1 exchanges"),
            "{text}"
        );
        assert!(
            text.contains("kura on the shards 150.0 ms (84 %)"),
            "{text}"
        );
    }
}
