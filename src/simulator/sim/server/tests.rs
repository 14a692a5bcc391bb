//! The simulator server's unit tests: command framing, the command table and replies, and what
//! a stall notes of the client's writes.

use super::batch::{next_inline, redacted, whole_command};
use super::*;

#[test]
fn commands_in_both_forms() {
    let (args, n) = whole_command(b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nPING")
        .unwrap()
        .unwrap();
    assert_eq!((args, n), (vec![b"ECHO".to_vec(), b"hi".to_vec()], 22));
    let (args, n) = next_inline(b"ECHO  hello\r\n").unwrap().unwrap();
    assert_eq!((args, n), (vec![b"ECHO".to_vec(), b"hello".to_vec()], 13));
    assert_eq!(whole_command(b"*2\r\n$4\r\nEC").unwrap(), None);
    assert_eq!(next_inline(b"PING").unwrap(), None);
    assert!(whole_command(b"*1\r\n:1\r\n")
        .unwrap_err()
        .contains("expected '$'"));
    assert!(whole_command(b"*x\r\n").is_err());
}

#[test]
fn passwords_never_reach_the_narration() {
    let args = |s: &str| {
        s.split(' ')
            .map(|w| w.as_bytes().to_vec())
            .collect::<Vec<_>>()
    };
    let shown = redacted(&args("HELLO 3 AUTH alice s3cret SETNAME app"));
    assert_eq!(shown, "HELLO 3 AUTH alice <redacted> SETNAME app");
    assert_eq!(redacted(&args("auth s3cret")), "auth <redacted>");
    assert_eq!(redacted(&args("AUTH bob s3cret")), "AUTH bob <redacted>");
}

/// While a stall holds a connection's commands, the first read starts the hold and later ones
/// are noted as the client's writes meanwhile: each at most once per 10 ms, so a client writing
/// on without pause makes a bounded list and a silence (what the judge reads as a give-up that
/// kept the connection) survives.
#[tokio::test(start_paused = true)]
async fn writes_during_a_hold_are_noted_and_thinned() {
    use std::time::Duration;
    let (mut held, mut writes) = (None, Vec::new());
    accept::held_read(&mut held, &mut writes);
    assert!(
        held.is_some() && writes.is_empty(),
        "the first read starts the hold"
    );
    for _ in 0..100 {
        tokio::time::advance(Duration::from_millis(1)).await;
        accept::held_read(&mut held, &mut writes);
    }
    tokio::time::advance(Duration::from_millis(900)).await;
    accept::held_read(&mut held, &mut writes);
    let ms: Vec<u64> = writes.iter().map(|w| (w * 1000.0).round() as u64).collect();
    assert_eq!(ms, [1, 11, 21, 31, 41, 51, 61, 71, 81, 91, 1000]);
}
