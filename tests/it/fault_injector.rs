//! `simulate --fault-injector-api`: Redis Enterprise's fault injector API, driven as redis-py's
//! `tests/test_scenario` and go-redis' e2e drive it, over real sockets: bad requests (an unknown
//! action, a malformed body, an unknown database, a deleted one) each answered clearly while
//! the simulator goes on serving; and a database created, then a migrate and a bind on it
//! reaching an opted-in connection as MIGRATING, MIGRATED and MOVING, the bind's close ending
//! it, the endpoints file following the endpoint, and the whole narrated.
//!
//! An OSS-cluster database too: its nodes answer CLUSTER SLOTS where a standalone proxy refuses
//! it, a `slot_migrate` tells every node's connections SMIGRATING then SMIGRATED, re-sends the
//! open SMIGRATING to a connection that opts in inside its window, and leaves the slots where
//! its effect says.
//!
//! The simulator answers the RESP itself (no upstream), so these need no real part.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use maintwatch::protocol::resp::{Limits, Scan, Scanner};
use serde_json::{json, Value};

use crate::common::{self, Proc};

const HANG_GUARD: Duration = Duration::from_secs(120);

/// One HTTP/1.1 request: the status and the body as JSON.
fn http(api: SocketAddr, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
    let (status, text) = common::http(api, method, path, body, HANG_GUARD);
    let value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"));
    (status, value)
}

/// Triggers an action and polls it to its end: its final status document.
fn action(api: SocketAddr, kind: &str, parameters: Value) -> Value {
    let id = trigger(api, kind, parameters);
    wait(api, &id, kind)
}

/// Triggers an action: its id.
fn trigger(api: SocketAddr, kind: &str, parameters: Value) -> String {
    let body = json!({ "type": kind, "parameters": parameters }).to_string();
    let (status, started) = http(api, "POST", "/action", body.as_bytes());
    assert_eq!(status, 200, "{started}");
    started["action_id"]
        .as_str()
        .expect("an action id")
        .to_string()
}

