//! The maintenances the actions play, written as scenario steps (the format of `scenarios/`,
//! parsed by the same parser, so an action's steps are checked like a scenario file's), and the
//! triggers `GET /slot-migrate` and `GET /topology-change-standalone` list.
//!
//! Each maintenance's timings are taken from a measured scenario where one exists
//! (docs/protocol.md, through `scenarios/`); where nothing was measured they are the suites' own
//! expectations, and docs/fault-injector.md says which is which.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use super::super::cluster_slots::Topology;
use super::super::scenario::{Scenario, Step};

/// A maintenance on the standalone deployment, from the proxy serving it now (`from`) and the
/// other one (`to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Maintenance {
    /// MIGRATING (2 s window), MIGRATED 2 s later: shard-migration.scn.
    Migrate,
    /// FAILING_OVER (2 s window), FAILED_OVER 2 s later: failover.scn.
    Failover,
    /// MOVING (15 s) naming the new proxy in the form each connection asked for, DNS follows
    /// +9.7 s, the old proxy's connections closed +16.6 s: single-proxy.scn's timings.
    Bind,
    /// DNS widened to name both proxies, and nothing on the wire: docs/protocol.md section 4
    /// saw `dns_resolution_change` widen the address set silently.
    DnsWiden,
    /// A migration, then the bind 2 s after its MIGRATED: what redis-py's
    /// `data_movement_conn_drop` tests wait for, in that order.
    MigrateBind,
    /// An OSS-cluster database's slots move: SMIGRATING of the slots, and 2 s later they change
    /// owner and SMIGRATED names source and target (oss-cluster.scn's timings, measured).
    Slots(SlotEffect),
}

/// What a `slot_migrate` effect does to the OSS-cluster topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotEffect {
    /// 100 slots of the first node move to the second; no node joins or leaves.
    Shuffle,
    /// Every slot of the first node moves to the second: the first leaves the topology.
    Remove,
    /// Half the first range of the first node moves to a node that joins with them.
    Add,
    /// Every slot of the first node moves to a node that joins: one leaves, one joins.
    RemoveAdd,
}

/// What a slot effect moves: the node the slots leave, the node they go to, and the slots.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    source: Ipv4Addr,
    target: Ipv4Addr,
    slots: Vec<(u16, u16)>,
}

impl SlotEffect {
    pub(super) fn named(effect: &str) -> Option<SlotEffect> {
        Some(match effect {
            "slot-shuffle" => SlotEffect::Shuffle,
            "remove" => SlotEffect::Remove,
            "add" => SlotEffect::Add,
            "remove-add" => SlotEffect::RemoveAdd,
            _ => return None,
        })
    }

    /// The source node, the target node and the slots that move, from the topology as it is
    /// now; or why the effect cannot be played on it.
    fn plan(self, topology: &Topology) -> Result<Plan, String> {
        let owners = topology.owners();
        let Some(&source) = owners.first() else {
            return Err("the database owns no slots".into());
        };
        let spare = super::OSS_NODES.into_iter().find(|n| !owners.contains(n));
        let target = match self {
            SlotEffect::Shuffle | SlotEffect::Remove => owners.get(1).copied(),
            SlotEffect::Add | SlotEffect::RemoveAdd => spare,
        }
        .ok_or_else(|| format!("{self:?}: the database has no node to move slots to"))?;
        let ranges = topology.ranges_of(source);
        let (a, b) = ranges[0];
        let slots = match self {
            SlotEffect::Shuffle => vec![(a, b.min(a.saturating_add(99)))],
            SlotEffect::Add => vec![(a, a + (b - a) / 2)],
            SlotEffect::Remove | SlotEffect::RemoveAdd => ranges,
        };
        Ok(Plan {
            source,
            target,
            slots,
        })
    }
}

/// Slot ranges as the scenario format and the notifications write them: `0-99,200-299`.
fn slot_text(slots: &[(u16, u16)]) -> String {
    slots
        .iter()
        .map(|(a, b)| format!("{a}-{b}"))
        .collect::<Vec<_>>()
        .join(",")
}

impl Maintenance {
    /// Whether the endpoint ends on the other proxy.
    pub(super) fn moves(self) -> bool {
        matches!(self, Maintenance::Bind | Maintenance::MigrateBind)
    }

