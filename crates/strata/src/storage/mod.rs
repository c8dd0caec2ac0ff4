//! Version storage: tuple headers, version chains and the indirection array.

pub mod indirection;
pub mod version;
