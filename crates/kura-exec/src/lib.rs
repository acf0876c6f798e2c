//! kura-exec: runs physical plans — vectorized plug-in operators and the task
//! runtime (paper 003). The only crate that knows about threads.

pub mod runtime;
