//! Running the TPC-H queries and (A)–(D) with timings.
//!
//! The SQL texts are the specification's queries with its validation parameters, and
//! the selective queries (A)–(D) of paper 003; they live as plain `.sql` files under
//! `queries/` so a user can also run them from the shell.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{KuraError, KuraResult};
use crate::result::QueryResult;
use crate::session::Session;
use crate::tpch::check::{compare, describe, Answer};

/// How many mismatches a failed check describes before summarising the rest.
const MISMATCHES_SHOWN: usize = 5;

/// Every query id in running order: the 22 TPC-H queries, then (A)–(D) of paper 003.
pub const QUERY_IDS: [&str; 26] = [
    "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17",
    "18", "19", "20", "21", "22", "a", "b", "c", "d",
];

/// The 22 TPC-H query ids.
pub const TPCH_IDS: [&str; 22] = [
    "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "15", "16", "17",
    "18", "19", "20", "21", "22",
];

/// The selective query ids of paper 003.
pub const SELECTIVE_IDS: [&str; 4] = ["a", "b", "c", "d"];

/// Variants of (A), (C) and (D) whose parameters select, at the data's scale factor,
/// the fraction of rows the paper's texts select at SF 100 (see [`variant_text`]).
/// (B) needs none: its name prefix picks the same fraction of parts at every scale.
pub const VARIANT_IDS: [&str; 3] = ["va", "vc", "vd"];

/// Environment variable naming the reference answers directory (the one holding
/// `sf0.01/`, `sf0.1/`, ... or directly the `qNN.csv` files of one scale factor).
pub const ANSWERS_ENV: &str = "KURA_TPCH_ANSWERS";

/// The canonical id for a user's spelling: `3`, `03`, `q3`, `Q03` → `3`; `A`, `qa` → `a`.
pub fn canonical_id(id: &str) -> Option<&'static str> {
    let id = id.trim().to_ascii_lowercase();
    let id = id.strip_prefix('q').unwrap_or(&id);
    let id = if id.len() > 1 {
        id.trim_start_matches('0')
    } else {
        id
    };
    QUERY_IDS
        .iter()
        .chain(VARIANT_IDS.iter())
        .copied()
        .find(|known| *known == id)
}

/// Whether a (canonical) id names a selectivity-preserving variant.
pub fn is_variant(id: &str) -> bool {
    VARIANT_IDS.contains(&id)
}

/// The number of customers of the paper's SF 100 prefixes scaled to `sf`, as a name
/// prefix: customer names are `Customer#` and nine digits, so a prefix of zeros and a
/// `1` that leaves `r` digits free picks keys 10^r … 2·10^r − 1, i.e. 10^r customers
/// (`r` rounded from log10 of the wanted count, at least one customer).
fn customer_prefix(customers: f64) -> String {
    let free = customers.log10().round().clamp(0.0, 8.0) as usize;
    format!("Customer#{}1", "0".repeat(8 - free))
}

/// The substitution parameter of a variant at scale factor `sf`.
pub fn variant_parameter(id: &str, sf: f64) -> Option<String> {
    Some(match canonical_id(id)? {
        // The paper's 8,000 part keys of SF 100's 20 M parts.
        "va" => ((8_000.0 * sf / 100.0).round() as u64).max(1).to_string(),
        // 'Customer#00001%': 10,000 of SF 100's 15 M customers.
        "vc" => customer_prefix(10_000.0 * sf / 100.0),
        // 'Customer#000001%': 1,000 of them.
        "vd" => customer_prefix(1_000.0 * sf / 100.0),
        _ => return None,
    })
}

/// The SQL text of a variant at scale factor `sf`, its parameter substituted.
pub fn variant_text(id: &str, sf: f64) -> Option<String> {
    let template = match canonical_id(id)? {
        "va" => include_str!("queries/va.sql"),
        "vc" => include_str!("queries/vc.sql"),
        "vd" => include_str!("queries/vd.sql"),
        _ => return None,
    };
    Some(template.replace(":1", &variant_parameter(id, sf)?))
}

