//! How long a client's threads waited for a CPU: the evidence that lets a start deadline count the
//! client's own time rather than the machine's.
//!
//! A certified scenario gives up on a client that never starts its clock (it never opts in, or is
//! a single-endpoint client under a cluster scenario). Counted on the wall clock, that bound
//! measures the machine as much as the client: under load (scenarios played in parallel, a busy
//! CI runner) a client that would opt in within a second takes many, and its scenario was NOT
//! JUDGED where one played alone was judged. The kernel keeps, for every thread, the time it
//! spent runnable but waiting for a CPU (`/proc/PID/task/TID/schedstat`, its second field); the
//! longest such wait over the client's threads is time the client could not use, and the start
//! deadline is moved on by it (`simulation::start`).

use std::collections::BTreeMap;
use std::time::Duration;

/// Each thread's run-queue wait so far (nanoseconds), by thread id, over one process group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Waits(BTreeMap<u32, u64>);

impl Waits {
    /// The threads of process group `pgid` now; `None` where the kernel does not say (not
    /// Linux, or no scheduler statistics).
    pub fn of_group(pgid: u32) -> Option<Waits> {
        imp::of_group(pgid)
    }

    /// The longest any one thread waited since `before` (a thread born since counts from 0).
    /// The longest, not the sum: the thread that opts in is one of them, and no thread can have
    /// waited longer than the time that passed.
    pub fn longest_since(&self, before: &Waits) -> Duration {
        let ns = self
            .0
            .iter()
            .map(|(tid, now)| now.saturating_sub(before.0.get(tid).copied().unwrap_or(0)))
            .max()
            .unwrap_or(0);
        Duration::from_nanos(ns)
    }
}

/// The process group of a `/proc/PID/stat` line: the fifth field, the third after the command
/// name, which is in parentheses and may itself hold spaces and parentheses.
fn group_of(stat: &str) -> Option<u32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// The run-queue wait of a `schedstat` line (`run wait slices`), in nanoseconds.
fn wait_of(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{group_of, wait_of, Waits};
    use std::collections::BTreeMap;

    pub fn of_group(pgid: u32) -> Option<Waits> {
        let mut waits = BTreeMap::new();
        let mut readable = false;
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if group_of(&stat) != Some(pgid) {
                continue;
            }
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                    continue;
                };
                let path = task.path().join("schedstat");
                if let Some(ns) = std::fs::read_to_string(path)
                    .ok()
                    .as_deref()
                    .and_then(wait_of)
                {
                    readable = true;
                    waits.insert(tid, ns);
                }
            }
        }
        // A group whose threads are all gone says nothing either way; one without scheduler
        // statistics neither.
        readable.then_some(Waits(waits))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Waits;

    pub fn of_group(_pgid: u32) -> Option<Waits> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_is_read_past_a_command_name_with_parentheses() {
        assert_eq!(group_of("42 (python3) S 1 42 42 0 -1"), Some(42));
        assert_eq!(group_of("7 (a) (b) c) R 1 99 7 0"), Some(99));
        assert_eq!(group_of("garbage"), None);
        assert_eq!(wait_of("2001043847 1164207 13\n"), Some(1164207));
        assert_eq!(wait_of("12"), None);
    }

    #[test]
    fn the_longest_wait_of_one_thread_counts_and_a_new_thread_counts_from_zero() {
        let before = Waits(BTreeMap::from([(1, 100), (2, 5_000)]));
        let now = Waits(BTreeMap::from([(1, 900), (2, 5_100), (3, 400)]));
        assert_eq!(now.longest_since(&before), Duration::from_nanos(800));
        assert_eq!(Waits::default().longest_since(&before), Duration::ZERO);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_group_is_found_with_this_thread() {
        // SAFETY: getpgrp and gettid take no arguments and cannot fail.
        let (pgid, tid) = unsafe { (libc::getpgrp(), libc::gettid()) };
        let waits = Waits::of_group(pgid as u32).expect("scheduler statistics");
        assert!(waits.0.contains_key(&(tid as u32)), "{waits:?}");
    }
}
