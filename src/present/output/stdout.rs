//! The watch's stdout, written by a thread of its own so that a reader that stopped reading
//! (a pipe nobody drains, `| less` left paused) cannot make the watch deaf to its stop
//! conditions.
//!
//! The watch runs on one thread: a `write` to a full pipe used to block it, and with it the
//! signal handling and `--duration`. Here the engine only hands whole chunks to a queue bounded in
//! bytes; a writer thread empties it into fd 1. When the queue is full the engine waits for room,
//! as a blocking write did (a slow but live reader loses nothing: TCP pushes back on the server),
//! but the wait ends as soon as a signal arrives or the `--duration` deadline passes: the chunk is
//! then dropped and its lines counted, and so is every chunk after it while the queue stays full.
//! The signal is set aside by a handler of its own (besides tokio's), because the thread that
//! would read tokio's is the one waiting.
//!
//! When the reader went away (`EPIPE`, `| head -c 1000`), the queue is dropped, counted, and
//! [`Stdout::gone`] completes, so the watch can stop and say so on stderr.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// The most bytes between the engine and fd 1: a few seconds of a flood, nothing of a day.
const QUEUE_BYTES: usize = 4 << 20;

/// A chunk handed over once the local buffer holds this much (and at every flush). Each hand-over
/// may wake the thread, the dearest part of a line's way out under a flood: a chunk holds at least
/// a whole read's lines (a 16 KiB read of pub/sub messages makes about 110 KiB of JSON), so a flood
/// wakes it once per read, at the flush, rather than two or three times.
const CHUNK: usize = 1 << 18;

/// Room left in a chunk below which a line made in place goes to the next one: a flood's lines
/// are about 400 bytes, notifications' a few KiB at most.
const LINE_ROOM: usize = 16 * 1024;

/// Emptied chunks kept for reuse.
const SPARE_CHUNKS: usize = 4;

/// How often a wait for room looks at the stop flag and the deadline.
const SLICE: Duration = Duration::from_millis(50);

/// After a stop, a reader that took nothing for this long is taken to have stopped reading.
const STALL: Duration = Duration::from_millis(200);

/// Set by SIGTERM, SIGINT and SIGHUP; cleared when the queue is empty again (a SIGHUP that only
/// reopened the capture must not make every later write give up).
static STOPPING: AtomicBool = AtomicBool::new(false);

#[derive(Default)]
struct State {
    queue: VecDeque<Arc<Vec<u8>>>,
    bytes: usize,
    /// A chunk is being written by the thread.
    writing: bool,
    /// That chunk, shared with the thread: its lines are counted only if they turn out not to
    /// be written (counting every chunk's newlines cost a seventh of a flood's CPU).
    inflight: Option<Arc<Vec<u8>>>,
    /// Emptied chunks handed back by the thread, reused rather than allocated again.
    spare: Vec<Vec<u8>>,
    /// fd 1 refused a write (`EPIPE`): nothing more is written.
    gone: bool,
    /// No more chunks will come.
    closed: bool,
    /// Chunks written so far: a wait sees the reader make progress.
    written: u64,
    /// The reader stopped reading after a stop: chunks are dropped until the queue is empty.
    stalled: bool,
    /// Lines dropped: not written because the reader stopped reading or went away.
    dropped: u64,
    /// The thread waits for work: only then does a chunk need to wake it (a condvar's notify is
    /// a system call whether anyone waits or not).
    idle: bool,
    /// How many wait for room (a hand-over, the finish): only then does the thread wake them.
    waiting_room: u32,
}

struct Shared {
    state: Mutex<State>,
    /// The thread made room or finished a chunk.
    room: Condvar,
    /// A chunk (or the close) is waiting for the thread.
    work: Condvar,
    gone: tokio::sync::Notify,
}

/// The writing end the sinks use; buffered locally, handed over in chunks.
pub struct Stdout {
    shared: Arc<Shared>,
    buf: Vec<u8>,
    /// `--duration`'s end: a wait for room never goes past it.
    deadline: Option<Instant>,
}

/// What the watch learns at its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The reader went away.
    pub gone: bool,
    /// Lines not written (dropped while the reader was stalled or gone, or still queued at the
    /// final deadline).
    pub dropped: u64,
}

/// The view of the queue kept by the command after the sinks took the writer.
#[derive(Clone)]
pub struct Handle {
    shared: Arc<Shared>,
}

impl Stdout {
    /// Starts the writer thread on fd 1 and the signal flag.
    pub fn start(deadline: Option<Instant>) -> io::Result<(Stdout, Handle)> {
        install_stop_flag();
        let (shared, handle) = Self::queue();
        let thread = shared.clone();
        std::thread::Builder::new()
            .name("stdout".into())
            .spawn(move || write_out(&thread, &mut FdOne))?;
        Ok((Self::front(shared, deadline), handle))
    }

