//! The actions: their table, and how each runs.
//!
//! `POST /action` records the action as `running` and answers its id at once; a task runs it and
//! ends it `success` (with its `output`) or `failed` (with its `error`). Nothing waits on anything
//! unbounded: an action is a database change or a finite list of steps, so every action ends,
//! and an unknown type, effect, trigger or database ends `failed` with a message saying which.
//!
//! The table is bounded: at most [`RUNNING_MAX`] actions run at once (past it `POST /action` is
//! refused with 429), and at most [`KEPT_MAX`] are remembered (the oldest ended one is forgotten
//! first; its id then answers 404).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::super::{run_step, What};
use super::databases::bdb_id;
use super::effects::{self, Maintenance, SlotEffect};
use super::Injector;

/// Actions running at once.
pub const RUNNING_MAX: usize = 64;
/// Actions remembered, running or ended.
pub const KEPT_MAX: usize = 1024;
/// The most actions one `sequence_of_actions` runs.
pub const SEQUENCE_MAX: usize = 32;
/// The actions' steps are narrated as `step line N` from this number on, past any scenario line.
pub const FIRST_LINE: usize = 1000;
/// Steps kept for a grade: a suite's whole run plays a few hundred.
pub const KEPT_STEPS: usize = 100_000;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Status {
    Running,
    Success(Value),
    Failed(String),
}

struct Record {
    id: String,
    kind: String,
    status: Status,
}

#[derive(Default)]
pub(super) struct Table {
    next: u64,
    records: VecDeque<Record>,
}

impl Table {
    /// A new running action's id, or why there is no room for it.
    fn open(&mut self, kind: &str) -> Result<String, String> {
        let running = self
            .records
            .iter()
            .filter(|r| r.status == Status::Running)
            .count();
        if running >= RUNNING_MAX {
            return Err(format!(
                "{RUNNING_MAX} actions are running already: wait for one to end"
            ));
        }
        if self.records.len() >= KEPT_MAX {
            let ended = self
                .records
                .iter()
                .position(|r| r.status != Status::Running);
            if let Some(i) = ended {
                self.records.remove(i);
            }
        }
        self.next += 1;
        let id = format!("action-{}", self.next);
        self.records.push_back(Record {
            id: id.clone(),
            kind: kind.to_string(),
            status: Status::Running,
        });
        Ok(id)
    }

    fn end(&mut self, id: &str, status: Status) {
        if let Some(r) = self.records.iter_mut().find(|r| r.id == id) {
            r.status = status;
        }
    }

    /// `GET /action/{id}`'s answer, `None` for an id never given or forgotten.
    pub(super) fn show(&self, id: &str) -> Option<Value> {
        let r = self.records.iter().find(|r| r.id == id)?;
        Some(match &r.status {
            Status::Running => json!({"action_id": r.id, "type": r.kind, "status": "running"}),
            Status::Success(output) => {
                json!({"action_id": r.id, "type": r.kind, "status": "success", "output": output})
            }
            Status::Failed(error) => {
                json!({"action_id": r.id, "type": r.kind, "status": "failed", "error": error})
            }
        })
    }
}

/// `POST /action`'s body.
#[derive(serde::Deserialize)]
pub(super) struct Request {
    #[serde(rename = "type")]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) parameters: Value,
}

impl Injector {
    /// Records the action and starts it; its id, or why it was refused.
    pub(super) fn trigger(self: &Arc<Self>, req: Request) -> Result<String, String> {
        let id = self.lock().actions.open(&req.kind)?;
        self.say(format!(
            "fault injector: {} ({id}) asked",
            super::super::notation::escape(req.kind.as_bytes())
        ));
        let injector = self.clone();
        let action_id = id.clone();
        tokio::spawn(async move {
            let status = match injector.run(&req.kind, &req.parameters, 0).await {
                Ok(output) => Status::Success(output),
                Err(e) => Status::Failed(e),
            };
            injector.narrate_end(&action_id, &req.kind, &status);
            injector.lock().actions.end(&action_id, status);
        });
        Ok(id)
    }

    fn narrate_end(&self, id: &str, kind: &str, status: &Status) {
        let how = match status {
            Status::Running => return,
            Status::Success(_) => "succeeded".to_string(),
            Status::Failed(e) => format!("failed: {e}"),
        };
        self.shared.emit(What::Say {
            line: 0,
            text: format!(
                "fault injector: {} ({id}) {how}",
                super::super::notation::escape(kind.as_bytes())
            ),
        });
    }