/// The SQL text of any query id at scale factor `sf` (the variants depend on it).
pub fn query_text_at(id: &str, sf: f64) -> Option<Cow<'static, str>> {
    match query_text(id) {
        Some(text) => Some(Cow::Borrowed(text)),
        None => variant_text(id, sf).map(Cow::Owned),
    }
}

/// The SQL text of a query for the data `session` sees: a variant's parameter follows
/// the loaded scale factor (counting the suppliers reads a few pages).
pub fn session_query_text(session: &mut Session, id: &str) -> KuraResult<Cow<'static, str>> {
    if let Some(text) = query_text(id) {
        return Ok(Cow::Borrowed(text));
    }
    if canonical_id(id).is_none() {
        return Err(KuraError::Invalid(format!("unknown query \"{id}\"")));
    }
    loaded_scale_factor(session)
        .and_then(|sf| variant_text(id, sf))
        .map(Cow::Owned)
        .ok_or_else(|| {
            KuraError::Invalid(
                "the variant's parameter follows the scale factor, and no TPC-H supplier table was found to tell it"
                    .into(),
            )
        })
}

/// The scale factor of the TPC-H data a session sees: 10,000 suppliers per unit.
pub fn loaded_scale_factor(session: &mut Session) -> Option<f64> {
    let r = session.execute("SELECT count(*) FROM supplier").ok()?;
    let n = r.rows().first()?.first()?.as_f64()?;
    (n > 0.0).then_some(n / 10_000.0)
}

/// The SQL text of a query by id (any spelling [`canonical_id`] accepts).
pub fn query_text(id: &str) -> Option<&'static str> {
    Some(match canonical_id(id)? {
        "1" => include_str!("queries/q01.sql"),
        "2" => include_str!("queries/q02.sql"),
        "3" => include_str!("queries/q03.sql"),
        "4" => include_str!("queries/q04.sql"),
        "5" => include_str!("queries/q05.sql"),
        "6" => include_str!("queries/q06.sql"),
        "7" => include_str!("queries/q07.sql"),
        "8" => include_str!("queries/q08.sql"),
        "9" => include_str!("queries/q09.sql"),
        "10" => include_str!("queries/q10.sql"),
        "11" => include_str!("queries/q11.sql"),
        "12" => include_str!("queries/q12.sql"),
        "13" => include_str!("queries/q13.sql"),
        "14" => include_str!("queries/q14.sql"),
        "15" => include_str!("queries/q15.sql"),
        "16" => include_str!("queries/q16.sql"),
        "17" => include_str!("queries/q17.sql"),
        "18" => include_str!("queries/q18.sql"),
        "19" => include_str!("queries/q19.sql"),
        "20" => include_str!("queries/q20.sql"),
        "21" => include_str!("queries/q21.sql"),
        "22" => include_str!("queries/q22.sql"),
        "a" => include_str!("queries/a.sql"),
        "b" => include_str!("queries/b.sql"),
        "c" => include_str!("queries/c.sql"),
        "d" => include_str!("queries/d.sql"),
        _ => return None,
    })
}

/// A display label: `Q1` … `Q22`, `A` … `D`, and `vA`, `vC`, `vD` for the variants.
pub fn query_label(id: &str) -> String {
    match canonical_id(id) {
        Some(c) if c.chars().all(|ch| ch.is_ascii_digit()) => format!("Q{c}"),
        Some(c) if is_variant(c) => format!("v{}", c[1..].to_ascii_uppercase()),
        Some(c) => c.to_ascii_uppercase(),
        None => id.to_string(),
    }
}

