//! `kura bench cluster-model`: paper 003 §2's shared-nothing configuration past this machine,
//! on paper. From the cluster's measured per-query profiles (`bench/run --systems
//! kura-cluster` writes them: kura's time on the shards, DataFusion's on the workers and in
//! the coordinator, bytes through each kind of exchange), and a server's cores and network
//! bandwidth, it predicts each TPC-H query's time on N servers at a large scale factor.
//!
//! The model, per query (each term is a measured quantity, scaled):
//! - the work on the shards and workers grows linearly with the scale factor S; every other
//!   measured quantity x (bytes moved, the coordinator's work) as `x(S) = x(s1)·(S/s1)^e`, with
//!   `e` fitted between the two measured scale factors (clamped to 0..1.25: a result of a few
//!   groups does not grow, a shuffle of join rows grows with the data), or 1 with one;
//! - work on the shards (kura's fragments: core-seconds = fragment time × the measuring
//!   machine's cores ÷ its shards, each shard keeping its share of cores busy) and
//!   DataFusion's work on the workers divide over N servers of c cores;
//! - a shuffle sends (N−1)/N of its bytes across the network, spread over N links; a
//!   broadcast side reaches every server whole; a gather enters one server (the
//!   coordinator), whose DataFusion work and decoding are not divided;
//! - the fixed cost (planning, stages, round trips) is what the measured wall time leaves
//!   over after the other terms at the measured point;
//! - the terms add (no overlap between phases: an upper bound for pipelined plans).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use comfy_table::Table;

use crate::error::{At, LabError, LabResult};
use crate::plot::{grouped_bar_chart_log_y, BarGroup, Labels};

/// datafusion-distributed's published TPC-H SF 100 figure (its README, "Benchmarks"): 12 AWS
/// c5n.2xlarge (8 vCPUs, up to 25 Gbps), Parquet in S3, the sum of per-query medians over
/// the 19 queries every compared engine finished.
pub const PUBLISHED_SF100: Published = Published {
    servers: 12,
    cores: 8.0,
    gbit: 25.0,
    queries: 19,
    seconds: 42.0,
};

/// A published distributed figure to set the model beside.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    pub servers: usize,
    pub cores: f64,
    pub gbit: f64,
    pub queries: usize,
    pub seconds: f64,
}

/// Profiles recorded with this build (2 shards on one 2-core machine, SF 0.1 and SF 1), so
/// the model runs out of the box; `--from` takes a run of one's own.
const RECORDED: [(&str, &str); 2] = [
    (
        "cluster_profiles_sf0.1.json",
        include_str!("../data/cluster_profiles_sf0.1.json"),
    ),
    (
        "cluster_profiles_sf1.json",
        include_str!("../data/cluster_profiles_sf1.json"),
    ),
];

/// Writes the recorded profiles into `dir` and returns their paths.
pub fn write_recorded(dir: &Path) -> LabResult<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).at(format!("creating {}", dir.display()))?;
    RECORDED
        .iter()
        .map(|(name, text)| {
            let path = dir.join(name);
            std::fs::write(&path, text).at(format!("writing {}", path.display()))?;
            Ok(path)
        })
        .collect()
}

/// One query's profile as measured (milliseconds and bytes).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    pub wall_ms: f64,
    pub shard_kura_ms: f64,
    pub worker_datafusion_ms: f64,
    pub coordinator_ms: f64,
    pub shuffle_bytes: f64,
    pub broadcast_bytes: f64,
    pub gather_bytes: f64,
    /// Receiving and decoding, by kind (shuffle, broadcast, gather).
    pub shuffle_ms: f64,
    pub broadcast_ms: f64,
    pub gather_ms: f64,
}

/// One benchmark run's profiles.
#[derive(Debug, Clone)]
pub struct Measured {
    pub sf: f64,
    pub shards: usize,
    /// Cores of the machine the shards shared.
    pub cores: f64,
    pub queries: BTreeMap<String, Profile>,
    pub source: String,
}

/// Reads the profiles of a `bench/run` JSON report with a kura-cluster run.
pub fn read_bench_json(path: &Path) -> LabResult<Measured> {
    let text = std::fs::read_to_string(path).at(format!("reading {}", path.display()))?;
    parse_bench_json(&text, &path.display().to_string())
}

