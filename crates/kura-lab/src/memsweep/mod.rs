//! Paper 001's figures 2–4 and its improvement ratios (`kura bench memsweep`): three
//! TPC-H query shapes run warm at every buffer size (O_DIRECT, so kura's pool is
//! the only cache), with prefetch on and off, with the shape's indexes resident,
//! and under several replacement policies (the access-density policy among them);
//! per point total time, CPU time, hit ratio, pages read and pages prefetched;
//! a CSV and one time-against-memory chart per shape.
//!
//! The shapes, over paper 003's index set (`kura tpch load --indexes`):
//!
//! * `scan` — a full scan of LINEITEM without index (`enable_index = off`): sequential
//!   I/O over five columns, every page of them once per run (at SF 0.1: 2,679
//!   fixes of ≈ 1,260 distinct pages, ten times that at SF 1). Prefetch reads each
//!   run of consecutive pages with one large request.
//! * `join3` — CUSTOMER ⋈ ORDERS ⋈ LINEITEM for 100 customers (`c_name LIKE
//!   'Customer#0000010%'`) through `customer_name`, `orders_custkey` and
//!   `lineitem_orderkey`: small random I/O, about the same whatever the scale factor
//!   (≈ 1,000 orders and 4,000 line items; 3,378 fixes at SF 0.1, 2,422 at SF 0.01),
//!   single index leaves and column pages.
//! * `join4` — PART ⋈ LINEITEM ⋈ ORDERS ⋈ CUSTOMER for the parts named `g%` (5 of
//!   the 92 colours, ≈ 5 % of PART) through `part_name`, `lineitem_part_supp`,
//!   `orders_pk` and `customer_pk`: large random I/O growing with the scale factor
//!   (at SF 0.1: 31,000 line items, orders and customers, 8,414 fixes spread over
//!   the whole of LINEITEM, ORDERS and CUSTOMER and their indexes).
//!
//! The `fixes` column of the CSV is the pages each run touched (counted by the
//! buffer manager), `pages_read` those it had to read. Before any point, each
//! shape's working set is measured and the buffers checked against it
//! ([`premise`]); the fix counts above change with compression, the check does not.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use kura::{Database, OpenOptions};

use crate::error::{At, LabError, LabResult};
use crate::plot::{line_chart_log2_x, Labels, Series};

pub mod premise;

/// One query shape of the study.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub name: &'static str,
    /// What the paper calls it.
    pub title: &'static str,
    /// Settings the shape runs under (forcing the scan or the index plan).
    pub settings: &'static [&'static str],
    pub sql: &'static str,
    /// The indexes its plan uses (held resident in the `resident` variant).
    pub indexes: &'static [&'static str],
}

/// The three shapes (see the module documentation).
pub const SHAPES: [Shape; 3] = [
    Shape {
        name: "scan",
        title: "full table scan, no index (sequential I/O)",
        settings: &["SET enable_index = off"],
        sql: "SELECT l_returnflag, sum(l_quantity), sum(l_extendedprice * (1 - l_discount)), \
              count(*) FROM lineitem WHERE l_shipdate <= date '1998-09-02' GROUP BY l_returnflag",
        indexes: &[],
    },
    Shape {
        name: "join3",
        title: "3-way join through indexes (small random I/O)",
        settings: &["SET enable_seqscan = off"],
        sql: "SELECT o.o_orderpriority, sum(l.l_quantity), \
              sum(l.l_extendedprice * (1 - l.l_discount) * (1 + l.l_tax)) \
              FROM customer c JOIN orders o ON c.c_custkey = o.o_custkey \
              JOIN lineitem l ON o.o_orderkey = l.l_orderkey \
              WHERE c.c_name LIKE 'Customer#0000010%' GROUP BY o.o_orderpriority",
        indexes: &["customer_name", "orders_custkey", "lineitem_orderkey"],
    },
    Shape {
        name: "join4",
        title: "4-way join through indexes (large random I/O)",
        settings: &["SET enable_seqscan = off"],
        sql: "SELECT c.c_mktsegment, count(*), sum(l.l_extendedprice * (1 - l.l_discount)) \
              FROM part p JOIN lineitem l ON l.l_partkey = p.p_partkey \
              JOIN orders o ON o.o_orderkey = l.l_orderkey \
              JOIN customer c ON c.c_custkey = o.o_custkey \
              WHERE p.p_name LIKE 'g%' GROUP BY c.c_mktsegment",
        indexes: &[
            "part_name",
            "lineitem_part_supp",
            "orders_pk",
            "customer_pk",
        ],
    },
];