/// File name of a query's answer in an answers directory: `q01.csv` … `q22.csv`,
/// `a.csv` … `d.csv`, `va.csv` ….
pub fn answer_file_name(id: &str) -> Option<String> {
    let c = canonical_id(id)?;
    Some(match c.parse::<u32>() {
        Ok(n) => format!("q{n:02}.csv"),
        Err(_) => format!("{c}.csv"),
    })
}

/// Directory name of a scale factor's answers: 0.01 → `sf0.01`, 1 → `sf1`.
pub fn sf_dir_name(sf: f64) -> String {
    format!("sf{sf}")
}

/// Locates the reference answers for a scale factor: `$KURA_TPCH_ANSWERS` (the answers
/// root holding `sfX/`, or itself a directory of `qNN.csv`), else
/// `shared/tpch/answers/sfX` below the current directory or any of its ancestors (the
/// repository is checked out with `shared/` beside it), else the same search from
/// the executable's directory.
pub fn answers_dir(sf: f64) -> Option<PathBuf> {
    let env = std::env::var_os(ANSWERS_ENV).map(PathBuf::from);
    let cwd = std::env::current_dir().ok();
    find_answers_dir(sf, env.as_deref(), cwd.as_deref()).or_else(|| {
        // A binary built in the repository (target/release/kura) finds them from
        // its own location when run from elsewhere.
        let exe = std::env::current_exe().ok()?;
        find_answers_dir(sf, None, exe.parent())
    })
}

fn find_answers_dir(sf: f64, env: Option<&Path>, start: Option<&Path>) -> Option<PathBuf> {
    let sf_dir = sf_dir_name(sf);
    if let Some(root) = env {
        return [root.join(&sf_dir), root.to_path_buf()]
            .into_iter()
            .find(|d| d.join("q01.csv").is_file());
    }
    start?
        .ancestors()
        .map(|a| a.join("shared").join("tpch").join("answers").join(&sf_dir))
        .find(|d| d.is_dir())
}

/// Expected results of (A)–(D) kept in the repository (computed independently by
/// `tools/expected_selective.py`), for the scale factors they exist for.
pub fn embedded_selective_answer(sf_dir: &str, id: &str) -> Option<&'static str> {
    Some(match (sf_dir, canonical_id(id)?) {
        ("sf0.01", "a") => include_str!("../../../../tests/data/selective/sf0.01/a.csv"),
        ("sf0.01", "b") => include_str!("../../../../tests/data/selective/sf0.01/b.csv"),
        ("sf0.01", "c") => include_str!("../../../../tests/data/selective/sf0.01/c.csv"),
        ("sf0.01", "d") => include_str!("../../../../tests/data/selective/sf0.01/d.csv"),
        ("sf0.1", "a") => include_str!("../../../../tests/data/selective/sf0.1/a.csv"),
        ("sf0.1", "b") => include_str!("../../../../tests/data/selective/sf0.1/b.csv"),
        ("sf0.1", "c") => include_str!("../../../../tests/data/selective/sf0.1/c.csv"),
        ("sf0.1", "d") => include_str!("../../../../tests/data/selective/sf0.1/d.csv"),
        ("sf1", "a") => include_str!("../../../../tests/data/selective/sf1/a.csv"),
        ("sf1", "b") => include_str!("../../../../tests/data/selective/sf1/b.csv"),
        ("sf1", "c") => include_str!("../../../../tests/data/selective/sf1/c.csv"),
        ("sf1", "d") => include_str!("../../../../tests/data/selective/sf1/d.csv"),
        ("sf0.01", "va") => include_str!("../../../../tests/data/selective/sf0.01/va.csv"),
        ("sf0.01", "vc") => include_str!("../../../../tests/data/selective/sf0.01/vc.csv"),
        ("sf0.01", "vd") => include_str!("../../../../tests/data/selective/sf0.01/vd.csv"),
        ("sf0.1", "va") => include_str!("../../../../tests/data/selective/sf0.1/va.csv"),
        ("sf0.1", "vc") => include_str!("../../../../tests/data/selective/sf0.1/vc.csv"),
        ("sf0.1", "vd") => include_str!("../../../../tests/data/selective/sf0.1/vd.csv"),
        ("sf1", "va") => include_str!("../../../../tests/data/selective/sf1/va.csv"),
        ("sf1", "vc") => include_str!("../../../../tests/data/selective/sf1/vc.csv"),
        ("sf1", "vd") => include_str!("../../../../tests/data/selective/sf1/vd.csv"),
        _ => return None,
    })
}

