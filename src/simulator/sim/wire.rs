//! The relay's view of the bytes it passes on: where a client's command and an upstream's reply
//! begin and end, found without decoding them.
//!
//! The relay must never change a reply, so it never holds a whole frame to look at it: a command
//! of 300,000 arguments or a 512 MB value goes through in pieces, as the bytes arrive, with
//! memory that does not grow with its size. What the relay needs is only where each frame ends
//! (to keep replies in command order and to put a notification or a reply of its own between
//! two frames, never inside one) and, for a command, its first two words (to know whether the
//! simulator answers it). Both machines here count: the remaining elements of each open
//! aggregate and the remaining bytes of a blob.
//!
//! A command is checked against Redis' own limits and answered with Redis' own protocol errors
//! (`networking.c`): at most `INT_MAX` arguments, each at most `proto-max-bulk-len` (512 MB by
//! default), and a count line of at most 64 KB.

/// Redis' default `proto-max-bulk-len`: the longest argument a client may send.
pub(super) const MAX_BULK: i64 = 512 * 1024 * 1024;
/// Redis refuses a multibulk count above `INT_MAX`.
pub(super) const MAX_ARGS: i64 = i32::MAX as i64;
/// Redis' `PROTO_INLINE_MAX_SIZE`: the longest count line (and inline command).
pub(super) const LINE_MAX: usize = 64 * 1024;
/// The longest first or second word kept to decide who answers a command: no command or
/// subcommand the simulator answers itself is longer.
const WORD_MAX: i64 = 32;
/// The deepest nesting of a reply the relay follows (Redis' own replies nest a few levels).
const DEPTH_MAX: usize = 128;

/// A short word, upper case, kept without an allocation (the relay reads two per command).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Word {
    bytes: [u8; WORD_MAX as usize],
    len: u8,
}

impl Word {
    const EMPTY: Word = Word {
        bytes: [0; WORD_MAX as usize],
        len: 0,
    };

    fn upper(from: &[u8]) -> Word {
        let mut w = Word::EMPTY;
        let n = from.len().min(w.bytes.len());
        w.bytes[..n].copy_from_slice(&from[..n]);
        w.bytes[..n].make_ascii_uppercase();
        w.len = n as u8;
        w
    }

    /// The word; empty when it is not UTF-8 (no command of the simulator's is).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.bytes()).unwrap_or("")
    }

    /// The word's bytes, unchecked: what the relay compares, once per command.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// The start of a multibulk command, read without consuming it.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Head {
    /// Declared arguments; 0 for `*0` or `*-1`, which Redis skips.
    pub argc: u64,
    /// Bytes of the count line (what an empty command takes).
    pub line: usize,
    /// The first word, upper case; empty when longer than any command the simulator owns.
    pub name: Word,
    /// The second word, upper case; empty when absent or long.
    pub sub: Word,
    /// Bytes of the count line and of the whole arguments read with it (at most two): where
    /// the rest of the command resumes, so a relayed command is not read twice.
    pub read: usize,
    /// The arguments within `read`.
    pub args_read: u64,
}

/// Reads a line ending in `\n` at the start of `buf`: its content without `\r\n` and its length
/// with them; `None` until complete. `what` names the line in Redis' error.
fn line<'a>(buf: &'a [u8], what: &str) -> Result<Option<(&'a [u8], usize)>, String> {
    match buf[..buf.len().min(LINE_MAX + 2)]
        .iter()
        .position(|&b| b == b'\n')
    {
        Some(nl) => {
            let content = &buf[..nl];
            Ok(Some((
                content.strip_suffix(b"\r").unwrap_or(content),
                nl + 1,
            )))
        }
        None if buf.len() > LINE_MAX => Err(format!("too big {what} count string")),
        None => Ok(None),
    }
}

/// A decimal integer as Redis' `string2ll` reads one: an optional `-`, then digits, no `+`.
fn number(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if negative {
        Some(n)
    } else {
        n.checked_neg()
    }
}

/// `*N`: the argument count (0 or less: an empty command).
fn arg_count(line: &[u8]) -> Result<i64, String> {
    match number(&line[1..]) {
        Some(n) if n <= MAX_ARGS => Ok(n),
        _ => Err("invalid multibulk length".into()),
    }
}

