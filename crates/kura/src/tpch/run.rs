//! Running the TPC-H queries and (A)–(D) with timings.
