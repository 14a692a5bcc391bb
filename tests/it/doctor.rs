//! `maintwatch doctor` end to end, through the binary: against the simulator (every endpoint
//! type accepted), against a real redis-server (refused with its exact text, and the errorstats
//! cost measured), and against a real redis-server over TLS (a CA made here with rcgen).
//!
//! The real-server tests need `MAINTWATCH_REDIS_SERVER`; unset, they print a SKIP line.

use crate::common;

use maintwatch::simulator::sim::{scenarios, SimOptions, Simulator};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use serde_json::Value;

const REFUSAL: &str = "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.";

/// Runs the binary; returns the exit code, stdout and stderr.
/// The text with its wrapped lines joined again: what each line says is checked here, the
/// wrapping (80 columns on a pipe, continued 2 spaces deeper) where every screen's is. A line is
/// a continuation when it is indented deeper and its first word would not have fit on the
/// line before it.
fn unwrapped(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut physical = 0;
    let indent = |l: &str| l.len() - l.trim_start().len();
    for line in text.lines() {
        let word = line.split_whitespace().next().unwrap_or("");
        let cont = out.last().is_some_and(|prev| {
            indent(line) >= indent(prev) + 2 && physical + 1 + word.chars().count() > 80
        });
        physical = line.chars().count();
        match out.last_mut() {
            Some(prev) if cont => {
                prev.push(' ');
                prev.push_str(line.trim_start());
            }
            _ => out.push(line.to_string()),
        }
    }
    out.join("\n") + "\n"
}

async fn doctor(args: &[&str]) -> (i32, String, String) {
    let out = common::maintwatch_async(["doctor"])
        .args(args)
        .output()
        .await
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        unwrapped(&String::from_utf8(out.stdout).unwrap()),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn client<'a>(json: &'a Value, name: &str) -> &'a Value {
    json["clients"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["client"] == name)
        .unwrap_or_else(|| panic!("no {name} in {json}"))
}

#[tokio::test]
async fn against_the_simulator_every_endpoint_type_is_accepted() {
    let sim = Simulator::start(SimOptions::new(
        scenarios::by_name("single-proxy").expect("bundled"),
    ))
    .await
    .expect("simulator starts");
    let url = format!("redis://{}", sim.proxies()[0]);
    let (code, out, err) = doctor(&["--json", &url]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["type"], "doctor");
    assert_eq!(json["server"]["resp3"], true);
    assert_eq!(json["server"]["opt_in"]["outcome"], "accepted");
    let types: Vec<(&str, &str)> = json["server"]["endpoint_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["endpoint_type"].as_str().unwrap(),
                a["outcome"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        types,
        [
            ("internal-ip", "accepted"),
            ("internal-fqdn", "accepted"),
            ("external-ip", "accepted"),
            ("external-fqdn", "accepted"),
            ("none", "accepted"),
        ]
    );
    // 127.0.0.2, plain TCP: redis-py and go-redis call it internal, node-redis external.
    assert_eq!(client(&json, "redis-py")["auto_type"], "internal-ip");
    assert_eq!(client(&json, "go-redis")["auto_type"], "internal-ip");
    assert_eq!(client(&json, "node-redis")["auto_type"], "external-ip");
    assert_eq!(client(&json, "node-redis")["server_answer"], "accepted");
    let caveats = json["caveats"].to_string();
    assert!(caveats.contains("maintEndpointType to 'none'"), "{caveats}");

    // A password is never shown; the failure is the server's answer, exit 5.
    let with_password = format!("redis://u:hunter2@{}", sim.proxies()[0]);
    let (code, out, err) = doctor(&["--json", &with_password]).await;
    assert_eq!(code, maintwatch::exit::AUTH_FAILED, "{out}\n{err}");
    assert!(
        !out.contains("hunter2") && !err.contains("hunter2"),
        "{out}\n{err}"
    );
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["endpoint"], format!("redis://u@{}", sim.proxies()[0]));
    // Stopped at the refused password: no endpoint type was tried after it.
    assert_eq!(json["server"]["opt_in"]["outcome"], "auth_failed");
    assert_eq!(json["server"]["endpoint_types"], serde_json::json!([]));
    assert!(
        json["stopped"].as_str().unwrap().contains("password"),
        "{out}"
    );

    let (code, _, err) = doctor(&[&url, "-h", "127.0.0.1"]).await;
    assert_eq!(code, maintwatch::exit::USAGE, "{err}");
    assert!(err.contains("give the endpoint once"), "{err}");

    let (code, text, _) = doctor(&[&url]).await;
    assert_eq!(code, 0);
    // One answer to every type is said once; the version history waits for --clients all.
    assert!(
        text.contains("    the same answer to every moving-endpoint-type\n"),
        "{text}"
    );
    assert!(
        text.contains("node-redis 6.3.1            yes / external-ip / accepted"),
        "{text}"
    );
    assert!(!text.contains("measured in"), "{text}");
    assert!(text.contains("doctor --clients all"), "{text}");
    let (code, text, _) = doctor(&[&url, "--clients", "all"]).await;
    assert_eq!(code, 0);
    // The releases the client tier found a behaviour in (src/grading/clients/library/, `measured`).
    assert!(
        text.contains(
            "measured in 5.9.0 through 6.3.1: a MOVING with a null target, after an opt-in that \
             did not ask for `none`, ends the process"
        ),
        "{text}"
    );
    assert!(
        text.contains("measured in 5.11.0 through 6.3.1: its cluster client"),
        "{text}"
    );
    // go-redis's, by release: the endpoint type `auto` asked for changed after 9.18.
    assert!(
        text.contains("measured in 9.16.0 through 9.18.0: `auto` asks for external-fqdn"),
        "{text}"
    );
    assert!(
        text.contains("measured in 9.23.0: `auto` resolves the host name"),
        "{text}"
    );
    // The JVM libraries' facts, from the Lettuce and Jedis tiers' run.
    assert!(
        text.contains(
            "measured in 8.0.2: never sends CLIENT MAINT_NOTIFICATIONS: asked for RESP3 it sends \
             HELLO 3"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "measured in 7.7.0: its synchronous API gives up at the connection's own timeout"
        ),
        "{text}"
    );
    assert!(text.contains("(the client tier of 2026-12-04)"), "{text}");
}

