//! The fault injector's routes, as its callers use them:
//!
//! - `POST /action` `{type, parameters}` → `{action_id, status}`;
//! - `GET /action/{id}` → `{action_id, status, output | error}`;
//! - `GET /action` → the action types served;
//! - `POST /rladmin` (text/plain, `rladmin [-b ID] COMMAND`) → `{status, output}`;
//! - `GET /slot-migrate?effect=…` and `GET /topology-change-standalone?effect=…` → the effect's
//!   triggers;
//! - `POST /slot-migrate?effect=…&bdb_id=…[&trigger=…]` → a `slot_migrate` action started, as
//!   `POST /action` answers (go-redis' `TriggerSlotMigrate` calls it so, with no body).
//!
//! A malformed request (an unknown route, JSON that is not an action, an effect never heard of in
//! a trigger listing) gets a 4xx with `{"error": ...}`; an action's own failure is its status,
//! `failed`, as the fault injector reports it.

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use serde_json::{json, Value};

use super::super::http_api::{self, body, json, param, parse_json, Answer, Fail};
use super::actions::{self, TYPES};
use super::{effects, Injector};

pub(super) async fn answer(injector: &Arc<Injector>, req: Request<Incoming>) -> Answer {
    match route(injector, req).await {
        Ok(v) => json(StatusCode::OK, &v),
        Err(Fail(status, error)) => json(status, &json!({ "error": error })),
    }
}

async fn route(injector: &Arc<Injector>, req: Request<Incoming>) -> Result<Value, Fail> {
    let target = http_api::Target::of(&req)?;
    let (segs, query) = (target.segs(), target.query.as_str());
    match (&target.method, segs.as_slice()) {
        (&Method::POST, ["action"]) => {
            let request: actions::Request = parse_json(&body(req).await?)?;
            started(injector, request)
        }
        (&Method::GET, ["action"]) => Ok(json!({
            "actions": TYPES.iter().map(|t| json!({"action_type": t})).collect::<Vec<_>>()
        })),
        (&Method::GET, ["action", id]) => injector
            .lock()
            .actions
            .show(id)
            .ok_or_else(|| Fail::not_found(format!("no action {}", escape(id)))),
        (&Method::POST, ["rladmin"]) => {
            let text = String::from_utf8(body(req).await?)
                .map_err(|_| Fail::bad("the body: expected text"))?;
            match injector.rladmin_text(&text) {
                Ok(output) => Ok(json!({ "status": "success", "output": output })),
                Err(e) => Err(Fail(StatusCode::UNPROCESSABLE_ENTITY, e)),
            }
        }
        (&Method::GET, ["slot-migrate"]) => triggers(query, true),
        (&Method::POST, ["slot-migrate"]) => {
            let request = actions::Request {
                kind: "slot_migrate".into(),
                parameters: slot_migrate_parameters(query)?,
            };
            started(injector, request)
        }
        (&Method::GET, ["topology-change-standalone"]) => triggers(query, false),
        _ => Err(target.no_route()),
    }
}

/// An action triggered: its id, running (too many actions at once: 429).
fn started(injector: &Arc<Injector>, request: actions::Request) -> Result<Value, Fail> {
    let id = injector
        .trigger(request)
        .map_err(|e| Fail(StatusCode::TOO_MANY_REQUESTS, e))?;
    Ok(json!({ "action_id": id, "status": "running" }))
}

/// `POST /slot-migrate`'s query as a `slot_migrate` action's parameters: the action checks them
/// (an unknown effect or database ends it `failed`, as through `POST /action`).
fn slot_migrate_parameters(query: &str) -> Result<Value, Fail> {
    let mut parameters = serde_json::Map::new();
    for name in [
        "effect",
        "bdb_id",
        "cluster_index",
        "trigger",
        "variant",
        "source_node",
        "target_node",
    ] {
        if let Some(value) = param(query, name)? {
            parameters.insert(name.into(), Value::String(value));
        }
    }
    Ok(Value::Object(parameters))
}

/// An effect's triggers; an effect not of this listing is a 404 naming the ones served.
fn triggers(query: &str, cluster: bool) -> Result<Value, Fail> {
    let effect = param(query, "effect")?.ok_or_else(|| Fail::bad("effect: required"))?;
    let listed = if cluster {
        effects::SLOT_EFFECTS.contains(&effect.as_str())
    } else {
        effects::standalone_effect(&effect).is_some()
    };
    listed
        .then(|| effects::triggers(&effect, cluster))
        .flatten()
        .ok_or_else(|| Fail::not_found(format!("no effect {}", escape(&effect))))
}

fn escape(text: &str) -> String {
    super::super::notation::escape(text.as_bytes())
}
