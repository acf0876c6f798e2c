//! TPC-H inside kura: data generation (tpchgen), loading, the 22 queries and the
//! selective queries (A)–(D) of paper 003, and checking results against reference answers.

pub mod check;
pub mod gen;
pub mod load;
pub mod run;

pub use gen::{generate_files, TABLES};
pub use load::{load, LoadReport};
