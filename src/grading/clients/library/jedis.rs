//! Jedis: its facts by release. Its handling of frames was not read here, so it has no parser
//! and gets no prediction.

use crate::grading::clients::facts::{Client, Measured, JVM_RUN};

/// Jedis, as read at its `version`.
pub const CLIENT: Client = Client {
    name: "Jedis",
    version: "8.1",
    opts_in_by_default: None,
    opt_in_note: None,
    auto: None,
    since: &[("8.1.0-beta1", "standalone"), ("8.1.0-beta2", "cluster")],
    cluster_since: Some("8.1.0-beta2"),
    measured: &[Measured {
        first: "8.0.2",
        last: "8.0.2",
        notification: None,
        what: "never sends CLIENT MAINT_NOTIFICATIONS: asked for RESP3 it sends HELLO 3 and \
               CLIENT SETINFO on each pooled connection, nothing more (8.1, which has the \
               feature, is not on Maven Central)",
        run: JVM_RUN,
    }],
    parser: None,
};
