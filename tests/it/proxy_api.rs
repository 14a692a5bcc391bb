//! `simulate --proxy-api`: cae-resp-proxy's HTTP API in front of a real redis-server, driven as
//! the libraries' suites drive it, over real sockets: frames injected to one connection, to
//! some, to all; connections listed and closed; an interceptor matched, answering, reset; the
//! `cluster` and `hitless` defaults; a node added and removed; malformed requests answered with
//! a 4xx while the simulator goes on; and the injected frames in the narration, `--grade-json`
//! and `--report`.
//!
//! SKIPs (a visible line) when MAINTWATCH_REDIS_SERVER is unset or empty.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use maintwatch::protocol::resp::{Limits, Scan, Scanner};

use crate::common::{self, Proc};

const HANG_GUARD: Duration = Duration::from_secs(120);
const MOVING: &[u8] = b">4\r\n$6\r\nMOVING\r\n:1\r\n:15\r\n$14\r\n127.0.0.1:6380\r\n";

/// One HTTP/1.1 request: the status and the body.
fn http(api: SocketAddr, method: &str, path: &str, body: &[u8]) -> (u16, String) {
    common::http(api, method, path, body, HANG_GUARD)
}

fn json(api: SocketAddr, method: &str, path: &str, body: &[u8]) -> serde_json::Value {
    let (status, text) = http(api, method, path, body);
    assert_eq!(status, 200, "{method} {path}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}: {text}"))
}

/// A client connection reading whole RESP frames.
struct Client {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).expect("the node accepts");
        s.set_read_timeout(Some(HANG_GUARD)).unwrap();
        Client { s, buf: Vec::new() }
    }

    fn frame(&mut self) -> Vec<u8> {
        loop {
            if let Ok(Scan::Frame(_, n)) = Scanner::new(Limits::default()).scan(&self.buf) {
                let rest = self.buf.split_off(n);
                return std::mem::replace(&mut self.buf, rest);
            }
            let mut chunk = [0u8; 4096];
            let n = self.s.read(&mut chunk).expect("a frame");
            assert!(n > 0, "closed before a whole frame: {:?}", self.buf);
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn call(&mut self, args: &[&str]) -> Vec<u8> {
        self.s
            .write_all(&maintwatch::protocol::resp::encode_command(args))
            .unwrap();
        self.frame()
    }

    /// True when the server closed the connection (after any bytes still to read).
    fn closed(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            match self.s.read(&mut chunk) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(_) => return false,
            }
        }
    }
}

