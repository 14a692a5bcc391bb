//! The one strict scanner: checks every byte of a frame against RESP3 and the [`Limits`], and
//! records its values as flat [`Node`]s. The tree and the flat form both come from here.

use super::flat::{FlatFrame, FlatScan, Kind, Node, MAX_FRAME_CAP};
use super::frame::{show_byte, ErrorKind, Limits, RespError, Scan, Spanned};

/// Scans frames from the start of a buffer, within [`Limits`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Scanner {
    pub limits: Limits,
}

/// Internal: incomplete or failed. The error is boxed so that every step of the scan returns
/// two words: errors are rare, steps are not.
pub(super) enum Stop {
    Incomplete(usize),
    Error(Box<RespError>),
}

pub(super) type R<T> = Result<T, Stop>;

impl Scanner {
    pub fn new(limits: Limits) -> Self {
        Scanner { limits }
    }

    /// Scans one frame at the start of `buf` into a tree. Error offsets are relative to `buf`.
    pub fn scan<'a>(&self, buf: &'a [u8]) -> Result<Scan<'a>, RespError> {
        // Room for a typical reply or push; a larger frame grows it.
        let mut nodes = Vec::with_capacity(16);
        Ok(match self.scan_flat(buf, &mut nodes)? {
            FlatScan::Frame(frame) => Scan::Frame(frame.to_frame(), frame.raw().len()),
            FlatScan::Incomplete { need } => Scan::Incomplete { need },
        })
    }

    /// Scans one frame at the start of `buf` into `nodes` (cleared first): the same checks and
    /// limits as [`Scanner::scan`], without allocating once `nodes` has grown to the frames'
    /// size. On an error or an incomplete frame, `nodes` holds nothing of use.
    pub fn scan_flat<'a, 'n>(
        &self,
        buf: &'a [u8],
        nodes: &'n mut Vec<Node>,
    ) -> Result<FlatScan<'a, 'n>, RespError> {
        self.scan_flat_with(buf, nodes, true)
    }

    /// [`Scanner::scan_flat`], with or without the one-pass read of arrays of short blobs (the
    /// tests check both give the same).
    #[inline]
    pub(super) fn scan_flat_with<'a, 'n>(
        &self,
        buf: &'a [u8],
        nodes: &'n mut Vec<Node>,
        short: bool,
    ) -> Result<FlatScan<'a, 'n>, RespError> {
        nodes.clear();
        let mut cur = Cursor::new(buf, &self.limits, nodes);
        let max_frame = cur.max_frame;
        let too_large = |size: usize| RespError {
            offset: 0,
            kind: ErrorKind::FrameTooLarge {
                size: size as u64,
                limit: max_frame,
            },
        };
        // A command (or a reply of a few short words) is nearly always an array of short
        // blobs: read in one pass; anything else, or anything off, goes the exact way.
        let result = if short && (cur.short_array() || cur.short_simple()) {
            Ok(())
        } else {
            cur.value(0)
        };
        let pos = cur.pos;
        match result {
            // The limit holds however the frame arrived: whole in one read as when streamed in.
            Ok(()) if pos as u64 > max_frame => Err(too_large(pos)),
            Ok(()) => Ok(FlatScan::Frame(FlatFrame {
                raw: &buf[..pos],
                nodes,
            })),
            Err(Stop::Incomplete(need)) if need as u64 > max_frame => Err(too_large(need)),
            Err(Stop::Incomplete(need)) => Ok(FlatScan::Incomplete { need }),
            Err(Stop::Error(e)) => Err(*e),
        }
    }

    /// Scans every complete frame in `buf`, returning them with their byte spans. Stops at the
    /// first error or at a trailing incomplete frame (whose start is the returned offset).
    pub fn scan_all<'a>(&self, buf: &'a [u8]) -> (Vec<Spanned<'a>>, usize, Option<RespError>) {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < buf.len() {
            match self.scan(&buf[pos..]) {
                Ok(Scan::Frame(f, n)) => {
                    out.push((f, pos..pos + n));
                    pos += n;
                }
                Ok(Scan::Incomplete { .. }) => break,
                Err(mut e) => {
                    e.offset += pos as u64;
                    return (out, pos, Some(e));
                }
            }
        }
        (out, pos, None)
    }
}

