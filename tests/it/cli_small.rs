//! Small things a new user meets first at the command line (issue 25's "small things"): `-h` is
//! redis-cli's host and says so when it has no value, the help and man page never show a password
//! on a command line, and `demo --list` lists the scenarios as `simulate --list` does.
//!
//! Each runs the binary and reads what a person reads; nothing here needs a server.

use crate::common;

use std::process::Output;

fn maintwatch(args: &[&str]) -> Output {
    common::maintwatch(args)
        .env_remove("REDISCLI_AUTH")
        .output()
        .expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn h_without_a_host_says_it_is_the_host_and_where_help_is() {
    for command in ["watch", "probe", "doctor"] {
        let out = maintwatch(&[command, "-h"]);
        assert_eq!(out.status.code(), Some(2), "{command}: a usage error");
        let err = text(&out.stderr);
        assert!(
            err.contains("-h (--host) is the server's host, as in redis-cli"),
            "{command}: {err}"
        );
        assert!(err.contains("for help, use --help"), "{command}: {err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
    }
    // --help is still the help, and -h with a value is still the host.
    let help = maintwatch(&["watch", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    assert!(text(&help.stdout).contains("Usage: maintwatch watch"));
    let bad_port = maintwatch(&["watch", "-h", "127.0.0.1", "-p", "0"]);
    assert!(
        !text(&bad_port.stderr).contains("--host"),
        "-h took its value"
    );
}

#[test]
fn no_help_text_or_man_page_shows_a_password_on_the_command_line() {
    let help = text(&maintwatch(&["watch", "--help"]).stdout);
    assert!(!help.contains("-a \"$PASS\""), "{help}");
    assert!(help.contains("REDISCLI_AUTH"), "{help}");
    let man = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/man/maintwatch-watch.1"
    ))
    .unwrap();
    assert!(!man.contains("\\-a \"$PASS\""), "the man page");
}

#[test]
fn demo_list_lists_the_scenarios_like_simulate_list() {
    let demo = maintwatch(&["demo", "--list"]);
    assert_eq!(demo.status.code(), Some(0), "{}", text(&demo.stderr));
    let simulate = maintwatch(&["simulate", "--list"]);
    assert!(text(&demo.stdout).contains("single-proxy"));
    assert_eq!(text(&demo.stdout), text(&simulate.stdout));
}
