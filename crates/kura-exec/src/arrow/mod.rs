//! kura vectors ↔ Arrow arrays: the one converter of DESIGN.md "Files and Arrow", used by
//! the cluster (paper 003 §2), COPY TO Parquet and the file readers (`read_parquet`).

mod from_arrow;
pub mod parquet_interval;
mod to_arrow;

pub use from_arrow::{arrow_to_vector, batch_from_arrow, kura_type};
pub use to_arrow::{arrow_schema, arrow_type, batch_to_arrow, batches_to_arrow, vector_to_arrow};
