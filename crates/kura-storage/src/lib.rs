//! kura-storage