    /// The queue between the front (`Stdout`) and the writer thread, and its handle.
    fn queue() -> (Arc<Shared>, Handle) {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            room: Condvar::new(),
            work: Condvar::new(),
            gone: tokio::sync::Notify::new(),
        });
        let handle = Handle {
            shared: shared.clone(),
        };
        (shared, handle)
    }

    fn front(shared: Arc<Shared>, deadline: Option<Instant>) -> Stdout {
        Stdout {
            shared,
            buf: Vec::with_capacity(CHUNK),
            deadline,
        }
    }

    /// A queue served by `out` instead of fd 1 (tests).
    pub fn with_writer(
        mut out: impl Write + Send + 'static,
        deadline: Option<Instant>,
    ) -> (Stdout, Handle) {
        let (shared, handle) = Self::queue();
        let thread = shared.clone();
        std::thread::spawn(move || write_out(&thread, &mut out));
        (Self::front(shared, deadline), handle)
    }

    /// Hands the local buffer to the queue, waiting for room as a blocking write would; after a
    /// stop (a signal, the deadline) only while the reader still makes progress.
    fn hand_over(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let mut state = lock(&self.shared.state);
        let next = state
            .spare
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let chunk = std::mem::replace(&mut self.buf, next);
        let mut progress = (state.written, Instant::now());
        while !state.gone && !state.stalled && !state.fits(chunk.len()) {
            let stopping = STOPPING.load(Ordering::SeqCst)
                || self.deadline.is_some_and(|d| Instant::now() >= d);
            if state.written != progress.0 {
                progress = (state.written, Instant::now());
            } else if stopping && progress.1.elapsed() >= STALL {
                // Dropped from here until the queue is empty again: what is on stdout stays a
                // run of whole chunks, with one gap, counted.
                state.stalled = true;
                break;
            }
            state = wait_room(&self.shared.room, state);
        }
        if state.gone || state.stalled {
            state.dropped += lines_in(&chunk);
            return;
        }
        state.bytes += chunk.len();
        state.queue.push_back(Arc::new(chunk));
        // A busy thread takes the chunk when it is done with the one it writes; an idle one is
        // woken, after the lock is let go (woken under it, it would wait for the lock at once).
        let wake = std::mem::take(&mut state.idle);
        drop(state);
        if wake {
            self.shared.work.notify_one();
        }
    }
}

impl State {
    /// The chunk can be queued (one chunk always can, however large, into an empty queue).
    fn fits(&self, len: usize) -> bool {
        self.bytes == 0 || self.bytes + len <= QUEUE_BYTES
    }
}

/// Waits for the thread to make room (or finish a chunk), or for a [`SLICE`].
fn wait_room<'a>(
    room: &Condvar,
    mut state: std::sync::MutexGuard<'a, State>,
) -> std::sync::MutexGuard<'a, State> {
    state.waiting_room += 1;
    let mut state = match room.wait_timeout(state, SLICE) {
        Ok((s, _)) => s,
        Err(poisoned) => poisoned.into_inner().0,
    };
    state.waiting_room -= 1;
    state
}

impl Write for Stdout {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        // A line that does not fit goes in the next chunk: growing this one would copy all of it
        // (a quarter MiB for each line that crossed the edge: 140 instructions a message of a
        // flood, averaged).
        if self.buf.len() + data.len() > self.buf.capacity() && !self.buf.is_empty() {
            self.hand_over();
        }
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.hand_over();
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.hand_over();
        Ok(())
    }
}

/// A line is made straight in the chunk being filled: no copy from a buffer of the sink's.
impl crate::present::output::sink::LineWriter for Stdout {
    fn put_line<F>(&mut self, _scratch: &mut Vec<u8>, make: F) -> io::Result<()>
    where
        F: FnOnce(&mut Vec<u8>) -> io::Result<()>,
    {
        // A chunk nearly full is handed over first, as `write` does for a line that does not
        // fit: a line made across the chunk's end would grow (and copy) all of it. A line
        // longer than this still grows it, once.
        if self.buf.capacity() - self.buf.len() < LINE_ROOM && !self.buf.is_empty() {
            self.hand_over();
        }
        let start = self.buf.len();
        if let Err(e) = make(&mut self.buf) {
            self.buf.truncate(start);
            return Err(e);
        }
        if self.buf.len() >= CHUNK {
            self.hand_over();
        }
        Ok(())
    }
}

impl Drop for Stdout {
    fn drop(&mut self) {
        self.hand_over();
    }
}

impl Handle {
    /// Completes when the reader went away.
    pub async fn gone(&self) {
        loop {
            let notified = self.shared.gone.notified();
            if lock(&self.shared.state).gone {
                return;
            }
            notified.await;
        }
    }

