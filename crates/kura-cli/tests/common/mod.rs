//! Helpers for tests that drive the built `kura` binary: running it, a seeded
//! generator, and reading tables back through the library.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

use kura_common::{ColumnData, Vector};
use kura_storage::Table;

/// The `kura` binary cargo built for these tests.
pub fn kura() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kura"));
    c.env("KURA_LOG", "error");
    c
}

/// Runs `kura --db DB args...`; panics with its stderr if it fails.
pub fn run_ok(db: &Path, args: &[&str]) -> Output {
    let out = kura()
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .expect("run kura");
    assert!(
        out.status.success(),
        "kura {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A TCP port free on 127.0.0.1 for a server to listen on.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// SplitMix64, so every run (and failure) can be replayed from its seed.
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
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Reads a whole column through the buffer manager in 8192-row windows.
pub fn read_column(table: &Table, col: usize) -> Result<Vector, kura_storage::StorageError> {
    let dt = table.schema().columns[col].data_type;
    let mut out = Vector::new(dt, table.row_count() as usize);
    let mut row = 0;
    while row < table.row_count() {
        out.append(&table.read_range(col, row, 8192)?);
        row += 8192;
    }
    Ok(out)
}

/// Integer-like value `i` of a vector (I32/I64, decimals as their scaled integer).
pub fn int_at(v: &Vector, i: usize) -> i128 {
    match &v.data {
        ColumnData::I32(x) => x[i] as i128,
        ColumnData::I64(x) => x[i] as i128,
        ColumnData::I128(x) => x[i],
        _ => panic!("not an integer column: {:?}", v.data_type),
    }
}

pub fn str_at(v: &Vector, i: usize) -> &str {
    match &v.data {
        ColumnData::Str(s) => s.get(i),
        _ => panic!("not a text column: {:?}", v.data_type),
    }
}