/// The median of some durations (mean of the middle two for an even count).
pub fn median(times: &[Duration]) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    let mut sorted = times.to_vec();
    sorted.sort();
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2
    }
}

/// What became of a query's check against its reference answer.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckStatus {
    /// Checking was not asked for.
    NotChecked,
    /// The result matches the answer.
    Passed,
    /// The result differs; the text names rows, columns and values.
    Mismatch(String),
    /// No reference answer exists for this query at this scale factor.
    NoAnswer,
    /// The query failed with this error.
    Failed(String),
}

impl std::fmt::Display for CheckStatus {
    /// The status as a results table shows it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CheckStatus::NotChecked => write!(f, "-"),
            CheckStatus::Passed => write!(f, "ok"),
            CheckStatus::Mismatch(what) => write!(f, "MISMATCH: {what}"),
            CheckStatus::NoAnswer => write!(f, "no answer"),
            CheckStatus::Failed(error) => write!(f, "ERROR: {error}"),
        }
    }
}

impl CheckStatus {
    /// Whether this status counts as a failure of a `--check` run.
    pub fn is_failure(&self) -> bool {
        matches!(self, CheckStatus::Mismatch(_) | CheckStatus::Failed(_))
    }
}

/// One query's run: timings over the repetitions, row count, check status.
#[derive(Debug, Clone)]
pub struct QueryRun {
    /// Canonical id (`1` … `22`, `a` … `d`).
    pub id: &'static str,
    /// Wall time of every repetition that completed.
    pub times: Vec<Duration>,
    /// Median of `times`.
    pub median: Duration,
    /// Rows of the query's result (of its last repetition).
    pub rows: usize,
    pub status: CheckStatus,
}

impl QueryRun {
    pub fn label(&self) -> String {
        query_label(self.id)
    }
}

/// Resolves user-given ids (any spelling [`canonical_id`] accepts); an empty list means
/// the 22 TPC-H queries.
pub fn resolve_ids(ids: &[String]) -> KuraResult<Vec<&'static str>> {
    if ids.is_empty() {
        return Ok(TPCH_IDS.to_vec());
    }
    ids.iter()
        .map(|id| {
            canonical_id(id).ok_or_else(|| {
                KuraError::Invalid(format!(
                    "unknown query \"{id}\" (expected 1 to 22 for TPC-H, a to d for the selective queries, or va, vc, vd for their variants at the paper's selectivity)"
                ))
            })
        })
        .collect()
}

/// Runs queries `reps` times each (at least once) and, given the answers directory of
/// the scale factor, checks each result. A query that fails is recorded as such and the
/// run goes on; only bad ids or unreadable answer files end it with an error.
pub fn run_queries(
    session: &mut Session,
    ids: &[String],
    check: Option<&Path>,
    reps: usize,
) -> KuraResult<Vec<QueryRun>> {
    let ids = resolve_ids(ids)?;
    let mut runs = Vec::with_capacity(ids.len());
    for id in ids {
        let expected = match check {
            Some(dir) => expected_answer(dir, id)?,
            None => None,
        };
        runs.push(run_query(
            session,
            id,
            check.is_some(),
            expected.as_ref(),
            reps,
        ));
    }
    Ok(runs)
}

