//! kura-cache: replacement policies over page/block ids behind one trait, two-level
//! (inclusive and exclusive/demote) compositions, and trace replay — paper 004. It
//! depends on nothing else in kura, so the buffer manager and `kura cachesim` run
//! the same code.

pub mod policy;

pub use policy::{BlockId, Policy};
