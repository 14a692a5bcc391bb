//! Arguments of `probe`.
//!
//! The exit-code table lives in the help text because scripts branch on it; the constants it
//! describes are in `crate::exit`, and a test keeps the two in step.

use std::time::Duration;

use clap::Args;

use super::connect::{ConnectArgs, EndpointSettings, UrlParser};
use crate::network::conn::endpoints::BadLines;
use crate::network::conn::RedisUrl;

/// The long description of `probe`. The `Command::Probe` variant must repeat it
/// (`#[command(long_about = probe::LONG_ABOUT)]`): a variant's doc comment resets it.
pub const LONG_ABOUT: &str =
    "Connects to each endpoint (concurrently), sends HELLO 3 (with AUTH when a \
password is given) and CLIENT MAINT_NOTIFICATIONS ON, and classifies the endpoint: accepted, \
refused (with the server's exact text), RESP3 unavailable, authentication failed, TLS failed \
(with the reason: unknown CA, name mismatch ...), unreachable or timed out. It also reports what \
came with the reply: a catch-up replay (a retained MIGRATED or FAILED_OVER and its seq: a \
maintenance completed on that database) or a MOVING (a maintenance is under way right now), and \
the server, version and mode from HELLO. After an accepted opt-in it listens for --linger more, \
because the replay can arrive just after the reply. Endpoints come from the arguments, from \
--from FILE (one per line; # starts a comment at the start of a line or after a blank; - \
for standard input), or from -u / -h / -p. A line of --from that is not an endpoint is reported \
with its line number and skipped; the other endpoints are still probed.";

/// The exit codes of what the server answered (3 to 6), the same for `probe` and `doctor`: a
/// literal, for their `after_help` made with `concat!`.
macro_rules! server_exit_codes {
    () => {
        "  3  refused: the server answered CLIENT MAINT_NOTIFICATIONS with an error
  4  RESP3 unavailable: HELLO 3 was refused (no push frame can arrive)
  5  authentication failed (WRONGPASS, NOAUTH ...)
  6  connection or TLS failure: unreachable, timed out, TLS failed, broken reply
"
    };
}
pub(crate) use server_exit_codes;

/// The `after_help` of `probe`: exit codes, then examples.
pub const AFTER_HELP: &str = concat!(
    "\
Exit codes (with several endpoints, the most severe wins):
  0  every endpoint accepted the opt-in
",
    server_exit_codes!(),
    "  2  usage error (bad flag or endpoint); also when --from had a bad line and no endpoint did
     worse than accepted (a code from 3 to 6 wins over it)
  1  other error (unreadable --from file, resolver setup ...)

Examples:
  maintwatch probe redis://10.0.0.5:12000
  REDISCLI_AUTH=\"$PASS\" maintwatch probe rediss://default@db.example.net:12000 --cacert ca.pem
  maintwatch probe --from endpoints.txt --json > probe.jsonl
  grep -v '^#' fleet.txt | maintwatch probe --from - --quiet || echo \"not all opted in\"
  REDISCLI_AUTH=secret maintwatch probe -h 10.0.0.5 -p 12000"
);

/// Arguments of `maintwatch probe`.
#[derive(Args, Debug, Clone)]
#[command(long_about = LONG_ABOUT, after_help = AFTER_HELP)]
pub struct ProbeArgs {
    /// Endpoints: redis://[[user]:password@]host[:port][/db], rediss://..., or host[:port].
    #[arg(value_name = "URL", value_parser = UrlParser)]
    pub urls: Vec<RedisUrl>,

    /// Also read endpoints from FILE, one per line; `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub from: Option<String>,

    /// How many endpoints to probe at once (each is one socket: within the open-file limit).
    #[arg(long, value_name = "N", default_value_t = 512,
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub concurrency: u32,

