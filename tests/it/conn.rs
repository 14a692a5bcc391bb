//! Connection, TLS and probe tests over real sockets (one test binary: linking is slow).
//!
//! The server side is a tiny RESP3 responder written here, so each test scripts exactly the bytes
//! a server sends (Redis OSS's refusal, a catch-up replay in the same write as `+OK`, a MOVING
//! cut across two reads ...); TLS tests wrap it in tokio-rustls with a CA made by rcgen in the
//! test. A real redis-server is used when `MAINTWATCH_REDIS_SERVER` names one.
//!
//! No test measures time: where the server must act "later", it acts on a command the client
//! sends (PING), so every ordering is decided by the protocol, not by a sleep.

use crate::common;

use common::{closed_port, RealRedis};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::Parser;
use maintwatch::cli::connect::ConnectArgs;
use maintwatch::exit;
use maintwatch::network::conn::probe::{
    self, MaintenanceState, ProbeOutcome, ProbeReport, PushRole,
};
use maintwatch::network::conn::{
    self, ConnectError, ConnectOptions, EndpointType, Hello, Item, OptIn, TlsFailure,
};
use maintwatch::network::dns::DnsResolver;
use maintwatch::protocol::notification::{Classified, Kind};
use maintwatch::protocol::resp::{Frame, StreamReader};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::rustls::{
    self,
    pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
    server::WebPkiClientVerifier,
    RootCertStore, ServerConfig,
};
use tokio_rustls::TlsAcceptor;

// ---------------------------------------------------------------------------------------------
// Bytes servers send
// ---------------------------------------------------------------------------------------------

const HELLO_MAP: &[u8] = b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n\
$5\r\nproto\r\n:3\r\n$2\r\nid\r\n:1\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n\
$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
const OK: &[u8] = b"+OK\r\n";
const OSS_REFUSAL: &[u8] = b"-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n";
const OSS_REFUSAL_TEXT: &str = "ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.";
const NOPROTO: &[u8] = b"-NOPROTO unsupported protocol version\r\n";
const UNKNOWN_HELLO: &[u8] = b"-ERR unknown command 'HELLO', with args beginning with: '3' \r\n";
const WRONGPASS: &[u8] = b"-WRONGPASS invalid username-password pair or user is disabled.\r\n";
const NOAUTH: &[u8] = b"-NOAUTH HELLO must be called with the client already authenticated\r\n";
const MIGRATED: &[u8] = b">3\r\n$8\r\nMIGRATED\r\n:1\r\n$6\r\n[\"27\"]\r\n";
const MOVING: &[u8] = b">4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n_\r\n";
const INVALIDATE: &[u8] = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n";

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

// ---------------------------------------------------------------------------------------------
// The responder
// ---------------------------------------------------------------------------------------------

/// What the responder sends. Commands are answered in order, one write per reply.
#[derive(Clone)]
struct Script {
    /// Sent in the same write as the HELLO reply, before it (pushes the client must keep).
    before_hello: Vec<u8>,
    hello: Vec<u8>,
    /// `(user, password)` HELLO must carry: wrong gives WRONGPASS, none gives NOAUTH.
    password: Option<(String, String)>,
    /// The opt-in reply and whatever follows it in the same write.
    opt_in: Vec<u8>,
    /// Written in a second write after the opt-in reply.
    after_opt_in: Option<Vec<u8>>,
    /// Close the connection after the opt-in reply (and `after_opt_in`).
    close_after_opt_in: bool,
    /// The answer to PING (`+PONG` when `None`); an empty answer closes the connection.
    on_ping: Option<Vec<u8>>,
}

impl Script {
    fn accepting() -> Script {
        Script {
            before_hello: Vec::new(),
            hello: HELLO_MAP.to_vec(),
            password: None,
            opt_in: OK.to_vec(),
            after_opt_in: None,
            close_after_opt_in: false,
            on_ping: None,
        }
    }

    fn opt_in(bytes: &[u8]) -> Script {
        Script {
            opt_in: bytes.to_vec(),
            ..Script::accepting()
        }
    }

    fn hello(bytes: &[u8]) -> Script {
        Script {
            hello: bytes.to_vec(),
            ..Script::accepting()
        }
    }
}

type Log = Arc<Mutex<Vec<Vec<String>>>>;

struct Responder {
    addr: SocketAddr,
    log: Log,
}

impl Responder {
    async fn start(script: Script) -> Responder {
        Responder::start_on("127.0.0.1:0", script, None).await
    }

    async fn start_tls(script: Script, acceptor: TlsAcceptor) -> Responder {
        Responder::start_on("127.0.0.1:0", script, Some(acceptor)).await
    }

    async fn start_on(bind: &str, script: Script, tls: Option<TlsAcceptor>) -> Responder {
        let listener = TcpListener::bind(bind).await.expect("bind the responder");
        let addr = listener.local_addr().unwrap();
        let log: Log = Arc::default();
        let script = Arc::new(script);
        let task_log = log.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (script, log, tls) = (script.clone(), task_log.clone(), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        None => serve(tcp, &script, &log).await,
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(tcp).await {
                                serve(stream, &script, &log).await;
                            }
                        }
                    }
                });
            }
        });
        Responder { addr, log }
    }

    fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Every command received so far, on all connections.
    fn commands(&self) -> Vec<Vec<String>> {
        self.log.lock().unwrap().clone()
    }

    fn command(&self, name: &str) -> Option<Vec<String>> {
        self.commands()
            .into_iter()
            .find(|c| c[0].eq_ignore_ascii_case(name))
    }
}

async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    script: &Script,
    log: &Mutex<Vec<Vec<String>>>,
) {
    let mut reader = StreamReader::default();
    let mut buf = [0u8; 4096];
    loop {
        let n = match s.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        reader.extend(&buf[..n]);
        let mut commands = Vec::new();
        let garbage = reader
            .drain(|frame, _, _| {
                if let Frame::Array(items) = frame {
                    commands.push(
                        items
                            .iter()
                            .map(|i| {
                                String::from_utf8_lossy(i.as_text().unwrap_or(b"")).into_owned()
                            })
                            .collect::<Vec<_>>(),
                    );
                }
            })
            .is_err();
        for cmd in commands {
            log.lock().unwrap().push(cmd.clone());
            let name = cmd[0].to_ascii_uppercase();
            let reply = match name.as_str() {
                "HELLO" => hello_reply(&cmd, script),
                "CLIENT" => script.opt_in.clone(),
                "SELECT" => OK.to_vec(),
                "PING" => script
                    .on_ping
                    .clone()
                    .unwrap_or_else(|| b"+PONG\r\n".to_vec()),
                _ => b"-ERR unknown command\r\n".to_vec(),
            };
            if name == "PING" && reply.is_empty() {
                return;
            }
            if s.write_all(&reply).await.is_err() || s.flush().await.is_err() {
                return;
            }
            if name == "CLIENT" {
                if let Some(more) = &script.after_opt_in {
                    if s.write_all(more).await.is_err() || s.flush().await.is_err() {
                        return;
                    }
                }
                if script.close_after_opt_in {
                    let _ = s.shutdown().await;
                    return;
                }
            }
        }
        if garbage {
            // What Redis does with bytes it cannot parse: an error, then close.
            let _ = s.write_all(b"-ERR Protocol error\r\n").await;
            let _ = s.shutdown().await;
            return;
        }
    }
}

