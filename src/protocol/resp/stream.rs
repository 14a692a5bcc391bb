//! Frames from a byte stream: the reader owns the buffer and the offsets, and checks a frame still
//! arriving from where the last read stopped, so a large frame costs one pass however it is split.
//! The frames of a read can leave the buffer without a copy ([`StreamReader::drain_shared`]):
//! under a push flood, an allocation and a copy per frame were a tenth of the watch's work.

use bytes::{Buf, Bytes, BytesMut};

use super::flat::{FlatFrame, FlatScan, Node, MAX_FRAME_CAP};
use super::frame::{ErrorKind, Frame, Limits, RespError};
use super::scanner::{Cursor, Scanner, Stop, R};

/// How far the check of a frame still arriving got, so that the next read resumes there
/// instead of scanning the frame again from its start: the work per frame stays linear in its
/// size however it is split. Only framing is checked here, with the scanner's own rules and
/// limits and without building anything; the frame is scanned for its tree once, when whole.
#[derive(Debug, Default, Clone)]
struct Resume {
    /// Offset in the frame of the next value to check.
    pos: usize,
    /// Elements still to come in each open aggregate, outermost first (at most `max_depth`).
    open: Vec<u64>,
    /// See `Cursor::searched`.
    searched: (usize, usize),
    /// Whether the frame's first value has been read.
    started: bool,
}

impl Resume {
    fn new() -> Self {
        Resume {
            searched: (usize::MAX, 0),
            ..Resume::default()
        }
    }

    /// Checks on from where the last call stopped, adding the bytes it looked at to `work`.
    /// `Ok(end)` once the whole frame (`buf[..end]`) is present; an error is a framing error
    /// (the full scan then reports it, the same way the scanner always does).
    fn advance(&mut self, buf: &[u8], limits: &Limits, work: &mut u64) -> Result<usize, Stop> {
        // A leaf checked leaves one node here, dropped after it.
        let mut scratch = Vec::with_capacity(1);
        let mut cur = Cursor::new(buf, limits, &mut scratch);
        cur.budget = 0;
        loop {
            while self.open.last() == Some(&0) {
                self.open.pop();
            }
            if self.started && self.open.is_empty() {
                return Ok(self.pos);
            }
            cur.pos = self.pos;
            cur.searched = self.searched;
            let step = self.step(&mut cur);
            // A line searched to the buffer's end was looked at from where the last search
            // stopped; anything else from the value's start to where the cursor got.
            let from = if self.searched.0 != usize::MAX {
                self.searched.1
            } else {
                self.pos
            };
            let to = if cur.searched.0 != usize::MAX {
                cur.searched.1.max(cur.pos)
            } else {
                cur.pos
            };
            *work += to.saturating_sub(from) as u64 + 1;
            match step {
                Ok(()) => {
                    self.pos = cur.pos;
                    self.searched = (usize::MAX, 0);
                }
                Err(stop) => {
                    self.searched = cur.searched;
                    return Err(stop);
                }
            }
        }
    }

    /// Checks the value at `cur.pos`: a leaf whole, an aggregate's header only.
    fn step(&mut self, cur: &mut Cursor<'_, '_>) -> R<()> {
        let at = cur.pos;
        let depth = self.open.len();
        let Some(&tag) = cur.buf.get(at) else {
            return Err(Stop::Incomplete(at + 1));
        };
        let per_item = match tag {
            b'*' | b'~' | b'>' => 1,
            b'%' | b'|' => 2,
            _ => 0,
        };
        let elements = if per_item == 0 {
            cur.value(depth)?;
            cur.nodes.clear();
            None
        } else {
            if depth >= cur.limits.max_depth {
                let limit = cur.limits.max_depth;
                return cur.err(at, ErrorKind::TooDeep { limit });
            }
            cur.pos = at + 1;
            // An attribute's pairs are followed by the value they describe.
            let extra = u64::from(tag == b'|');
            cur.count(tag, per_item)?
                .map(|n| n as u64 * per_item + extra)
        };
        self.started = true;
        if let Some(parent) = self.open.last_mut() {
            *parent -= 1;
        }
        if let Some(n) = elements {
            self.open.push(n);
        }
        Ok(())
    }
}

/// Buffers above this are given back once mostly drained, so one huge frame does not pin its
/// size for the rest of a connection.
const SHRINK_ABOVE: usize = 4 << 20;

