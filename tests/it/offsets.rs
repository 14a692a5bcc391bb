//! What every offset on the screen is measured from (issue 25, item 5): the demos of an
//! OSS-cluster migration and of the peer variants, read as a person reads them.

use crate::common;

fn demo(scenario: &str) -> String {
    let out = common::maintwatch(["demo", "--scenario", scenario, "--speed", "8"])
        .args(["--color", "never"])
        .output()
        .expect("the demo runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The entries (time-stamped lines) with their continuations joined: a wrapped entry goes on
/// under an indent of 8 spaces.
fn entries(out: &str) -> Vec<String> {
    let mut entries: Vec<String> = Vec::new();
    for line in out.lines() {
        let stamped = line.len() > 12 && line.as_bytes()[2] == b':' && line.as_bytes()[8] == b'.';
        if stamped {
            entries.push(line.to_string());
        } else if let (Some(last), Some(rest)) = (entries.last_mut(), line.strip_prefix("        "))
        {
            last.push(' ');
            last.push_str(rest.trim());
        }
    }
    entries
}

fn entry<'a>(entries: &'a [String], part: &str) -> &'a str {
    entries
        .iter()
        .find(|e| e.contains(part))
        .unwrap_or_else(|| panic!("no entry with {part:?} in {entries:#?}"))
}

/// `HH:MM:SS.mmm` as milliseconds of the day.
fn millis(entry: &str) -> u64 {
    let n = |r: std::ops::Range<usize>| entry[r].parse::<u64>().unwrap();
    ((n(0..2) * 60 + n(3..5)) * 60 + n(6..8)) * 1000 + n(9..12)
}

#[test]
fn oss_cluster_offsets_name_the_event_they_are_measured_from() {
    let out = demo("oss-cluster");
    let entries = entries(&out);
    // The opening event itself needs no name; what follows it does.
    assert!(entry(&entries, "SMIGRATING seq 18 slots").contains("+0.000 SMIGRATING"));
    assert!(entry(&entries, "SMIGRATED seq 19 [").contains(" after SMIGRATING seq 18: "));
    assert!(entry(&entries, "dry-run handoff for SMIGRATED").contains(" after SMIGRATED seq 19: "));
    assert!(entry(&entries, "cluster topology refreshed").contains(" after SMIGRATING seq 18: "));
    // Timestamps never go backwards.
    let times: Vec<u64> = entries.iter().map(|e| millis(e)).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{entries:#?}");
}

#[test]
fn peer_variants_name_an_unrelated_reference_and_a_superseded_moving() {
    let out = demo("peer-variants");
    let entries = entries(&out);
    assert!(entry(&entries, "FAILED_OVER seq ?").contains(" after MOVING seq 2: "));
    assert!(entry(&entries, "push 'message'").contains(" after MOVING seq 9: "));
    // MOVING 1 was replaced by MOVING 2 on the same connection before any close.
    let table: String = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(table.contains("superseded"), "{out}");
    // The scenario runs 6 s (its last step is at +5.0 s): the summary says so in scenario
    // seconds, as every offset above it, not the 0.75 s it took at speed 8.
    let watched: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("summary: watched "))
        .and_then(|l| l.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no summary in {out}"));
    assert!(watched >= 5.0, "watched {watched} s");
}
