//! TPC-H inside kura: data generation (tpchgen), loading, the 22 queries and the
//! selective queries (A)–(D) of paper 003, and checking results against reference answers.

pub mod check;
pub mod run;