/// [`read_bench_json`] of text (`source` names it in errors).
pub fn parse_bench_json(text: &str, source: &str) -> LabResult<Measured> {
    let bad = |what: &str| LabError::Invalid(format!("{source}: {what}"));
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| bad(&format!("not JSON: {e}")))?;
    let sf = v["sf"]
        .as_f64()
        .ok_or_else(|| bad("no scale factor (sf)"))?;
    let cores = v["machine"]["cores"]
        .as_str()
        .and_then(|c| c.parse::<f64>().ok())
        .or_else(|| v["machine"]["cores"].as_f64())
        .ok_or_else(|| bad("no machine.cores"))?;
    let profiles = v["cluster_profiles"]
        .as_object()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| {
            bad("no cluster_profiles (a bench/run report of the kura-cluster system, warm mode)")
        })?;
    let mut queries = BTreeMap::new();
    let mut shards = 0;
    for (qid, p) in profiles {
        let f = |k: &str| p[k].as_f64().unwrap_or(0.0);
        shards = f("shards") as usize;
        queries.insert(
            qid.clone(),
            Profile {
                wall_ms: f("wall_ms"),
                shard_kura_ms: f("shard_kura_ms"),
                worker_datafusion_ms: f("worker_datafusion_ms"),
                coordinator_ms: f("coordinator_ms"),
                shuffle_bytes: f("shuffle_bytes"),
                broadcast_bytes: f("broadcast_bytes"),
                gather_bytes: f("gather_bytes"),
                shuffle_ms: f("shuffle_ms"),
                broadcast_ms: f("broadcast_ms"),
                gather_ms: f("gather_ms"),
            },
        );
    }
    if shards == 0 {
        return Err(bad("the profiles name no shard count"));
    }
    Ok(Measured {
        sf,
        shards,
        cores,
        queries,
        source: source.to_string(),
    })
}

/// The servers the model predicts for.
#[derive(Debug, Clone, Copy)]
pub struct Hardware {
    /// Cores per server.
    pub cores: f64,
    /// Network bandwidth per server, bytes per second.
    pub bandwidth: f64,
}

/// One query's predicted time on `servers` servers at scale factor `sf`, by term (seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub query: String,
    pub sf: f64,
    pub servers: usize,
    /// kura's fragments and DataFusion's work on the workers, divided over the servers.
    pub parallel: f64,
    /// The coordinator's DataFusion work and the gathers it decodes.
    pub coordinator: f64,
    pub network: f64,
    pub fixed: f64,
}

impl Prediction {
    pub fn seconds(&self) -> f64 {
        self.parallel + self.coordinator + self.network + self.fixed
    }
}

/// A query's measured quantities in core-seconds and bytes (seconds of the measuring
/// machine's cores), the unit the model scales.
#[derive(Debug, Clone, Copy, Default)]
struct Work {
    shard: f64,
    worker: f64,
    /// Receiving shuffles and broadcasts (on the workers).
    decode_spread: f64,
    coordinator: f64,
    shuffle: f64,
    broadcast: f64,
    gather: f64,
}

impl Work {
    fn of(m: &Measured, p: &Profile) -> Work {
        let s = |ms: f64| ms / 1e3;
        Work {
            shard: s(p.shard_kura_ms) * m.cores / m.shards as f64,
            worker: s(p.worker_datafusion_ms),
            decode_spread: s(p.shuffle_ms + p.broadcast_ms),
            coordinator: s(p.coordinator_ms + p.gather_ms),
            shuffle: p.shuffle_bytes,
            broadcast: p.broadcast_bytes,
            gather: p.gather_bytes,
        }
    }

    fn fields(&self) -> [f64; 7] {
        [
            self.shard,
            self.worker,
            self.decode_spread,
            self.coordinator,
            self.shuffle,
            self.broadcast,
            self.gather,
        ]
    }

    fn from_fields(f: [f64; 7]) -> Work {
        Work {
            shard: f[0],
            worker: f[1],
            decode_spread: f[2],
            coordinator: f[3],
            shuffle: f[4],
            broadcast: f[5],
            gather: f[6],
        }
    }
}

/// The growth exponent of a quantity measured as `lo` at `sf_lo` and `hi` at `sf_hi`.
fn exponent(lo: f64, hi: f64, sf_lo: f64, sf_hi: f64) -> f64 {
    if lo <= 0.0 || hi <= 0.0 || sf_hi <= sf_lo {
        return 1.0;
    }
    ((hi / lo).ln() / (sf_hi / sf_lo).ln()).clamp(0.0, 1.25)
}