/// `doctor --json` carries the measured facts with their range and run, per client.
#[tokio::test]
async fn doctor_json_names_the_releases_a_measured_fact_holds_in() {
    let sim = Simulator::start(SimOptions::new(
        scenarios::by_name("single-proxy").expect("bundled"),
    ))
    .await
    .expect("simulator starts");
    let url = format!("redis://{}", sim.proxies()[0]);
    let (code, out, err) = doctor(&["--json", &url]).await;
    assert_eq!(code, 0, "{out}\n{err}");
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    let m = &client(&json, "node-redis")["measured"][0];
    assert_eq!(
        (m["first"].as_str(), m["last"].as_str()),
        (Some("5.9.0"), Some("6.3.1")),
        "{m}"
    );
    assert_eq!(m["notification"], "MOVING");
    assert!(
        m["run"].as_str().unwrap().contains("client matrix of 20"),
        "{m}"
    );
    let go: Vec<(&str, &str)> = client(&json, "go-redis")["measured"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["first"].as_str().unwrap(), m["last"].as_str().unwrap()))
        .collect();
    assert_eq!(go[0], ("9.16.0", "9.18.0"), "{go:?}");
    assert!(go.contains(&("9.18.0", "9.23.0")), "{go:?}");
    assert_eq!(
        client(&json, "go-redis")["measured"][0]["run"],
        "the client matrix of 2026-12-04"
    );
}