/// Polls an action to its end: its final status document.
fn wait(api: SocketAddr, id: &str, kind: &str) -> Value {
    // Each poll is a request the simulator answers at once; the guard only stops a hang.
    for _ in 0..12_000 {
        let (status, now) = http(api, "GET", &format!("/action/{id}"), b"");
        assert_eq!(status, 200, "{now}");
        if now["status"] != "running" {
            return now;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("action {id} ({kind}) never ended");
}

fn failed_with(api: SocketAddr, kind: &str, parameters: Value, says: &str) {
    let end = action(api, kind, parameters);
    assert_eq!(end["status"], "failed", "{end}");
    let error = end["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(says),
        "{kind}: {error:?} should say {says:?}"
    );
}

/// Runs `body` (blocking HTTP calls, given the API's address and the endpoints file) against
/// a simulator serving the fault injector's API at `speed`, then stops it with SIGINT: what it
/// printed.
async fn against_api(speed: &str, body: fn(SocketAddr, &Path)) -> String {
    let dir = tempfile::tempdir().unwrap();
    let endpoints = dir.path().join("endpoints.json");
    let api = common::closed_port();
    let mut sim = Proc::start([
        "simulate",
        "--fault-injector-api",
        &api.to_string(),
        "--endpoints-file",
        endpoints.to_str().unwrap(),
        "--speed",
        speed,
    ]);
    sim.line(HANG_GUARD, "the fault injector's line", |l| {
        l.contains("fault injector API")
    })
    .await;
    tokio::task::spawn_blocking(move || body(api, &endpoints))
        .await
        .unwrap();
    sim.signal(libc::SIGINT);
    sim.finish(HANG_GUARD).await.stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_answers_and_the_simulator_keeps_serving() {
    let out = against_api("1", bad_requests).await;
    assert!(
        out.contains("fault injector: nope (action-1) failed"),
        "{out}"
    );
}

fn bad_requests(api: SocketAddr, endpoints: &Path) {
    failed_with(api, "nope", json!({}), "unknown action type \"nope\"");
    let (status, answer) = http(api, "POST", "/action", b"{\"typ");
    assert_eq!(status, 400, "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("JSON"),
        "{answer}"
    );
    let (status, answer) = http(api, "POST", "/action", b"[1, 2]");
    assert_eq!(status, 400, "{answer}");
    let (status, answer) = http(api, "GET", "/action/action-999", b"");
    assert_eq!(status, 404, "{answer}");
    let (status, _) = http(api, "GET", "/slot-migrate?effect=sideways", b"");
    assert_eq!(status, 404);
    let (status, started) = http(api, "POST", "/slot-migrate?effect=sideways&bdb_id=1", b"");
    assert_eq!(status, 200, "{started}");
    let end = wait(api, started["action_id"].as_str().unwrap(), "slot_migrate");
    assert!(
        end["error"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown effect"),
        "{end}"
    );
    failed_with(api, "migrate", json!({"bdb_id": 99}), "no database 99");
    failed_with(api, "bind", json!({}), "bdb_id is required");
    failed_with(
        api,
        "topology_change_standalone",
        json!({"bdb_id": 1, "effect": "sideways"}),
        "unknown effect",
    );
    failed_with(
        api,
        "slot_migrate",
        json!({"bdb_id": 1, "effect": "add", "trigger": "teleport"}),
        "unknown trigger",
    );
    let created = action(
        api,
        "create_database",
        json!({"database_config": {"name": "short-lived"}}),
    );
    assert_eq!(created["status"], "success", "{created}");
    let id = created["output"]["bdb_id"].as_u64().unwrap();
    let listed = std::fs::read_to_string(endpoints).unwrap();
    assert!(listed.contains("short-lived"), "{listed}");
    assert_eq!(
        action(api, "delete_database", json!({"bdb_id": id}))["status"],
        "success"
    );
    let gone = format!("database {id} was deleted");
    failed_with(api, "migrate", json!({"bdb_id": id}), &gone);
    failed_with(api, "delete_database", json!({"bdb_id": id}), &gone);
    let listed = std::fs::read_to_string(endpoints).unwrap();
    assert!(!listed.contains("short-lived"), "{listed}");
    // Still serving, and still knowing its databases.
    let status = action(
        api,
        "execute_rladmin_command",
        json!({"rladmin_command": "status", "bdb_id": 1}),
    );
    let text = status["output"]["output"].as_str().expect("rladmin's text");
    assert!(text.contains("db:1 standalone"), "{text}");
    assert!(!text.contains("short-lived"), "{text}");
}

/// A connection to the simulator reading whole RESP frames.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn connect(addr: SocketAddr) -> Conn {
        let s = TcpStream::connect(addr).expect("the database's proxy accepts");
        s.set_read_timeout(Some(HANG_GUARD)).unwrap();
        Conn { s, buf: Vec::new() }
    }

    /// The next whole frame; `None` when the server closed the connection first.
    fn frame(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Ok(Scan::Frame(_, n)) = Scanner::new(Limits::default()).scan(&self.buf) {
                let rest = self.buf.split_off(n);
                return Some(std::mem::replace(&mut self.buf, rest));
            }
            let mut chunk = [0u8; 4096];
            let n = self.s.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                return None;
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn call(&mut self, args: &[&str]) -> Vec<u8> {
        self.s
            .write_all(&maintwatch::protocol::resp::encode_command(args))
            .unwrap();
        self.frame().expect("a reply")
    }
}

fn text(frame: &[u8]) -> String {
    String::from_utf8_lossy(frame).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migrate_and_a_bind_reach_an_opted_in_connection_and_move_the_endpoint() {
    // At 4x the bind's close comes about 4 s after its MOVING; the frames are the same.
    let out = against_api("4", migrate_then_bind).await;
    let migrating = out.find("MIGRATING").expect("MIGRATING narrated");
    let moving = out.find("MOVING").expect("MOVING narrated");
    assert!(migrating < moving, "{out}");
    assert!(
        out.contains("fault injector: bind (action-3) succeeded"),
        "{out}"
    );
}

fn migrate_then_bind(api: SocketAddr, endpoints: &Path) {
    let created = action(
        api,
        "create_database",
        json!({"database_config": {"name": "fi-test"}}),
    );
    assert_eq!(created["status"], "success", "{created}");
    let out = &created["output"];
    let id = out["bdb_id"].as_u64().unwrap();
    let port = out["raw_endpoints"][0]["port"].as_u64().unwrap() as u16;
    let first: std::net::IpAddr = out["raw_endpoints"][0]["addr"][0]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(out["endpoints"][0]
        .as_str()
        .unwrap()
        .starts_with("redis://db.sim.maintwatch.test:"));
    let mut conn = Conn::connect(SocketAddr::new(first, port));
    assert_eq!(conn.call(&["HELLO", "3"])[0], b'%');
    let on = [
        "CLIENT",
        "MAINT_NOTIFICATIONS",
        "ON",
        "moving-endpoint-type",
        "external-ip",
    ];
    assert_eq!(conn.call(&on), b"+OK\r\n");

    assert_eq!(
        action(api, "migrate", json!({"bdb_id": id}))["status"],
        "success"
    );
    let migrating = text(&conn.frame().expect("MIGRATING"));
    assert!(migrating.contains("MIGRATING"), "{migrating}");
    let migrated = text(&conn.frame().expect("MIGRATED"));
    assert!(migrated.contains("MIGRATED"), "{migrated}");
    // A later opt-in is sent the retained completion after its +OK.
    let mut late = opted_in(&first.to_string(), port);
    assert_eq!(text(&late.frame().expect("the catch-up")), migrated);

    assert_eq!(
        action(api, "bind", json!({"bdb_id": id}))["status"],
        "success"
    );
    let moving = text(&conn.frame().expect("MOVING"));
    assert!(moving.contains("MOVING"), "{moving}");
    assert!(moving.contains(&format!("127.0.0.3:{port}")), "{moving}");
    assert_eq!(
        conn.frame(),
        None,
        "the bind closes the old proxy's connections"
    );
    // It holds the databases' password: its owner's only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(endpoints).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let listed: Value = serde_json::from_str(&std::fs::read_to_string(endpoints).unwrap()).unwrap();
    assert_eq!(
        listed["fi-test"]["raw_endpoints"][0]["addr"][0],
        "127.0.0.3"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oss_cluster_database_moves_its_slots_and_tells_every_node() {
    // At a quarter speed the SMIGRATING window lasts 8 s: room for a connection to open and
    // opt in inside it once the first connection has read the SMIGRATING.
    let out = against_api("0.25", oss_cluster).await;
    assert!(
        out.contains("OSS-cluster database 3 (fi-oss) created"),
        "{out}"
    );
}

/// A connection to a node, opted in: the opt-in's own reply (after `+OK`) is not read.
fn opted_in(node: &str, port: u16) -> Conn {
    let mut conn = Conn::connect(format!("{node}:{port}").parse().unwrap());
    assert_eq!(conn.call(&["HELLO", "3"])[0], b'%');
    assert_eq!(
        conn.call(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]),
        b"+OK\r\n"
    );
    conn
}

fn oss_cluster(api: SocketAddr, endpoints: &Path) {
    let created = action(
        api,
        "create_database",
        json!({"database_config": {"name": "fi-oss", "oss_cluster": true}}),
    );
    assert_eq!(created["status"], "success", "{created}");
    let out = &created["output"];
    let id = out["bdb_id"].as_u64().unwrap();
    let port = out["raw_endpoints"][0]["port"].as_u64().unwrap() as u16;
    // Seeded by its first node's address, so that go-redis does not fold the loopback nodes
    // into the name; the name is still given.
    assert_eq!(out["endpoints"][0], format!("redis://127.0.0.4:{port}"));
    assert_eq!(
        out["raw_endpoints"][0]["dns_name"],
        "oss.sim.maintwatch.test"
    );
    assert_eq!(
        out["raw_endpoints"][0]["addr"],
        json!(["127.0.0.4", "127.0.0.5", "127.0.0.6"])
    );
    let mut standalone = Conn::connect(format!("127.0.0.2:{port}").parse().unwrap());
    let refused = text(&standalone.call(&["CLUSTER", "SLOTS"]));
    assert!(refused.contains("cluster support disabled"), "{refused}");
    failed_with(
        api,
        "slot_migrate",
        json!({"bdb_id": 1, "effect": "remove-add"}),
        "not an OSS-cluster one",
    );

    let mut first = opted_in("127.0.0.4", port);
    let slots = text(&first.call(&["CLUSTER", "SLOTS"]));
    assert!(
        slots.contains("127.0.0.6") && !slots.contains("127.0.0.7"),
        "{slots}"
    );

    // As go-redis' TriggerSlotMigrate asks: the query is the action's parameters.
    let path =
        format!("/slot-migrate?effect=remove-add&bdb_id={id}&cluster_index=0&trigger=migrate");
    let (status, started) = http(api, "POST", &path, b"");
    assert_eq!(status, 200, "{started}");
    let moving = started["action_id"]
        .as_str()
        .expect("an action id")
        .to_string();
    let smigrating = text(&first.frame().expect("SMIGRATING"));
    assert!(
        smigrating.contains("SMIGRATING") && smigrating.contains("0-5460"),
        "{smigrating}"
    );
    let mut late = opted_in("127.0.0.5", port);
    assert_eq!(
        text(&late.frame().expect("the open SMIGRATING, re-sent")),
        smigrating,
        "the same frame, the same seq"
    );
    for conn in [&mut first, &mut late] {
        let smigrated = text(&conn.frame().expect("SMIGRATED"));
        assert!(smigrated.contains("SMIGRATED"), "{smigrated}");
        assert!(
            smigrated.contains(&format!("127.0.0.7:{port}")),
            "{smigrated}"
        );
    }
    assert_eq!(wait(api, &moving, "slot_migrate")["status"], "success");
    let slots = text(&late.call(&["CLUSTER", "SLOTS"]));
    assert!(
        slots.contains("127.0.0.7") && !slots.contains("127.0.0.4"),
        "{slots}"
    );
    let listed: Value = serde_json::from_str(&std::fs::read_to_string(endpoints).unwrap()).unwrap();
    assert_eq!(
        listed["fi-oss"]["raw_endpoints"][0]["addr"],
        json!(["127.0.0.5", "127.0.0.6", "127.0.0.7"])
    );
    // The two action types neither suite sends, in a sequence on the same database: the
    // shuffle plays on the topology the remove-add left (the first owner is now 127.0.0.5).
    let sequence = action(
        api,
        "sequence_of_actions",
        json!({"bdb_id": id, "actions": [
            {"type": "wait_for_database_active", "params": {}},
            {"type": "slot_migrate", "params": {"effect": "slot-shuffle", "variant": "failover"}},
        ]}),
    );
    assert_eq!(sequence["status"], "success", "{sequence}");
    assert_eq!(sequence["output"]["actions"][0]["status"], "active");
    let smigrated = (0..2)
        .map(|_| text(&late.frame().expect("SMIGRATING, then SMIGRATED")))
        .last()
        .unwrap();
    assert!(
        smigrated.contains(&format!("127.0.0.5:{port}")) && smigrated.contains("5461-5560"),
        "{smigrated}"
    );
}

/// A client of the standard library only: creates a database, opts in on its proxy, asks for a
/// migrate and exits once the MIGRATED has reached it.
const GRADED_CLIENT: &str = r#"
import json, socket, sys, time, urllib.request
api = sys.argv[1]
def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(api + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=60).read())
def act(kind, params):
    aid = call("POST", "/action", {"type": kind, "parameters": params})["action_id"]
    while True:
        st = call("GET", "/action/" + aid)
        if st["status"] != "running":
            return st
        time.sleep(0.05)
db = act("create_database", {"database_config": {"name": "graded"}})["output"]
ep = db["raw_endpoints"][0]
s = socket.create_connection((ep["addr"][0], ep["port"]), timeout=60)
for args in (["HELLO", "3"], ["CLIENT", "MAINT_NOTIFICATIONS", "ON"]):
    s.sendall(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode()) for a in args))
buf = b""
while b"+OK" not in buf:
    buf += s.recv(65536)
call("POST", "/action", {"type": "migrate", "parameters": {"bdb_id": db["bdb_id"]}})
while b"MIGRATED" not in buf:
    chunk = s.recv(65536)
    if not chunk:
        sys.exit("closed before the MIGRATED")
    buf += chunk
"#;

/// `--grade -- CMD` with the fault injector grades CMD as certify grades an application: the
/// MIGRATING an action sent is judged with the window its step declared (2 s), which the grade
/// can only know from the steps the actions played.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grade_judges_the_notifications_of_the_actions_the_client_asked_for() {
    let test = "grade_judges_the_notifications_of_the_actions_the_client_asked_for";
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        crate::common::skip(test, "python3 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let client = dir.path().join("client.py");
    std::fs::write(&client, GRADED_CLIENT).unwrap();
    let api = common::closed_port();
    let run = common::maintwatch_async(["simulate", "--fault-injector-api", &api.to_string()])
        .args(["--quiet", "--grade", "--", "python3"])
        .arg(&client)
        .arg(format!("http://{api}"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .output();
    let o = tokio::time::timeout(HANG_GUARD, run)
        .await
        .expect("the run ends with its client")
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("exited 0"), "{out}");
    assert!(
        out.contains("MIGRATING seq 0") && out.contains("(window 2 s): received by 1"),
        "{out}"
    );
    assert!(out.contains("grade: every rule held"), "{out}");
}
