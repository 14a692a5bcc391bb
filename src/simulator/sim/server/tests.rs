//! The simulator server's unit tests: command framing, the command table and replies.

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