pub(super) struct Cursor<'a, 'l> {
    pub(super) buf: &'a [u8],
    pub(super) pos: usize,
    pub(super) limits: &'l Limits,
    /// [`Limits::max_frame`], at most [`MAX_FRAME_CAP`].
    pub(super) max_frame: u64,
    /// The frame's values so far, in wire order.
    pub(super) nodes: &'l mut Vec<Node>,
    /// Values still to decode into the tree (see [`Limits::max_decoded`]).
    pub(super) budget: u64,
    /// A line known to hold no CR or LF so far: its start and how far it was searched. Lets a
    /// resumed check of a long line still arriving search only the new bytes.
    pub(super) searched: (usize, usize),
    /// Whether some value was left undecoded: everything after it is only checked.
    pub(super) elided: bool,
}

impl<'a, 'l> Cursor<'a, 'l> {
    pub(super) fn new(buf: &'a [u8], limits: &'l Limits, nodes: &'l mut Vec<Node>) -> Self {
        Cursor {
            buf,
            pos: 0,
            limits,
            max_frame: limits.max_frame.min(MAX_FRAME_CAP),
            nodes,
            budget: limits.max_decoded,
            searched: (usize::MAX, 0),
            elided: false,
        }
    }

    #[cold]
    pub(super) fn err<T>(&self, offset: usize, kind: ErrorKind) -> R<T> {
        Err(Stop::Error(Box::new(RespError {
            offset: offset as u64,
            kind,
        })))
    }

    fn check_size(&self, need: usize) -> R<()> {
        if need as u64 > self.max_frame {
            return self.err(
                0,
                ErrorKind::FrameTooLarge {
                    size: need as u64,
                    limit: self.max_frame,
                },
            );
        }
        Ok(())
    }