/// The study's parameters.
#[derive(Debug, Clone)]
pub struct Config {
    /// TPC-H scale factor of the database to build when `db` does not exist.
    pub sf: f64,
    /// The database (built with paper 003's indexes if missing).
    pub db: PathBuf,
    /// Buffer sizes in bytes; empty = chosen around the shapes' measured working
    /// sets ([`premise::buffers_for`]).
    pub buffers: Vec<u64>,
    /// Three buffer sizes instead of every power of two between the extremes.
    pub quick: bool,
    /// Replacement policies; the first is the baseline of the prefetch and
    /// resident runs, the others run with prefetch on.
    pub policies: Vec<String>,
    /// Shapes to run (names from [`SHAPES`]); empty = all.
    pub shapes: Vec<String>,
    /// Execution mode of every run (`serial`, `static`, `ooo`).
    pub mode: String,
    /// Measured warm runs per point (after one warm-up run), more while the
    /// runs add up to less than [`MIN_POINT_SECS`]; the median is kept.
    pub reps: usize,
    /// Also run each index shape with its indexes resident (whole, and interior nodes only).
    pub resident: bool,
    /// Directory for `memsweep.csv` and the charts.
    pub out: PathBuf,
}

impl Config {
    /// `--quick`: SF 0.1, three buffer sizes around the measured working sets,
    /// median of three or more warm runs per point.
    pub fn quick(db: PathBuf, out: PathBuf) -> Config {
        Config {
            sf: 0.1,
            db,
            buffers: Vec::new(),
            quick: true,
            policies: default_policies(),
            shapes: Vec::new(),
            mode: "serial".into(),
            reps: 3,
            resident: true,
            out,
        }
    }
}

/// LRU first (the paper's baseline), then CLOCK, ARC, 2Q and access density.
pub fn default_policies() -> Vec<String> {
    ["lru", "clock", "arc", "2q", "density"]
        .iter()
        .map(|s| s.to_string())
        .collect()
}

/// One measured point.
#[derive(Debug, Clone)]
pub struct Point {
    pub shape: &'static str,
    pub buffer: u64,
    pub policy: String,
    pub prefetch: bool,
    pub resident: bool,
    /// With `resident`: only the indexes' interior nodes were held.
    pub interior: bool,
    pub total_s: f64,
    pub cpu_s: f64,
    pub hit_ratio: f64,
    pub fixes: u64,
    pub pages_read: u64,
    pub prefetched: u64,
    pub rows: usize,
    /// Why the point has no measurement (a resident set too large for the pool).
    pub error: Option<String>,
}

/// The CSV's columns, in order.
pub const CSV_COLUMNS: &[&str] = &[
    "shape",
    "buffer_mib",
    "policy",
    "prefetch",
    "resident",
    "total_s",
    "cpu_s",
    "hit_ratio",
    "fixes",
    "pages_read",
    "prefetched",
    "rows",
    "error",
];