#[tokio::test]
async fn a_real_redis_server_refuses_and_the_cost_is_counted() {
    let test = "doctor against a real redis-server";
    let Some(redis) = common::RealRedis::start(test, &[]).await else {
        return;
    };
    let (code, out, err) = doctor(&["--json", &redis.url()]).await;
    assert_eq!(code, maintwatch::exit::REFUSED, "{out}\n{err}");
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["server"]["resp3"], true);
    assert_eq!(json["server"]["opt_in"]["detail"], REFUSAL);
    for a in json["server"]["endpoint_types"].as_array().unwrap() {
        assert_eq!(a["outcome"], "refused", "{a}");
        assert_eq!(a["detail"], REFUSAL, "{a}");
    }
    // One handshake: exactly one more ERR, whatever the server counted before.
    assert_eq!(json["errorstats"]["delta"], serde_json::json!([["ERR", 1]]));
    assert_eq!(
        client(&json, "redis-py")["errorstats_cost"],
        serde_json::json!([["ERR", 1]])
    );
    assert_eq!(
        client(&json, "Jedis")["errorstats_cost"],
        serde_json::json!([])
    );
    assert!(json["caveats"]
        .to_string()
        .contains("client_maint_notifications"));

    let (code, text, _) = doctor(&[&redis.url()]).await;
    assert_eq!(code, maintwatch::exit::REFUSED);
    assert!(
        text.contains(&format!("  opt-in            refused: {REFUSAL}\n")),
        "{text}"
    );
    assert!(
        text.contains("errorstats: one handshake raised errorstat_ERR +1\n"),
        "{text}"
    );
    assert!(
        text.contains("costs errorstat_ERR +1 per connection"),
        "{text}"
    );
}

/// A CA and a server certificate for 127.0.0.1, written into `dir`: (ca, cert, key) paths.
fn pki(dir: &std::path::Path) -> [String; 3] {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "doctor test CA");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.distinguished_name.push(DnType::CommonName, "server");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    let paths = ["ca.pem", "server.crt", "server.key"].map(|f| dir.join(f).display().to_string());
    std::fs::write(&paths[0], ca.pem()).unwrap();
    std::fs::write(&paths[1], cert.pem()).unwrap();
    std::fs::write(&paths[2], key.serialize_pem()).unwrap();
    paths
}

/// A wrong password is said once, as refused, with what to do: not once per endpoint type, not
/// as RESP3 "unknown (no answer)" and not in an internal spelling (`auth_failed`).
#[tokio::test]
async fn a_wrong_password_is_said_once_with_what_to_do() {
    let test = "a_wrong_password_is_said_once_with_what_to_do";
    let Some(redis) = common::RealRedis::start(test, &["--requirepass", "right"]).await else {
        return;
    };
    let (code, out, err) = doctor(&[&format!("redis://{}", redis.addr), "-a", "wrong"]).await;
    assert_eq!(code, maintwatch::exit::AUTH_FAILED, "{out}{err}");
    assert_eq!(out.matches("WRONGPASS").count(), 1, "{out}");
    assert_eq!(
        out.matches("the server refused the password").count(),
        1,
        "{out}"
    );
    assert!(out.contains("REDISCLI_AUTH"), "{out}");
    for internal in ["auth_failed", "unknown (no answer)", "internal-ip"] {
        assert!(!out.contains(internal), "{internal}: {out}");
    }
    assert!(out.contains("doctor stopped there"), "{out}");
    assert!(!out.contains("right") && !out.contains("wrong"), "{out}");
}

/// A TLS URL to a port that never answers TLS: one handshake, then probe's one line, not six
/// handshakes and six copies of the timeout.
#[tokio::test]
async fn a_tls_mismatch_stops_at_the_first_handshake() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept() {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(s);
        }
    });
    let url = format!("rediss://{addr}");
    let (code, out, err) = doctor(&[&url, "--connect-timeout", "1s"]).await;
    assert_eq!(code, maintwatch::exit::CONNECTION_FAILED, "{out}{err}");
    assert_eq!(out.matches("during the TLS handshake").count(), 1, "{out}");
    assert!(
        out.starts_with(&format!("{url}: timed out after 1s")),
        "{out}"
    );
    assert!(out.contains("is TLS enabled on this port?"), "{out}");
    assert!(out.contains("doctor stopped there"), "{out}");
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "{out}"
    );
    // Off a terminal there is no progress line.
    assert!(!err.contains("doctor: asking"), "{err}");
    let (_, json, _) = doctor(&[&url, "--connect-timeout", "1s", "--json"]).await;
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["server"]["opt_in"]["outcome"], "timed_out", "{json}");
    assert!(
        v["stopped"].as_str().unwrap().contains("TLS handshake"),
        "{json}"
    );
}