/// Polls `/connections` until it lists `n` connections: the accept is the node's, not ours.
fn connections(api: SocketAddr, n: usize) -> serde_json::Value {
    for _ in 0..1000 {
        let c = json(api, "GET", "/connections", b"");
        let count: usize = c
            .as_object()
            .unwrap()
            .values()
            .map(|ids| ids.as_array().unwrap().len())
            .sum();
        if count == n {
            return c;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("/connections never listed {n} connections");
}

/// The one connection id listed under the node whose id ends in `@PORT`, of those not in `not`.
fn id_on(conns: &serde_json::Value, port: u16, not: &[&str]) -> String {
    let (_, ids) = conns
        .as_object()
        .unwrap()
        .iter()
        .find(|(node, _)| node.ends_with(&format!("@{port}")))
        .expect("the node is listed");
    ids.as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .find(|id| !not.contains(&id.as_str()))
        .expect("a connection on the node")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_proxy_api_injects_intercepts_and_manages_nodes_and_records_it_all() {
    let Some(redis) = common::RealRedis::start("proxy_api", &[]).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (api, n1, n2, n3) = (
        common::closed_port(),
        common::closed_port(),
        common::closed_port(),
        common::closed_port(),
    );
    let listen = format!("{},{}", n1.port(), n2.port());
    let grade = dir.path().join("grade.jsonl");
    let report = dir.path().join("run.html");
    let mut sim = Proc::start([
        "simulate",
        "--proxy-api",
        &api.to_string(),
        "--listen",
        &listen,
        "--upstream",
        &redis.url(),
        "--default-interceptors",
        "cluster,hitless",
        "--grade-json",
        grade.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    sim.line(HANG_GUARD, "the clock line", |l| l.contains("clock"))
        .await;
    let redis_port = redis.addr.port();
    tokio::task::spawn_blocking(move || drive(api, n1, n2, n3, redis_port))
        .await
        .unwrap();
    sim.signal(libc::SIGINT);
    let exit = sim.finish(HANG_GUARD).await;
    assert!(
        exit.stdout
            .contains("api | send-to-all-clients: >4\\r\\n$6\\r\\nMOVING"),
        "{}",
        exit.stdout
    );
    assert!(
        exit.stdout.contains("(interceptor ping)"),
        "{}",
        exit.stdout
    );
    let graded = std::fs::read_to_string(&grade).expect("the grade's JSON lines");
    assert!(graded.contains("\"MOVING\""), "{graded}");
    let page = std::fs::read_to_string(&report).expect("the report");
    assert!(page.contains("MOVING"), "the report shows the frames sent");
}

fn drive(api: SocketAddr, n1: SocketAddr, n2: SocketAddr, n3: SocketAddr, redis_port: u16) {
    // Two connections on the first node, one on the second; two opt in through `hitless`.
    let mut a = Client::connect(n1);
    let hello = a.call(&["HELLO", "3"]);
    assert_eq!(hello[0], b'%', "the real server's HELLO map");
    // `hitless` answers the five-word opt-in only, as the proxy's does; the short form goes
    // to the real server, which refuses it.
    let opt_in = [
        "CLIENT",
        "MAINT_NOTIFICATIONS",
        "ON",
        "moving-endpoint-type",
        "none",
    ];
    assert_eq!(a.call(&opt_in), b"+OK\r\n");
    let refused = a.call(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]);
    assert_eq!(refused[0], b'-', "relayed: {refused:?}");
    let mut c = Client::connect(n1);
    let mut b = Client::connect(n2);
    b.call(&["HELLO", "3"]);
    assert_eq!(b.call(&opt_in), b"+OK\r\n");
    let conns = connections(api, 3);
    let id_b = id_on(&conns, n2.port(), &[]);
    let mut on_n1 = conns
        .as_object()
        .unwrap()
        .iter()
        .find(|(node, _)| node.ends_with(&format!("@{}", n1.port())))
        .unwrap()
        .1
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect::<Vec<_>>();
    on_n1.sort_by_key(|id| id[5..].parse::<u64>().unwrap());
    let (id_a, id_c) = (on_n1[0].clone(), on_n1[1].clone());

    // To one: only `a` gets it.
    let r = json(
        api,
        "POST",
        &format!("/send-to-client/{id_a}?encoding=raw"),
        MOVING,
    );
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["connectionId"], id_a.as_str());
    assert_eq!(a.frame(), MOVING);
    // To some, base64 (the default encoding): `a` and `c`.
    let b64 = "PjINCiQxMg0KRkFJTElOR19PVkVSDQo6Mg0K";
    let failing = b">2\r\n$12\r\nFAILING_OVER\r\n:2\r\n";
    let r = json(
        api,
        "POST",
        &format!("/send-to-clients?connectionIds={id_a},{id_c},conn_999999"),
        b64.as_bytes(),
    );
    assert_eq!(
        r["results"].as_array().unwrap().len(),
        2,
        "unknown ids are left out: {r}"
    );
    assert_eq!(a.frame()[..], failing[..]);
    assert_eq!(c.frame()[..], failing[..]);
    // To all.
    let r = json(api, "POST", "/send-to-all-clients?encoding=raw", MOVING);
    assert_eq!(r["results"].as_array().unwrap().len(), 3, "{r}");
    for client in [&mut a, &mut b, &mut c] {
        assert_eq!(client.frame(), MOVING);
    }
    // An unknown connection: the proxy's answer, 200 with success false.
    let r = json(
        api,
        "POST",
        "/send-to-client/conn_999999?encoding=raw",
        MOVING,
    );
    assert_eq!(r["success"], false);
    assert_eq!(r["error"], "Connection not found");

    // An interceptor answers in place of the upstream, case-blind, and is reset by a
    // pattern that never matches (what redis-py's helper does).
    let ping = br#"{"name":"ping","match":"*1\r\n$4\r\nping\r\n","response":"+CUSTOM\r\n","encoding":"raw"}"#;
    let r = json(api, "POST", "/interceptors", ping);
    assert_eq!(r["name"], "ping");
    assert_eq!(a.call(&["PING"]), b"+CUSTOM\r\n");
    let reset = br#"{"name":"ping","match":"no_match","response":"","encoding":"raw"}"#;
    json(api, "POST", "/interceptors", reset);
    assert_eq!(
        a.call(&["PING"]),
        b"+PONG\r\n",
        "the real server answers again"
    );
    let stats = json(api, "GET", "/stats", b"");
    let node1 = stats.as_object().unwrap().values().next().unwrap();
    let ping_state = node1["globalInterceptors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "ping")
        .expect("the interceptor is listed");
    assert_eq!(
        ping_state["matchCount"], 0,
        "reset: a new one, counting afresh"
    );

    // `cluster`: CLUSTER SLOTS names the listening nodes, the slots split between them.
    let slots = String::from_utf8(b.call(&["cluster", "slots"])).unwrap();
    assert!(slots.starts_with("*2\r\n*3\r\n:0\r\n:8191\r\n"), "{slots}");
    assert!(slots.contains(&format!(":{}\r\n", n1.port())), "{slots}");
    assert!(slots.contains(&format!(":{}\r\n", n2.port())), "{slots}");

    // A node added at run time relays; removed, it refuses connections.
    let body = format!(
        r#"{{"listenPort":{},"targetHost":"127.0.0.1","targetPort":{redis_port}}}"#,
        n3.port()
    );
    let r = json(api, "POST", "/nodes", body.as_bytes());
    assert_eq!(r["success"], true, "{r}");
    let ids = json(api, "GET", "/nodes", b"")["ids"].clone();
    let id3 = format!("127.0.0.1:{redis_port}@{}", n3.port());
    assert!(ids.as_array().unwrap().iter().any(|i| *i == *id3), "{ids}");
    let mut d = Client::connect(n3);
    assert_eq!(d.call(&["PING"]), b"+PONG\r\n");
    let slots = String::from_utf8(b.call(&["cluster", "slots"])).unwrap();
    assert!(slots.starts_with("*3\r\n"), "three nodes now: {slots}");
    let r = json(api, "DELETE", &format!("/nodes/{id3}"), b"");
    assert_eq!(r["success"], true);
    assert!(d.closed(), "its connections are closed");
    assert!(TcpStream::connect(n3).is_err(), "no longer listening");
    assert_eq!(
        json(api, "GET", "/nodes", b"")["ids"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Closing one connection.
    let r = json(api, "DELETE", &format!("/connections/{id_c}"), b"");
    assert_eq!(r["success"], true);
    assert!(c.closed());
    let conns = connections(api, 2);
    assert_eq!(id_on(&conns, n2.port(), &[]), id_b);

    // Malformed requests: a 4xx with a message, and the API goes on.
    for (method, path, body) in [
        ("POST", "/send-to-all-clients?encoding=hex", &b"x"[..]),
        ("POST", "/send-to-all-clients", b"{not base64}"),
        ("POST", "/interceptors", b"{\"name\":1}"),
        ("POST", "/send-to-clients", b"KjENCg=="),
        ("GET", "/no-such-route", b""),
    ] {
        let (status, text) = http(api, method, path, body);
        assert!((400..500).contains(&status), "{path}: {status} {text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(!v["error"].as_str().unwrap().is_empty(), "{text}");
    }
    assert_eq!(a.call(&["PING"]), b"+PONG\r\n");
}