/// `$N`: one argument's length.
fn bulk_len(line: &[u8]) -> Result<i64, String> {
    if line.first() != Some(&b'$') {
        let got = line.first().map_or(' ', |&b| b as char);
        return Err(format!("expected '$', got '{got}'"));
    }
    match number(&line[1..]) {
        Some(n) if (0..=MAX_BULK).contains(&n) => Ok(n),
        _ => Err("invalid bulk length".into()),
    }
}

/// The head of the multibulk command at the start of `buf` (which starts with `*`): `None`
/// until its count line and first two words (when short) have arrived.
pub(super) fn head(buf: &[u8]) -> Result<Option<Head>, String> {
    let Some((count, mut pos)) = line(buf, "mbulk")? else {
        return Ok(None);
    };
    let argc = arg_count(count)?;
    let mut head = Head {
        argc: argc.max(0) as u64,
        line: pos,
        name: Word::EMPTY,
        sub: Word::EMPTY,
        read: pos,
        args_read: 0,
    };
    for i in 0..argc.min(2) {
        let Some((header, n)) = line(&buf[pos..], "bulk")? else {
            return Ok(None);
        };
        let len = bulk_len(header)?;
        if len > WORD_MAX {
            // No word the simulator owns: decided without the rest.
            return Ok(Some(head));
        }
        let end = pos + n + len as usize;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        let word = Word::upper(&buf[pos + n..end]);
        if i == 0 {
            head.name = word;
        } else {
            head.sub = word;
        }
        pos = end + 2;
        head.read = pos;
        head.args_read = i as u64 + 1;
    }
    Ok(Some(head))
}

/// Where a multibulk command is, as its bytes go by.
#[derive(Debug)]
enum At {
    Count,
    Header,
    /// Bytes of an argument still to come, with its `\r\n`.
    Body(u64),
}

/// One multibulk command, followed from its first byte to its last without keeping it.
#[derive(Debug)]
pub(super) struct Command {
    at: At,
    args_left: u64,
    /// A count or length line cut by a read (at most [`LINE_MAX`] bytes).
    partial: Vec<u8>,
}

impl Command {
    pub fn new() -> Command {
        Command {
            at: At::Count,
            args_left: 0,
            partial: Vec::new(),
        }
    }

    /// The rest of a command whose [`Head`] was read: `args_left` arguments from the start of
    /// the next one (at least one).
    pub fn resume(args_left: u64) -> Command {
        Command {
            at: At::Header,
            args_left,
            partial: Vec::new(),
        }
    }

    /// Consumes this command's bytes from `data`: how many, and whether the command ended.
    /// An error is Redis' protocol error text (the connection must close).
    pub fn advance(&mut self, data: &[u8]) -> Result<(usize, bool), String> {
        let mut pos = 0;
        while pos < data.len() {
            if let At::Body(left) = &mut self.at {
                let take = (*left).min((data.len() - pos) as u64);
                *left -= take;
                pos += take as usize;
                if *left > 0 {
                    break;
                }
                self.args_left -= 1;
                if self.args_left == 0 {
                    return Ok((pos, true));
                }
                self.at = At::Header;
                continue;
            }
            let rest = &data[pos..];
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                if self.partial.len() + rest.len() > LINE_MAX {
                    return Err("too big bulk count string".into());
                }
                self.partial.extend_from_slice(rest);
                return Ok((data.len(), false));
            };
            pos += nl + 1;
            // A line cut by a read is joined first; a whole one is read where it is.
            let joined;
            let text = if self.partial.is_empty() {
                &rest[..nl]
            } else {
                self.partial.extend_from_slice(&rest[..nl]);
                joined = std::mem::take(&mut self.partial);
                &joined[..]
            };
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            match self.at {
                At::Count => {
                    let n = arg_count(text)?;
                    if n <= 0 {
                        return Ok((pos, true));
                    }
                    self.args_left = n as u64;
                    self.at = At::Header;
                }
                _ => self.at = At::Body(bulk_len(text)? as u64 + 2),
            }
        }
        Ok((pos, false))
    }
}

/// Where a reply frame ends, as its bytes go by: the upstream's frames are passed on as they
/// arrive, so a reply of any size costs the relay no more than one read's worth of memory.
#[derive(Debug, Default)]
pub(super) struct Cutter {
    /// Elements still to come in each open aggregate, innermost last.
    open: Vec<u64>,
    /// Bytes of a blob still to come, with its `\r\n`.
    blob: u64,
    /// The type byte of the line being read (0: at an element's start).
    kind: u8,
    /// The digits of a length line cut by a read.
    digits: Vec<u8>,
    /// Inside a top-level frame.
    inside: bool,
}