    /// Runs one action to its end: its output, or why it failed. `depth` is how deep in
    /// sequences it is (a sequence inside a sequence is refused).
    pub(super) async fn run(
        &self,
        kind: &str,
        params: &Value,
        depth: usize,
    ) -> Result<Value, String> {
        match kind {
            "create_database" => self.create_database(params).await,
            "delete_database" => self.delete_database(params),
            "wait_for_database_active" => {
                let id = self.database(params)?;
                Ok(json!({ "bdb_id": id, "status": "active" }))
            }
            "execute_rladmin_command" => self.rladmin(params),
            "migrate" => self.maintain(params, Maintenance::Migrate).await,
            "failover" => self.maintain(params, Maintenance::Failover).await,
            "bind" => self.maintain(params, Maintenance::Bind).await,
            "topology_change_standalone" => {
                let effect = effect_of(params)?;
                let m = effects::standalone_effect(&effect)
                    .ok_or_else(|| unknown_effect(kind, &effect))?;
                check_trigger(params, &effect, &[])?;
                self.maintain(params, m).await
            }
            "slot_migrate" => {
                let effect = effect_of(params)?;
                let slots =
                    SlotEffect::named(&effect).ok_or_else(|| unknown_effect(kind, &effect))?;
                check_trigger(params, &effect, &SLOT_TRIGGERS)?;
                self.maintain(params, Maintenance::Slots(slots)).await
            }
            "sequence_of_actions" if depth == 0 => self.sequence(params).await,
            "sequence_of_actions" => Err("a sequence_of_actions inside a sequence".into()),
            other => Err(format!(
                "unknown action type {:?}: maintwatch serves {}",
                super::super::notation::escape(other.as_bytes()),
                TYPES.join(", ")
            )),
        }
    }

    /// A new database starts as a fresh one does: no completion retained, no window open, and
    /// an OSS-cluster one on its three first nodes.
    async fn create_database(&self, params: &Value) -> Result<Value, String> {
        let config = params
            .get("database_config")
            .cloned()
            .ok_or("parameters.database_config is required")?;
        let id = self.lock().databases.create(config)?;
        let db = self.lock().databases.get(id)?.clone();
        {
            let mut st = self.shared.lock();
            st.retained = None;
            st.open_window = None;
            if db.cluster {
                st.topology = super::oss_topology();
            }
        }
        if db.cluster {
            self.follow_topology().await;
        }
        self.write_endpoints();
        let kind = if db.cluster {
            "OSS-cluster"
        } else {
            "standalone"
        };
        self.say(format!(
            "fault injector: {kind} database {} ({}) created",
            db.id, db.name
        ));
        Ok(self.describe(&db))
    }

    fn delete_database(&self, params: &Value) -> Result<Value, String> {
        let id = bdb_id(params)?;
        self.lock().databases.delete(id)?;
        self.write_endpoints();
        self.say(format!("fault injector: database {id} deleted"));
        Ok(json!({ "bdb_id": id }))
    }

    /// The live database a request names.
    fn database(&self, params: &Value) -> Result<u64, String> {
        let id = bdb_id(params)?;
        self.lock().databases.get(id).map(|d| d.id)
    }

    fn rladmin(&self, params: &Value) -> Result<Value, String> {
        let command = params
            .get("rladmin_command")
            .and_then(Value::as_str)
            .ok_or("parameters.rladmin_command is required")?;
        Ok(json!({ "output": self.rladmin_text(command)? }))
    }

    /// An rladmin command line (`status`, with or without `rladmin` and `-b ID` before it): its
    /// output, or why it is not served.
    pub(super) fn rladmin_text(&self, command: &str) -> Result<String, String> {
        let mut words: Vec<&str> = command.split_whitespace().collect();
        if words.first() == Some(&"rladmin") {
            words.remove(0);
        }
        if words.first() == Some(&"-b") && words.len() >= 2 {
            words.drain(..2);
        }
        match words.as_slice() {
            ["status", ..] => Ok(self.rladmin_status()),
            _ => Err(format!(
                "rladmin {:?} is not served: maintwatch answers rladmin status only",
                super::super::notation::escape(words.join(" ").as_bytes())
            )),
        }
    }

    /// Plays a maintenance on the database's endpoint, one at a time, on the simulator's engine.
    /// Slots move on an OSS-cluster database only, and the rest on a standalone one.
    async fn maintain(&self, params: &Value, m: Maintenance) -> Result<Value, String> {
        let id = self.database(params)?;
        let cluster = self.lock().databases.get(id)?.cluster;
        match (m, cluster) {
            (Maintenance::Slots(_), false) => {
                return Err(format!(
                    "database {id} is not an OSS-cluster one: slot_migrate needs a database \
                     created with oss_cluster: true"
                ))
            }
            (Maintenance::Slots(_), true) | (_, false) => {}
            (_, true) => {
                return Err(format!(
                    "database {id} is an OSS-cluster one: maintwatch plays slot_migrate on it, \
                     not {m:?}"
                ))
            }
        }
        let _one = self.maintenance.lock().await;
        let from = self.lock().current;
        let to = super::PROXIES
            .into_iter()
            .find(|p| *p != from)
            .unwrap_or(from);
        let topology = self.shared.lock().topology.clone();
        let steps = self.numbered(m.steps(from, to, &topology)?);
        self.say(format!("fault injector: {m:?} on database {id} begins"));
        let t0 = tokio::time::Instant::now();
        let scaled = |secs: f64| Duration::from_secs_f64(secs / self.shared.speed);
        for step in &steps {
            tokio::time::sleep_until(t0 + scaled(step.at)).await;
            run_step(&self.shared, &self.dns, step).await;
        }
        if m.moves() {
            self.lock().current = to;
            self.write_endpoints();
        }
        if cluster {
            self.follow_topology().await;
            self.write_endpoints();
        }
        Ok(json!({ "bdb_id": id, "steps": steps.len() }))
    }

