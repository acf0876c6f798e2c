//! `kura -c ... --format arrow`: the result as an Arrow IPC stream that an Arrow reader reads
//! back with kura's types and values, NULLs included.

mod common;

use arrow_ipc::reader::StreamReader;
use common::*;

#[test]
fn format_arrow_writes_a_readable_ipc_stream() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("a.kura");
    run_ok(
        &db,
        &[
            "-c",
            "CREATE TABLE t (id INTEGER, name VARCHAR, price DECIMAL(8,2), d DATE); \
             INSERT INTO t SELECT i, 'n' || i, i / 4.0, DATE '2024-01-01' + i \
             FROM generate_series(1, 5000) g(i); INSERT INTO t VALUES (NULL, NULL, NULL, NULL)",
        ],
    );
    let out = run_ok(
        &db,
        &[
            "-c",
            "SELECT * FROM t ORDER BY id NULLS LAST",
            "--format",
            "arrow",
        ],
    );
    let reader = StreamReader::try_new(std::io::Cursor::new(out.stdout), None).unwrap();
    let schema = reader.schema();
    let names: Vec<_> = schema.fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(names, ["id", "name", "price", "d"]);
    assert_eq!(schema.field(2).data_type().to_string(), "Decimal128(8, 2)");
    let batches: Vec<_> = reader.map(|b| b.unwrap()).collect();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 5001);
    let last = batches.last().unwrap();
    assert!(last.column(0).is_null(last.num_rows() - 1));
    let first = arrow_cast::display::array_value_to_string(batches[0].column(3), 0).unwrap();
    assert_eq!(first, "2024-01-02");
}
