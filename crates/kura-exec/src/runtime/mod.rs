//! The out-of-order task runtime: per-core workers running coroutine tasks with asynchronous I/O (paper 003).
