//! TPC-H data from the `tpchgen` crate (byte-identical to dbgen): as `.tbl` files,
//! or as a stream of line chunks fed straight into the loader.

use std::fmt::Display;
use std::io::Write;
use std::path::Path;

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator,
    PartSuppGenerator, RegionGenerator, SupplierGenerator,
};

use kura_storage::loader::{Chunk, CHUNK_BYTES};

use crate::error::{KuraError, KuraResult};

/// The eight tables, smallest first.
pub const TABLES: [&str; 8] = [
    "region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem",
];

/// A source of `.tbl` line chunks for one table.
pub type ChunkSource = Box<dyn FnMut() -> Option<Chunk> + Send>;

fn chunker<T: Display + Send>(iter: impl Iterator<Item = T> + Send + 'static) -> ChunkSource {
    let mut iter = iter.peekable();
    let mut next_line = 1u64;
    Box::new(move || {
        iter.peek()?;
        let mut data = Vec::with_capacity(CHUNK_BYTES + 4096);
        let first_line = next_line;
        while data.len() < CHUNK_BYTES {
            let Some(row) = iter.next() else { break };
            let _ = writeln!(data, "{row}");
            next_line += 1;
        }
        Some(Chunk { data, first_line })
    })
}

/// Line chunks of `table` at scale factor `sf`.
pub fn table_chunks(table: &str, sf: f64) -> KuraResult<ChunkSource> {
    table_chunks_part(table, sf, 1, 1)
}

/// Line chunks of part `part` (1-based) of `parts` of `table`: tpchgen's split, a range of
/// keys per part, ORDERS and LINEITEM split alike by order (each order's line items in the
/// order's part). REGION and NATION have one part.
pub fn table_chunks_part(table: &str, sf: f64, part: i32, parts: i32) -> KuraResult<ChunkSource> {
    if parts < 1 || part < 1 || part > parts {
        return Err(KuraError::Invalid(format!(
            "part {part} of {parts}: parts are numbered 1 to the part count"
        )));
    }
    let (p, n) = (part, parts);
    Ok(match table {
        "region" => chunker(RegionGenerator::new(sf, p, n).iter()),
        "nation" => chunker(NationGenerator::new(sf, p, n).iter()),
        "supplier" => chunker(SupplierGenerator::new(sf, p, n).iter()),
        "customer" => chunker(CustomerGenerator::new(sf, p, n).iter()),
        "part" => chunker(PartGenerator::new(sf, p, n).iter()),
        "partsupp" => chunker(PartSuppGenerator::new(sf, p, n).iter()),
        "orders" => chunker(OrderGenerator::new(sf, p, n).iter()),
        "lineitem" => chunker(LineItemGenerator::new(sf, p, n).iter()),
        other => return Err(KuraError::Invalid(format!("unknown TPC-H table {other}"))),
    })
}

/// Checks a scale factor: positive and finite.
pub fn check_sf(sf: f64) -> KuraResult<()> {
    if sf.is_finite() && sf > 0.0 {
        Ok(())
    } else {
        Err(KuraError::Invalid(format!(
            "scale factor must be a positive number, got {sf}"
        )))
    }
}

/// Writes the eight `TABLE.tbl` files into `dir`; returns (table, bytes) per file.
/// `progress(table, bytes_so_far)` is called as chunks are written.
pub fn generate_files(
    sf: f64,
    dir: &Path,
    progress: &(dyn Fn(&str, u64) + Sync),
) -> KuraResult<Vec<(String, u64)>> {
    check_sf(sf)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| KuraError::Invalid(format!("{}: {e}", dir.display())))?;
    std::thread::scope(|s| {
        let handles: Vec<_> = TABLES
            .iter()
            .map(|&t| {
                s.spawn(move || -> KuraResult<(String, u64)> {
                    let path = dir.join(format!("{t}.tbl"));
                    let io_err =
                        |e: std::io::Error| KuraError::Invalid(format!("{}: {e}", path.display()));
                    let mut f =
                        std::io::BufWriter::new(std::fs::File::create(&path).map_err(io_err)?);
                    let mut src = table_chunks(t, sf)?;
                    let mut bytes = 0u64;
                    while let Some(chunk) = src() {
                        f.write_all(&chunk.data).map_err(io_err)?;
                        bytes += chunk.data.len() as u64;
                        progress(t, bytes);
                    }
                    f.flush().map_err(io_err)?;
                    Ok((t.to_string(), bytes))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(KuraError::Internal("generator thread panicked".into()))
                })
            })
            .collect()
    })
}
