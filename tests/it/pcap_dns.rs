//! `pcap --grade` on a capture of two applications on one host (issue 50): `maintwatch watch`,
//! which resolves the simulator's name and polls it, and a redis-py app that connects by address.
//! A DNS answer in a capture names the host it went to, not the process that asked, so it counts
//! for a client only where it can be tied to it: the rules that rest on it are NOT JUDGED where
//! two clients of one address connected where the answers pointed, and judged where the asker is
//! alone on its address or the other client never went where any answer pointed. Without
//! `--dns-port`, DNS on another port is named with the flag to read it; a re-sent MOVING reads as
//! words; the page's header shows the whole command line.
//!
//! Every capture is written by `pcapgen` (Ethernet, IPv4, DNS messages written field by field).

use maintwatch::grading::judge::{grade_lines, ClientGrade, Grade, Rule, Verdict};

use crate::common;
use crate::pcapgen::*;

const NAME: &str = "db.sim.maintwatch.test";
/// The simulator's DNS, on a port other than 53.
const DNS: &str = "127.0.0.1:5354";
const OLD: &str = "127.0.0.2:12000";
const WATCH_HOST: &str = "127.0.0.1";

fn ok() -> &'static [u8] {
    b"+OK\r\n"
}

/// One connection: its SYN at `us`, HELLO 3, `CLIENT SETINFO` when the client names itself
/// (redis-py does, the watch does not), and the opt-in, each answered.
fn connect(
    client: &str,
    server: &str,
    isn: u32,
    lib: Option<(&str, &str)>,
    us: u64,
) -> (Tcp, Vec<Pkt>) {
    let mut t = Tcp::new(client, server, [isn, isn + 50_000]);
    let mut out = t.open(us);
    out.push(t.send(true, HELLO, us + 200));
    out.push(t.send(false, HELLO_REPLY, us + 300));
    let mut at = us + 400;
    if let Some((name, ver)) = lib {
        for (field, value) in [("LIB-NAME", name), ("LIB-VER", ver)] {
            out.push(t.send(true, &command(&["CLIENT", "SETINFO", field, value]), at));
            out.push(t.send(false, ok(), at + 50));
            at += 100;
        }
    }
    let opt_in = command(&[
        "CLIENT",
        "MAINT_NOTIFICATIONS",
        "ON",
        "moving-endpoint-type",
        "internal-ip",
    ]);
    out.push(t.send(true, &opt_in, at));
    out.push(t.send(false, ok(), at + 50));
    (t, out)
}

/// The server's close of a connection (its FIN, then the client's).
fn cut(t: &mut Tcp, us: u64) -> Vec<Pkt> {
    vec![t.close(false, "F", us), t.close(true, "F", us + 100)]
}

/// Where the redis-py app runs and which address it connects to (by address: it never resolves).
struct Py {
    host: &'static str,
    server: &'static str,
    /// It recycles its connection at +9.6 s, onto the same address, and is sent the MOVING again.
    recycles: bool,
}

