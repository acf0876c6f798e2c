//! A CSV file larger than the memory a query of it may use streams through `read_csv`: its
//! pieces are decoded while the scan runs, so the process's peak memory stays far below the
//! file's size (it held the whole decoded file before). The peak is the child's maximum
//! resident set, from `getrusage` once it has exited.

mod common;

use std::io::{BufWriter, Write};

use common::*;

/// Largest resident set of the children waited for so far, in bytes.
fn children_peak_bytes() -> u64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct it is given.
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) },
        0
    );
    usage.ru_maxrss as u64 * 1024
}

#[test]
fn a_csv_larger_than_its_query_memory_streams() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("big.csv");
    let rows: u64 = 5_500_000;
    {
        let mut w = BufWriter::new(std::fs::File::create(&csv).unwrap());
        writeln!(w, "id,amount,pad,note").unwrap();
        for i in 0..rows {
            // ~120 bytes a line, a quoted line end now and then.
            let note = if i % 1000 == 0 {
                "\"two\nlines\""
            } else {
                "plain"
            };
            writeln!(w, "{i},{}.{:02},{:0>90},{note}", i % 997, i % 100, i).unwrap();
        }
    }
    let size = std::fs::metadata(&csv).unwrap().len();
    assert!(size > 512 << 20, "{size}");
    let db = dir.path().join("s.kura");
    let query = format!(
        "SELECT count(*), sum(id), count(DISTINCT amount) FROM read_csv('{}')",
        csv.display()
    );
    let out = run_ok(&db, &["-c", &query, "--format", "csv"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let expected_sum = rows * (rows - 1) / 2;
    assert!(
        text.contains(&format!("{rows},{expected_sum},997")),
        "{text}"
    );
    let peak = children_peak_bytes();
    // Decoded whole, the columns alone would outweigh the file; streamed, a few pieces of
    // 65,536 records are in memory at once.
    assert!(
        peak < size / 2,
        "peak resident memory {} MiB for a {} MiB file",
        peak >> 20,
        size >> 20
    );
    eprintln!("peak {} MiB for a {} MiB CSV", peak >> 20, size >> 20);
}
