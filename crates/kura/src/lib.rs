//! kura: the database façade every front end uses — `Database::open`, sessions
//! that `execute` SQL, loading, settings — joining the layers' errors into one.

pub mod tpch;