impl Cutter {
    /// True between a frame's first byte and its last.
    pub fn mid_frame(&self) -> bool {
        self.inside
    }

    /// Consumes the current frame's bytes from `data`: how many, and whether the frame ended.
    pub fn advance(&mut self, data: &[u8]) -> Result<(usize, bool), String> {
        let mut pos = 0;
        while pos < data.len() {
            self.inside = true;
            if self.blob > 0 {
                let take = self.blob.min((data.len() - pos) as u64);
                self.blob -= take;
                pos += take as usize;
                if self.blob == 0 && self.element_done() {
                    return Ok((pos, true));
                }
                continue;
            }
            if self.kind == 0 {
                self.kind = data[pos];
                pos += 1;
                continue;
            }
            let rest = &data[pos..];
            let counted = matches!(
                self.kind,
                b'$' | b'!' | b'=' | b'*' | b'~' | b'>' | b'%' | b'|'
            );
            let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
                if counted {
                    self.keep_digits(rest)?;
                }
                return Ok((data.len(), false));
            };
            if counted {
                self.keep_digits(&rest[..nl])?;
            }
            pos += nl + 1;
            if self.line_done()? {
                return Ok((pos, true));
            }
        }
        Ok((pos, false))
    }

    fn keep_digits(&mut self, bytes: &[u8]) -> Result<(), String> {
        if self.digits.len() + bytes.len() > 24 {
            return Err("a length line longer than any number".into());
        }
        self.digits.extend_from_slice(bytes);
        Ok(())
    }

    /// A line ended: a scalar is complete, a blob or aggregate begins. True if the top-level
    /// frame ended.
    fn line_done(&mut self) -> Result<bool, String> {
        let kind = std::mem::take(&mut self.kind);
        let digits = std::mem::take(&mut self.digits);
        let digits = digits.strip_suffix(b"\r").unwrap_or(&digits);
        let n = || match number(digits) {
            Some(n) if n >= -1 => Ok(n),
            _ => Err(format!(
                "a bad length after '{}': {}",
                kind as char,
                super::notation::escape(digits)
            )),
        };
        match kind {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => Ok(self.element_done()),
            b'$' | b'!' | b'=' => match n()? {
                -1 => Ok(self.element_done()),
                len => {
                    self.blob = len as u64 + 2;
                    Ok(false)
                }
            },
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let n = n()?;
                // A map holds pairs; an attribute holds pairs and then the value it annotates,
                // in the one place of its parent that value takes.
                let elements = match kind {
                    b'%' => 2 * n.max(0) as u64,
                    b'|' => 2 * n.max(0) as u64 + 1,
                    _ => n.max(0) as u64,
                };
                if elements == 0 {
                    return Ok(self.element_done());
                }
                if self.open.len() == DEPTH_MAX {
                    return Err(format!("a reply nested more than {DEPTH_MAX} deep"));
                }
                self.open.push(elements);
                Ok(false)
            }
            other => Err(format!(
                "unknown type byte {}",
                super::notation::escape(&[other])
            )),
        }
    }

    /// One element is complete; closes the aggregates it completes. True if that was the whole
    /// frame.
    fn element_done(&mut self) -> bool {
        while let Some(left) = self.open.last_mut() {
            *left -= 1;
            if *left > 0 {
                return false;
            }
            self.open.pop();
        }
        self.inside = false;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cuts `bytes` fed in pieces of `step`, returning each frame's bytes.
    fn cut(bytes: &[u8], step: usize) -> Vec<Vec<u8>> {
        let mut c = Cutter::default();
        let (mut frames, mut cur) = (Vec::new(), Vec::new());
        for piece in bytes.chunks(step) {
            let mut pos = 0;
            while pos < piece.len() {
                let (n, ended) = c.advance(&piece[pos..]).unwrap();
                cur.extend_from_slice(&piece[pos..pos + n]);
                pos += n;
                if ended {
                    frames.push(std::mem::take(&mut cur));
                }
            }
        }
        assert!(cur.is_empty() && !c.mid_frame());
        frames
    }

    #[test]
    fn replies_are_cut_where_they_end_whatever_the_reads() {
        let frames: Vec<&[u8]> = vec![
            b"+OK\r\n",
            b"$5\r\nhel\nl\r\n",
            b"$-1\r\n",
            b"*2\r\n*1\r\n:1\r\n%1\r\n+a\r\n$0\r\n\r\n",
            b"*0\r\n",
            b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\nm\r\n",
            b"|1\r\n+k\r\n+v\r\n:5\r\n",
            b"*2\r\n|1\r\n+k\r\n+v\r\n:5\r\n_\r\n",
            b"-ERR no\r\n",
            b"=7\r\ntxt:abc\r\n",
            b"~1\r\n#t\r\n",
        ];
        let all = frames.concat();
        for step in [1, 2, 3, 7, all.len()] {
            let got = cut(&all, step);
            assert_eq!(got, frames, "pieces of {step}");
        }
    }

    #[test]
    fn numbers_read_as_redis_reads_them() {
        assert_eq!(number(b"0"), Some(0));
        assert_eq!(number(b"-1"), Some(-1));
        assert_eq!(number(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(number(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [&b""[..], b"-", b"+1", b"1x", b" 1", b"9223372036854775808"] {
            assert_eq!(number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn replies_that_are_not_resp_are_refused() {
        assert!(Cutter::default().advance(b"?x\r\n").is_err());
        assert!(Cutter::default().advance(b"$abc\r\n").is_err());
        assert!(Cutter::default()
            .advance(b"$99999999999999999999999999\r\n")
            .is_err());
    }

    #[test]
    fn a_command_is_followed_to_its_end_in_pieces() {
        let cmd = b"*3\r\n$4\r\nSADD\r\n$1\r\nk\r\n$12\r\nhello\r\nworld\r\n";
        for step in 1..cmd.len() {
            let mut c = Command::new();
            let mut used = 0;
            let mut ended = false;
            for piece in cmd.chunks(step) {
                let (n, e) = c.advance(piece).unwrap();
                used += n;
                ended = e;
            }
            assert_eq!((used, ended), (cmd.len(), true), "pieces of {step}");
        }
        // Stops at its end, leaving the next command.
        let (n, ended) = Command::new()
            .advance(b"*1\r\n$4\r\nPING\r\n*1\r\n")
            .unwrap();
        assert_eq!((n, ended), (14, true));
    }

    #[test]
    fn commands_outside_redis_limits_get_redis_errors() {
        let err = |b: &[u8]| Command::new().advance(b).unwrap_err();
        assert_eq!(err(b"*2147483648\r\n"), "invalid multibulk length");
        assert_eq!(err(b"*1\r\n$536870913\r\n"), "invalid bulk length");
        assert_eq!(err(b"*1\r\n:1\r\n"), "expected '$', got ':'");
        assert!(Command::new()
            .advance(b"*2147483647\r\n$536870912\r\n")
            .is_ok());
        assert_eq!(
            head(b"*2147483648\r\n").unwrap_err(),
            "invalid multibulk length"
        );
        assert_eq!(
            head(&[b'*'; LINE_MAX + 10]).unwrap_err(),
            "too big mbulk count string"
        );
    }

    #[test]
    fn a_head_names_the_command_once_its_words_are_in() {
        assert_eq!(head(b"*3\r\n$6\r\nclient\r\n$3\r\nid").unwrap(), None);
        let h = head(b"*3\r\n$6\r\nclient\r\n$7\r\nsetname\r\n$")
            .unwrap()
            .unwrap();
        assert_eq!(
            (h.argc, h.name.as_str(), h.sub.as_str()),
            (3, "CLIENT", "SETNAME")
        );
        let h = head(b"*0\r\n").unwrap().unwrap();
        assert_eq!((h.argc, h.line), (0, 4));
        // A long first word is no command of the simulator's: decided at its length.
        let h = head(b"*2\r\n$100\r\nxx").unwrap().unwrap();
        assert_eq!((h.name.as_str(), h.sub.as_str()), ("", ""));
        assert_eq!((h.read, h.args_read), (4, 0));
    }

    #[test]
    fn a_command_resumes_where_its_head_stopped() {
        let cmd = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n*1\r\n";
        let h = head(cmd).unwrap().unwrap();
        assert_eq!((h.read, h.args_read), (20, 2));
        let (n, ended) = Command::resume(h.argc - h.args_read)
            .advance(&cmd[h.read..])
            .unwrap();
        assert_eq!((h.read + n, ended), (31, true));
        // A short command is whole in its head.
        let get = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        let h = head(get).unwrap().unwrap();
        assert_eq!((h.read, h.args_read, h.argc), (get.len(), 2, 2));
        // A long first word stops the head before its header.
        let h = head(b"*2\r\n$100\r\n").unwrap().unwrap();
        assert_eq!((h.read, h.args_read), (4, 0));
    }
}