    /// The steps, as a scenario file's lines, at times from the action's start.
    fn lines(self, from: Ipv4Addr, to: Ipv4Addr, topology: &Topology) -> Result<String, String> {
        let migrate = "at 0.0 push * MIGRATING time=2 shards=[\"1\"]\n\
                       at 2.0 push * MIGRATED shards=[\"1\"]\n";
        let bind = |at: f64, target: &str| {
            format!(
                "at {at:.1} push {from} MOVING time=15 target={target}\n\
                 at {:.1} dns {to}\n\
                 at {:.1} close {from}\n",
                at + 9.7,
                at + 16.6
            )
        };
        Ok(match self {
            Maintenance::Migrate => migrate.into(),
            Maintenance::Failover => "at 0.0 push * FAILING_OVER time=2 shards=[\"1\"]\n\
                                      at 2.0 push * FAILED_OVER shards=[\"1\"]\n"
                .into(),
            Maintenance::Bind => bind(0.0, &format!("asked:{to}")),
            Maintenance::DnsWiden => format!(
                "at 0.0 dns {from} {to}\n\
                 at 0.0 say dns_resolution_change: the address set widens, silently\n"
            ),
            Maintenance::MigrateBind => format!("{migrate}{}", bind(4.0, &format!("asked:{to}"))),
            Maintenance::Slots(effect) => {
                let Plan {
                    source,
                    target,
                    slots,
                } = effect.plan(topology)?;
                let slots = slot_text(&slots);
                format!(
                    "at 0.0 push * SMIGRATING slots={slots}\n\
                     at 2.0 assign {slots} {target}\n\
                     at 2.0 push * SMIGRATED move={source}:{{port}},{target}:{{port}},{slots}\n"
                )
            }
        })
    }

    /// The steps to play, parsed as a scenario of the deployment's proxies and the OSS-cluster
    /// topology as it is now.
    pub(super) fn steps(
        self,
        from: Ipv4Addr,
        to: Ipv4Addr,
        topology: &Topology,
    ) -> Result<Vec<Step>, String> {
        let proxies: Vec<String> = super::PROXIES
            .iter()
            .chain(&super::OSS_NODES)
            .map(Ipv4Addr::to_string)
            .collect();
        let nodes: String = topology
            .owners()
            .into_iter()
            .map(|n| format!("node {n} {}\n", slot_text(&topology.ranges_of(n))))
            .collect();
        let text = format!(
            "name fault-injector-action\nabout one action\nproxies {}\ndns {from}\n\
             ttl 5\nstart now\n{nodes}{}end 30\n",
            proxies.join(" "),
            self.lines(from, to, topology)?
        );
        Scenario::parse("fault-injector-action", &text)
            .map(|s| s.steps)
            .map_err(|e| format!("the action's steps do not parse: {e}"))
    }
}

/// An effect of `topology_change_standalone`, by its name.
pub(super) fn standalone_effect(effect: &str) -> Option<Maintenance> {
    Some(match effect {
        "data_movement_no_conn_drop" => Maintenance::Migrate,
        "data_movement_conn_drop" => Maintenance::MigrateBind,
        "conn_drop" => Maintenance::Bind,
        "dns_resolution_change" => Maintenance::DnsWiden,
        _ => return None,
    })
}

/// The effects of `slot_migrate`.
pub(super) const SLOT_EFFECTS: [&str; 4] = ["remove-add", "remove", "add", "slot-shuffle"];

/// The triggers served for each effect: one per effect, named by what it plays.
pub(super) fn trigger_name(effect: &str) -> Option<&'static str> {
    Some(match effect {
        "data_movement_no_conn_drop" => "migrate",
        "data_movement_conn_drop" => "migrate-bind",
        "conn_drop" => "bind",
        "dns_resolution_change" => "dns-widen",
        e if SLOT_EFFECTS.contains(&e) => "migrate",
        _ => return None,
    })
}