/// User + system CPU seconds of the whole process (every worker thread).
fn process_cpu_secs() -> f64 {
    // SAFETY: rusage is plain integers, for which all-zero bytes are valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return f64::NAN;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Opens `cfg.db`, building it (tables and paper 003's indexes) when missing.
/// Returns the data size in bytes.
pub fn ensure_database(cfg: &Config, out: &mut dyn Write) -> LabResult<u64> {
    let fresh = !cfg.db.exists();
    let db = Database::open(&cfg.db, OpenOptions::default())?;
    if fresh {
        writeln!(
            out,
            "building {} (TPC-H SF {} with paper 003's indexes)...",
            cfg.db.display(),
            cfg.sf
        )?;
        let mut session = db.session();
        kura::tpch::load(
            &mut session,
            kura::tpch::load::Source::Generate(cfg.sf),
            &|_, _| {},
        )?;
        kura::tpch::load::create_indexes(&mut session, &|_| {})?;
    }
    let catalog = db.storage().catalog();
    let needed = SHAPES.iter().flat_map(|s| s.indexes.iter());
    for index in needed {
        if catalog.index(index).is_none() {
            return Err(LabError::Missing(format!(
                "{} lacks index {index}: build it with `kura tpch load --indexes`, or give \
                 another --db",
                cfg.db.display()
            )));
        }
    }
    Ok(db.storage().page_count() * db.storage().page_size() as u64)
}

/// Opens the database with `opts` and a session set for `shape`: the execution
/// mode, prefetch on or off, then the shape's own settings.
pub(crate) fn shape_session(
    db_path: &Path,
    opts: OpenOptions,
    mode: &str,
    prefetch: bool,
    shape: &Shape,
) -> LabResult<(Database, kura::Session)> {
    let db = Database::open(db_path, opts)?;
    let mut session = db.session();
    let on_off = if prefetch { "on" } else { "off" };
    let mut setup = vec![
        format!("SET execution_mode = '{mode}'"),
        format!("SET prefetch = {on_off}"),
    ];
    setup.extend(shape.settings.iter().map(|s| s.to_string()));
    for sql in &setup {
        session
            .execute(sql)
            .at(format_args!("{}: {sql}", shape.name))?;
    }
    Ok((db, session))
}

/// What one point runs.
struct Variant<'a> {
    shape: &'a Shape,
    buffer: u64,
    policy: &'a str,
    prefetch: bool,
    resident: bool,
    interior: bool,
}

