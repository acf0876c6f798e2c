//! Paper 000's workload sized from the LLC in the pages its queries read, and the
//! study's premise checked on them: table A's column fits the LLC with a way to
//! spare, table B's is larger than the LLC, the index join's index fits. Sizes
//! are first guessed from the value width, then measured from the pages storage
//! wrote (compression decides them, not the row count) and the tables rebuilt
//! once to the measured scale; a premise that still fails is refused with why.

use std::io::Write;
use std::path::Path;

use kura::tpch::load::Source;
use kura::{Batch, DataType, Database, OpenOptions, Session, Value};
use kura_common::Vector;

use crate::error::{LabError, LabResult};

/// Bits of the values of A's and B's `val` column: random, so no encoding makes
/// them smaller than this (36 bits keeps sums of millions of them in a BIGINT).
pub(crate) const VALUE_BITS: u32 = 36;

/// The LLC the workload is sized for: its bytes as modelled (sets rounded down to a
/// power of two), the hardware's bytes, and its ways.
#[derive(Debug, Clone, Copy)]
pub struct Llc {
    pub bytes: u64,
    pub hardware_bytes: u64,
    pub ways: u32,
}

impl Llc {
    /// The LLC of a cache geometry (sysfs), as modelled and as built.
    pub fn of(g: &kura_cache::cpu::Geometry) -> Llc {
        Llc {
            bytes: g.size,
            hardware_bytes: u64::from(g.hardware_sets) * u64::from(g.ways) * u64::from(g.line_size),
            ways: g.ways,
        }
    }

    /// What B must exceed: the larger of the model and the hardware, so that B
    /// leaves both the simulated and the real LLC (a sliced L3 of 480 MiB is
    /// modelled as 256 MiB).
    pub fn largest(&self) -> u64 {
        self.bytes.max(self.hardware_bytes)
    }

    /// The most an object may take and still fit with one way left to the rest
    /// (what warm-and-protect needs: the object's ways plus one for set imbalance).
    pub fn room(&self) -> u64 {
        self.bytes / u64::from(self.ways.max(2)) * u64::from(self.ways.max(2) - 1)
    }
}

/// Row counts of the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub a_rows: u64,
    pub b_rows: u64,
    pub index_keys: u64,
    pub probe_keys: u64,
}

/// The page bytes each object should take: A half the LLC, B twice it (1.5×
/// with --quick), the index 0.4 of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Targets {
    a: u64,
    b: u64,
    index: u64,
}

impl Targets {
    /// A and the index from the modelled LLC (they must fit it and the hardware's,
    /// the smaller), B from the larger.
    pub(crate) fn of(llc: &Llc, quick: bool) -> Targets {
        let b = llc.largest();
        Targets {
            a: llc.bytes / 2,
            b: if quick { b * 3 / 2 } else { b * 2 },
            index: llc.bytes * 4 / 10,
        }
    }
}

impl Sizes {
    /// The first guess: each value takes [`VALUE_BITS`] bits on a page, an
    /// index key 16 bytes (key and row id).
    pub(crate) fn guess(t: &Targets) -> Sizes {
        let rows = |bytes: u64, bits: u64| (bytes * 8 / bits).max(1024);
        Sizes {
            a_rows: rows(t.a, u64::from(VALUE_BITS)),
            b_rows: rows(t.b, u64::from(VALUE_BITS)),
            index_keys: rows(t.index, 128),
            probe_keys: 1000,
        }
    }

    /// Rows rescaled so that each object's measured bytes meet its target.
    fn rescaled(&self, t: &Targets, m: &Measured) -> Sizes {
        let scale = |rows: u64, target: u64, got: u64| {
            ((rows as f64 * target as f64 / got.max(1) as f64) as u64).max(1024)
        };
        Sizes {
            a_rows: scale(self.a_rows, t.a, m.a_bytes),
            b_rows: scale(self.b_rows, t.b, m.b_bytes),
            index_keys: scale(self.index_keys, t.index, m.index_bytes),
            probe_keys: self.probe_keys,
        }
    }
}

/// What the objects the queries read take in pages.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// A's and B's `val` column.
    pub a_bytes: u64,
    pub b_bytes: u64,
    /// The index join's B+tree, every node.
    pub index_bytes: u64,
}

