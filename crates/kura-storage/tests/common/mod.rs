//! Helpers shared by the storage integration tests: a seeded generator, database
//! set-up, whole-column reads, and an exact (bit-level) comparison of vectors.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;

use kura_common::{ColumnData, DataType, Vector};
use kura_storage::{ColumnDef, Storage, StorageOptions, Table};

/// SplitMix64: small, seedable and reproducible, so every failure can be replayed.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `lo..=hi`.
    pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo) as u64 + 1) as i64
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

/// Storage options for tests: buffered or direct I/O and a buffer of `frames` 16 KiB pages.
pub fn options(frames: u64, policy: &str) -> StorageOptions {
    StorageOptions {
        buffer_bytes: frames * kura_storage::DEFAULT_PAGE_SIZE as u64,
        buffer_policy: policy.to_string(),
        ..StorageOptions::default()
    }
}

/// Opens (creating if needed) a database with a 4 MiB CLOCK buffer.
pub fn open(path: &Path) -> Arc<Storage> {
    Storage::open(path, options(256, "clock"))
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()))
}

pub fn col(name: &str, data_type: DataType, nullable: bool) -> ColumnDef {
    ColumnDef {
        name: name.to_string(),
        data_type,
        nullable,
    }
}

/// Reads a whole column through `read_range` in windows of varying size (so windows
/// start and end inside pages, on page boundaries and across row groups).
pub fn read_column(table: &Table, col: usize, rng: &mut Rng) -> Vector {
    let dt = table.schema().columns[col].data_type;
    let mut out = Vector::new(dt, table.row_count() as usize);
    let mut row = 0u64;
    while row < table.row_count() {
        let len = 1 + rng.below(9000) as usize;
        let v = table
            .read_range(col, row, len)
            .unwrap_or_else(|e| panic!("read_range({col}, {row}, {len}) of {}: {e}", table.name()));
        let expect = (table.row_count() - row).min(len as u64) as usize;
        assert_eq!(
            v.len(),
            expect,
            "read_range({col}, {row}, {len}) returned {} rows",
            v.len()
        );
        out.append(&v);
        row += len as u64;
    }
    out
}

/// One value in a form that compares exactly: doubles by their bits, text by bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Cell {
    Null,
    Bool(bool),
    I32(i32),
    I64(i64),
    I128(i128),
    F64(u64),
    Bytes(Vec<u8>),
}

pub fn cell(v: &Vector, i: usize) -> Cell {
    if v.is_null(i) {
        return Cell::Null;
    }
    match &v.data {
        ColumnData::Bool(x) => Cell::Bool(x[i]),
        ColumnData::I32(x) => Cell::I32(x[i]),
        ColumnData::I64(x) => Cell::I64(x[i]),
        ColumnData::I128(x) => Cell::I128(x[i]),
        ColumnData::F64(x) => Cell::F64(x[i].to_bits()),
        ColumnData::Str(s) => Cell::Bytes(s.get_bytes(i).to_vec()),
    }
}

/// Asserts two vectors hold the same values (and NULLs) row for row, naming the
/// first difference.
pub fn assert_same(actual: &Vector, expected: &Vector, what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: row count");
    for i in 0..expected.len() {
        let (a, e) = (cell(actual, i), cell(expected, i));
        if a != e {
            panic!("{what}: row {i} differs: stored {a:?}, expected {e:?}");
        }
    }
}

/// Days since 1970-01-01 of a civil date, computed by counting (independent of the
/// calendar code the loader uses).
pub fn days_since_epoch(y: i32, m: u32, d: u32) -> i32 {
    fn leap(y: i64) -> bool {
        (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
    }
    fn ordinal(y: i64, m: u32, d: u32) -> i64 {
        let before = (y - 1) * 365 + (y - 1) / 4 - (y - 1) / 100 + (y - 1) / 400;
        let month_days = [
            31,
            if leap(y) { 29 } else { 28 },
            31,
            30,
            31,
            30,
            31,
            31,
            30,
            31,
            30,
            31,
        ];
        before + month_days[..(m - 1) as usize].iter().sum::<i64>() + d as i64 - 1
    }
    (ordinal(y as i64, m, d) - ordinal(1970, 1, 1)) as i32
}

pub fn days_in_month(y: i32, m: u32) -> u32 {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ][(m - 1) as usize]
}

/// `v` scaled by `10^scale` as decimal text (`-12.05`), formatted independently of kura.
pub fn decimal_text(v: i128, scale: u32) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let digits = v.unsigned_abs().to_string();
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let s = scale as usize;
    let padded = format!("{digits:0>width$}", width = s + 1);
    let (int, frac) = padded.split_at(padded.len() - s);
    format!("{sign}{int}.{frac}")
}

/// `10^p - 1`: the largest magnitude a DECIMAL(p, _) holds (as a scaled integer).
pub fn decimal_max(p: u32) -> i128 {
    10i128.pow(p) - 1
}