    /// After an accepted opt-in, listen this long for a catch-up replay that missed the reply's
    /// read (measured at 16-17 ms after the +OK); 0 disables.
    #[arg(long, value_name = "DURATION", default_value = "50ms",
          value_parser = super::parse_duration)]
    pub linger: Duration,

    /// One JSON object per endpoint per line (fields: type, v, endpoint, address, tls, outcome,
    /// exit_code, detail, tls_failure, hello, endpoint_type, maintenance, pushes, elapsed_ms).
    #[arg(long, conflicts_with = "quiet")]
    pub json: bool,

    /// Print nothing on standard output: only the exit code tells (warnings still go to stderr).
    #[arg(short = 'q', long)]
    pub quiet: bool,

    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// What `probe` runs: the endpoints named and the flags they are probed with, plain values, so
/// `commands::probe` never sees a clap type.
pub struct ProbeSettings<'a> {
    /// The endpoints (bad lines of `--from` are skipped and reported).
    pub endpoints: EndpointSettings<'a>,
    /// How many endpoints are probed at once.
    pub concurrency: usize,
    /// How long to listen after an accepted opt-in.
    pub linger: Duration,
    /// JSON lines, else the table.
    pub json: bool,
    /// Nothing on standard output.
    pub quiet: bool,
}

impl ProbeArgs {
    /// The settings of these flags. With `--askpass` the password is read here.
    pub fn settings(&self) -> ProbeSettings<'_> {
        ProbeSettings {
            endpoints: self.connect.endpoint_settings(
                &self.urls,
                self.from.as_deref(),
                BadLines::Skip,
            ),
            concurrency: self.concurrency as usize,
            linger: self.linger,
            json: self.json,
            quiet: self.quiet,
        }
    }
}

