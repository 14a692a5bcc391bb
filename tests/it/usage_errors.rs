//! Every flag value the program itself refuses (clap accepts it, a command checks it) is a usage
//! error as clap's own are: exit 2 and exactly one line on stderr, naming the flag. Each case runs
//! the real binary; none of them reaches a server (the checks come before any connection), and
//! the endpoints named are closed ports on 127.0.0.1 in case one ever did.
//!
//! When a command gains a check of its own, its case belongs here.

use std::process::Stdio;

use crate::common;

/// A port nothing listens on: a case that wrongly got as far as connecting fails fast.
const CLOSED: &str = "redis://127.0.0.1:1";

/// `(flag named in the message, command line)`.
const CASES: &[(&str, &[&str])] = &[
    // watch: its own settings, the hooks, OTLP, and the endpoints.
    (
        "--exec-timeout",
        &["watch", "--exec", "true", "--exec-timeout", "0", CLOSED],
    ),
    (
        "--exec-on",
        &["watch", "--exec", "true", "--exec-on", "bogus", CLOSED],
    ),
    (
        "--otlp-interval",
        &[
            "watch",
            "--otlp",
            "http://127.0.0.1:1",
            "--otlp-interval",
            "0",
            CLOSED,
        ],
    ),
    ("--otlp", &["watch", "--otlp", "ftp://x", CLOSED]),
    ("-h", &["watch", "-h", ""]),
    ("--insecure", &["watch", "--insecure", CLOSED]),
    ("--from", &["watch", "--from", "/dev/null"]),
    // probe and doctor: the same endpoint setup.
    ("-h", &["probe", "-h", ""]),
    ("--insecure", &["probe", "--insecure", CLOSED]),
    ("--from", &["probe", "--from", "/dev/null"]),
    ("-h/-p", &["probe", "-p", "6380", CLOSED]),
    ("-h", &["doctor", "-h", ""]),
    ("--insecure", &["doctor", "--insecure", CLOSED]),
    ("-u", &["doctor", CLOSED, "-u", CLOSED]),
    // decide, simulate, pcap.
    (
        "--endpoint",
        &["decide", "--endpoint", "", "--window", "5s"],
    ),
    (
        "--successor",
        &[
            "decide",
            "--endpoint",
            "a:1",
            "--successor",
            "::x",
            "--window",
            "5s",
        ],
    ),
    (
        "--window",
        &["decide", "--endpoint", "a:1", "--window", "1500ms"],
    ),
    ("--upstream", &["simulate", "--upstream", "ftp://x"]),
    ("--sim-speed", &["pcap", "--sim-speed", "0", "/dev/null"]),
];

#[test]
fn every_refused_value_exits_2_with_one_line_naming_the_flag() {
    let mut wrong = Vec::new();
    for (flag, args) in CASES {
        let out = common::maintwatch::<_, &str>([])
            .args(*args)
            .env_remove("REDISCLI_AUTH")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().collect();
        let named =
            lines.len() == 1 && lines[0].starts_with("maintwatch: ") && lines[0].contains(flag);
        if out.status.code() != Some(2) || !named {
            wrong.push(format!(
                "{args:?}: exit {:?}, stderr {err:?}",
                out.status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}

/// `--exec-timeout 0` exited 1 where `--otlp-interval 0` exited 2: they now read alike.
#[test]
fn a_zero_exec_timeout_and_a_zero_otlp_interval_agree() {
    let run = |args: &[&str]| {
        let out = common::maintwatch::<_, &str>([])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (exec, exec_err) = run(&["watch", "--exec", "true", "--exec-timeout", "0", CLOSED]);
    let (otlp, otlp_err) = run(&[
        "watch",
        "--otlp",
        "http://127.0.0.1:1",
        "--otlp-interval",
        "0",
        CLOSED,
    ]);
    assert_eq!((exec, otlp), (Some(2), Some(2)));
    assert_eq!(exec_err, "maintwatch: --exec-timeout: must be above zero\n");
    assert_eq!(
        otlp_err,
        "maintwatch: --otlp-interval: must be above zero\n"
    );
}

/// clap's own errors keep clap's format (and code).
#[test]
fn clap_errors_keep_their_format() {
    let out = common::maintwatch::<_, &str>([])
        .args(["watch", "--count", "0", CLOSED])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("error: invalid value '0' for '--count"),
        "{err}"
    );
}

/// The input edges a new user met (issue 60), each said as what it is: a count too large for
/// its type names the largest, a negative speed is a speed and not an unknown flag, a zero
/// `--duration` is refused as a zero `--count` is, and a directory given as a capture is a
/// directory to `pcap` as it is to `replay`.
#[test]
fn each_input_edge_names_the_real_problem() {
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["watch", "--count", "4294967296", CLOSED],
            2,
            "4294967296 is too large: at most 4294967295 notifications",
        ),
        (
            &["demo", "--speed", "-1"],
            2,
            "for '--speed <N>': expected a number above 0, such as 1, 4 or 0.5, found \"-1\"",
        ),
        (
            &["watch", "--duration", "0s", CLOSED],
            2,
            "the watch stops after DURATION, so it is above 0",
        ),
        (
            &["watch", "--count", "0", CLOSED],
            2,
            "the watch stops after N notifications, so N is at least 1",
        ),
        (&["pcap", "/"], 1, "/: cannot open: Is a directory"),
        (&["replay", "/"], 1, "Is a directory"),
    ];
    let mut wrong = Vec::new();
    for (args, code, said) in cases {
        let out = common::maintwatch(*args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        if out.status.code() != Some(*code) || !err.contains(said) {
            wrong.push(format!(
                "{args:?}: exit {:?}, stderr {err:?}",
                out.status.code()
            ));
        }
    }
    assert!(wrong.is_empty(), "\n{}", wrong.join("\n"));
}