/// Reads frames from a byte stream: owns the growing buffer, counts absolute offsets, and
/// remembers how far the pending frame was checked, so a large frame arriving in many reads is
/// checked once, not again from its start on every read.
#[derive(Debug, Default)]
pub struct StreamReader {
    /// The buffered bytes; `pub(super)` so the unit tests can check a whole frame was not copied.
    pub(super) buf: BytesMut,
    /// Bytes of the stream already consumed before `buf[0]`.
    consumed: u64,
    need: usize,
    scanner: Scanner,
    /// The check of the incomplete frame at `buf[0]`, if one was started.
    resume: Option<Resume>,
    /// Bytes looked at by scans and checks so far (see [`StreamReader::work`]).
    work: u64,
    /// The decoded values of the frame being delivered, reused from frame to frame.
    nodes: Vec<Node>,
}

impl StreamReader {
    pub fn new(limits: Limits) -> Self {
        StreamReader {
            scanner: Scanner::new(limits),
            ..Default::default()
        }
    }

    /// Appends bytes that arrived.
    pub fn extend(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The unread bytes (for the read call to append into, or to report).
    pub fn buffered(&self) -> &[u8] {
        &self.buf
    }

    /// Mutable access for reading straight into the buffer.
    pub fn buffer_mut(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Absolute stream offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.consumed
    }

    /// How many bytes scanning has looked at so far, counting a byte again each time it is
    /// looked at again: a measure of the reader's work that does not depend on a clock. It stays
    /// within a small multiple of the bytes received, however they were split.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Calls `each(frame, raw, offset)` for every complete frame buffered, as a tree, then
    /// drops them from the buffer. An error carries the absolute offset; the frames before it
    /// were delivered. [`StreamReader::drain_flat`] is the same without building trees.
    pub fn drain<F>(&mut self, mut each: F) -> Result<(), RespError>
    where
        F: FnMut(&Frame<'_>, &[u8], u64),
    {
        self.drain_flat(|frame, offset| each(&frame.to_frame(), frame.raw(), offset))
    }

    /// Calls `each(frame, offset)` for every complete frame buffered, decoded flat (its bytes
    /// are `frame.raw()`), then drops them from the buffer. An error carries the absolute
    /// offset; the frames before it were delivered.
    pub fn drain_flat<F>(&mut self, each: F) -> Result<(), RespError>
    where
        F: FnMut(FlatFrame<'_, '_>, u64),
    {
        let (pos, result) = self.frames(each);
        self.buf.advance(pos);
        self.consumed += pos as u64;
        self.shrink(pos);
        result
    }

    /// [`StreamReader::drain_flat`], handing the bytes of the frames delivered back rather than
    /// dropping them: one buffer, shared and not copied, that starts at the stream offset the
    /// reader had before the call and holds the frames one after another, so a frame's own
    /// bytes are a slice of it (`Bytes::slice`, no copy either). The buffer's memory is given
    /// back when the last slice of it goes. The reader's next bytes go on filling the rest of
    /// the same allocation, and a new one is made only when that is full: slices held by a
    /// consumer pin at most the allocations their frames span, plus the one being filled.
    pub fn drain_shared<F>(&mut self, each: F) -> (Bytes, Result<(), RespError>)
    where
        F: FnMut(FlatFrame<'_, '_>, u64),
    {
        let (pos, result) = self.frames(each);
        let frames = self.buf.split_to(pos).freeze();
        self.consumed += pos as u64;
        self.shrink(pos);
        (frames, result)
    }

    /// The frames of the buffer, delivered: how many bytes they took (from the buffer's start),
    /// and the error that stopped them, if one did. Nothing is dropped from the buffer.
    fn frames<F>(&mut self, mut each: F) -> (usize, Result<(), RespError>)
    where
        F: FnMut(FlatFrame<'_, '_>, u64),
    {
        if self.buf.len() < self.need {
            return (0, Ok(()));
        }
        let mut pos = 0;
        let result = loop {
            if pos == self.buf.len() {
                self.need = 0;
                break Ok(());
            }
            // A frame already known to be incomplete is checked on from where it stopped.
            let resumed = self.resume.is_some();
            if let Some(need) = self.resume_check(pos) {
                self.need = need;
                break Ok(());
            }
            match self.scanner.scan_flat(&self.buf[pos..], &mut self.nodes) {
                Ok(FlatScan::Frame(frame)) => {
                    let n = frame.raw().len();
                    self.work += n as u64;
                    each(frame, self.consumed + pos as u64);
                    pos += n;
                }
                Ok(FlatScan::Incomplete { need }) => {
                    self.work += (self.buf.len() - pos) as u64;
                    self.need = need;
                    if resumed {
                        // The check found the frame whole: it and the scanner disagree, which
                        // a test would catch. Wait for more rather than loop.
                        break Ok(());
                    }
                    // From now on the frame is checked incrementally; this first check also
                    // gives the `need` the next read must reach.
                    self.resume = Some(Resume::new());
                }
                Err(mut e) => {
                    self.work += (self.buf.len() - pos) as u64;
                    e.offset += self.consumed + pos as u64;
                    break Err(e);
                }
            }
        };
        (pos, result)
    }

    /// A buffer grown for one huge frame is given back once mostly drained (`delivered`: the
    /// bytes of the frames just taken from its start), and the decoded values of one huge frame
    /// are not kept for the rest of a connection. The allocation the buffer lies in spans at
    /// least those bytes and the room after them (`capacity` counts only the room): the rest
    /// moves to a smaller one of its own, so frames handed over shared hold the large one alone
    /// and it goes with them.
    fn shrink(&mut self, delivered: usize) {
        let span = delivered + self.buf.capacity();
        if span > SHRINK_ABOVE && self.buf.len() < span / 4 {
            let mut smaller = BytesMut::with_capacity(self.buf.len().max(SHRINK_ABOVE / 4));
            smaller.extend_from_slice(&self.buf);
            self.buf = smaller;
        }
        self.shrink_nodes();
    }

    /// [`StreamReader::extend`] then [`StreamReader::drain_flat`], with the same frames, offsets,
    /// errors and work, but framed straight from `data` when nothing is buffered: only an
    /// incomplete frame at its end (or the bytes from an error on) are copied in. A reader fed
    /// whole small frames, such as the packets of a capture, then copies nothing.
    pub fn feed_flat<F>(&mut self, data: &[u8], mut each: F) -> Result<(), RespError>
    where
        F: FnMut(FlatFrame<'_, '_>, u64),
    {
        if !self.buf.is_empty() || self.resume.is_some() {
            self.extend(data);
            return self.drain_flat(each);
        }
        let mut pos = 0;
        let mut incomplete = false;
        let result = loop {
            if pos == data.len() {
                self.need = 0;
                break Ok(());
            }
            match self.scanner.scan_flat(&data[pos..], &mut self.nodes) {
                Ok(FlatScan::Frame(frame)) => {
                    let n = frame.raw().len();
                    self.work += n as u64;
                    each(frame, self.consumed + pos as u64);
                    pos += n;
                }
                Ok(FlatScan::Incomplete { need }) => {
                    self.work += (data.len() - pos) as u64;
                    self.need = need;
                    incomplete = true;
                    break Ok(());
                }
                Err(mut e) => {
                    self.work += (data.len() - pos) as u64;
                    e.offset += self.consumed + pos as u64;
                    break Err(e);
                }
            }
        };
        self.consumed += pos as u64;
        if pos < data.len() {
            self.buf.extend_from_slice(&data[pos..]);
        }
        if incomplete {
            // As `drain_flat` does: the frame is checked incrementally from now on, and this
            // first check gives the `need` the next bytes must reach.
            self.resume = Some(Resume::new());
            match self.resume_check(0) {
                Some(need) => self.need = need,
                // The check and the scanner disagree (a test would catch it): `drain_flat`
                // scans once more and waits, with the same need.
                None => self.work += self.buf.len() as u64,
            }
        }
        self.shrink_nodes();
        result
    }

    /// The decoded values of one huge frame are not kept for the rest of a connection.
    fn shrink_nodes(&mut self) {
        if self.nodes.capacity() * std::mem::size_of::<Node>() > SHRINK_ABOVE {
            self.nodes = Vec::new();
        }
    }

    /// Advances the check of the pending frame at `buf[pos..]`, if there is one. `Some(need)`
    /// while the frame is still incomplete; `None` when it is whole or broken, and so is for the
    /// scanner to read (or to report) in one pass.
    #[inline]
    fn resume_check(&mut self, pos: usize) -> Option<usize> {
        let resume = self.resume.as_mut()?;
        let limits = &self.scanner.limits;
        match resume.advance(&self.buf[pos..], limits, &mut self.work) {
            Err(Stop::Incomplete(need)) if need as u64 <= limits.max_frame.min(MAX_FRAME_CAP) => {
                Some(need)
            }
            _ => {
                self.resume = None;
                None
            }
        }
    }
}
