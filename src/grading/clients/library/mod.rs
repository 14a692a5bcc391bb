//! The known client libraries, one file each: its facts by release (read in its own source at
//! the version it names), what the client tier measured of it, and its parser of notifications
//! when that was read. A new library is its file, holding `pub const CLIENT: Client`, plus its
//! line in the list below; the order of the list is the order every table shows them in.

/// Declares each library's module and lists its facts in `CLIENTS`, from one line per library,
/// so that a library is registered once.
macro_rules! libraries {
    ($($library:ident),* $(,)?) => {
        $(pub(super) mod $library;)*

        /// The known clients, in the order they are shown.
        pub static CLIENTS: &[crate::grading::clients::facts::Client] = &[$($library::CLIENT),*];
    };
}

libraries! {
    redis_py,
    node_redis,
    go_redis,
    lettuce,
    jedis,
    ioredis,
    stackexchange_redis,
}