/// The run: the watch resolves the name (127.0.0.2) and connects at +0.01 s, redis-py connects
/// at +0.5 s; the MOVING seq 7 (window 15 s, no target) at +2 s to both; the watch asks DNS every
/// second, which names 127.0.0.3 from +10 s; the server closes the retiring addresses at +16.6 s.
fn two_apps(py: &Py) -> Vec<Pkt> {
    let mut out = Vec::new();
    for i in 0..17u64 {
        let record = if i < 10 { "127.0.0.2" } else { "127.0.0.3" };
        let from = format!("{WATCH_HOST}:{}", 50_000 + i);
        out.extend(resolve(&from, DNS, NAME, &[record], 1, T0 + i * S));
    }
    let (mut w, pkts) = connect(&format!("{WATCH_HOST}:40001"), OLD, 1000, None, T0 + 10_000);
    out.extend(pkts);
    let lib = Some(("redis-py", "8.1.0"));
    let (mut p, pkts) = connect(
        &format!("{}:40002", py.host),
        py.server,
        2000,
        lib,
        T0 + S / 2,
    );
    out.extend(pkts);
    out.push(w.send(false, MOVING, T0 + 2 * S));
    out.push(p.send(false, MOVING, T0 + 2 * S + 1000));
    if py.recycles {
        out.push(p.close(true, "F", T0 + 9_600_000));
        out.push(p.close(false, "F", T0 + 9_600_100));
        let (mut again, pkts) = connect(
            &format!("{}:40003", py.host),
            py.server,
            3000,
            lib,
            T0 + 9_650_000,
        );
        out.extend(pkts);
        out.push(again.send(false, MOVING, T0 + 9_661_000));
        out.extend(cut(&mut again, T0 + 16_600_000));
    } else {
        out.extend(cut(&mut p, T0 + 16_600_000));
    }
    out.extend(cut(&mut w, T0 + 16_600_000));
    out.sort_by_key(|p| p.us);
    out
}

fn write(dir: &std::path::Path, name: &str, packets: &[Pkt]) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pcap_file(packets)).unwrap();
    path
}

/// `pcap --grade --json ARGS FILE`: the grade, checked against the exit code.
fn grade(file: &std::path::Path, args: &[&str]) -> Grade {
    let out = common::maintwatch(["pcap", "--grade", "--json"])
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let g = grade_lines::grade_of(&stdout).unwrap_or_else(|| panic!("no grade: {stdout}"));
    assert_eq!(
        out.status.code(),
        Some(g.verdict.exit_code()),
        "{}",
        g.table()
    );
    g
}

fn client<'a>(g: &'a Grade, name: &str) -> &'a ClientGrade {
    g.clients
        .iter()
        .find(|c| c.client == name)
        .unwrap_or_else(|| panic!("no client {name}: {}", g.table()))
}

fn moved_before_close(c: &ClientGrade) -> &Rule {
    c.notifications
        .iter()
        .flat_map(|n| n.rules.iter())
        .find(|r| r.rule == "moved-before-close")
        .unwrap_or_else(|| panic!("no moved-before-close for {}", c.client))
}

/// Two apps judged apart: the watch reached the database by name and stayed past DNS's move
/// (FAIL); redis-py reached it by address. redis-py's rule, for the test to judge.
fn watch_by_name_py_by_address(g: &Grade) -> &Rule {
    let watch = client(g, WATCH_HOST);
    assert_eq!(watch.reached, format!("by name {NAME}"));
    assert_eq!(
        moved_before_close(watch).verdict,
        Verdict::Fail,
        "{}",
        g.table()
    );
    let py = client(g, "redis-py/8.1.0");
    assert_eq!(py.reached, "by address");
    moved_before_close(py)
}

fn known(c: &ClientGrade) -> Vec<String> {
    c.notifications
        .iter()
        .filter_map(|n| n.moving.as_ref())
        .flat_map(|m| m.known.clone())
        .collect()
}

