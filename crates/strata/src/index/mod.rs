//! Indexes: the order-preserving key encoding and the primary index.

pub mod hash;
pub mod key;
pub mod pointers;
pub mod primary;
pub mod secondary;