/// Why the premise does not hold, or `None` when it does.
pub fn premise_failure(llc: &Llc, m: &Measured) -> Option<String> {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let mut why = Vec::new();
    if m.a_bytes > llc.room() {
        why.push(format!(
            "A's column ({:.1} MiB) does not fit the LLC with a way to spare ({:.1} MiB)",
            mib(m.a_bytes),
            mib(llc.room())
        ));
    }
    // B must push everything out: clearly more than the LLC, not just about it.
    if m.b_bytes < llc.largest() * 5 / 4 {
        why.push(format!(
            "B's column ({:.1} MiB) is not larger than the LLC ({:.1} MiB) by a quarter",
            mib(m.b_bytes),
            mib(llc.largest())
        ));
    }
    if m.index_bytes > llc.room() {
        why.push(format!(
            "the join's index ({:.1} MiB) does not fit the LLC with a way to spare ({:.1} MiB)",
            mib(m.index_bytes),
            mib(llc.room())
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The line that opens the study's output.
pub fn premise_line(llc: &Llc, m: &Measured) -> String {
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let hardware = if llc.hardware_bytes != llc.bytes {
        format!(" (the hardware's {:.1} MiB)", mib(llc.hardware_bytes))
    } else {
        String::new()
    };
    let sizes = format!(
        "A's column {:.1} MiB of pages, B's {:.1} MiB, the join's index {:.1} MiB; LLC {:.1} MiB{hardware}, {}-way",
        mib(m.a_bytes),
        mib(m.b_bytes),
        mib(m.index_bytes),
        mib(llc.bytes),
        llc.ways
    );
    match premise_failure(llc, m) {
        None => format!("premise holds: {sizes} (A fits, B does not, the index fits)"),
        Some(why) => format!("premise does NOT hold: {sizes}: {why}"),
    }
}

/// One row per value of `value(i)`: `k` is the row number.
pub(crate) fn create_filled(
    db: &Database,
    s: &mut Session,
    name: &str,
    rows: u64,
    mut value: impl FnMut(u64) -> i64,
) -> LabResult<()> {
    s.execute(&format!("CREATE TABLE {name} (k BIGINT, val BIGINT)"))?;
    let mut txn = db.storage().begin()?;
    let chunk = 65_536u64;
    let mut start = 0;
    while start < rows {
        let n = chunk.min(rows - start);
        let mut k = Vector::new(DataType::BigInt, n as usize);
        let mut v = Vector::new(DataType::BigInt, n as usize);
        for i in start..start + n {
            k.push_value(&Value::BigInt(i as i64));
            v.push_value(&Value::BigInt(value(i)));
        }
        txn.append(name, &Batch::new(vec![k, v]))?;
        start += n;
    }
    Ok(txn.commit()?)
}

/// A deterministic pseudo-random sequence (xorshift).
pub(crate) fn xorshift(mut x: u64) -> impl FnMut() -> u64 {
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// Values no encoding shrinks below [`VALUE_BITS`] bits: a dictionary or a
/// small frame of reference would let a "bigger than the LLC" table fit it.
fn random_values(seed: u64) -> impl FnMut(u64) -> i64 {
    let mut next = xorshift(seed);
    move |_| (next() & ((1u64 << VALUE_BITS) - 1)) as i64
}

/// Which parts of the workload a study needs besides A and B.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Needs {
    pub(crate) index_join: bool,
    pub(crate) tpch: bool,
}

/// Writes the workload into a new database at `path` (an old file is removed).
pub(crate) fn build(path: &Path, sizes: &Sizes, needs: Needs) -> LabResult<Database> {
    let _ = std::fs::remove_file(path);
    let db = Database::open(path, OpenOptions::default())?;
    let mut s = db.session();
    create_filled(&db, &mut s, "table_a", sizes.a_rows, random_values(0xa5a5))?;
    create_filled(&db, &mut s, "table_b", sizes.b_rows, random_values(0x5a5a))?;
    if needs.index_join {
        create_filled(&db, &mut s, "tbl_a", sizes.index_keys, |i| i as i64)?;
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        let keys: Vec<u64> = (0..sizes.probe_keys)
            .map(|_| next() % sizes.index_keys)
            .collect();
        create_filled(&db, &mut s, "tbl_b", sizes.probe_keys, |i| {
            keys[i as usize] as i64
        })?;
        s.execute("CREATE INDEX tbl_a_k ON tbl_a (k)")?;
    }
    if needs.tpch {
        kura::tpch::load(&mut s, Source::Generate(0.01), &|_, _| {})?;
    }
    drop(s);
    Ok(db)
}

/// Bytes of the pages of storage objects (`column:t.c`, `index:name`).
pub fn object_bytes(db: &Database, objects: &[&str]) -> LabResult<u64> {
    let page = db.storage().page_size() as u64;
    let mut pages = 0u64;
    for object in objects {
        pages += db.storage().object_pages(object)?.len() as u64;
    }
    Ok(pages * page)
}

pub(crate) fn measure(db: &Database, index_join: bool) -> LabResult<Measured> {
    Ok(Measured {
        a_bytes: object_bytes(db, &["column:table_a.val"])?,
        b_bytes: object_bytes(db, &["column:table_b.val"])?,
        index_bytes: if index_join {
            object_bytes(db, &["index:tbl_a_k"])?
        } else {
            0
        },
    })
}

/// Builds the workload for `llc`, measures it, and rebuilds it once to the
/// measured scale when it misses the premise; refuses when it still does.
pub(crate) fn build_sized(
    path: &Path,
    llc: &Llc,
    quick: bool,
    needs: Needs,
    out: &mut dyn Write,
) -> LabResult<(Database, Sizes, Measured)> {
    let targets = Targets::of(llc, quick);
    let mut sizes = Sizes::guess(&targets);
    for attempt in 0..2 {
        writeln!(
            out,
            "building {}: A {} rows, B {} rows{} ...",
            path.display(),
            sizes.a_rows,
            sizes.b_rows,
            if needs.index_join {
                format!(", index of {} keys", sizes.index_keys)
            } else {
                String::new()
            }
        )?;
        let db = build(path, &sizes, needs)?;
        let measured = measure(&db, needs.index_join)?;
        match premise_failure(llc, &measured) {
            None => return Ok((db, sizes, measured)),
            Some(why) if attempt == 0 => {
                writeln!(out, "resizing to the measured pages: {why}")?;
                sizes = sizes.rescaled(&targets, &measured);
            }
            Some(why) => {
                return Err(LabError::Premise(format!(
                    "the study's premise does not hold even after resizing: {why}"
                )))
            }
        }
    }
    unreachable!("the loop returns on its second attempt")
}

/// The marker table recording what a scratch database was built for, so a
/// later run reuses it only for the same LLC and mode.
const MARKER: &str = "llc_setup";

pub(crate) fn write_marker(db: &Database, llc: &Llc, quick: bool, s: &Sizes) -> LabResult<()> {
    let mut session = db.session();
    session
        .execute(&format!(
            "CREATE TABLE {MARKER} (llc_bytes BIGINT, ways INT, quick BOOLEAN, a_rows BIGINT, b_rows BIGINT, index_keys BIGINT, probe_keys BIGINT);
             INSERT INTO {MARKER} VALUES ({}, {}, {quick}, {}, {}, {}, {})",
            llc.bytes, llc.ways, s.a_rows, s.b_rows, s.index_keys, s.probe_keys
        ))?;
    Ok(())
}

/// The sizes a database was built with, when it was built for this LLC and mode
/// (and holds everything: the marker is written last).
pub(crate) fn read_marker(db: &Database, llc: &Llc, quick: bool) -> Option<Sizes> {
    let mut s = db.session();
    let rows = s
        .execute(&format!(
            "SELECT llc_bytes, ways, quick, a_rows, b_rows, index_keys, probe_keys FROM {MARKER}"
        ))
        .ok()?
        .rows();
    let row = rows.first()?;
    let int = |v: &Value| match v {
        Value::BigInt(n) => Some(*n as u64),
        Value::Integer(n) => Some(*n as u64),
        _ => None,
    };
    if int(&row[0])? != llc.bytes || int(&row[1])? != u64::from(llc.ways) {
        return None;
    }
    if row[2] != Value::Boolean(quick) {
        return None;
    }
    Some(Sizes {
        a_rows: int(&row[3])?,
        b_rows: int(&row[4])?,
        index_keys: int(&row[5])?,
        probe_keys: int(&row[6])?,
    })
}

/// The scratch database of the derived study: reused when its marker matches
/// this LLC and mode and its measured pages still meet the premise (storage
/// formats change compression), built and sized otherwise.
pub fn open_or_build(
    path: &Path,
    llc: &Llc,
    quick: bool,
    out: &mut dyn Write,
) -> LabResult<(Database, Sizes, Measured)> {
    let needs = Needs {
        index_join: true,
        tpch: true,
    };
    if path.exists() {
        if let Ok(db) = Database::open(path, OpenOptions::default()) {
            if let Some(sizes) = read_marker(&db, llc, quick) {
                if let Ok(m) = measure(&db, true) {
                    if premise_failure(llc, &m).is_none() {
                        return Ok((db, sizes, m));
                    }
                }
            }
        }
    }
    let (db, sizes, m) = build_sized(path, llc, quick, needs, out)?;
    write_marker(&db, llc, quick, &sizes)?;
    Ok((db, sizes, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_straddle_the_llc() {
        let llc = Llc {
            bytes: 32 << 20,
            hardware_bytes: 32 << 20,
            ways: 16,
        };
        let t = Targets::of(&llc, true);
        assert_eq!((t.a, t.b), (16 << 20, 48 << 20));
        assert_eq!(Targets::of(&llc, false).b, 64 << 20);
        let s = Sizes::guess(&t);
        assert_eq!(s.a_rows, (16u64 << 20) * 8 / 36);
        // a sliced L3: 480 MiB of hardware modelled as 256 MiB
        let sliced = Llc {
            bytes: 256 << 20,
            hardware_bytes: 480 << 20,
            ways: 16,
        };
        let t = Targets::of(&sliced, true);
        assert_eq!((t.a, t.b), (128 << 20, 720 << 20));
        let m = Measured {
            a_bytes: 135 << 20,
            b_bytes: 405 << 20,
            index_bytes: 77 << 20,
        };
        let why = premise_failure(&sliced, &m).unwrap();
        assert!(why.contains("than the LLC (480.0 MiB)"), "{why}");
        assert!(premise_line(&sliced, &m).contains("LLC 256.0 MiB (the hardware's 480.0 MiB)"));
    }

    #[test]
    fn the_premise_names_what_fails() {
        let llc = Llc {
            bytes: 32 << 20,
            hardware_bytes: 32 << 20,
            ways: 16,
        };
        let ok = Measured {
            a_bytes: 16 << 20,
            b_bytes: 48 << 20,
            index_bytes: 12 << 20,
        };
        assert!(premise_failure(&llc, &ok).is_none());
        assert!(premise_line(&llc, &ok).starts_with("premise holds"));
        // compressed B: fits the LLC, the failure that hid paper 000's effect
        let small_b = Measured {
            b_bytes: 20 << 20,
            ..ok
        };
        let why = premise_failure(&llc, &small_b).unwrap();
        assert!(why.contains("B's column (20.0 MiB)"), "{why}");
        let big_a = Measured {
            a_bytes: 31 << 20,
            ..ok
        };
        assert!(premise_failure(&llc, &big_a)
            .unwrap()
            .contains("A's column"));
    }

    #[test]
    fn rescaling_meets_the_targets() {
        let llc = Llc {
            bytes: 32 << 20,
            hardware_bytes: 32 << 20,
            ways: 16,
        };
        let t = Targets::of(&llc, true);
        let s = Sizes::guess(&t);
        let m = Measured {
            a_bytes: t.a / 4,
            b_bytes: t.b / 4,
            index_bytes: t.index * 2,
        };
        let r = s.rescaled(&t, &m);
        assert_eq!(r.a_rows, s.a_rows * 4);
        assert_eq!(r.b_rows, s.b_rows * 4);
        assert_eq!(r.index_keys, s.index_keys / 2);
    }
}