/// Fails unless every exit code `probe` and `doctor` can return has its line in `after_help`,
/// saying what it means: the help text and the constants in `crate::exit` stay in step.
#[cfg(test)]
pub(crate) fn check_exit_table(after_help: &str) {
    use crate::exit;
    for (code, word) in [
        (exit::SUCCESS, "accepted"),
        (exit::REFUSED, "refused"),
        (exit::RESP3_UNAVAILABLE, "RESP3 unavailable"),
        (exit::AUTH_FAILED, "authentication failed"),
        (exit::CONNECTION_FAILED, "connection or TLS failure"),
        (exit::USAGE, "usage error"),
        (exit::FAILURE, "other error"),
    ] {
        let line = format!("  {code}  ");
        let found = after_help
            .lines()
            .find(|l| l.starts_with(&line))
            .unwrap_or_else(|| panic!("no line for exit code {code}"));
        assert!(found.contains(word), "{found:?} should say {word:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::probe::{run_with, Layout};
    use crate::exit;
    use clap::Parser;
    use std::io::Write;
    use std::net::SocketAddr;

    #[test]
    fn the_help_table_matches_the_exit_constants() {
        super::check_exit_table(super::AFTER_HELP);
    }

    const HELLO: &[u8] = b"%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n";
    /// A HELLO whose `server` holds CR, LF, ESC and a bidi override.
    const HOSTILE_HELLO: &[u8] = b"%2\r\n$6\r\nserver\r\n$27\r\nredis\r\n00:00:00 FAKE\x1b[2J\xe2\x80\xae\r\n$7\r\nversion\r\n$5\r\n7.4.0\r\n";
    const REFUSAL: &[u8] = b"-ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT HELP.\r\n";

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        probe: ProbeArgs,
    }

    fn args(list: &[&str]) -> ProbeArgs {
        T::try_parse_from(std::iter::once("probe").chain(list.iter().copied()))
            .unwrap()
            .probe
    }

    /// Answers HELLO with a map and the opt-in with `opt_in`, one reply per command.
    async fn responder(opt_in: &'static [u8]) -> SocketAddr {
        responder_with(HELLO, opt_in).await
    }

    /// Answers HELLO with `hello` and the opt-in with `opt_in`, one reply per command.
    async fn responder_with(hello: &'static [u8], opt_in: &'static [u8]) -> SocketAddr {
        crate::network::conn::test_server::serve(vec![hello, opt_in], b"+PONG\r\n").await
    }

    fn closed_port() -> SocketAddr {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    }

    async fn run_capture(a: &ProbeArgs, stdin: &str) -> (i32, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        // An error is shown and mapped as `main` does.
        let code = match run_with(
            a.settings(),
            &mut stdin.as_bytes(),
            &mut out,
            &mut err,
            Layout::Piped,
        )
        .await
        {
            Ok(code) => code,
            Err(e) => {
                for line in crate::present::output::terminal::error_lines(&e, None) {
                    writeln!(err, "{line}").unwrap();
                }
                crate::cli::usage::exit_code(&e)
            }
        };
        (
            code,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[tokio::test]
    async fn json_lines_come_in_input_order_and_the_worst_code_wins() {
        let ok = responder(b"+OK\r\n").await;
        let closed = closed_port();
        let a = args(&[
            &format!("redis://{closed}"),
            &format!("redis://{ok}"),
            "--json",
            "--linger",
            "0",
        ]);
        let (code, out, _) = run_capture(&a, "").await;
        assert_eq!(code, exit::CONNECTION_FAILED);
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["outcome"], "unreachable");
        assert_eq!(lines[0]["endpoint"], format!("redis://{closed}"));
        assert_eq!(lines[1]["outcome"], "accepted");
        assert_eq!(lines[1]["hello"]["version"], "7.4.0");
    }

    #[tokio::test]
    async fn the_table_shows_every_endpoint_and_a_summary() {
        let ok = responder(b"+OK\r\n").await;
        let refusing = responder(REFUSAL).await;
        let a = args(&[&format!("{ok}"), &format!("{refusing}"), "--linger", "0"]);
        let (code, out, _) = run_capture(&a, "").await;
        assert_eq!(code, exit::REFUSED);
        assert!(out.contains(&format!("redis://{ok}")), "{out}");
        assert!(
            out.contains("ERR unknown subcommand 'MAINT_NOTIFICATIONS'"),
            "{out}"
        );
        assert!(out.contains("redis 7.4.0"), "{out}");
        assert!(
            out.trim_end()
                .ends_with("2 endpoints: 1 accepted, 1 refused"),
            "{out}"
        );
    }

    /// The notes under the table, each joined back onto one line.
    fn notes_of(out: &str) -> Vec<String> {
        let (_, notes) = out.split_once("\n\n").expect("notes after a blank line");
        notes
            .replace("\n    ", " ")
            .lines()
            .filter(|l| !l.contains(" endpoints: "))
            .map(str::to_string)
            .collect()
    }

    /// What an operator at 80 columns saw as 40 lines of box table with split words, then as a
    /// table that cut what to do (`NOAUTH HELLO…`).
    #[tokio::test]
    async fn five_endpoints_fit_80_columns_without_splitting_words() {
        let ok = responder(b"+OK\r\n").await;
        let moving = responder(b"+OK\r\n>4\r\n$6\r\nMOVING\r\n:7\r\n:15\r\n_\r\n").await;
        let refusing = responder(REFUSAL).await;
        let hostile = responder(b"-ERR \xe2\x80\xaeopt-in accepted FAKE\r\n").await;
        let closed = closed_port();
        let endpoints: Vec<String> = [ok, moving, refusing, closed, hostile]
            .iter()
            .map(|a| format!("redis://{a}"))
            .collect();
        let mut list: Vec<&str> = endpoints.iter().map(String::as_str).collect();
        list.extend(["--linger", "0"]);
        let a = args(&list);
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let width = 80;
        let code = run_with(
            a.settings(),
            &mut "".as_bytes(),
            &mut out,
            &mut err,
            Layout::Terminal { width },
        )
        .await
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!(code, exit::CONNECTION_FAILED);
        let all: Vec<&str> = out.lines().collect();
        for line in &all {
            assert!(
                line.chars().count() <= width,
                "wider than {width}: {line:?}\n{out}"
            );
        }
        // One line per endpoint; under it, 4 in, what did not fit beside it, whole.
        let blank = all.iter().position(|l| l.is_empty()).unwrap();
        let lines: Vec<&str> = all[..blank]
            .iter()
            .copied()
            .filter(|l| !l.starts_with("    "))
            .collect();
        assert_eq!(
            lines.len(),
            6,
            "header, one line per endpoint, notes:\n{out}"
        );
        for (row, endpoint) in lines[1..6].iter().zip(&endpoints) {
            assert!(
                row.starts_with(endpoint.as_str()),
                "{endpoint} not whole in {row:?}"
            );
        }
        assert!(lines[0].ends_with("what to do"), "{out}");
        assert!(lines[4].contains(" unreachable "), "{out}");
        assert!(lines[4].ends_with(" check host and port"), "{out}");
        let under = all[..blank].join("\n").replace("\n      ", " ");
        assert!(
            under.contains("maintenance under way: MOVING seq 7 window 15 s target none (null)"),
            "the maintenance whole under its endpoint:\n{out}"
        );
        assert!(!out.contains('…'), "nothing is cut:\n{out}");
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert!(!out.contains('\u{202e}'), "{out:?}");
        assert!(lines[5].contains(" refused "), "{out}");
        assert!(lines[5].ends_with(" unsupported here"), "{out}");
        let notes = notes_of(&out);
        assert_eq!(notes.len(), 3, "{out}");
        assert!(
            notes[0].starts_with(&format!(
                "redis://{refusing}: ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT \
                 HELP. Redis Open Source"
            )),
            "{out}"
        );
        assert!(out
            .trim_end()
            .ends_with("5 endpoints: 2 accepted, 2 refused, 1 unreachable"));
    }

    /// Piped, the table is plain aligned columns, and the notes are whole texts (sanitised), one
    /// line each.
    #[tokio::test]
    async fn piped_the_table_is_plain_aligned_columns_with_whole_texts() {
        let refusing = responder(REFUSAL).await;
        let hostile = responder_with(HOSTILE_HELLO, b"-ERR bad\x1b[31mRED\xc2\x9b\r\n").await;
        let closed = closed_port();
        let a = args(&[
            &format!("redis://{refusing}"),
            &format!("redis://{closed}"),
            &format!("{hostile}"),
            "--linger",
            "0",
        ]);
        let (_, out, _) = run_capture(&a, "").await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 1 + 3 + 1 + 3 + 1, "{out}");
        assert!(!out.contains('|') && !out.contains('…'), "{out}");
        assert_eq!(
            lines[5],
            format!(
                "redis://{refusing}: ERR unknown subcommand 'MAINT_NOTIFICATIONS'. Try CLIENT \
                 HELP. Redis Open Source and Valkey send no notifications; Redis Software \
                 (8.0.2+) does with client_maint_notifications on"
            )
        );
        assert!(lines[7].contains("ERR bad\\x1b[31mRED\\u{9b}"), "{out}");
        assert!(
            lines[3].contains("redis\\r\\n00:00:00 FAKE\\x1b[2J\\u{202e}"),
            "{out}"
        );
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        // Aligned: the outcome column starts at the same place on every line.
        let at = lines[0].find("outcome").unwrap();
        for (row, word) in lines[1..4]
            .iter()
            .zip(["refused", "unreachable", "refused"])
        {
            assert_eq!(row.find(word), Some(at), "{row:?}\n{out}");
        }
    }

    /// Redis's NOAUTH for HELLO is 220 characters; `--json` cut it at 200, before the part that
    /// says what to do. A hostile server's text is still bounded.
    #[tokio::test]
    async fn json_carries_the_servers_whole_text() {
        const NOAUTH: &str = "NOAUTH HELLO must be called with the client already authenticated, \
            otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the \
            client and select the RESP protocol version at the same time";
        let hello: &'static [u8] = format!("-{NOAUTH}\r\n").leak().as_bytes();
        let noauth = responder_with(hello, b"+OK\r\n").await;
        let refusal = format!("ERR {}\x1b[2J end", "x".repeat(300));
        let refusing = responder(format!("-{refusal}\r\n").leak().as_bytes()).await;
        let endless = format!("-ERR {}\r\n", "y".repeat(10_000));
        let hostile = responder(endless.leak().as_bytes()).await;
        let a = args(&[
            &format!("redis://{noauth}"),
            &format!("redis://{refusing}"),
            &format!("redis://{hostile}"),
            "--json",
            "--linger",
            "0",
        ]);
        let (_, out, _) = run_capture(&a, "").await;
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["outcome"], "auth_failed");
        assert_eq!(
            lines[0]["detail"],
            format!("{NOAUTH} (no password was given: use -a, --askpass or REDISCLI_AUTH)")
        );
        assert_eq!(lines[1]["detail"], refusal.as_str());
        assert!(
            out.lines().nth(1).unwrap().contains("\\u001b[2J end"),
            "{out}"
        );
        let bounded = lines[2]["detail"].as_str().unwrap();
        assert_eq!(
            bounded,
            format!(
                "ERR {}...",
                "y".repeat(crate::network::conn::MAX_ERROR_TEXT - 4)
            )
        );
    }

    #[tokio::test]
    async fn quiet_prints_nothing_and_keeps_the_code() {
        let refusing = responder(REFUSAL).await;
        let a = args(&["-q", &format!("redis://{refusing}")]);
        let (code, out, err) = run_capture(&a, "").await;
        assert_eq!((code, out.as_str(), err.as_str()), (exit::REFUSED, "", ""));
    }

    #[tokio::test]
    async fn endpoints_come_from_stdin_and_a_bad_line_is_a_usage_error() {
        let ok = responder(b"+OK\r\n").await;
        let a = args(&["--from", "-", "--json"]);
        let (code, out, _) = run_capture(&a, &format!("# fleet\n\nredis://{ok}\n{ok}\n")).await;
        assert_eq!((code, out.lines().count()), (exit::SUCCESS, 2));

        let (code, out, err) = run_capture(&a, "redis://u:hunter2@h:x\n").await;
        assert_eq!((code, out.as_str()), (exit::USAGE, ""));
        assert!(err.contains("standard input, line 1"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");

        let (code, _, err) = run_capture(&a, "# nothing\n").await;
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("no endpoint"), "{err}");
    }

    /// An inline comment used to abort the whole run, and one bad line hid every other endpoint.
    #[tokio::test]
    async fn from_accepts_inline_comments_and_probes_past_a_bad_line() {
        let ok = responder(b"+OK\r\n").await;
        let refusing = responder(REFUSAL).await;
        let a = args(&["--from", "-", "--json", "--linger", "0"]);
        let list =
            format!("redis://{ok}   # primary\nredis://u:hunter2@h:x  # typo\n{ok}\t# again\n");
        let (code, out, err) = run_capture(&a, &list).await;
        assert_eq!(
            out.lines().count(),
            2,
            "both good lines probed:\n{out}\n{err}"
        );
        assert!(out.lines().all(|l| l.contains("\"accepted\"")), "{out}");
        assert_eq!(
            code,
            exit::USAGE,
            "all probed fine, but the list had a bad line"
        );
        assert!(err.contains("standard input, line 2"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!err.contains("hunter2"), "{err}");

        // A worse probe outcome wins over the usage error.
        let list = format!("redis://{refusing}\nnot a url: at all\n");
        let (code, out, err) = run_capture(&a, &list).await;
        assert_eq!((code, out.lines().count()), (exit::REFUSED, 1), "{err}");
        assert!(err.contains("line 2"), "{err}");
    }

    #[tokio::test]
    async fn host_flags_do_not_mix_with_urls() {
        let (code, _, err) = run_capture(&args(&["redis://a", "-h", "b"]), "").await;
        assert_eq!(code, exit::USAGE);
        assert!(err.contains("-h/-p"), "{err}");
    }

    #[test]
    fn help_documents_the_exit_codes() {
        use clap::CommandFactory;
        let help = T::command().render_long_help().to_string();
        for needle in [
            "Exit codes",
            "  3  refused",
            "  6  connection or TLS failure",
            "--concurrency",
        ] {
            assert!(help.contains(needle), "{needle:?} missing from:\n{help}");
        }
    }
}
