//! The ioredis tier: ioredis (npm `ioredis`, 6.1 on: the first release with `maintNotifications`)
//! as an unmodified application, `tests/clients/ioredis_app.js`. Its row of the client matrix is
//! `maintwatch certify -- node APP` with every scenario certify plays by default. It has no
//! cluster column: ioredis 6.1.0's `Cluster` turns the feature off on every connection it makes
//! (`maintNotifications: "disabled"` in its connection pool and subscribers), so the cell is
//! `n/a` (`maintwatch::grading::clients`, `cluster_since: None`).
//!
//! Needs `MAINTWATCH_IOREDIS` (a folder whose `node_modules` has `ioredis`; `.ci/run` makes one)
//! and `MAINTWATCH_REDIS_SERVER`. Unset or empty: a SKIP line. Set but unusable: the test fails.

use crate::common::tier::{self, IOREDIS};

/// Graded under its own name where the matrix has a column (its verdicts are the row's cells);
/// no cluster application (see above).
fn assert_graded(standalone: &tier::Certified, cluster: Option<&tier::Certified>) {
    assert!(cluster.is_none());
    tier::assert_graded_in_columns(standalone, IOREDIS.client);
}

tier::tier_tests! {
    /// ioredis's row of the client matrix, from `maintwatch certify` with no `--scenarios`
    /// (`tier::certified_row`): every default scenario played, every connection opted in where the
    /// matrix has a column, the maintenance rules judged, and the matrix's row equal to what
    /// certify printed.
    ioredis_certified_row: tier::certified_row(IOREDIS, assert_graded);
}