/// The time terms of `w` measured on `shards` servers of the measuring machine, run on
/// `servers` servers of `hw` (without the fixed cost).
fn terms(w: &Work, servers: usize, shards: usize, hw: &Hardware) -> (f64, f64, f64) {
    let n = servers as f64;
    let leaving = (n - 1.0) / n;
    // Broadcast bytes were counted once per receiving shard.
    let side = w.broadcast / shards as f64;
    let parallel = (w.shard + w.worker + w.decode_spread) / (n * hw.cores);
    let coordinator = w.coordinator / hw.cores;
    let network = (w.shuffle * leaving / n + side * leaving + w.gather) / hw.bandwidth;
    (parallel, coordinator, network)
}

/// Predicts every measured query at each scale factor of `sfs` on each server count of
/// `servers`. `measured` holds one or two runs of the same shard count (two: at different
/// scale factors, for the growth exponents); the larger one is the base.
pub fn predict(
    measured: &[Measured],
    sfs: &[f64],
    servers: &[usize],
    hw: &Hardware,
) -> LabResult<Vec<Prediction>> {
    let mut runs: Vec<&Measured> = measured.iter().collect();
    runs.sort_by(|a, b| a.sf.total_cmp(&b.sf));
    let (base, small) = match runs.as_slice() {
        [one] => (*one, None),
        [lo, hi] if lo.sf < hi.sf => (*hi, Some(*lo)),
        [_, _] => {
            return Err(LabError::Invalid(
                "two measured runs must be at different scale factors".into(),
            ))
        }
        _ => {
            return Err(LabError::Invalid(
                "the model takes one or two measured runs (--from)".into(),
            ))
        }
    };
    // The measuring machine as one server of the model: its cores, the loopback free.
    let here = Hardware {
        cores: base.cores,
        bandwidth: f64::INFINITY,
    };
    let mut out = Vec::new();
    for (query, p) in &base.queries {
        let w = Work::of(base, p);
        let growth: [f64; 7] = match small.and_then(|s| s.queries.get(query).map(|q| (s, q))) {
            Some((s, q)) => {
                let lo = Work::of(s, q).fields();
                let hi = w.fields();
                // The shards' and workers' work grows with the data (TPC-H's queries read
                // a fixed share of each table); measured at small scale factors it looks
                // sublinear, as a query's fixed costs hide in it.
                std::array::from_fn(|i| {
                    if i < 2 {
                        1.0
                    } else {
                        exponent(lo[i], hi[i], s.sf, base.sf)
                    }
                })
            }
            None => [1.0; 7],
        };
        // The measured shards shared one machine: its cores did all their work.
        let (par, coord, net) = terms(&w, 1, base.shards, &here);
        let fixed = (p.wall_ms / 1e3 - par - coord - net).max(0.0);
        for &sf in sfs {
            let scaled = {
                let f = w.fields();
                Work::from_fields(std::array::from_fn(|i| {
                    f[i] * (sf / base.sf).powf(growth[i])
                }))
            };
            for &n in servers {
                let (parallel, coordinator, network) = terms(&scaled, n, base.shards, hw);
                out.push(Prediction {
                    query: query.clone(),
                    sf,
                    servers: n,
                    parallel,
                    coordinator,
                    network,
                    fixed,
                });
            }
        }
    }
    Ok(out)
}

/// The study's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// `bench/run` JSON reports with kura-cluster profiles (one or two scale factors).
    pub from: Vec<PathBuf>,
    pub sfs: Vec<f64>,
    pub servers: Vec<usize>,
    pub hardware: Hardware,
    /// Directory for cluster_model.csv and one chart per scale factor.
    pub out: PathBuf,
}

/// TPC-H query ids in their order (Q1 … Q22), others after them by name.
fn query_order(q: &str) -> (u32, String) {
    let n = q
        .trim_start_matches(['Q', 'q'])
        .parse::<u32>()
        .unwrap_or(u32::MAX);
    (n, q.to_string())
}