/// The reference answer of one query in an answers directory: `qNN.csv` for TPC-H;
/// for (A)–(D) `a.csv` … if present there, else the copy kept in the repository for
/// that directory's scale factor (`sf0.01`, `sf0.1`, `sf1`).
pub fn expected_answer(dir: &Path, id: &str) -> KuraResult<Option<Answer>> {
    let invalid = |e: std::io::Error| KuraError::Invalid(e.to_string());
    let Some(file) = answer_file_name(id) else {
        return Ok(None);
    };
    let path = dir.join(file);
    if path.is_file() {
        return Answer::read(&path).map(Some).map_err(invalid);
    }
    let sf_dir = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match embedded_selective_answer(sf_dir, id) {
        Some(text) => Answer::parse(text).map(Some).map_err(invalid),
        None => Ok(None),
    }
}

/// Runs one query `reps` times (at least once); `checking` says whether a missing
/// answer is worth reporting.
pub fn run_query(
    session: &mut Session,
    id: &'static str,
    checking: bool,
    expected: Option<&Answer>,
    reps: usize,
) -> QueryRun {
    let sql = match session_query_text(session, id) {
        Ok(text) => text,
        Err(e) => {
            return QueryRun {
                id,
                times: Vec::new(),
                median: Duration::ZERO,
                rows: 0,
                status: CheckStatus::Failed(e.to_string()),
            }
        }
    };
    let sql: &str = &sql;
    let mut times = Vec::new();
    let mut last: Option<QueryResult> = None;
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        match execute_query(session, sql) {
            Ok(result) => {
                times.push(start.elapsed());
                last = Some(result);
            }
            Err(e) => {
                drop_views_of(session, sql);
                return QueryRun {
                    id,
                    median: median(&times),
                    times,
                    rows: 0,
                    status: CheckStatus::Failed(e.to_string()),
                };
            }
        }
    }
    let result = last.expect("at least one repetition ran");
    let status = match (checking, expected) {
        (false, _) => CheckStatus::NotChecked,
        (true, None) => CheckStatus::NoAnswer,
        (true, Some(answer)) => {
            let mismatches = compare(answer, result.columns.len(), &result.rows());
            if mismatches.is_empty() {
                CheckStatus::Passed
            } else {
                CheckStatus::Mismatch(describe(&mismatches, MISMATCHES_SHOWN))
            }
        }
    };
    QueryRun {
        id,
        median: median(&times),
        times,
        rows: result.row_count(),
        status,
    }
}

/// Runs every statement of a query text and returns the result of the last one that
/// returns rows (Q15 is CREATE VIEW; SELECT; DROP VIEW).
fn execute_query(session: &mut Session, sql: &str) -> KuraResult<QueryResult> {
    let results = session.execute_all(sql)?;
    results
        .into_iter()
        .rev()
        .find(|r| r.has_rows())
        .ok_or_else(|| KuraError::Internal("the query text returned no rows result".into()))
}