fn hello_reply(cmd: &[String], script: &Script) -> Vec<u8> {
    if let Some((user, pass)) = &script.password {
        match cmd.iter().position(|a| a.eq_ignore_ascii_case("AUTH")) {
            None => return NOAUTH.to_vec(),
            Some(i) => {
                if cmd.get(i + 1) != Some(user) || cmd.get(i + 2) != Some(pass) {
                    return WRONGPASS.to_vec();
                }
            }
        }
    }
    cat(&[&script.before_hello, &script.hello])
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

#[derive(Parser)]
struct Flags {
    #[command(flatten)]
    connect: ConnectArgs,
}

/// Options from a redis-cli style command line, through the real flag parser.
fn options(args: &[&str]) -> ConnectOptions {
    let mut flags =
        Flags::try_parse_from(std::iter::once("maintwatch").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("flags {args:?}: {e}"));
    // A REDISCLI_AUTH in the developer's environment must not change what the tests send.
    if !args.contains(&"-a") {
        flags.connect.password = None;
    }
    ConnectOptions::from_args(&flags.connect).unwrap_or_else(|e| panic!("options {args:?}: {e}"))
}

/// Probe without lingering: what arrives with the replies is all that is asserted.
async fn probe_now(opts: &ConnectOptions) -> ProbeReport {
    probe::probe(opts, None, Duration::ZERO).await
}

async fn connect_plain(opts: &ConnectOptions) -> conn::Connection {
    let ip: IpAddr = opts.host().parse().unwrap();
    conn::connect_to(opts, &[ip]).await.expect("connect")
}

// ---------------------------------------------------------------------------------------------
// Handshake outcomes against the responder
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn accepted_reports_the_server_and_sends_the_auto_endpoint_type() {
    let server = Responder::start(Script::accepting()).await;
    let report = probe_now(&options(&["-u", &server.url()])).await;
    assert_eq!(report.outcome, ProbeOutcome::Accepted);
    assert_eq!(report.outcome.exit_code(), exit::SUCCESS);
    assert_eq!(report.address, Some(server.addr));
    let hello = report.hello.as_ref().expect("HELLO info");
    assert_eq!(hello.server.as_deref(), Some("redis"));
    assert_eq!(hello.version.as_deref(), Some("7.4.0"));
    assert_eq!(hello.mode.as_deref(), Some("standalone"));
    assert_eq!((hello.proto, hello.id), (Some(3), Some(1)));
    // Loopback is internal, plain TCP is -ip.
    assert_eq!(report.endpoint_type, Some(EndpointType::InternalIp));
    assert_eq!(
        server.command("CLIENT").unwrap(),
        [
            "CLIENT",
            "MAINT_NOTIFICATIONS",
            "ON",
            "moving-endpoint-type",
            "internal-ip"
        ]
    );
    assert_eq!(
        server.command("HELLO").unwrap(),
        ["HELLO", "3", "SETNAME", "maintwatch"]
    );
    assert!(report.pushes.is_empty() && report.maintenance().is_none());
}

#[tokio::test]
async fn endpoint_type_choices_reach_the_wire() {
    let server = Responder::start(Script::accepting()).await;
    let url = server.url();
    probe_now(&options(&["-u", &url, "--endpoint-type", "server-default"])).await;
    probe_now(&options(&["-u", &url, "--endpoint-type", "external-fqdn"])).await;
    let optins: Vec<Vec<String>> = server
        .commands()
        .into_iter()
        .filter(|c| c[0] == "CLIENT")
        .collect();
    assert_eq!(optins[0], ["CLIENT", "MAINT_NOTIFICATIONS", "ON"]);
    assert_eq!(
        optins[1],
        [
            "CLIENT",
            "MAINT_NOTIFICATIONS",
            "ON",
            "moving-endpoint-type",
            "external-fqdn"
        ]
    );
}

#[tokio::test]
async fn refused_keeps_the_exact_text_and_later_replies_stay_in_order() {
    let server = Responder::start(Script::opt_in(OSS_REFUSAL)).await;
    let opts = options(&["-u", &server.url()]);
    let mut c = connect_plain(&opts).await;
    let hs = c.handshake(&opts).await.unwrap();
    assert_eq!(hs.opt_in, OptIn::Refused(OSS_REFUSAL_TEXT.into()));
    assert_eq!(hs.opt_in_reply.as_ref().unwrap().raw, OSS_REFUSAL);
    assert!(matches!(hs.hello, Hello::Resp3(_)));
    // The next reply read is PING's, not a stale one.
    c.send(&[b"PING"]).await.unwrap();
    let pong = c.next().await.unwrap().unwrap();
    assert_eq!(pong.item, Item::Reply("PONG".into(), false));

    let report = probe_now(&opts).await;
    assert_eq!(
        report.outcome,
        ProbeOutcome::Refused {
            text: OSS_REFUSAL_TEXT.into()
        }
    );
    assert_eq!(report.outcome.exit_code(), exit::REFUSED);
}

#[tokio::test]
async fn resp3_unavailable_on_noproto_and_on_an_unknown_hello() {
    for reply in [NOPROTO, UNKNOWN_HELLO] {
        let server = Responder::start(Script::hello(reply)).await;
        let report = probe_now(&options(&["-u", &server.url()])).await;
        let text = std::str::from_utf8(&reply[1..reply.len() - 2]).unwrap();
        assert_eq!(
            report.outcome,
            ProbeOutcome::Resp3Unavailable { text: text.into() }
        );
        assert_eq!(report.outcome.exit_code(), exit::RESP3_UNAVAILABLE);
        // The opt-in is pointless without RESP3 and is not sent.
        assert!(server.command("CLIENT").is_none());
    }
}

#[tokio::test]
async fn hello_answered_with_protocol_2_is_resp3_unavailable() {
    let resp2 = b"%1\r\n$5\r\nproto\r\n:2\r\n";
    let server = Responder::start(Script::hello(resp2)).await;
    let report = probe_now(&options(&["-u", &server.url()])).await;
    assert!(
        matches!(&report.outcome, ProbeOutcome::Resp3Unavailable { text } if text.contains("protocol 2")),
        "{:?}",
        report.outcome
    );
}

#[tokio::test]
async fn wrong_or_missing_password_is_an_authentication_failure() {
    let script = Script {
        password: Some(("default".into(), "right-pass".into())),
        ..Script::accepting()
    };
    let server = Responder::start(script).await;
    let url = server.url();

    let wrong = options(&["-u", &url, "-a", "hunter2"]);
    let report = probe_now(&wrong).await;
    assert_eq!(
        report.outcome,
        ProbeOutcome::AuthFailed {
            text: "WRONGPASS invalid username-password pair or user is disabled.".into()
        }
    );
    assert_eq!(report.outcome.exit_code(), exit::AUTH_FAILED);
    // The password went out once, inside HELLO, and nowhere else.
    assert_eq!(
        server.command("HELLO").unwrap(),
        [
            "HELLO",
            "3",
            "AUTH",
            "default",
            "hunter2",
            "SETNAME",
            "maintwatch"
        ]
    );
    let mut c = connect_plain(&wrong).await;
    let e = c.handshake(&wrong).await.unwrap_err();
    assert!(e.is_auth(), "{e}");
    for shown in [
        e.to_string(),
        format!("{e:?}"),
        format!("{wrong:?}"),
        report.json_line(),
    ] {
        assert!(!shown.contains("hunter2"), "password leaked: {shown}");
    }

    let none = probe_now(&options(&["-u", &url])).await;
    assert!(
        matches!(none.outcome, ProbeOutcome::AuthFailed { ref text } if text.starts_with("NOAUTH"))
    );

    let right = probe_now(&options(&[
        "-u",
        &format!("redis://right-pass@{}", server.addr),
    ]))
    .await;
    assert_eq!(right.outcome, ProbeOutcome::Accepted);
}

#[tokio::test]
async fn catch_up_replay_in_the_same_read_as_the_ok_is_returned_with_its_bytes() {
    let server = Responder::start(Script::opt_in(&cat(&[OK, MIGRATED]))).await;
    let opts = options(&["-u", &server.url()]);
    let mut c = connect_plain(&opts).await;
    let hs = c.handshake(&opts).await.unwrap();
    assert_eq!(hs.opt_in, OptIn::Accepted);
    assert_eq!(hs.early.len(), 1, "{:?}", hs.early);
    let replay = &hs.early[0];
    assert_eq!(replay.raw, MIGRATED);
    // Offsets count from the stream's start: after the HELLO map and the +OK.
    assert_eq!(replay.offset, (HELLO_MAP.len() + OK.len()) as u64);
    assert_eq!(
        replay.at,
        hs.opt_in_reply.as_ref().unwrap().at,
        "read in the same read"
    );
    let n = replay.notification().expect("a maintenance notification");
    assert_eq!((n.kind, n.seq), (Kind::Migrated, Some(1)));

    let report = probe_now(&opts).await;
    assert_eq!(report.outcome.exit_code(), exit::SUCCESS);
    assert_eq!(report.pushes[0].role, PushRole::CatchUp);
    assert!(report.pushes[0].with_opt_in);
    let (state, n) = report.maintenance().unwrap();
    assert_eq!(
        (state, n.kind, n.seq),
        (MaintenanceState::Completed, Kind::Migrated, Some(1))
    );
    assert_eq!(report.catch_up().len(), 1);
    assert!(
        report
            .maintenance_text()
            .starts_with("completed: MIGRATED seq 1"),
        "{}",
        report.maintenance_text()
    );
}

#[tokio::test]
async fn a_moving_re_sent_with_the_opt_in_means_a_maintenance_under_way() {
    let server = Responder::start(Script::opt_in(&cat(&[OK, MOVING, MIGRATED]))).await;
    let report = probe_now(&options(&["-u", &server.url()])).await;
    assert_eq!(report.outcome, ProbeOutcome::Accepted);
    let roles: Vec<PushRole> = report.pushes.iter().map(|p| p.role).collect();
    assert_eq!(roles, [PushRole::Moving, PushRole::CatchUp]);
    let (state, n) = report.maintenance().unwrap();
    assert_eq!(state, MaintenanceState::UnderWay);
    assert_eq!((n.kind, n.seq, n.time), (Kind::Moving, Some(7), Some(15)));
    assert_eq!(report.moving().unwrap().seq, Some(7));
    assert!(report
        .maintenance_text()
        .starts_with("under way: MOVING seq 7 window 15 s"));
}

#[tokio::test]
async fn pushes_before_a_reply_are_kept_and_do_not_take_its_place() {
    let script = Script {
        before_hello: INVALIDATE.to_vec(),
        opt_in: cat(&[MOVING, OK]),
        ..Script::accepting()
    };
    let server = Responder::start(script).await;
    let opts = options(&["-u", &server.url()]);
    let mut c = connect_plain(&opts).await;
    let hs = c.handshake(&opts).await.unwrap();
    assert_eq!(hs.server(), Some("redis"));
    assert_eq!(hs.opt_in, OptIn::Accepted);
    let raws: Vec<&[u8]> = hs.early.iter().map(|r| &r.raw[..]).collect();
    assert_eq!(raws, [INVALIDATE, MOVING]);
    assert!(
        matches!(&hs.early[0].item, Item::Push(Classified::OtherPush(p)) if p.name.as_deref() == Some("invalidate"))
    );
    assert_eq!(hs.early[1].notification().unwrap().kind, Kind::Moving);
    assert_eq!(hs.early[0].offset, 0);
    assert_eq!(
        hs.sent(),
        Some("CLIENT MAINT_NOTIFICATIONS ON moving-endpoint-type internal-ip")
    );
}

#[tokio::test]
async fn a_push_cut_across_reads_is_delivered_whole_by_the_reader() {
    // Half a MOVING with the +OK; the rest only when the client PINGs, so the cut is certain.
    let (head, tail) = MOVING.split_at(9);
    let script = Script {
        opt_in: cat(&[OK, head]),
        on_ping: Some(cat(&[tail, b"+PONG\r\n"])),
        ..Script::accepting()
    };
    let server = Responder::start(script).await;
    let opts = options(&["-u", &server.url()]);
    let mut c = connect_plain(&opts).await;
    let hs = c.handshake(&opts).await.unwrap();
    assert!(hs.early.is_empty(), "an incomplete frame is not handed out");
    let (mut reader, mut writer) = c.into_split();
    writer.send(&[b"PING"]).await.unwrap();
    let moving = reader.next().await.unwrap().unwrap();
    assert_eq!(moving.raw, MOVING);
    assert_eq!(moving.offset, (HELLO_MAP.len() + OK.len()) as u64);
    assert_eq!(moving.notification().unwrap().seq, Some(7));
    let pong = reader.next().await.unwrap().unwrap();
    assert_eq!(pong.item, Item::Reply("PONG".into(), false));
    assert_eq!(
        reader.offset(),
        (HELLO_MAP.len() + OK.len() + MOVING.len() + 7) as u64
    );
}

#[tokio::test]
async fn a_framing_error_names_its_offset_after_the_good_frames() {
    let script = Script {
        on_ping: Some(b"+PONG\r\n$2\r\nab\r\r".to_vec()),
        ..Script::accepting()
    };
    let server = Responder::start(script).await;
    let opts = options(&["-u", &server.url()]);
    let mut c = connect_plain(&opts).await;
    c.handshake(&opts).await.unwrap();
    let (mut reader, mut writer) = c.into_split();
    writer.send(&[b"PING"]).await.unwrap();
    assert_eq!(
        reader.next().await.unwrap().unwrap().item,
        Item::Reply("PONG".into(), false)
    );
    let e = reader.next().await.unwrap_err();
    let base = (HELLO_MAP.len() + OK.len() + 7) as u64;
    let (offset, text) = e.framing().expect("a framing error");
    assert_eq!(offset, base + 7, "{text}");
    assert!(
        e.to_string().contains(&format!("at byte {}", base + 7)),
        "{e}"
    );
    // Sticky: the stream cannot be trusted past it.
    assert!(reader.next().await.unwrap_err().framing().is_some());
}

#[tokio::test]
async fn a_server_close_is_a_clean_end_of_stream() {
    let script = Script {
        on_ping: Some(Vec::new()),
        ..Script::accepting()
    };
    let server = Responder::start(script).await;
    let opts = options(&["-u", &server.url()]);
    let mut c = connect_plain(&opts).await;
    c.handshake(&opts).await.unwrap();
    let (mut reader, mut writer) = c.into_split();
    writer.send(&[b"PING"]).await.unwrap();
    assert!(reader.next().await.unwrap().is_none());
    assert!(reader.next().await.unwrap().is_none());
}

#[tokio::test]
async fn a_replay_in_a_later_read_is_caught_by_the_linger() {
    // The replay is a second write, and the server then closes: the linger ends on the close,
    // so the generous linger bound is never waited out.
    let script = Script {
        after_opt_in: Some(MIGRATED.to_vec()),
        close_after_opt_in: true,
        ..Script::accepting()
    };
    let server = Responder::start(script).await;
    let report = probe::probe(
        &options(&["-u", &server.url()]),
        None,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(report.outcome, ProbeOutcome::Accepted);
    assert_eq!(report.catch_up().len(), 1, "{:?}", report.pushes);
}

#[tokio::test]
async fn select_is_sent_for_a_database_and_the_opt_in_follows() {
    let server = Responder::start(Script::accepting()).await;
    let report = probe_now(&options(&["-u", &format!("{}/3", server.url())])).await;
    assert_eq!(report.outcome, ProbeOutcome::Accepted);
    let names: Vec<String> = server.commands().into_iter().map(|c| c.join(" ")).collect();
    assert_eq!(names[1], "SELECT 3");
    assert!(names[2].starts_with("CLIENT MAINT_NOTIFICATIONS ON"));
    assert!(report.endpoint.ends_with("/3"), "{}", report.endpoint);
}

// ---------------------------------------------------------------------------------------------
// Connection failures
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_closed_port_is_unreachable() {
    let addr = closed_port();
    let opts = options(&["-h", "127.0.0.1", "-p", &addr.port().to_string()]);
    let report = probe_now(&opts).await;
    assert!(
        matches!(&report.outcome, ProbeOutcome::Unreachable { detail } if detail.contains(&addr.to_string())),
        "{:?}",
        report.outcome
    );
    assert_eq!(report.outcome.exit_code(), exit::CONNECTION_FAILED);
    let e = conn::connect_to(&opts, &[addr.ip()]).await.unwrap_err();
    assert!(matches!(e, ConnectError::Unreachable { .. }), "{e}");
    assert!(e.to_string().starts_with("redis://127.0.0.1:"), "{e}");
}

#[tokio::test]
async fn garbage_instead_of_a_reply_is_a_protocol_error_with_its_offset() {
    let server = Responder::start(Script::hello(b"HTTP/1.1 400 Bad Request\r\n")).await;
    let report = probe_now(&options(&["-u", &server.url()])).await;
    assert!(
        matches!(&report.outcome, ProbeOutcome::ProtocolError { detail } if detail.contains("at byte 0")),
        "{:?}",
        report.outcome
    );
    assert_eq!(report.outcome.exit_code(), exit::CONNECTION_FAILED);
}

#[tokio::test]
async fn a_hostname_is_resolved_through_the_dns_server_flag() {
    use maintwatch::simulator::sim::dns_server::SimDns;
    let server = Responder::start(Script::accepting()).await;
    let dns = SimDns::start("127.0.0.1:0".parse().unwrap(), "sim.maintwatch.test.")
        .await
        .unwrap();
    // The first address refuses (nothing listens on 127.0.0.2 at that port): the next is tried.
    let addrs: Vec<IpAddr> = vec!["127.0.0.2".parse().unwrap(), "127.0.0.1".parse().unwrap()];
    dns.set_records("db.sim.maintwatch.test.", &addrs, 5).await;
    let opts = options(&[
        "-h",
        "db.sim.maintwatch.test",
        "-p",
        &server.addr.port().to_string(),
        "--dns-server",
        &dns.addr().to_string(),
    ]);
    assert_eq!(opts.dns_options().server, Some(dns.addr()));
    let resolver = DnsResolver::new(&opts.dns_options()).unwrap();
    let mut c = conn::connect(&opts, &resolver).await.unwrap();
    assert_eq!(c.peer(), server.addr);
    assert!(c.handshake(&opts).await.unwrap().accepted());
    let report = probe::probe(&opts, Some(&resolver), Duration::ZERO).await;
    assert_eq!(report.outcome, ProbeOutcome::Accepted);

    dns.set_records("db.sim.maintwatch.test.", &[], 5).await;
    let report = probe::probe(&opts, Some(&resolver), Duration::ZERO).await;
    assert!(
        matches!(&report.outcome, ProbeOutcome::Unreachable { detail } if detail.contains("db.sim.maintwatch.test")),
        "{:?}",
        report.outcome
    );
    dns.shutdown().await;
}

#[tokio::test]
async fn probe_all_reports_in_input_order_and_the_worst_code_wins() {
    let accepting = Responder::start(Script::accepting()).await;
    let refusing = Responder::start(Script::opt_in(OSS_REFUSAL)).await;
    let closed = closed_port();
    let config = Flags::try_parse_from(["maintwatch"])
        .unwrap()
        .connect
        .config();
    let urls = [
        refusing.url(),
        format!("redis://{closed}"),
        accepting.url(),
        accepting.url(),
    ];
    let endpoints = urls
        .iter()
        .map(|u| {
            config
                .options_for(&conn::RedisUrl::parse(u).unwrap())
                .unwrap()
        })
        .collect();
    let mut streamed = Vec::new();
    let reports = probe::probe_all(endpoints, None, 2, Duration::ZERO, |r| {
        streamed.push(r.endpoint.clone())
    })
    .await;
    let names: Vec<&str> = reports.iter().map(|r| r.outcome.name()).collect();
    assert_eq!(names, ["refused", "unreachable", "accepted", "accepted"]);
    let endpoints: Vec<String> = reports.iter().map(|r| r.endpoint.clone()).collect();
    assert_eq!(streamed, endpoints);
    assert_eq!(probe::exit_code(&reports), exit::CONNECTION_FAILED);
    assert_eq!(probe::exit_code(&reports[2..]), exit::SUCCESS);
    assert_eq!(probe::exit_code(&reports[..1]), exit::REFUSED);
}

#[tokio::test]
async fn a_json_line_carries_the_outcome_and_the_replay() {
    let server = Responder::start(Script::opt_in(&cat(&[OK, MIGRATED]))).await;
    let report = probe_now(&options(&["-u", &server.url()])).await;
    let v: serde_json::Value = serde_json::from_str(&report.json_line()).unwrap();
    assert_eq!(v["type"], "probe");
    assert_eq!(v["v"], maintwatch::observe::record::SCHEMA_VERSION);
    assert_eq!(v["outcome"], "accepted");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["address"], server.addr.to_string());
    assert_eq!(v["hello"]["version"], "7.4.0");
    assert_eq!(v["endpoint_type"], "internal-ip");
    assert_eq!(v["maintenance"]["state"], "completed");
    assert_eq!(v["maintenance"]["kind"], "MIGRATED");
    assert_eq!(v["maintenance"]["seq"], 1);
    assert_eq!(v["pushes"][0]["role"], "catch_up");
    assert_eq!(
        v["pushes"][0]["raw"],
        ">3\\r\\n$8\\r\\nMIGRATED\\r\\n:1\\r\\n$6\\r\\n[\"27\"]\\r\\n"
    );
    assert_eq!(v["pushes"][0]["parsed"]["class"], "maintenance");
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "address",
            "detail",
            "elapsed_ms",
            "endpoint",
            "endpoint_type",
            "exit_code",
            "hello",
            "maintenance",
            "outcome",
            "pushes",
            "tls",
            "tls_failure",
            "type",
            "v"
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------------

/// A CA made in the test, and files of what it issues.
struct Pki {
    dir: tempfile::TempDir,
    ca: CertifiedIssuer<'static, KeyPair>,
}

struct Issued {
    cert: PathBuf,
    key: PathBuf,
    cert_pem: String,
    key_pem: String,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        Pki { dir, ca }
    }

    fn ca_path(&self) -> String {
        self.dir.path().join("ca.pem").display().to_string()
    }

    fn issue(&self, stem: &str, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Issued {
        let mut params =
            CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.distinguished_name.push(DnType::CommonName, stem);
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        let issued = Issued {
            cert: self.dir.path().join(format!("{stem}.crt")),
            key: self.dir.path().join(format!("{stem}.key")),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        };
        std::fs::write(&issued.cert, &issued.cert_pem).unwrap();
        std::fs::write(&issued.key, &issued.key_pem).unwrap();
        issued
    }

    fn server(&self, names: &[&str]) -> Issued {
        self.issue("server", names, ExtendedKeyUsagePurpose::ServerAuth)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A TLS acceptor for `server`; with `client_ca`, client certificates it signed are required.
fn acceptor(server: &Issued, client_ca: Option<&Pki>) -> TlsAcceptor {
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(server.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_slice(server.key_pem.as_bytes()).unwrap();
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(pki) => {
            let mut roots = RootCertStore::empty();
            roots.add(pki.ca.der().clone()).unwrap();
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    TlsAcceptor::from(Arc::new(builder.with_single_cert(chain, key).unwrap()))
}

fn rediss(server: &Responder) -> String {
    format!("rediss://{}", server.addr)
}

#[tokio::test]
async fn tls_verifies_with_cacert_and_sni() {
    let pki = Pki::new("test CA");
    let server = Responder::start_tls(
        Script::opt_in(&cat(&[OK, MIGRATED])),
        acceptor(&pki.server(&["redis.test"]), None),
    )
    .await;
    let opts = options(&[
        "-u",
        &rediss(&server),
        "--cacert",
        &pki.ca_path(),
        "--sni",
        "redis.test",
    ]);
    assert!(opts.tls() && !opts.insecure() && opts.warnings().is_empty());
    let report = probe_now(&opts).await;
    assert_eq!(
        report.outcome,
        ProbeOutcome::Accepted,
        "{:?}",
        report.outcome
    );
    assert!(report.tls);
    // TLS means the fqdn form under auto.
    assert_eq!(report.endpoint_type, Some(EndpointType::InternalFqdn));
    assert_eq!(report.catch_up().len(), 1, "pushes through TLS arrive too");

    // --tls with redis:// and an IP SAN, without --sni.
    let server = Responder::start_tls(
        Script::accepting(),
        acceptor(&pki.server(&["127.0.0.1"]), None),
    )
    .await;
    let opts = options(&[
        "-u",
        &server.url(),
        "--tls",
        "--cacertdir",
        &pki.dir.path().display().to_string(),
    ]);
    assert_eq!(probe_now(&opts).await.outcome, ProbeOutcome::Accepted);
}

#[tokio::test]
async fn tls_with_a_wrong_name_fails_clearly() {
    let pki = Pki::new("test CA");
    let server = Responder::start_tls(
        Script::accepting(),
        acceptor(&pki.server(&["redis.test"]), None),
    )
    .await;
    for (extra, expected) in [(None, "127.0.0.1"), (Some("other.test"), "other.test")] {
        let url = rediss(&server);
        let ca = pki.ca_path();
        let mut args = vec!["-u", url.as_str(), "--cacert", ca.as_str()];
        args.extend(extra.iter().flat_map(|sni| ["--sni", sni]));
        let report = probe_now(&options(&args)).await;
        match &report.outcome {
            ProbeOutcome::TlsFailed { failure, detail } => {
                assert_eq!(*failure, TlsFailure::NameMismatch);
                assert!(
                    detail.contains(expected) && detail.contains("redis.test"),
                    "{detail}"
                );
            }
            other => panic!("expected a name mismatch, got {other:?}"),
        }
        assert_eq!(report.outcome.exit_code(), exit::CONNECTION_FAILED);
        assert_eq!(report.address, Some(server.addr));
        // What the table's note under this endpoint says.
        let note = report.outcome.note().unwrap_or_default();
        assert!(note.contains("name mismatch"), "{note}");
    }
}

#[tokio::test]
async fn tls_with_an_unknown_ca_fails_clearly() {
    let pki = Pki::new("test CA");
    let other = Pki::new("some other CA");
    let server = Responder::start_tls(
        Script::accepting(),
        acceptor(&pki.server(&["redis.test"]), None),
    )
    .await;
    let opts = options(&[
        "-u",
        &rediss(&server),
        "--cacert",
        &other.ca_path(),
        "--sni",
        "redis.test",
    ]);
    let report = probe_now(&opts).await;
    assert!(
        matches!(&report.outcome, ProbeOutcome::TlsFailed { failure: TlsFailure::UnknownCa, detail } if detail.contains("--cacert")),
        "{:?}",
        report.outcome
    );
    let v: serde_json::Value = serde_json::from_str(&report.json_line()).unwrap();
    assert_eq!(v["outcome"], "tls_failed");
    assert_eq!(v["tls_failure"], "unknown_ca");
    assert_eq!(v["exit_code"], exit::CONNECTION_FAILED);
}

#[tokio::test]
async fn mutual_tls_with_cert_and_key() {
    let pki = Pki::new("test CA");
    let client = pki.issue(
        "client",
        &["maintwatch.client"],
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let server = Responder::start_tls(
        Script::accepting(),
        acceptor(&pki.server(&["redis.test"]), Some(&pki)),
    )
    .await;
    let url = rediss(&server);
    let ca = pki.ca_path();
    let base = [
        "-u",
        url.as_str(),
        "--cacert",
        ca.as_str(),
        "--sni",
        "redis.test",
    ];

    let (cert, key) = (
        client.cert.display().to_string(),
        client.key.display().to_string(),
    );
    let mut with_cert = base.to_vec();
    with_cert.extend(["--cert", cert.as_str(), "--key", key.as_str()]);
    assert_eq!(
        probe_now(&options(&with_cert)).await.outcome,
        ProbeOutcome::Accepted
    );

    let without = probe_now(&options(&base)).await;
    assert!(
        matches!(
            without.outcome,
            ProbeOutcome::TlsFailed {
                failure: TlsFailure::ClientCertRequired,
                ..
            }
        ),
        "{:?}",
        without.outcome
    );

    // A client certificate from a CA the server does not trust.
    let stranger_ca = Pki::new("stranger CA");
    let stranger = stranger_ca.issue("client", &["x"], ExtendedKeyUsagePurpose::ClientAuth);
    let (cert, key) = (
        stranger.cert.display().to_string(),
        stranger.key.display().to_string(),
    );
    let mut wrong = base.to_vec();
    wrong.extend(["--cert", cert.as_str(), "--key", key.as_str()]);
    let report = probe_now(&options(&wrong)).await;
    assert!(
        matches!(
            report.outcome,
            ProbeOutcome::TlsFailed {
                failure: TlsFailure::ClientCertRejected,
                ..
            }
        ),
        "{:?}",
        report.outcome
    );
}

#[tokio::test]
async fn insecure_connects_to_anything_and_warns() {
    let pki = Pki::new("unknown CA");
    let server = Responder::start_tls(
        Script::accepting(),
        acceptor(&pki.server(&["elsewhere.test"]), None),
    )
    .await;
    let opts = options(&["-u", &rediss(&server), "--insecure"]);
    assert!(opts.insecure());
    let warnings = opts.warnings();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("NOT verified") && warnings[0].contains(&server.addr.to_string()));
    assert_eq!(probe_now(&opts).await.outcome, ProbeOutcome::Accepted);
}

#[tokio::test]
async fn tls_to_a_plaintext_port_and_plaintext_to_a_tls_port_are_told_apart() {
    let plain = Responder::start(Script::accepting()).await;
    let report = probe_now(&options(&["-u", &rediss(&plain), "--insecure"])).await;
    assert!(
        matches!(
            report.outcome,
            ProbeOutcome::TlsFailed {
                failure: TlsFailure::NotTls,
                ..
            }
        ),
        "{:?}",
        report.outcome
    );

    let pki = Pki::new("test CA");
    let tls = Responder::start_tls(
        Script::accepting(),
        acceptor(&pki.server(&["redis.test"]), None),
    )
    .await;
    let report = probe_now(&options(&["-u", &tls.url()])).await;
    assert_eq!(report.outcome.exit_code(), exit::CONNECTION_FAILED);
    let detail = report.outcome.detail().unwrap();
    assert!(
        detail.contains("TLS") && detail.contains("rediss://"),
        "{detail}"
    );
}

// ---------------------------------------------------------------------------------------------
// A real redis-server (MAINTWATCH_REDIS_SERVER=/path/to/redis-server)
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn real_redis_refuses_with_its_exact_text() {
    let Some(redis) = RealRedis::start("real_redis_refuses_with_its_exact_text", &[]).await else {
        return;
    };
    let opts = options(&["-u", &redis.url()]);
    let report = probe_now(&opts).await;
    assert_eq!(
        report.outcome,
        ProbeOutcome::Refused {
            text: OSS_REFUSAL_TEXT.into()
        }
    );
    assert_eq!(report.outcome.exit_code(), exit::REFUSED);
    let hello = report.hello.unwrap();
    assert_eq!(hello.server.as_deref(), Some("redis"));
    assert_eq!(hello.proto, Some(3));
    assert_eq!(hello.mode.as_deref(), Some("standalone"));

    // The refused opt-in left nothing behind: the next reply is PING's.
    let mut c = connect_plain(&opts).await;
    let hs = c.handshake(&opts).await.unwrap();
    assert_eq!(hs.opt_in_reply.unwrap().raw, OSS_REFUSAL);
    c.send(&[b"PING"]).await.unwrap();
    assert_eq!(
        c.next().await.unwrap().unwrap().item,
        Item::Reply("PONG".into(), false)
    );

    // A bare ON is refused the same way, and SELECT works before it.
    let opts = options(&[
        "-u",
        &format!("{}/2", redis.url()),
        "--endpoint-type",
        "server-default",
    ]);
    assert_eq!(probe_now(&opts).await.outcome.exit_code(), exit::REFUSED);
}

#[tokio::test]
async fn real_redis_with_a_wrong_password_is_an_authentication_failure() {
    let Some(redis) = RealRedis::start(
        "real_redis_with_a_wrong_password_is_an_authentication_failure",
        &["--requirepass", "right-pass"],
    )
    .await
    else {
        return;
    };
    let wrong = probe_now(&options(&["-u", &redis.url(), "-a", "wrong-pass"])).await;
    assert!(
        matches!(&wrong.outcome, ProbeOutcome::AuthFailed { text } if text.starts_with("WRONGPASS")),
        "{:?}",
        wrong.outcome
    );
    assert_eq!(wrong.outcome.exit_code(), exit::AUTH_FAILED);
    let missing = probe_now(&options(&["-u", &redis.url()])).await;
    assert!(
        matches!(&missing.outcome, ProbeOutcome::AuthFailed { text } if text.starts_with("NOAUTH")),
        "{:?}",
        missing.outcome
    );
    let right = probe_now(&options(&[
        "-u",
        &redis.url(),
        "--user",
        "default",
        "-a",
        "right-pass",
    ]))
    .await;
    assert_eq!(
        right.outcome.exit_code(),
        exit::REFUSED,
        "{:?}",
        right.outcome
    );
}

// ---------------------------------------------------------------------------------------------
// Strict replies, a self-signed --cacert, TLS flags on plain URLs, client certificates, timeouts
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn only_ok_accepts_the_opt_in_and_anything_else_is_an_unexpected_reply() {
    for reply in [
        &b":1\r\n"[..],
        b"%1\r\n+a\r\n+b\r\n",
        b"_\r\n",
        b"+QUEUED\r\n",
    ] {
        let server = Responder::start(Script::opt_in(reply)).await;
        let opts = options(&["-u", &server.url()]);
        let mut c = connect_plain(&opts).await;
        let hs = c.handshake(&opts).await.unwrap();
        assert!(
            matches!(&hs.opt_in, OptIn::Unexpected(t) if t.contains("unexpected reply")),
            "{reply:?}: {:?}",
            hs.opt_in
        );
        assert!(!hs.accepted());
        let report = probe_now(&opts).await;
        assert_ne!(report.outcome, ProbeOutcome::Accepted, "{reply:?}");
        let detail = report.outcome.detail().unwrap_or_default().to_string();
        assert!(
            detail.contains("unexpected reply") && detail.contains("only +OK"),
            "{detail}"
        );
    }
}

#[tokio::test]
async fn ok_to_hello_is_not_resp3() {
    let server = Responder::start(Script::hello(OK)).await;
    let report = probe_now(&options(&["-u", &server.url()])).await;
    assert!(
        matches!(&report.outcome, ProbeOutcome::Resp3Unavailable { text } if text.contains("not the map")),
        "{:?}",
        report.outcome
    );
    assert!(
        server.command("CLIENT").is_none(),
        "no opt-in without RESP3"
    );
}

#[tokio::test]
async fn a_push_before_the_hello_reply_did_not_come_with_the_opt_in() {
    let script = Script {
        before_hello: INVALIDATE.to_vec(),
        opt_in: cat(&[OK, MIGRATED]),
        ..Script::accepting()
    };
    let server = Responder::start(script).await;
    let report = probe_now(&options(&["-u", &server.url()])).await;
    assert_eq!(report.outcome, ProbeOutcome::Accepted);
    let labels: Vec<(PushRole, bool)> = report
        .pushes
        .iter()
        .map(|p| (p.role, p.with_opt_in))
        .collect();
    assert_eq!(
        labels,
        [(PushRole::Other, false), (PushRole::CatchUp, true)]
    );
    assert!(report.json_line().contains("\"with_opt_in\":false"));
}

/// A self-signed server certificate that is its own CA, as `openssl req -x509` makes them.
fn self_signed(dir: &std::path::Path, stem: &str, names: &[&str]) -> Issued {
    let mut params =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, stem);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    let issued = Issued {
        cert: dir.join(format!("{stem}.crt")),
        key: dir.join(format!("{stem}.key")),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    };
    std::fs::write(&issued.cert, &issued.cert_pem).unwrap();
    std::fs::write(&issued.key, &issued.key_pem).unwrap();
    issued
}

#[tokio::test]
async fn a_self_signed_certificate_given_as_cacert_is_trusted_for_itself_only() {
    let dir = tempfile::tempdir().unwrap();
    let cert = self_signed(dir.path(), "selfsigned", &["redis.test"]);
    let server = Responder::start_tls(Script::accepting(), acceptor(&cert, None)).await;
    let url = rediss(&server);
    let ca = cert.cert.display().to_string();
    let base = ["-u", url.as_str(), "--cacert", ca.as_str()];

    let mut named = base.to_vec();
    named.extend(["--sni", "redis.test"]);
    let report = probe_now(&options(&named)).await;
    assert_eq!(
        report.outcome,
        ProbeOutcome::Accepted,
        "{:?}",
        report.outcome
    );

    // The name is still checked.
    let mut wrong_name = base.to_vec();
    wrong_name.extend(["--sni", "other.test"]);
    let report = probe_now(&options(&wrong_name)).await;
    assert!(
        matches!(
            report.outcome,
            ProbeOutcome::TlsFailed {
                failure: TlsFailure::NameMismatch,
                ..
            }
        ),
        "{:?}",
        report.outcome
    );

    // Another self-signed certificate as --cacert trusts nothing here.
    let other = self_signed(dir.path(), "other", &["redis.test"]);
    let other_path = other.cert.display().to_string();
    let report = probe_now(&options(&[
        "-u",
        &url,
        "--cacert",
        &other_path,
        "--sni",
        "redis.test",
    ]))
    .await;
    assert!(
        matches!(report.outcome, ProbeOutcome::TlsFailed { .. }),
        "{:?}",
        report.outcome
    );
}

#[derive(Parser)]
struct Loose {
    #[command(flatten)]
    connect: ConnectArgs,
}

fn options_result(args: &[&str]) -> Result<ConnectOptions, conn::ConfigError> {
    let mut flags =
        Loose::try_parse_from(std::iter::once("maintwatch").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("flags {args:?}: {e}"));
    flags.connect.password = None;
    ConnectOptions::from_args(&flags.connect)
}

#[test]
fn tls_flags_with_a_plain_url_are_refused() {
    let pki = Pki::new("test CA");
    let (ca, dir) = (pki.ca_path(), pki.dir.path().display().to_string());
    for flags in [
        vec!["--cacert", ca.as_str()],
        vec!["--insecure"],
        vec!["--sni", "redis.test"],
        vec!["--cacertdir", dir.as_str()],
    ] {
        let mut args = vec!["-u", "redis://127.0.0.1:6379"];
        args.extend(flags.iter().copied());
        let e = options_result(&args).expect_err("plain URL with TLS flags");
        let text = e.to_string();
        assert!(
            text.contains("use rediss:// or --tls") && text.contains(flags[0]),
            "{text}"
        );
        // The same flags with rediss:// or --tls are fine.
        let mut tls = args.clone();
        tls.push("--tls");
        assert!(options_result(&tls).is_ok());
    }
}

#[tokio::test]
async fn tls_flags_with_a_plain_url_exit_with_the_usage_code_in_watch_and_probe() {
    for cmd in [
        vec!["watch", "redis://127.0.0.1:1", "--insecure"],
        vec!["probe", "redis://127.0.0.1:1", "--sni", "x.test"],
        vec!["watch", "-h", "127.0.0.1", "--insecure"],
    ] {
        let out = common::maintwatch_async(&cmd)
            .env_remove("REDISCLI_AUTH")
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(exit::USAGE), "{cmd:?}: {err}");
        assert!(err.contains("use rediss:// or --tls"), "{cmd:?}: {err}");
    }
}

/// `der` (an rcgen certificate) as an X.509 v1 certificate: the `[0] version` field removed
/// and the two enclosing lengths shortened. The signature no longer matches, which does not
/// matter: the certificate is refused before anything checks it.
fn as_v1(der: &[u8]) -> Vec<u8> {
    const VERSION: [u8; 5] = [0xa0, 0x03, 0x02, 0x01, 0x02];
    // Outer and tbs SEQUENCEs both in the two-byte long form (certificates of this size).
    assert_eq!((der[0], der[1], der[4], der[5]), (0x30, 0x82, 0x30, 0x82));
    assert_eq!(der[8..13], VERSION);
    let len = |hi: u8, lo: u8| (usize::from(hi) << 8) | usize::from(lo);
    let (outer, tbs) = (len(der[2], der[3]) - 5, len(der[6], der[7]) - 5);
    assert!(tbs >= 256, "the long form must stay minimal DER");
    let mut out = vec![0x30, 0x82, (outer >> 8) as u8, outer as u8];
    out.extend([0x30, 0x82, (tbs >> 8) as u8, tbs as u8]);
    out.extend_from_slice(&der[13..]);
    out
}

#[test]
fn a_v1_client_certificate_and_a_key_that_does_not_match_are_told_apart() {
    let pki = Pki::new("test CA");
    let names = ["client.one.maintwatch.test", "client.two.maintwatch.test"];
    let client = pki.issue("client", &names, ExtendedKeyUsagePurpose::ClientAuth);
    let other = pki.issue("other", &names, ExtendedKeyUsagePurpose::ClientAuth);
    let (cert, other_key) = (
        client.cert.display().to_string(),
        other.key.display().to_string(),
    );
    let mismatch = options_result(&[
        "-u",
        "rediss://127.0.0.1:6379",
        "--cert",
        &cert,
        "--key",
        &other_key,
    ])
    .expect_err("a key of another certificate");
    let mismatch = mismatch.to_string();
    assert!(
        mismatch.contains("does not belong to the certificate"),
        "{mismatch}"
    );

    let der = CertificateDer::from_pem_slice(client.cert_pem.as_bytes()).unwrap();
    let v1 = as_v1(der.as_ref());
    let v1_path = pki.dir.path().join("v1.crt");
    std::fs::write(&v1_path, pem_encode("CERTIFICATE", &v1)).unwrap();
    let key = client.key.display().to_string();
    let v1_err = options_result(&[
        "-u",
        "rediss://127.0.0.1:6379",
        "--cert",
        &v1_path.display().to_string(),
        "--key",
        &key,
    ])
    .expect_err("a v1 certificate");
    let v1_err = v1_err.to_string();
    assert!(v1_err.contains("X.509 v1"), "{v1_err}");
    assert_ne!(v1_err, mismatch);
}

fn pem_encode(label: &str, der: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::new();
    for chunk in der.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                text.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                text.push('=');
            }
        }
    }
    let body: Vec<String> = text
        .as_bytes()
        .chunks(64)
        .map(|l| String::from_utf8(l.to_vec()).unwrap())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        body.join("\n")
    )
}

