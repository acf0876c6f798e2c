//! The replacement policies, one file each (LRU, MRU and FIFO share one).

pub mod arc;
pub mod clock;
pub mod density;
pub mod fix;
pub mod lfu;
pub mod mq;
pub mod random;
pub mod recency;
pub mod s3fifo;
pub mod sieve;
pub mod two_q;

pub use arc::Arc;
pub use clock::Clock;
pub use density::{Density, ObjectMap};
pub use fix::Fix;
pub use lfu::Lfu;
pub use mq::Mq;
pub use random::Random;
pub use recency::{Recency, RecencyKind};
pub use s3fifo::S3Fifo;
pub use sieve::Sieve;
pub use two_q::TwoQ;