fn measure(cfg: &Config, v: &Variant) -> LabResult<Point> {
    let mut point = Point {
        shape: v.shape.name,
        buffer: v.buffer,
        policy: v.policy.to_string(),
        prefetch: v.prefetch,
        resident: v.resident,
        interior: v.interior,
        total_s: f64::NAN,
        cpu_s: f64::NAN,
        hit_ratio: f64::NAN,
        fixes: 0,
        pages_read: 0,
        prefetched: 0,
        rows: 0,
        error: None,
    };
    let opts = OpenOptions {
        buffer_bytes: Some(v.buffer),
        buffered_io: false,
        buffer_policy: Some(v.policy.to_string()),
        ..OpenOptions::default()
    };
    let (db, mut session) = shape_session(&cfg.db, opts, &cfg.mode, v.prefetch, v.shape)?;
    if v.resident {
        let list = v.shape.indexes.join(",");
        let list = if v.interior {
            format!("interior:{list}")
        } else {
            list
        };
        if let Err(e) = session.execute(&format!("SET resident_indexes = '{list}'")) {
            // The pool cannot hold them and leave room for queries: a point
            // without measurement, with the reason.
            point.error = Some(e.to_string());
            return Ok(point);
        }
    }
    let bm = db.storage().buffer().clone();
    // Warm-up: the measured runs find whatever the pool keeps of this one.
    session.execute(v.shape.sql).at(v.shape.name)?;
    let mut runs = Vec::new();
    let mut spent = 0.0;
    // A point of a few milliseconds is noise on a shared machine: repeat it
    // until the runs add up to MIN_POINT_SECS (within reason).
    while runs.len() < cfg.reps.max(1) || (spent < MIN_POINT_SECS && runs.len() < 200) {
        let before = bm.stats();
        let cpu0 = process_cpu_secs();
        let t0 = Instant::now();
        let result = session.execute(v.shape.sql).at(v.shape.name)?;
        let total = t0.elapsed().as_secs_f64();
        spent += total;
        let cpu = process_cpu_secs() - cpu0;
        let d = bm.stats().since(&before);
        runs.push((total, cpu, d, result.row_count()));
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (total, cpu, d, rows) = runs.swap_remove(runs.len() / 2);
    point.total_s = total;
    point.cpu_s = cpu;
    point.hit_ratio = d.hit_ratio();
    point.fixes = d.fixes;
    point.pages_read = d.pages_read;
    point.prefetched = d.prefetch_reads;
    point.rows = rows;
    Ok(point)
}

/// The least time the measured runs of one point add up to.
pub const MIN_POINT_SECS: f64 = 0.1;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// The points to run, in order: per shape, the baseline policy with prefetch
/// on and off, then resident indexes (index shapes), then the other policies.
fn plan<'a>(cfg: &'a Config, shapes: &'a [Shape], buffers: &[u64]) -> Vec<Variant<'a>> {
    let mut plan = Vec::new();
    let base = cfg.policies.first().map_or("lru", String::as_str);
    for shape in shapes {
        for &buffer in buffers {
            for prefetch in [true, false] {
                plan.push(Variant {
                    shape,
                    buffer,
                    policy: base,
                    prefetch,
                    resident: false,
                    interior: false,
                });
            }
            if cfg.resident && !shape.indexes.is_empty() {
                for interior in [false, true] {
                    plan.push(Variant {
                        shape,
                        buffer,
                        policy: base,
                        prefetch: true,
                        resident: true,
                        interior,
                    });
                }
            }
            for policy in cfg.policies.iter().skip(1) {
                plan.push(Variant {
                    shape,
                    buffer,
                    policy,
                    prefetch: true,
                    resident: false,
                    interior: false,
                });
            }
        }
    }
    plan
}

/// Runs the study: builds the database if needed, measures every point, writes
/// `memsweep.csv` and `memsweep-<shape>.png` into `cfg.out`, prints the table
/// and the improvement ratios to `out`. `progress(done, total)` after each point.
pub fn run(
    cfg: &Config,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(usize, usize),
) -> LabResult<Vec<Point>> {
    let shapes: Vec<Shape> = if cfg.shapes.is_empty() {
        SHAPES.to_vec()
    } else {
        cfg.shapes
            .iter()
            .map(|n| {
                SHAPES
                    .iter()
                    .find(|s| s.name.eq_ignore_ascii_case(n))
                    .copied()
                    .ok_or_else(|| {
                        LabError::Invalid(format!(
                            "unknown shape '{n}'; shapes: scan, join3, join4"
                        ))
                    })
            })
            .collect::<Result<_, _>>()?
    };
    for p in &cfg.policies {
        kura_cache::make_buffer_policy(p, 64)?;
    }
    let data = ensure_database(cfg, out)?;
    let working_sets = premise::measure(&cfg.db, &shapes, &cfg.mode, data)?;
    let chosen = cfg.buffers.is_empty();
    let mut buffers = if chosen {
        premise::buffers_for(&working_sets, cfg.quick)
    } else {
        cfg.buffers.clone()
    };
    buffers.sort_unstable();
    buffers.dedup();
    writeln!(out, "{}", premise::line(&working_sets, &buffers))?;
    if let (true, Some(why)) = (chosen, premise::failure(&working_sets, &buffers)) {
        // Buffers the study chose itself and that still miss the premise would
        // only chart noise; sizes the user gave are run as asked.
        return Err(LabError::Premise(format!(
            "paper 001's premise does not hold on {}: {why}",
            cfg.db.display()
        )));
    }
    writeln!(
        out,
        "kura bench memsweep: {} ({:.1} MiB of data), {} mode, O_DIRECT, warm, median of {} or more runs (at least {} ms per point); buffers {} MiB",
        cfg.db.display(),
        mib(data),
        cfg.mode,
        cfg.reps.max(1),
        MIN_POINT_SECS * 1e3,
        buffers.iter().map(|&b| format!("{}", mib(b))).collect::<Vec<_>>().join(", ")
    )?;
    let plan = plan(cfg, &shapes, &buffers);
    let mut points = Vec::with_capacity(plan.len());
    for (i, v) in plan.iter().enumerate() {
        points.push(measure(cfg, v)?);
        progress(i + 1, plan.len());
    }
    std::fs::create_dir_all(&cfg.out).at(cfg.out.display())?;
    let csv = cfg.out.join("memsweep.csv");
    write_csv(&csv, &points)?;
    print_table(out, &points)?;
    print_ratios(out, &points, &shapes, &cfg.policies)?;
    let base = cfg.policies.first().map_or("lru", String::as_str);
    for shape in &shapes {
        // As the paper's figures: the baseline with prefetch on and off (and
        // with its indexes resident) ...
        let png = cfg.out.join(format!("memsweep-{}.png", shape.name));
        chart(&png, shape, &points, "", &|p| p.policy == base)?;
        writeln!(out, "chart: {}", png.display())?;
        // ... and the replacement policies, prefetch on.
        if cfg.policies.len() > 1 {
            let png = cfg
                .out
                .join(format!("memsweep-{}-policies.png", shape.name));
            chart(&png, shape, &points, ", by policy", &|p| {
                p.prefetch && !p.resident
            })?;
            writeln!(out, "chart: {}", png.display())?;
        }
    }
    writeln!(out, "csv: {}", csv.display())?;
    Ok(points)
}

fn variant_label(p: &Point) -> String {
    let mut s = p.policy.clone();
    if p.resident {
        s.push_str(if p.interior {
            " +interior resident"
        } else {
            " +resident"
        });
    }
    s.push_str(if p.prefetch {
        " prefetch on"
    } else {
        " prefetch off"
    });
    s
}

/// Writes the points as CSV (columns [`CSV_COLUMNS`]).
pub fn write_csv(path: &Path, points: &[Point]) -> LabResult<()> {
    let mut w = csv::Writer::from_path(path).at(path.display())?;
    w.write_record(CSV_COLUMNS).at(path.display())?;
    for p in points {
        let num = |x: f64| {
            if x.is_nan() {
                String::new()
            } else {
                format!("{x:.6}")
            }
        };
        w.write_record([
            p.shape.to_string(),
            format!("{:.2}", mib(p.buffer)),
            p.policy.clone(),
            if p.prefetch { "on" } else { "off" }.to_string(),
            match (p.resident, p.interior) {
                (false, _) => "no",
                (true, false) => "all",
                (true, true) => "interior",
            }
            .to_string(),
            num(p.total_s),
            num(p.cpu_s),
            num(p.hit_ratio),
            p.fixes.to_string(),
            p.pages_read.to_string(),
            p.prefetched.to_string(),
            p.rows.to_string(),
            p.error.clone().unwrap_or_default(),
        ])
        .at(path.display())?;
    }
    w.flush().at(path.display())
}

fn print_table(out: &mut dyn Write, points: &[Point]) -> LabResult<()> {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::ASCII_MARKDOWN);
    t.set_header([
        "shape",
        "MiB",
        "variant",
        "total s",
        "CPU s",
        "hit %",
        "fixes",
        "read",
        "prefetched",
    ]);
    for p in points {
        if let Some(e) = &p.error {
            let short = if e.contains("resident indexes need") {
                "refused: resident set too large".to_string()
            } else {
                e.clone()
            };
            t.add_row([
                p.shape.to_string(),
                format!("{:.0}", mib(p.buffer)),
                variant_label(p),
                short,
            ]);
            continue;
        }
        t.add_row([
            p.shape.to_string(),
            format!("{:.0}", mib(p.buffer)),
            variant_label(p),
            format!("{:.3}", p.total_s),
            format!("{:.3}", p.cpu_s),
            format!("{:.1}", p.hit_ratio * 100.0),
            p.fixes.to_string(),
            p.pages_read.to_string(),
            p.prefetched.to_string(),
        ]);
    }
    Ok(writeln!(out, "{t}")?)
}

