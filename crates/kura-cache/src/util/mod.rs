//! Small building blocks shared by the policies: intrusive lists in one arena, a fast
//! id hasher and a seeded random generator.

pub(crate) mod idmap;
pub(crate) mod list;
pub(crate) mod rng;