/// The user's case: the watch's queries went to the address redis-py connects from, and both
/// connected to the address they named. Whose they were cannot be told: neither client is said
/// to have connected by name, and `moved-before-close` is NOT JUDGED for both, saying why, where
/// it used to FAIL redis-py on the watch's DNS.
#[test]
fn dns_of_a_shared_address_is_nobodys_and_the_rule_is_not_judged() {
    let dir = tempfile::tempdir().unwrap();
    let py = Py {
        host: WATCH_HOST,
        server: OLD,
        recycles: true,
    };
    let file = write(dir.path(), "shared.pcap", &two_apps(&py));
    let g = grade(&file, &["--dns-port", "5354"]);
    for name in ["redis-py/8.1.0", WATCH_HOST] {
        let c = client(&g, name);
        let rule = moved_before_close(c);
        assert_eq!(rule.verdict, Verdict::NotJudged, "{name}: {}", g.table());
        assert!(
            rule.detail.contains("cannot tell which client asked"),
            "{name}: {}",
            rule.detail
        );
        assert_eq!(
            c.reached,
            format!("by name {NAME} or by address, not told apart")
        );
        let said = known(c);
        assert!(
            said.iter().all(|k| !k.starts_with("connected by name")),
            "{name}: {said:?}"
        );
        assert!(
            said.iter()
                .any(|k| k.starts_with("connected in a way not told apart")),
            "{name}: {said:?}"
        );
        // Nor is a connection said to have stayed because nothing else was offered.
        let cut: Vec<&str> = c
            .notifications
            .iter()
            .filter_map(|n| n.moving.as_ref())
            .flat_map(|m| m.verdicts.iter())
            .filter(|v| v.verdict == "cut")
            .map(|v| v.text.as_str())
            .collect();
        assert_eq!(cut.len(), 1, "{name}: {}", g.table());
        assert!(cut[0].ends_with("whether anything else was offered is not known (its DNS was not told apart from another client's)"), "{}", cut[0]);
    }
    let other = |me: &str| {
        let c = client(&g, me);
        moved_before_close(c).detail.clone()
    };
    assert!(
        other("redis-py/8.1.0").contains(WATCH_HOST),
        "names the other client"
    );
    assert!(
        other(WATCH_HOST).contains("redis-py/8.1.0"),
        "names the other client"
    );
    assert_eq!(g.verdict, Verdict::NotJudged, "{}", g.table());
}

/// The same run with redis-py on an address of its own: the watch's answers are tied to the
/// watch (alone on its address), which stayed though DNS named 127.0.0.3 before the close:
/// FAIL; redis-py connected by address and was offered nothing else: PASS.
#[test]
fn dns_of_an_address_with_one_client_is_its_and_both_are_judged() {
    let dir = tempfile::tempdir().unwrap();
    let py = Py {
        host: "127.0.0.5",
        server: OLD,
        recycles: false,
    };
    let file = write(dir.path(), "apart.pcap", &two_apps(&py));
    let g = grade(&file, &["--dns-port", "5354"]);
    let rule = watch_by_name_py_by_address(&g);
    assert!(known(client(&g, WATCH_HOST))
        .iter()
        .any(|k| k == &format!("connected by name {NAME}")));
    assert_eq!(rule.verdict, Verdict::Pass, "{}", g.table());
    assert!(
        rule.detail.starts_with("stayed: nothing else was offered"),
        "{}",
        rule.detail
    );
}

/// Both apps on one address, but redis-py connects to an address no answer ever named: it did not
/// connect by name, so the answers are the watch's alone, and both are judged.
#[test]
fn a_client_that_never_went_where_dns_pointed_leaves_the_answers_to_the_other() {
    let dir = tempfile::tempdir().unwrap();
    let py = Py {
        host: WATCH_HOST,
        server: "127.0.0.4:12000",
        recycles: false,
    };
    let file = write(dir.path(), "elsewhere.pcap", &two_apps(&py));
    let g = grade(&file, &["--dns-port", "5354"]);
    assert_eq!(
        watch_by_name_py_by_address(&g).verdict,
        Verdict::Pass,
        "{}",
        g.table()
    );
}