    /// No more chunks; waits until the queue is written, or until the reader made no progress
    /// for a while (one that stopped reading gets no more of the watch's time). What was not
    /// written is counted.
    pub fn finish(&self) -> Outcome {
        let mut state = lock(&self.shared.state);
        state.closed = true;
        state.idle = false;
        self.shared.work.notify_one();
        let mut progress = (state.written, Instant::now());
        // A reader already found stalled after the stop is not waited for a second time.
        while !state.gone && !state.stalled && (state.writing || !state.queue.is_empty()) {
            if state.written != progress.0 {
                progress = (state.written, Instant::now());
            } else if progress.1.elapsed() >= STALL {
                break;
            }
            state = wait_room(&self.shared.room, state);
        }
        let mut queued: u64 = state.queue.iter().map(|c| lines_in(c)).sum();
        if state.writing && !state.gone {
            // Stuck in a write to a reader that stopped reading: not known to be written.
            queued += state.inflight.as_deref().map_or(0, |c| lines_in(c));
        }
        Outcome {
            gone: state.gone,
            dropped: state.dropped + queued,
        }
    }
}

/// The writer thread: chunks in order to `out` until closed and empty, or `out` fails.
fn write_out(shared: &Shared, out: &mut impl Write) {
    let mut state = lock(&shared.state);
    loop {
        let Some(chunk) = state.queue.pop_front() else {
            if state.closed {
                return;
            }
            state.idle = true;
            state = match shared.work.wait(state) {
                Ok(s) => s,
                Err(poisoned) => poisoned.into_inner(),
            };
            // Whoever woke it cleared the flag; a spurious wake-up leaves it to be cleared here.
            state.idle = false;
            continue;
        };
        state.writing = true;
        state.inflight = Some(Arc::clone(&chunk));
        drop(state);
        let written = out.write_all(&chunk).and_then(|()| out.flush());
        state = lock(&shared.state);
        state.writing = false;
        state.inflight = None;
        state.bytes -= chunk.len();
        if written.is_err() {
            state.gone = true;
            state.dropped += lines_in(&chunk);
            let rest: u64 = state.queue.drain(..).map(|c| lines_in(&c)).sum();
            state.dropped += rest;
            state.bytes = 0;
            let waiting = state.waiting_room > 0;
            drop(state);
            if waiting {
                shared.room.notify_all();
            }
            shared.gone.notify_one();
            return;
        }
        state.written += 1;
        if let Ok(mut emptied) = Arc::try_unwrap(chunk) {
            // A chunk grown for one huge line is let go: the spares stay a megabyte at most.
            if state.spare.len() < SPARE_CHUNKS && emptied.capacity() <= CHUNK {
                emptied.clear();
                state.spare.push(emptied);
            }
        }
        if state.queue.is_empty() {
            STOPPING.store(false, Ordering::SeqCst);
            state.stalled = false;
        }
        if state.waiting_room > 0 {
            shared.room.notify_all();
        }
    }
}

fn lines_in(chunk: &[u8]) -> u64 {
    chunk.iter().filter(|&&b| b == b'\n').count() as u64
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// fd 1 itself, unbuffered and never closed: `std::io::stdout()` would take its lock, which
/// another writer of the process could hold.
struct FdOne;

impl Write for FdOne {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        loop {
            // SAFETY: writes from a live slice to fd 1, which the process keeps open.
            let n = unsafe { libc::write(1, data.as_ptr().cast(), data.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Sets [`STOPPING`] on the signals that stop a watch, beside tokio's own handlers (the
/// registry calls every action registered for a signal).
fn install_stop_flag() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            // SAFETY: the action only stores to an atomic, which is async-signal-safe.
            let _ = unsafe {
                signal_hook_registry::register(signal, || STOPPING.store(true, Ordering::SeqCst))
            };
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that never reads: every write blocks until the test ends.
    struct Never(std::sync::mpsc::Receiver<()>);

    impl Write for Never {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            let _ = self.0.recv();
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_reader_costs_lines_past_the_deadline_not_the_writer() {
        let (_keep, rx) = std::sync::mpsc::channel();
        let (mut out, handle) = Stdout::with_writer(Never(rx), Some(Instant::now()));
        let line = [b'x'; 1023];
        // Past the queue's bound: the deadline has passed, so the rest is dropped, not waited for.
        for _ in 0..(2 * QUEUE_BYTES / 1024) {
            out.write_all(&line).unwrap();
            out.write_all(b"\n").unwrap();
        }
        out.flush().unwrap();
        let outcome = handle.finish();
        assert!(!outcome.gone);
        assert_eq!(outcome.dropped, (2 * QUEUE_BYTES / 1024) as u64);
    }

    #[test]
    fn a_reader_that_went_away_is_reported_with_every_line_counted() {
        let (keep, rx) = std::sync::mpsc::channel();
        drop(keep);
        let (mut out, handle) = Stdout::with_writer(Never(rx), None);
        out.write_all(b"one\ntwo\n").unwrap();
        out.flush().unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(handle.gone());
        out.write_all(b"three\n").unwrap();
        out.flush().unwrap();
        let outcome = handle.finish();
        assert_eq!(
            outcome,
            Outcome {
                gone: true,
                dropped: 3
            }
        );
    }
}
