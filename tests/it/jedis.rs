//! The Jedis tier: Jedis (Maven `redis.clients:jedis`) as an unmodified application,
//! `tests/clients/jedis/` (a Maven project: `JedisApp`). Maven Central serves no release with
//! maintenance notifications (they came in 8.1.0's betas; 8.0.2 is the newest served,
//! scripts/clients/client-versions.sh), so Jedis has no row in the client matrix (docs/matrix.md), only the line
//! under it saying so and how the newest release served answers the opt-in, which this test
//! measures: `maintwatch certify` on `failover` with the application asking for RESP3.
//!
//! Needs `java`, `MAINTWATCH_JEDIS` (a build folder `.ci/run` makes) and
//! `MAINTWATCH_REDIS_SERVER`. Unset or absent: a SKIP line. Set but unusable: the test fails.

use crate::common;
use common::tier::{self, JEDIS};

tier::tier_tests! {
    /// Jedis 8.0.2 speaks RESP3 when asked (HELLO 3) and names itself, but never sends CLIENT
    /// MAINT_NOTIFICATIONS: none of its connections opts in, so a scenario that starts on the
    /// opt-in never starts and certify calls it NOT JUDGED after its start deadline, naming why.
    jedis_newest_served_never_opts_in: never_opts_in(JEDIS);
}

async fn never_opts_in(test: &str, lib: &tier::Library) -> Option<()> {
    let (dir, version, redis) = lib.with_redis(test)?;
    let v = lib.tier_version(&dir, &version);
    let c = tier::certify(&redis, Some(&["failover"]), &v.standalone, &v.env).await;
    let (_, r) = c
        .runs
        .iter()
        .find(|(s, _)| s == "failover")
        .unwrap_or_else(|| panic!("no failover grade: {}", c.stdout));
    let client = r.client("jedis/");
    assert_eq!(
        client["client"].as_str().unwrap(),
        format!("jedis/{version}"),
        "{}",
        r.table
    );
    assert!(
        client["never_opted_in"].as_u64().unwrap() >= 1,
        "{}",
        r.table
    );
    assert_eq!(tier::opted_in(r, "jedis/"), 0, "{}", r.table);
    assert_eq!(r.grade["verdict"], "not_judged", "{}", r.table);
    assert!(
        c.stdout.contains("the scenario never started"),
        "{}",
        c.stdout
    );
    Some(())
}