/// `GET /topology-change-standalone` or `GET /slot-migrate`: the effect's triggers, each with
/// the database config it needs. redis-py takes the config's name without its last two
/// `-`-separated parts as the database name, so each ends in `-0-0`.
pub(super) fn triggers(effect: &str, cluster: bool) -> Option<Value> {
    let name = trigger_name(effect)?;
    let dbconfig = json!({
        "name": format!("mw-{effect}-{name}-0-0"),
        "port": 12000,
        "memory_size": 104857600,
        "replication": true,
        "sharding": cluster,
        "shards_count": if cluster { 3 } else { 1 },
        "oss_cluster": cluster,
    });
    Some(json!({
        "effect": effect,
        "cluster": { "index": 0, "nodes": 2 },
        "triggers": [{
            "name": name,
            "description": format!("maintwatch plays {name} (docs/fault-injector.md)"),
            "requirements": [{
                "dbconfig": dbconfig,
                "cluster": {},
                "description": "any database maintwatch serves",
            }],
        }],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Ipv4Addr = super::super::PROXIES[0];
    const B: Ipv4Addr = super::super::PROXIES[1];

    #[test]
    fn every_maintenance_parses_into_steps() {
        let t = super::super::oss_topology();
        for m in [
            Maintenance::Migrate,
            Maintenance::Failover,
            Maintenance::Bind,
            Maintenance::DnsWiden,
            Maintenance::MigrateBind,
            Maintenance::Slots(SlotEffect::Shuffle),
            Maintenance::Slots(SlotEffect::Remove),
            Maintenance::Slots(SlotEffect::Add),
            Maintenance::Slots(SlotEffect::RemoveAdd),
        ] {
            let steps = m.steps(A, B, &t).unwrap();
            assert!(!steps.is_empty(), "{m:?}");
            assert_eq!(m.steps(B, A, &t).unwrap().len(), steps.len(), "{m:?}");
        }
    }

    /// Plays an effect's moves on the topology, as the player's `assign` steps do.
    fn after(effect: SlotEffect, t: &Topology) -> Topology {
        let plan = effect.plan(t).unwrap();
        let mut t = t.clone();
        t.assign(&plan.slots, plan.target);
        t
    }

    #[test]
    fn each_slot_effect_changes_the_nodes_as_its_name_says() {
        let [a, b, c, d] = super::super::OSS_NODES;
        let t = super::super::oss_topology();
        assert_eq!(after(SlotEffect::Shuffle, &t).owners(), vec![a, b, c]);
        assert_eq!(after(SlotEffect::Remove, &t).owners(), vec![b, c]);
        assert_eq!(after(SlotEffect::Add, &t).owners(), vec![a, b, c, d]);
        assert_eq!(after(SlotEffect::RemoveAdd, &t).owners(), vec![b, c, d]);
        // A second add finds no node left to bring in, and says so.
        let full = after(SlotEffect::Add, &t);
        assert!(SlotEffect::Add.plan(&full).unwrap_err().contains("no node"));
        // The moves play on the topology as it is now: a shuffle after a remove moves the
        // second node's slots.
        let removed = after(SlotEffect::Remove, &t);
        let plan = SlotEffect::Shuffle.plan(&removed).unwrap();
        assert_eq!((plan.source, plan.target), (b, c));
    }

    #[test]
    fn slot_steps_move_the_slots_between_smigrating_and_smigrated() {
        let t = super::super::oss_topology();
        let steps = Maintenance::Slots(SlotEffect::RemoveAdd)
            .steps(A, B, &t)
            .unwrap();
        let times: Vec<f64> = steps.iter().map(|s| s.at).collect();
        assert_eq!(times, vec![0.0, 2.0, 2.0]);
        assert!(matches!(
            &steps[1].action,
            super::super::super::scenario::Action::Assign { slots, node }
                if slots == &vec![(0, 5460)] && *node == super::super::OSS_NODES[3]
        ));
    }

    #[test]
    fn migrate_bind_moves_after_migrated() {
        let t = super::super::oss_topology();
        let steps = Maintenance::MigrateBind.steps(A, B, &t).unwrap();
        let times: Vec<f64> = steps.iter().map(|s| s.at).collect();
        assert_eq!(times, vec![0.0, 2.0, 4.0, 13.7, 20.6]);
    }

    #[test]
    fn every_named_effect_has_a_trigger_with_a_name_redis_py_can_cut() {
        for effect in [
            "data_movement_no_conn_drop",
            "data_movement_conn_drop",
            "conn_drop",
            "dns_resolution_change",
        ]
        .into_iter()
        .chain(SLOT_EFFECTS)
        {
            let t = triggers(effect, SLOT_EFFECTS.contains(&effect)).unwrap();
            let name = t["triggers"][0]["requirements"][0]["dbconfig"]["name"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(
                name.rsplitn(3, '-').nth(2).unwrap().contains(effect),
                "{name}"
            );
        }
        assert!(triggers("no-such-effect", false).is_none());
    }
}