/// Time at the smallest buffer / time at the largest, total and CPU, per
/// shape and variant (paper 001's performance improvement ratio).
pub fn improvement_ratios(points: &[Point], shape: &str, label: &str) -> Option<(f64, f64)> {
    let mut line: Vec<&Point> = points
        .iter()
        .filter(|p| p.shape == shape && variant_label(p) == label && p.error.is_none())
        .collect();
    line.sort_by_key(|p| p.buffer);
    let (small, large) = (line.first()?, line.last()?);
    if line.len() < 2 {
        return None;
    }
    Some((
        small.total_s / large.total_s,
        small.cpu_s / large.cpu_s.max(1e-9),
    ))
}

fn print_ratios(
    out: &mut dyn Write,
    points: &[Point],
    shapes: &[Shape],
    policies: &[String],
) -> LabResult<()> {
    writeln!(
        out,
        "\nimprovement ratio = time at the smallest buffer / time at the largest (paper 001: 4-way index join 10.20x total, 1.28x CPU)"
    )?;
    let mut labels: Vec<String> = Vec::new();
    for p in points {
        let l = variant_label(p);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    for shape in shapes {
        for l in &labels {
            if let Some((total, cpu)) = improvement_ratios(points, shape.name, l) {
                writeln!(
                    out,
                    "  {:<6} {:<28} total {:>6.2}x  CPU {:>5.2}x",
                    shape.name, l, total, cpu
                )?;
            }
        }
    }
    // At the smallest buffer: each policy against the baseline (paper 001's
    // proposal: choose what stays by access density).
    if let (Some(base), Some(&smallest)) = (
        policies.first(),
        points.iter().map(|p| p.buffer).min().as_ref(),
    ) {
        writeln!(
            out,
            "at the smallest buffer ({:.0} MiB), speed-up over {base} (prefetch on; {base}'s time / the variant's):",
            mib(smallest)
        )?;
        for shape in shapes {
            let at = |policy: &str, resident: Option<bool>| {
                points
                    .iter()
                    .find(|p| {
                        p.shape == shape.name
                            && p.buffer == smallest
                            && p.policy == policy
                            && p.prefetch
                            && p.resident == resident.is_some()
                            && resident.is_none_or(|i| p.interior == i)
                            && p.error.is_none()
                    })
                    .map(|p| p.total_s)
            };
            let Some(b) = at(base, None) else { continue };
            let mut line = format!("  {:<6} {base} {b:.3} s", shape.name);
            for p in policies.iter().skip(1) {
                if let Some(t) = at(p, None) {
                    line.push_str(&format!(", {p} {:.2}x", b / t));
                }
            }
            if let Some(t) = at(base, Some(false)) {
                line.push_str(&format!(", {base}+resident {:.2}x", b / t));
            }
            if let Some(t) = at(base, Some(true)) {
                line.push_str(&format!(", {base}+interior resident {:.2}x", b / t));
            }
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// A chart of one shape: total time against buffer size (log axis), one line
/// per variant among the points `keep` accepts.
fn chart(
    path: &Path,
    shape: &Shape,
    points: &[Point],
    subtitle: &str,
    keep: &dyn Fn(&Point) -> bool,
) -> LabResult<()> {
    let points: Vec<&Point> = points.iter().filter(|p| keep(p)).collect();
    let mut labels: Vec<String> = Vec::new();
    for p in points.iter().filter(|p| p.shape == shape.name) {
        let l = variant_label(p);
        if !labels.contains(&l) {
            labels.push(l);
        }
    }
    let series: Vec<Series> = labels
        .iter()
        .map(|l| {
            let mut pts: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.shape == shape.name && &variant_label(p) == l && p.error.is_none())
                .map(|p| (mib(p.buffer), p.total_s))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series::line(l.clone(), pts)
        })
        .filter(|s| !s.points.is_empty())
        .collect();
    let title = format!("{} — {}{subtitle}", shape.name, shape.title);
    line_chart_log2_x(
        path,
        &Labels {
            title: &title,
            x: "buffer pool (MiB, log scale)",
            y: "total time (s)",
        },
        &series,
        None,
    )
}