/// After a failed run, drops the views the text creates, so the next run (or the next
/// query) does not trip over a view left behind.
fn drop_views_of(session: &mut Session, sql: &str) {
    for stmt in sql.split(';') {
        let code: Vec<&str> = stmt
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect();
        let text = code.join(" ").to_ascii_lowercase();
        let words: Vec<&str> = text.split_whitespace().collect();
        if let ["create", "view", name, ..] = words.as_slice() {
            let name = name.split('(').next().unwrap_or(name);
            // The view may not exist (the failure came before it); that error is expected.
            let _ = session.execute(&format!("DROP VIEW IF EXISTS {name}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_accept_common_spellings() {
        assert_eq!(canonical_id("3"), Some("3"));
        assert_eq!(canonical_id("03"), Some("3"));
        assert_eq!(canonical_id("Q03"), Some("3"));
        assert_eq!(canonical_id("q22"), Some("22"));
        assert_eq!(canonical_id("B"), Some("b"));
        assert_eq!(canonical_id("0"), None);
        assert_eq!(canonical_id("23"), None);
        assert_eq!(canonical_id("e"), None);
        assert_eq!(query_label("q7"), "Q7");
        assert_eq!(query_label("c"), "C");
        assert_eq!(answer_file_name("7").as_deref(), Some("q07.csv"));
        assert_eq!(answer_file_name("d").as_deref(), Some("d.csv"));
    }

    #[test]
    fn every_query_has_text_and_tpch_texts_carry_their_parameters() {
        for id in QUERY_IDS {
            let sql = query_text(id).unwrap_or_else(|| panic!("no text for {id}"));
            assert!(sql.to_lowercase().contains("select"), "{id}");
            let placeholder = sql
                .as_bytes()
                .windows(2)
                .any(|w| w[0] == b':' && w[1].is_ascii_digit());
            assert!(!placeholder, "{id} still has a template placeholder");
        }
        assert!(query_text("1").unwrap().contains("interval '90' day"));
        assert!(query_text("2").unwrap().contains("'%BRASS'"));
        assert!(query_text("3").unwrap().contains("'BUILDING'"));
        assert!(query_text("15").unwrap().contains("create view revenue0"));
        assert!(query_text("15").unwrap().contains("drop view revenue0"));
        assert!(query_text("22")
            .unwrap()
            .contains("'13', '31', '23', '29', '30', '18', '17'"));
    }

    #[test]
    fn variants_select_the_papers_fraction_at_every_scale_factor() {
        // At SF 100 the variants are the paper's own texts.
        assert_eq!(variant_parameter("va", 100.0).unwrap(), "8000");
        assert_eq!(variant_parameter("vc", 100.0).unwrap(), "Customer#00001");
        assert_eq!(variant_parameter("vd", 100.0).unwrap(), "Customer#000001");
        assert_eq!(variant_parameter("va", 1.0).unwrap(), "80");
        assert_eq!(variant_parameter("vc", 1.0).unwrap(), "Customer#0000001");
        assert_eq!(variant_parameter("vd", 1.0).unwrap(), "Customer#00000001");
        assert_eq!(variant_parameter("va", 10.0).unwrap(), "800");
        assert_eq!(variant_parameter("vc", 10.0).unwrap(), "Customer#000001");
        assert_eq!(variant_parameter("vd", 10.0).unwrap(), "Customer#0000001");
        // Never fewer than one key or customer.
        assert_eq!(variant_parameter("va", 0.01).unwrap(), "1");
        assert_eq!(variant_parameter("vd", 0.01).unwrap(), "Customer#000000001");
        for sf in [0.01, 1.0, 10.0, 100.0] {
            for id in VARIANT_IDS {
                let text = variant_text(id, sf).unwrap();
                assert!(!text.contains(":1"), "{id} at SF {sf}");
                assert!(text.contains(&variant_parameter(id, sf).unwrap()));
            }
            // The prefix leaves as many free digits as the customer count has zeros.
            let prefix = variant_parameter("vc", sf).unwrap();
            assert_eq!(
                prefix.len(),
                "Customer#".len() + 9 - (100.0 * sf).log10() as usize
            );
        }
        assert_eq!(canonical_id("VC"), Some("vc"));
        assert_eq!(query_label("vc"), "vC");
        assert!(query_text("va").is_none(), "a variant has no fixed text");
        assert!(query_text_at("va", 1.0)
            .unwrap()
            .contains("between 1 and 80"));
    }

    #[test]
    fn selective_answers_are_embedded_for_the_small_scale_factors() {
        for sf in ["sf0.01", "sf0.1", "sf1"] {
            for id in SELECTIVE_IDS.iter().chain(VARIANT_IDS.iter()) {
                let text = embedded_selective_answer(sf, id).unwrap();
                let answer = crate::tpch::check::Answer::parse(text).unwrap();
                assert!(!answer.columns.is_empty());
            }
        }
        assert!(embedded_selective_answer("sf10", "a").is_none());
        assert!(embedded_selective_answer("sf0.1", "1").is_none());
    }

    #[test]
    fn scale_factor_directory_names() {
        assert_eq!(sf_dir_name(0.01), "sf0.01");
        assert_eq!(sf_dir_name(0.1), "sf0.1");
        assert_eq!(sf_dir_name(1.0), "sf1");
        assert_eq!(sf_dir_name(10.0), "sf10");
    }

    #[test]
    fn answers_are_found_beside_an_ancestor_or_through_the_environment() {
        let root = std::env::temp_dir().join(format!("kura-answers-{}", std::process::id()));
        let answers = root.join("shared/tpch/answers/sf0.1");
        let repo_sub = root.join("repo/crates/kura");
        std::fs::create_dir_all(&answers).unwrap();
        std::fs::create_dir_all(&repo_sub).unwrap();
        std::fs::write(answers.join("q01.csv"), "x\n1\n").unwrap();

        assert_eq!(
            find_answers_dir(0.1, None, Some(&repo_sub)),
            Some(answers.clone())
        );
        // A scale factor with no answers anywhere (the temp dir's own ancestors may
        // hold a real `shared/`, so a common one like sf1 could be found there).
        assert_eq!(find_answers_dir(0.123, None, Some(&repo_sub)), None);
        let env_root = root.join("shared/tpch/answers");
        assert_eq!(
            find_answers_dir(0.1, Some(&env_root), None),
            Some(answers.clone())
        );
        assert_eq!(
            find_answers_dir(7.0, Some(&answers), None),
            Some(answers.clone())
        );
        assert_eq!(
            find_answers_dir(0.1, Some(&repo_sub), Some(&repo_sub)),
            None
        );
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn ids_resolve_with_a_clear_error() {
        assert_eq!(resolve_ids(&[]).unwrap(), TPCH_IDS.to_vec());
        let ids = resolve_ids(&["q01".into(), "A".into(), "22".into()]).unwrap();
        assert_eq!(ids, vec!["1", "a", "22"]);
        let err = resolve_ids(&["1".into(), "q99".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"q99\""), "{err}");
    }

    #[test]
    fn expected_answers_come_from_the_directory_or_the_repository() {
        let dir = std::env::temp_dir()
            .join(format!("kura-expected-{}", std::process::id()))
            .join("sf0.01");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("q06.csv"), "revenue\n1193053.2253\n").unwrap();
        let q6 = expected_answer(&dir, "6").unwrap().unwrap();
        assert_eq!(q6.rows, vec![vec!["1193053.2253".to_string()]]);
        assert!(expected_answer(&dir, "7").unwrap().is_none());
        // (A)-(D) fall back to the copy kept for the directory's scale factor.
        let d = expected_answer(&dir, "d").unwrap().unwrap();
        assert_eq!(d.columns.len(), 4);
        assert_eq!(d.rows.len(), 25);
        std::fs::write(dir.join("q01.csv"), "a|b\n1\n").unwrap();
        assert!(expected_answer(&dir, "1").is_err());
        std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
    }

    #[test]
    fn statuses_that_fail_a_check() {
        assert!(CheckStatus::Mismatch("x".into()).is_failure());
        assert!(CheckStatus::Failed("x".into()).is_failure());
        assert!(!CheckStatus::Passed.is_failure());
        assert!(!CheckStatus::NoAnswer.is_failure());
        assert!(!CheckStatus::NotChecked.is_failure());
        assert_eq!(
            CheckStatus::Mismatch("row 1".into()).to_string(),
            "MISMATCH: row 1"
        );
        assert_eq!(CheckStatus::Passed.to_string(), "ok");
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        let ms = Duration::from_millis;
        assert_eq!(median(&[]), Duration::ZERO);
        assert_eq!(median(&[ms(9), ms(1), ms(5)]), ms(5));
        assert_eq!(median(&[ms(9), ms(1), ms(5), ms(3)]), ms(4));
    }
}