#[tokio::test]
async fn a_tls_redis_server_is_diagnosed_over_tls() {
    let test = "doctor against a TLS redis-server";
    let dir = tempfile::tempdir().unwrap();
    let [ca, cert, key] = pki(dir.path());
    let tls_port = common::closed_port().port().to_string();
    let extra = [
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-ca-cert-file",
        &ca,
        "--tls-auth-clients",
        "no",
    ];
    let Some(_redis) = common::RealRedis::start(test, &extra).await else {
        return;
    };
    let url = format!("rediss://127.0.0.1:{tls_port}");
    let (code, out, err) = doctor(&["--json", "--cacert", &ca, &url]).await;
    assert_eq!(code, maintwatch::exit::REFUSED, "{out}\n{err}");
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["tls"], true);
    assert_eq!(json["server"]["opt_in"]["detail"], REFUSAL);
    assert_eq!(json["errorstats"]["delta"], serde_json::json!([["ERR", 1]]));
    // TLS: the clients that choose by TLS ask for a name; redis-py follows the typed address.
    assert_eq!(client(&json, "go-redis")["auto_type"], "internal-fqdn");
    assert_eq!(client(&json, "node-redis")["auto_type"], "external-fqdn");
    assert_eq!(client(&json, "redis-py")["auto_type"], "internal-ip");
    assert!(json["caveats"].to_string().contains("TLS to an IP address"));

    // Without the CA the certificate is not trusted: a connection failure, exit 6.
    let (code, out, _) = doctor(&["--json", &url]).await;
    assert_eq!(code, maintwatch::exit::CONNECTION_FAILED, "{out}");
    let json: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(json["server"]["opt_in"]["outcome"], "tls_failed");
}

/// `watch --clients`: one more line under each notification, none under other lines, and the
/// JSON output unchanged.
#[tokio::test]
async fn watch_clients_adds_one_line_per_notification() {
    let sim = Simulator::start(SimOptions::new(
        scenarios::by_name("single-proxy").expect("bundled"),
    ))
    .await
    .expect("simulator starts");
    let url = format!("redis://{}", sim.proxies()[0]);
    let run = |extra: &'static [&'static str]| {
        let url = url.clone();
        async move {
            let out = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                common::maintwatch_async([
                    "watch", &url, "--count", "1", "--color", "never", "--no-dns",
                ])
                .args(extra)
                .output(),
            )
            .await
            .expect("the watch ends after one notification")
            .unwrap();
            String::from_utf8(out.stdout).unwrap()
        }
    };
    let text = run(&["--clients"]).await;
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("MOVING seq 0"))
        .expect(&text);
    // The entry's rows: the MOVING may come with the opt-in's reply, and then it is marked so
    // (two rows at the 80 columns of a pipe) and has a note under its bytes. The clients line
    // belongs to the entry: it comes before the next time-stamped line.
    let rows: Vec<&str> = lines[at + 1..]
        .iter()
        .take_while(|l| l.starts_with(' '))
        .copied()
        .collect();
    assert!(
        rows.iter().any(|l| l.contains(r">4\r\n$6\r\nMOVING")),
        "the bytes under the entry:\n{text}"
    );
    let clients = rows
        .iter()
        .find(|l| l.trim_start().starts_with("clients:"))
        .unwrap_or_else(|| panic!("a clients line under the entry:\n{text}"));
    assert_eq!(
        clients.trim_start(),
        "clients: redis-py acts; node-redis FAILS (AssertionError (no target, and it asked for \
         its auto type, not none) in an async handler: an unhandled promise rejection); go-redis \
         acts; Lettuce acts; Jedis unknown; ioredis acts; StackExchange.Redis unknown",
        "{text}"
    );
    assert_eq!(text.matches("clients:").count(), 1, "{text}");

    let asked_none = run(&["--clients", "--endpoint-type", "none"]).await;
    assert!(
        asked_none.contains("clients: redis-py acts; node-redis acts;"),
        "{asked_none}"
    );

    let json = run(&["--clients", "--json"]).await;
    assert!(!json.contains("clients"), "{json}");
}