    /// The steps numbered past every step played before (from [`FIRST_LINE`]), and kept for a
    /// grade of the run (at most [`KEPT_STEPS`]; past that a step is graded without its window).
    fn numbered(
        &self,
        mut steps: Vec<super::super::scenario::Step>,
    ) -> Vec<super::super::scenario::Step> {
        let mut kept = self
            .shared
            .played_steps
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut st = self.lock();
        for step in &mut steps {
            st.lines += 1;
            step.line = FIRST_LINE + st.lines;
            if kept.len() < KEPT_STEPS {
                kept.push(step.clone());
            }
        }
        steps
    }

    /// `sequence_of_actions`: `parameters.actions`, each `{type, params}` (go-redis) or `{type,
    /// parameters}`, run in order; the first to fail fails the sequence.
    async fn sequence(&self, params: &Value) -> Result<Value, String> {
        let actions = params
            .get("actions")
            .and_then(Value::as_array)
            .ok_or("parameters.actions: expected a list of actions")?;
        if actions.len() > SEQUENCE_MAX {
            return Err(format!(
                "parameters.actions: at most {SEQUENCE_MAX} actions"
            ));
        }
        let mut outputs = Vec::new();
        for (i, a) in actions.iter().enumerate() {
            let kind = a
                .get("type")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("parameters.actions[{i}].type: expected an action type"))?;
            let mut sub = a
                .get("params")
                .or_else(|| a.get("parameters"))
                .cloned()
                .unwrap_or_else(|| json!({}));
            // The sequence's own bdb_id stands for its actions' when they name none.
            if let (Some(obj), Some(id)) = (sub.as_object_mut(), params.get("bdb_id")) {
                obj.entry("bdb_id").or_insert_with(|| id.clone());
            }
            let out = Box::pin(self.run(kind, &sub, 1))
                .await
                .map_err(|e| format!("parameters.actions[{i}] ({kind}): {e}"))?;
            outputs.push(out);
        }
        Ok(json!({ "actions": outputs }))
    }

    fn say(&self, text: String) {
        self.shared.emit(What::Say { line: 0, text });
    }
}

/// The action types served.
pub const TYPES: [&str; 10] = [
    "create_database",
    "delete_database",
    "wait_for_database_active",
    "execute_rladmin_command",
    "migrate",
    "failover",
    "bind",
    "topology_change_standalone",
    "slot_migrate",
    "sequence_of_actions",
];

/// The triggers `slot_migrate` takes besides the one listed: go-redis' e2e names these variants
/// (`SlotMigrateVariant`); each plays the same moves here.
const SLOT_TRIGGERS: [&str; 4] = ["default", "migrate", "failover", "maintenance_mode"];

fn effect_of(params: &Value) -> Result<String, String> {
    params
        .get("effect")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| "parameters.effect is required".into())
}

fn unknown_effect(kind: &str, effect: &str) -> String {
    format!(
        "unknown effect {:?} for {kind}",
        super::super::notation::escape(effect.as_bytes())
    )
}

/// The trigger (`trigger`, or go-redis' `variant`) must be the one listed for the effect, or one
/// of `also`; none at all is fine.
fn check_trigger(params: &Value, effect: &str, also: &[&str]) -> Result<(), String> {
    let given = params
        .get("trigger")
        .or_else(|| params.get("variant"))
        .and_then(Value::as_str);
    let listed = effects::trigger_name(effect);
    match given {
        None => Ok(()),
        Some(t) if Some(t) == listed || also.contains(&t) => Ok(()),
        Some(t) => Err(format!(
            "unknown trigger {:?} for effect {effect}: GET the effect's triggers for the ones served",
            super::super::notation::escape(t.as_bytes())
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn running_actions_are_capped_and_ended_ones_forgotten_oldest_first() {
        let mut t = Table::default();
        let ids: Vec<String> = (0..RUNNING_MAX)
            .map(|_| t.open("migrate").unwrap())
            .collect();
        assert!(t.open("migrate").unwrap_err().contains("running already"));
        t.end(&ids[0], Status::Success(json!({})));
        let next = t.open("bind").unwrap();
        assert_eq!(t.show(&next).unwrap()["status"], "running");
        assert_eq!(t.show(&ids[0]).unwrap()["status"], "success");
        for id in &ids {
            t.end(id, Status::Failed("x".into()));
        }
        t.end(&next, Status::Failed("x".into()));
        for _ in 0..KEPT_MAX {
            let id = t.open("failover").unwrap();
            t.end(&id, Status::Failed("x".into()));
        }
        assert!(t.records.len() <= KEPT_MAX);
        assert!(
            t.show(&ids[0]).is_none(),
            "the oldest ended action is forgotten"
        );
        assert!(t.show("action-0").is_none());
    }
}
