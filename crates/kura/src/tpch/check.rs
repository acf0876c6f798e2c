//! Comparison of query results with reference answers (TPC-H answer files).
