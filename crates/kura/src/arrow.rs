//! Query results as Arrow for front ends that write it: the schema and record batches of kura's batches (kura-exec's converter).

pub use kura_exec::arrow::{arrow_schema, batches_to_arrow};