/// Runs the model and writes its table, CSV and charts; prints the comparison with
/// datafusion-distributed's published figure.
pub fn run(cfg: &Config, out: &mut dyn Write) -> LabResult<Vec<Prediction>> {
    let measured: Vec<Measured> = cfg
        .from
        .iter()
        .map(|p| read_bench_json(p))
        .collect::<LabResult<_>>()?;
    if measured.windows(2).any(|w| w[0].shards != w[1].shards) {
        return Err(LabError::Invalid(
            "the measured runs must have the same number of shards".into(),
        ));
    }
    for m in &measured {
        writeln!(
            out,
            "measured: {} — SF {}, {} shard(s) on {} cores, {} queries",
            m.source,
            m.sf,
            m.shards,
            m.cores,
            m.queries.len()
        )?;
    }
    writeln!(
        out,
        "servers of {} cores, {:.1} Gbit/s each",
        cfg.hardware.cores,
        cfg.hardware.bandwidth * 8.0 / 1e9
    )?;
    let predictions = predict(&measured, &cfg.sfs, &cfg.servers, &cfg.hardware)?;
    let mut queries: Vec<&String> = measured
        .iter()
        .max_by(|a, b| a.sf.total_cmp(&b.sf))
        .map(|m| m.queries.keys().collect())
        .unwrap_or_default();
    queries.sort_by_key(|q| query_order(q));
    let seconds = |q: &str, sf: f64, n: usize| {
        predictions
            .iter()
            .find(|p| p.query == q && p.sf == sf && p.servers == n)
            .map(Prediction::seconds)
            .unwrap_or(f64::NAN)
    };

    std::fs::create_dir_all(&cfg.out).at(format!("creating {}", cfg.out.display()))?;
    let mut table = Table::new();
    let mut header = vec!["query".to_string()];
    for sf in &cfg.sfs {
        for n in &cfg.servers {
            header.push(format!("SF {sf} × {n}"));
        }
    }
    table.set_header(header);
    for q in &queries {
        let mut row = vec![q.to_string()];
        for &sf in &cfg.sfs {
            for &n in &cfg.servers {
                row.push(format!("{:.2}", seconds(q, sf, n)));
            }
        }
        table.add_row(row);
    }
    let mut total = vec!["sum".to_string()];
    for &sf in &cfg.sfs {
        for &n in &cfg.servers {
            let s: f64 = queries.iter().map(|q| seconds(q, sf, n)).sum();
            total.push(format!("{s:.1}"));
        }
    }
    table.add_row(total);
    writeln!(out, "predicted seconds per query:\n{table}")?;

    let csv_path = cfg.out.join("cluster_model.csv");
    let mut w = csv::Writer::from_path(&csv_path).at(csv_path.display())?;
    w.write_record([
        "query",
        "sf",
        "servers",
        "seconds",
        "parallel",
        "coordinator",
        "network",
        "fixed",
    ])?;
    for p in &predictions {
        w.write_record([
            p.query.clone(),
            p.sf.to_string(),
            p.servers.to_string(),
            format!("{:.4}", p.seconds()),
            format!("{:.4}", p.parallel),
            format!("{:.4}", p.coordinator),
            format!("{:.4}", p.network),
            format!("{:.4}", p.fixed),
        ])?;
    }
    w.flush().at(csv_path.display())?;

    let names: Vec<String> = cfg.servers.iter().map(|n| format!("{n} servers")).collect();
    for &sf in &cfg.sfs {
        let groups: Vec<BarGroup> = queries
            .iter()
            .map(|q| BarGroup {
                label: q.to_string(),
                values: cfg.servers.iter().map(|&n| seconds(q, sf, n)).collect(),
            })
            .collect();
        let path = cfg.out.join(format!("cluster_model_sf{sf}.png"));
        let title = format!(
            "kura cluster, TPC-H SF {sf}: predicted time ({} cores, {:.0} Gbit/s per server)",
            cfg.hardware.cores,
            cfg.hardware.bandwidth * 8.0 / 1e9
        );
        grouped_bar_chart_log_y(
            &path,
            &Labels {
                title: &title,
                x: "query",
                y: "seconds (log)",
            },
            &names,
            &groups,
        )?;
        writeln!(out, "chart: {}", path.display())?;
    }

    let pubd = PUBLISHED_SF100;
    let theirs = Hardware {
        cores: pubd.cores,
        bandwidth: pubd.gbit * 1e9 / 8.0,
    };
    let on_theirs = predict(&measured, &[100.0], &[pubd.servers], &theirs)?;
    let sum: f64 = on_theirs.iter().map(Prediction::seconds).sum();
    writeln!(
        out,
        "beside datafusion-distributed's published TPC-H SF 100 (its README: {} × c5n.2xlarge, {} vCPUs, {} Gbit/s, Parquet in S3; sum of per-query medians over {} queries): {:.0} s; this model for kura's cluster on {} such servers: {sum:.0} s over {} queries",
        pubd.servers, pubd.cores, pubd.gbit, pubd.queries, pubd.seconds, pubd.servers, on_theirs.len()
    )?;
    Ok(predictions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(sf: f64, q1_kura_ms: f64, q1_gather: f64, q3_shuffle: f64) -> String {
        format!(
            r#"{{"sf": {sf}, "machine": {{"cores": "2"}}, "cluster_profiles": {{
              "Q1": {{"wall_ms": {w1}, "shards": 2, "shard_kura_ms": {q1_kura_ms}, "worker_datafusion_ms": 0,
                      "coordinator_ms": 1, "gather_bytes": {q1_gather}, "gather_ms": 0.5}},
              "Q3": {{"wall_ms": 80, "shards": 2, "shard_kura_ms": 60, "worker_datafusion_ms": 30,
                      "coordinator_ms": 2, "shuffle_bytes": {q3_shuffle}, "shuffle_ms": 4, "gather_bytes": 1000}}
            }}}}"#,
            w1 = q1_kura_ms / 2.0 + 5.0
        )
    }

    fn hw() -> Hardware {
        Hardware {
            cores: 8.0,
            bandwidth: 1.25e9,
        }
    }

    #[test]
    fn the_recorded_profiles_predict_every_tpch_query() {
        let dir = tempfile::tempdir().unwrap();
        let from = write_recorded(dir.path()).unwrap();
        let cfg = Config {
            from,
            sfs: vec![100.0],
            servers: vec![4, 16],
            hardware: hw(),
            out: dir.path().join("out"),
        };
        let mut text = Vec::new();
        let p = run(&cfg, &mut text).unwrap();
        assert_eq!(p.len(), 22 * 2);
        assert!(p
            .iter()
            .all(|x| x.seconds().is_finite() && x.seconds() > 0.0));
        assert!(dir.path().join("out/cluster_model_sf100.png").exists());
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("datafusion-distributed's published TPC-H SF 100"),
            "{text}"
        );
    }

    #[test]
    fn reads_a_bench_report_and_refuses_one_without_profiles() {
        let m = parse_bench_json(&report(1.0, 100.0, 500.0, 1e6), "r.json").unwrap();
        assert_eq!((m.sf, m.shards, m.cores), (1.0, 2, 2.0));
        assert_eq!(m.queries["Q3"].shuffle_bytes, 1e6);
        let e = parse_bench_json(r#"{"sf": 1, "machine": {"cores": "2"}}"#, "x.json");
        assert!(e.unwrap_err().to_string().contains("no cluster_profiles"));
    }

    #[test]
    fn more_servers_divide_the_shards_work_and_data_grows_it() {
        let m = parse_bench_json(&report(1.0, 100.0, 500.0, 1e6), "r").unwrap();
        let p = predict(&[m], &[100.0, 1000.0], &[4, 16, 64], &hw()).unwrap();
        let t = |sf: f64, n: usize| {
            p.iter()
                .find(|x| x.query == "Q1" && x.sf == sf && x.servers == n)
                .unwrap()
                .seconds()
        };
        assert!(t(100.0, 4) > t(100.0, 16) && t(100.0, 16) > t(100.0, 64));
        assert!(t(1000.0, 16) > 5.0 * t(100.0, 16));
        // Q1's shard work: 0.1 s × 2 cores / 2 shards = 0.1 core-s at SF 1, 10 at SF 100,
        // over 4 servers of 8 cores.
        let q1 = p
            .iter()
            .find(|x| x.query == "Q1" && x.sf == 100.0 && x.servers == 4)
            .unwrap();
        assert!((q1.parallel - 10.0 / 32.0).abs() < 1e-9, "{q1:?}");
        // The fixed cost is what the measured wall leaves: 55 ms - 50 ms of shard time...
        assert!(q1.fixed > 0.0 && q1.fixed < 0.055, "{q1:?}");
    }

    #[test]
    fn two_scale_factors_fit_how_each_quantity_grows() {
        // Q1's gathered result does not grow with the data (4 groups); its scan does.
        let lo = parse_bench_json(&report(0.1, 10.0, 500.0, 1e5), "lo").unwrap();
        let hi = parse_bench_json(&report(1.0, 100.0, 500.0, 1e6), "hi").unwrap();
        let p = predict(&[lo, hi], &[100.0], &[4], &hw()).unwrap();
        let q1 = p.iter().find(|x| x.query == "Q1").unwrap();
        assert!((q1.network - 500.0 / 1.25e9).abs() < 1e-12, "{q1:?}");
        let q3 = p.iter().find(|x| x.query == "Q3").unwrap();
        // 1 MB at SF 1 grows to 100 MB; 3/4 of it leaves its server, over 4 links.
        let shuffle = 1e8 * 0.75 / 4.0 / 1.25e9;
        assert!(q3.network > shuffle && q3.network < shuffle * 1.1, "{q3:?}");
        assert_eq!(exponent(1.0, 10.0, 0.1, 1.0), 1.0);
        assert_eq!(exponent(5.0, 5.0, 0.1, 1.0), 0.0);
        assert!(predict(&[], &[1.0], &[1], &hw()).is_err());
    }
}