    /// The bytes up to the next CRLF, which must not contain a bare CR or LF.
    fn line(&mut self) -> R<&'a [u8]> {
        let start = self.pos;
        let rest = &self.buf[start..];
        let from = if self.searched.0 == start {
            self.searched.1.min(self.buf.len()) - start
        } else {
            0
        };
        // A simple line never holds CR or LF, so the first of either must be the CRLF.
        match rest[from..].iter().position(|&b| b == b'\r' || b == b'\n') {
            None => {
                self.searched = (start, self.buf.len());
                // One more byte might already be a bare LF: ask for no more than that.
                self.check_size(self.buf.len() + 1)?;
                Err(Stop::Incomplete(self.buf.len() + 1))
            }
            Some(i) => self.line_end(start, from + i),
        }
    }

    /// The line from `start` whose first CR or LF is at `start + i`.
    #[inline]
    fn line_end(&mut self, start: usize, i: usize) -> R<&'a [u8]> {
        let rest = &self.buf[start..];
        if rest[i] == b'\n' {
            return self.err(
                start + i,
                ErrorKind::Expected {
                    expected: "CRLF",
                    found: "a bare '\\n'".into(),
                },
            );
        }
        match rest.get(i + 1) {
            None => Err(Stop::Incomplete(start + i + 2)),
            Some(b'\n') => {
                self.pos = start + i + 2;
                Ok(&rest[..i])
            }
            Some(&b) => self.err(
                start + i + 1,
                ErrorKind::Expected {
                    expected: "'\\n' after '\\r'",
                    found: show_byte(b),
                },
            ),
        }
    }

    /// A signed decimal integer line (an optional '-', then at least one digit: Redis never
    /// writes a '+', and a strict reader does not take one). Headers are
    /// most of what a scanner reads, so the common case (up to 18 digits, then CRLF) is one pass;
    /// anything else goes the exact way, which also finds the error to report.
    #[inline]
    fn integer_line(&mut self) -> R<i64> {
        let buf = self.buf;
        let mut i = self.pos;
        // Most headers and small integers have one or two digits: no loop for them.
        if let Some(&[d, b'\r', b'\n']) = buf.get(i..i + 3) {
            let d = d.wrapping_sub(b'0');
            if d <= 9 {
                self.pos = i + 3;
                return Ok(i64::from(d));
            }
        }
        if let Some(&[d1, d2, b'\r', b'\n']) = buf.get(i..i + 4) {
            let (d1, d2) = (d1.wrapping_sub(b'0'), d2.wrapping_sub(b'0'));
            if d1 <= 9 && d2 <= 9 {
                self.pos = i + 4;
                return Ok(i64::from(d1 * 10 + d2));
            }
        }
        let neg = buf.get(i) == Some(&b'-');
        i += usize::from(neg);
        let digits = i;
        let mut n: u64 = 0;
        while let Some(&b) = buf.get(i) {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            n = n * 10 + u64::from(d);
            i += 1;
            if i - digits > 18 {
                return self.integer_line_exact();
            }
        }
        if i == digits || buf.get(i) != Some(&b'\r') || buf.get(i + 1) != Some(&b'\n') {
            return self.integer_line_exact();
        }
        self.pos = i + 2;
        Ok(if neg { -(n as i64) } else { n as i64 })
    }

    #[cold]
    fn integer_line_exact(&mut self) -> R<i64> {
        let start = self.pos;
        let text = self.line()?;
        parse_i64(text).ok_or_else(|| {
            Stop::Error(Box::new(RespError {
                offset: start as u64,
                kind: ErrorKind::BadNumber(String::from_utf8_lossy(text).into_owned()),
            }))
        })
    }

    /// A length header: `?` (streamed) is rejected, -1 is RESP2's null (`$-1`, `*-1` only), and
    /// no other negative length is taken, `-0` included.
    #[inline]
    fn length(&mut self, tag: u8) -> R<Option<u64>> {
        let start = self.pos;
        if self.buf.get(start) == Some(&b'?') {
            return self.err(start - 1, ErrorKind::Streamed(tag));
        }
        let n = self.integer_line()?;
        if self.buf[start] != b'-' {
            return Ok(Some(n as u64));
        }
        match n {
            -1 if tag == b'$' || tag == b'*' => Ok(None),
            _ => self.negative_length(start),
        }
    }

    #[cold]
    fn negative_length<T>(&self, start: usize) -> R<T> {
        self.err(
            start,
            ErrorKind::Expected {
                expected: "a length of 0 or more",
                // It parsed as an integer: digits and a sign, nothing to escape.
                found: String::from_utf8_lossy(&self.buf[start..self.pos - 2]).into_owned(),
            },
        )
    }

    fn blob(&mut self, tag: u8) -> R<Option<&'a [u8]>> {
        if let Some(text) = self.short_blob() {
            return Ok(Some(text));
        }
        let header = self.pos - 1;
        let Some(len) = self.length(tag)? else {
            return Ok(None);
        };
        if len > self.limits.max_blob {
            return self.err(
                header,
                ErrorKind::BlobTooLong {
                    declared: len,
                    limit: self.limits.max_blob,
                },
            );
        }
        let len = len as usize;
        let start = self.pos;
        let end = start + len;
        self.check_size(end + 2)?;
        if self.buf.len() < end + 2 {
            return Err(Stop::Incomplete(end + 2));
        }
        if &self.buf[end..end + 2] != b"\r\n" {
            let at = if self.buf[end] == b'\r' { end + 1 } else { end };
            return self.err(
                at,
                ErrorKind::Expected {
                    expected: "CRLF after the blob's declared length",
                    found: show_byte(self.buf[at]),
                },
            );
        }
        self.pos = end + 2;
        Ok(Some(&self.buf[start..end]))
    }

    /// The usual blob, a length of one or two digits and its bytes all in the buffer, read in
    /// one go: a command's words and most replies are such blobs. `None` for anything else,
    /// which the exact way reads (or reports); whatever this takes, that takes the same.
    #[inline(always)]
    fn short_blob(&mut self) -> Option<&'a [u8]> {
        let (start, end) = self.short_blob_at(self.pos)?;
        self.pos = end + 2;
        Some(&self.buf[start..end])
    }

    /// [`Cursor::short_blob`] of the blob whose length starts at `at`: its text's span, the
    /// cursor unmoved.
    #[inline(always)]
    fn short_blob_at(&self, at: usize) -> Option<(usize, usize)> {
        let buf = self.buf;
        let (len, head) = match *buf.get(at..at + 4)? {
            [d, b'\r', b'\n', _] if d.is_ascii_digit() => (usize::from(d - b'0'), 3),
            [d1, d2, b'\r', b'\n'] if d1.is_ascii_digit() && d2.is_ascii_digit() => {
                (usize::from(d1 - b'0') * 10 + usize::from(d2 - b'0'), 4)
            }
            _ => return None,
        };
        let start = at + head;
        let end = start + len;
        if len as u64 > self.limits.max_blob || (end + 2) as u64 > self.max_frame {
            return None;
        }
        if buf.get(end..end + 2)? != b"\r\n" {
            return None;
        }
        Some((start, end))
    }

    /// The whole frame, at the cursor's start, when it is a simple string (`+OK`, the usual
    /// reply) whose CRLF is within its first 64 bytes: its node, the cursor past it, and `true`.
    /// As [`Cursor::short_array`], `false` only means "read it the exact way".
    #[inline]
    fn short_simple(&mut self) -> bool {
        let buf = self.buf;
        if buf.first() != Some(&b'+') {
            return false;
        }
        let head = &buf[1..buf.len().min(64)];
        // The first CR or LF must be the CRLF, as `Cursor::line` requires.
        let Some(i) = head.iter().position(|&b| b == b'\r' || b == b'\n') else {
            return false;
        };
        let end = 1 + i;
        if buf[end] != b'\r'
            || buf.get(end + 1) != Some(&b'\n')
            || (end + 2) as u64 > self.max_frame
        {
            return false;
        }
        self.push(Node::text(Kind::Simple, 1, i));
        self.pos = end + 2;
        true
    }

    /// The whole frame, at the cursor's start, when it is an array or a push of one to 99
    /// elements that are all short blobs ([`Cursor::short_blob`]) within the decode budget (a
    /// command, a pub/sub message: most of what a flood is made of): its nodes, the
    /// cursor past it, and `true`. What the exact way would make of such a frame is exactly
    /// that (same nodes, same end; every limit it checks holds, see below), so `false` (the
    /// nodes and cursor untouched) only means "read it the exact way", which also finds any
    /// error or the length an incomplete frame needs.
    #[inline]
    fn short_array(&mut self) -> bool {
        let buf = self.buf;
        let (tag, n, mut pos) = match buf.get(..5) {
            Some(&[t @ (b'*' | b'>'), d, b'\r', b'\n', _]) if d.is_ascii_digit() => {
                (t, usize::from(d - b'0'), 4)
            }
            Some(&[t @ (b'*' | b'>'), d1, d2, b'\r', b'\n'])
                if d1.is_ascii_digit() && d2.is_ascii_digit() =>
            {
                (t, usize::from(d1 - b'0') * 10 + usize::from(d2 - b'0'), 5)
            }
            _ => return false,
        };
        // The exact way's checks on the header: depth (the root is at 0), the element count,
        // and the budget (with all elements decoded nothing is elided). Its check that 3 bytes
        // per element fit in the frame holds when every blob's end does (`short_blob_at`).
        let n64 = n as u64;
        if n == 0
            || self.limits.max_depth == 0
            || n64 > self.limits.max_elements
            || n64 > self.budget
        {
            return false;
        }
        let mark = self.nodes.len();
        self.push(Node::NULL);
        for _ in 0..n {
            let blob = match buf.get(pos) {
                Some(b'$') => self.short_blob_at(pos + 1),
                _ => None,
            };
            let Some((start, end)) = blob else {
                self.nodes.truncate(mark);
                return false;
            };
            self.push(Node::text(Kind::Blob, start, end - start));
            pos = end + 2;
        }
        self.nodes[mark] = Node {
            kind: Kind::of_aggregate(tag),
            elided: false,
            a: n as u32,
            b: n64 | (self.nodes.len() as u64) << 32,
        };
        self.budget -= n64;
        self.pos = pos;
        true
    }

    pub(super) fn count(&mut self, tag: u8, per_item: u64) -> R<Option<usize>> {
        let header = self.pos - 1;
        let Some(n) = self.length(tag)? else {
            return Ok(None);
        };
        let elements = n.saturating_mul(per_item);
        if elements > self.limits.max_elements {
            return self.err(
                header,
                ErrorKind::TooManyElements {
                    declared: elements,
                    limit: self.limits.max_elements,
                },
            );
        }
        // Every element takes at least three bytes; a frame this short cannot be complete yet.
        let min_end = (self.pos as u64).saturating_add(elements.saturating_mul(3));
        if min_end > self.max_frame {
            return self.err(
                header,
                ErrorKind::FrameTooLarge {
                    size: min_end,
                    limit: self.max_frame,
                },
            );
        }
        Ok(Some(n as usize))
    }

    /// `n` items, decoded while the budget lasts; how many were kept, and `false` once anything
    /// in them was left undecoded (the rest are still checked, not kept). The decoded values
    /// are thus always the frame's first ones, in wire order.
    fn items(&mut self, n: usize, depth: usize) -> R<(usize, bool)> {
        for i in 0..n {
            // Once anything is elided the budget is 0 too: one test in the loop.
            if self.budget == 0 {
                self.skip(n - i, depth + 1)?;
                return Ok((i, false));
            }
            self.budget -= 1;
            self.value(depth + 1)?;
        }
        Ok((n, !self.elided))
    }

    /// `n` key/value pairs, as [`Cursor::items`]: keys and values alternate, and a pair cut
    /// short by the budget may leave its key alone.
    fn pairs(&mut self, n: usize, depth: usize) -> R<(usize, bool)> {
        for i in 0..n {
            if self.budget < 2 {
                self.skip(2 * (n - i), depth + 1)?;
                return Ok((2 * i, false));
            }
            self.budget -= 2;
            self.value(depth + 1)?;
            if self.elided {
                self.skip(2 * (n - i) - 1, depth + 1)?;
                return Ok((2 * i + 1, false));
            }
            self.value(depth + 1)?;
        }
        Ok((2 * n, !self.elided))
    }

    /// Checks `n` values without keeping them: the budget is spent, so any aggregate among them
    /// keeps no values, and its node is dropped with the rest.
    #[cold]
    fn skip(&mut self, n: usize, depth: usize) -> R<()> {
        self.elided = true;
        self.budget = 0;
        let mark = self.nodes.len();
        for _ in 0..n {
            self.value(depth)?;
            self.nodes.truncate(mark);
        }
        Ok(())
    }

    #[inline]
    fn push(&mut self, node: Node) {
        if self.nodes.len() == self.nodes.capacity() {
            self.grow();
        }
        self.nodes.push(node);
    }

    /// Doubles the node list, but not past what the decode budget usually fills (its values,
    /// the root, and the aggregates open around a skipped value): a frame of millions of
    /// elements takes the budget's worth of nodes, not twice it. (Attribute values are decoded
    /// outside the budget; past that size the list doubles again.)
    #[cold]
    fn grow(&mut self) {
        let most = usize::try_from(self.limits.max_decoded)
            .unwrap_or(usize::MAX)
            .saturating_add(self.limits.max_depth)
            .saturating_add(2);
        let len = self.nodes.len();
        let doubled = (2 * self.nodes.capacity()).max(8);
        let want = if len < most {
            doubled.min(most)
        } else {
            doubled
        };
        self.nodes.reserve_exact(want - len);
    }

    /// An aggregate after its marker: its node, then its decoded values. Not inlined, so that
    /// [`Cursor::value`] can be: the leaves of a frame are then read in the loop over them.
    #[inline(never)]
    fn aggregate(&mut self, tag: u8, at: usize, depth: usize) -> R<()> {
        if depth >= self.limits.max_depth {
            let limit = self.limits.max_depth;
            return self.err(at, ErrorKind::TooDeep { limit });
        }
        let pairs = matches!(tag, b'%' | b'|');
        let Some(n) = self.count(tag, if pairs { 2 } else { 1 })? else {
            self.push(Node::NULL);
            return Ok(());
        };
        let index = self.nodes.len();
        self.push(Node::NULL);
        let (kept, whole, declared) = if !pairs {
            let (kept, whole) = self.items(n, depth)?;
            (kept, whole, n)
        } else {
            let (mut kept, whole) = self.pairs(n, depth)?;
            if tag == b'|' {
                // Past an elision the value is only checked, and not kept.
                let mark = self.nodes.len();
                self.value(depth + 1)?;
                if whole {
                    kept += 1;
                } else {
                    self.nodes.truncate(mark);
                }
            }
            (kept, whole, 2 * n + usize::from(tag == b'|'))
        };
        // All fit in 32 bits: `count` held every declared element to 3 bytes of a frame of
        // at most MAX_FRAME_CAP bytes, and a node takes at least 3 bytes too.
        self.nodes[index] = Node {
            kind: Kind::of_aggregate(tag),
            elided: !whole,
            a: kept as u32,
            b: declared as u64 | (self.nodes.len() as u64) << 32,
        };
        Ok(())
    }

    /// The text of a blob, if it is not RESP2's null.
    #[inline]
    fn text_node(&self, kind: Kind, text: &[u8]) -> Node {
        let start = text.as_ptr() as usize - self.buf.as_ptr() as usize;
        Node::text(kind, start, text.len())
    }

    #[inline(always)]
    pub(super) fn value(&mut self, depth: usize) -> R<()> {
        let at = self.pos;
        let Some(&tag) = self.buf.get(at) else {
            return Err(Stop::Incomplete(at + 1));
        };
        self.pos += 1;
        let node = match tag {
            b'$' => match self.blob(tag)? {
                Some(s) => self.text_node(Kind::Blob, s),
                None => Node::NULL,
            },
            b':' => Node::bits(Kind::Integer, self.integer_line()? as u64),
            b'*' | b'%' | b'~' | b'>' | b'|' => return self.aggregate(tag, at, depth),
            b'+' => {
                let s = self.line()?;
                self.text_node(Kind::Simple, s)
            }
            b'-' => {
                let s = self.line()?;
                self.text_node(Kind::Error, s)
            }
            b'_' if self.buf.get(at + 1..at + 3) == Some(b"\r\n") => {
                self.pos = at + 3;
                Node::NULL
            }
            b'_' => self.null(at)?,
            _ => self.rare_leaf(tag, at)?,
        };
        self.push(node);
        Ok(())
    }

    fn null(&mut self, at: usize) -> R<Node> {
        let text = self.line()?;
        if !text.is_empty() {
            return self.err(
                at + 1,
                ErrorKind::Expected {
                    expected: "CRLF right after '_'",
                    found: show_byte(text[0]),
                },
            );
        }
        Ok(Node::NULL)
    }

    /// The leaf types maintenance notifications do not use.
    fn rare_leaf(&mut self, tag: u8, at: usize) -> R<Node> {
        let start = self.pos;
        Ok(match tag {
            b'!' => match self.blob(tag)? {
                Some(s) => self.text_node(Kind::BlobError, s),
                None => unreachable!("only $ and * accept -1"),
            },
            b'=' => {
                let Some(s) = self.blob(tag)? else {
                    unreachable!("only $ and * accept -1")
                };
                if s.len() < 4 || s[3] != b':' {
                    return self.err(
                        start,
                        ErrorKind::Expected {
                            expected: "a verbatim string starting with a 3-byte format and ':'",
                            found: format!("{:?}", String::from_utf8_lossy(&s[..s.len().min(4)])),
                        },
                    );
                }
                self.text_node(Kind::Verbatim, &s[4..])
            }
            b',' => {
                let text = self.line()?;
                match parse_double(text) {
                    Some(d) => Node::bits(Kind::Double, d.to_bits()),
                    None => {
                        return self.err(
                            start,
                            ErrorKind::Expected {
                                expected: "a double (digits, '.', exponent, inf, -inf or nan)",
                                found: format!("{:?}", String::from_utf8_lossy(text)),
                            },
                        )
                    }
                }
            }
            b'#' => match self.line()? {
                b"t" | b"f" => Node {
                    kind: Kind::Boolean,
                    elided: false,
                    a: u32::from(self.buf[start] == b't'),
                    b: 0,
                },
                other => {
                    return self.err(
                        start,
                        ErrorKind::Expected {
                            expected: "'t' or 'f'",
                            found: format!("{:?}", String::from_utf8_lossy(other)),
                        },
                    )
                }
            },
            b'(' => {
                let text = self.line()?;
                let digits = text
                    .strip_prefix(b"-")
                    .or(text.strip_prefix(b"+"))
                    .unwrap_or(text);
                if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
                    return self.err(
                        start,
                        ErrorKind::BadNumber(String::from_utf8_lossy(text).into_owned()),
                    );
                }
                self.text_node(Kind::BigNumber, text)
            }
            other => return self.err(at, ErrorKind::UnknownType(other)),
        })
    }
}

fn parse_i64(text: &[u8]) -> Option<i64> {
    let (neg, digits) = match text.first()? {
        b'-' => (true, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut n: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let v = (d - b'0') as i64;
        n = if neg {
            n.checked_mul(10)?.checked_sub(v)?
        } else {
            n.checked_mul(10)?.checked_add(v)?
        };
    }
    Some(n)
}

fn parse_double(text: &[u8]) -> Option<f64> {
    match text {
        b"inf" | b"+inf" => return Some(f64::INFINITY),
        b"-inf" => return Some(f64::NEG_INFINITY),
        b"nan" | b"-nan" => return Some(f64::NAN),
        _ => {}
    }
    // Rust's parser also takes "infinity" and "NaN"; RESP3 spells those only as above.
    if text.is_empty()
        || !text
            .iter()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        || !text.iter().any(u8::is_ascii_digit)
    {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}