/// Without `--dns-port`, the capture's DNS on port 5354 is not read as DNS; the reason says it is
/// there and names the flag with its port, instead of asking for a capture of port 53.
#[test]
fn dns_on_another_port_is_named_with_the_flag_that_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let py = Py {
        host: "127.0.0.5",
        server: OLD,
        recycles: false,
    };
    let mut packets = two_apps(&py);
    // Neither mDNS (multicast, no application's resolver) nor UDP that is not DNS is named.
    let mdns = dns_message(0, true, "printer.local", &["127.0.0.9"], 120);
    packets.push(udp("127.0.0.1:5353", "224.0.0.251:5353", &mdns, T0 + 3 * S));
    packets.push(udp(
        "127.0.0.1:9999",
        "127.0.0.8:9999",
        &[0x55; 40],
        T0 + 3 * S,
    ));
    packets.sort_by_key(|p| p.us);
    let file = write(dir.path(), "port.pcap", &packets);
    let g = grade(&file, &[]);
    let rule = moved_before_close(client(&g, WATCH_HOST));
    assert_eq!(rule.verdict, Verdict::NotJudged, "{}", g.table());
    assert!(rule.detail.contains("--dns-port 5354"), "{}", rule.detail);
    assert!(
        rule.detail
            .contains("DNS on UDP port 5354, which was not read"),
        "{}",
        rule.detail
    );
    assert!(!rule.detail.contains("5353") && !rule.detail.contains("9999"));
    assert!(!rule.detail.contains("or port 53)"), "{}", rule.detail);
    // With the flag, the same capture is judged.
    let g = grade(&file, &["--dns-port", "5354"]);
    assert_eq!(
        moved_before_close(client(&g, WATCH_HOST)).verdict,
        Verdict::Fail
    );
}

/// A MOVING the server sends again on redis-py's new connection reads as words: which connection
/// got it, and how long after the first, in seconds: not `[3] also from [3], 7661.0 ms after [1]`.
#[test]
fn a_re_sent_moving_reads_as_words() {
    let dir = tempfile::tempdir().unwrap();
    let py = Py {
        host: WATCH_HOST,
        server: OLD,
        recycles: true,
    };
    let file = write(dir.path(), "resent.pcap", &two_apps(&py));
    let out = common::maintwatch(["pcap", "--color", "never"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let copies: Vec<&str> = text.lines().filter(|l| l.contains(" too, ")).collect();
    assert_eq!(copies.len(), 2, "{text}");
    assert!(
        copies[0].ends_with("[2]   got the same MOVING seq 7 too, 1.0 ms after [1] did"),
        "{text}"
    );
    assert!(
        copies[1].ends_with("[3]   got the same MOVING seq 7 too, 7.7 s after [1] did"),
        "{text}"
    );
    assert!(!text.contains("also from"), "{text}");
}

/// The page of a grade shows the whole command line, `--dns-port` included, since it changed the
/// verdict.
#[test]
fn the_page_names_the_dns_port_it_was_graded_with() {
    let dir = tempfile::tempdir().unwrap();
    let py = Py {
        host: "127.0.0.5",
        server: OLD,
        recycles: false,
    };
    let file = write(dir.path(), "page.pcap", &two_apps(&py));
    let page = dir.path().join("page.html");
    let out = common::maintwatch(["pcap", "--grade", "--dns-port", "5354", "--report"])
        .arg(&page)
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let html = std::fs::read_to_string(&page).unwrap();
    let want = format!(
        "maintwatch pcap --grade --dns-port 5354 --report {} {}",
        page.display(),
        file.display()
    );
    assert!(html.contains(&want), "{}", &html[..html.len().min(3000)]);
}

/// Plain `pcap` (no `--grade`) shows the DNS it reads, as the watch shows its own polls: the
/// first answer, the change from 127.0.0.2 to 127.0.0.3 after the MOVING, and the time of the
/// change in the summary's DNS column (it showed `-` and no DNS line).
#[test]
fn plain_pcap_shows_the_dns_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let py = Py {
        host: "127.0.0.5",
        server: OLD,
        recycles: false,
    };
    let file = write(dir.path(), "plain.pcap", &two_apps(&py));
    let out = common::maintwatch(["pcap", "--dns-port", "5354"])
        .arg(&file)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("DNS {NAME} {{127.0.0.2}}")),
        "{text}"
    );
    assert!(
        flat.contains(&format!(
            "after MOVING seq 7: DNS {NAME} {{127.0.0.2}} -> {{127.0.0.3}}"
        )),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("│ MOVING 7"))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        row.split('┆').nth(3).map(str::trim),
        Some("+8.0 s"),
        "{text}"
    );
}