#[tokio::test]
async fn resolving_times_out_at_the_configured_timeout_and_says_so() {
    // A nameserver that never answers.
    let silent = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let dns_addr = silent.local_addr().unwrap().to_string();
    let opts = options(&[
        "-u",
        "redis://nowhere.maintwatch.test:6379",
        "--dns-server",
        &dns_addr,
        "--connect-timeout",
        "1s",
    ]);
    let dns = DnsResolver::new(&opts.dns_options()).unwrap();
    let report = tokio::time::timeout(
        Duration::from_secs(60),
        probe::probe(&opts, Some(&dns), Duration::ZERO),
    )
    .await
    .expect("hang guard");
    match &report.outcome {
        ProbeOutcome::TimedOut { stage, detail } => {
            assert_eq!(*stage, conn::Stage::Resolving);
            assert!(
                detail.contains("timed out after 1s while resolving (--connect-timeout)"),
                "{detail}"
            );
        }
        other => panic!("{other:?}"),
    }
    drop(silent);
}

#[tokio::test]
async fn a_lone_userinfo_is_announced_as_the_password_from_the_url() {
    let server = Responder::start(Script {
        password: Some(("default".into(), "right-pass".into())),
        ..Script::accepting()
    })
    .await;
    // The user meant a user name; redis-cli (and so maintwatch) reads a password.
    let opts = options(&["-u", &format!("redis://alice@{}", server.addr)]);
    assert!(
        opts.notes()[0].contains("password from the URL"),
        "{:?}",
        opts.notes()
    );
    assert!(!opts.notes()[0].contains("alice"), "never the password");
    let report = probe_now(&opts).await;
    let detail = report.outcome.detail().unwrap_or_default();
    assert!(
        matches!(report.outcome, ProbeOutcome::AuthFailed { .. })
            && detail.contains("password from the URL"),
        "{detail}"
    );
    // A user:password URL has no such note.
    let opts = options(&["-u", &format!("redis://alice:pw@{}", server.addr)]);
    assert!(opts.notes().is_empty());
}
