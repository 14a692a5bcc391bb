//! The one raw RESP3 test client: a TCP connection whose every frame is kept as its exact bytes,
//! in the order it came, pushes and replies alike. The simulator's tests read a scenario through
//! it the way a client library would (`tests/it/sim.rs`, `tests/it/scenarios_more.rs`), and the
//! relay's tests take replies and pushes apart with it (`tests/it/upstream.rs`). Every wait is
//! for bytes or a close, never for time: a test's hang guard bounds it.

use std::collections::VecDeque;
use std::net::SocketAddr;

use maintwatch::protocol::resp::{encode_command, StreamReader};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A connection to a RESP3 server, reading whole frames.
pub struct Client {
    stream: TcpStream,
    reader: StreamReader,
    /// Frames read and not yet taken, in order.
    frames: VecDeque<Vec<u8>>,
    closed: bool,
}

/// Bytes shown as escaped text (`\r\n` and all), for assertions and their messages.
pub fn show(bytes: &[u8]) -> String {
    maintwatch::shared::escape::escape(bytes)
}

/// A push frame (`>`), as opposed to a reply.
pub fn is_push(frame: &[u8]) -> bool {
    frame.first() == Some(&b'>')
}

/// The simulator's `HELLO 3` reply: Redis' seven-field HELLO map, or (outside refusing mode) the
/// same with the simulator's `maintwatch-sim-speed` as an eighth field.
pub fn is_hello_map(reply: &[u8]) -> bool {
    let has_speed = reply
        .windows(b"maintwatch-sim-speed".len())
        .any(|w| w == b"maintwatch-sim-speed");
    (reply.starts_with(b"%7\r\n") && !has_speed) || (reply.starts_with(b"%8\r\n") && has_speed)
}

impl Client {
    pub async fn connect(to: SocketAddr) -> Client {
        Client {
            stream: TcpStream::connect(to).await.expect("connect"),
            reader: StreamReader::default(),
            frames: VecDeque::new(),
            closed: false,
        }
    }

    /// Connects and says `HELLO 3`, its reply dropped (a relayed server's map is not the
    /// simulator's).
    pub async fn resp3(to: SocketAddr) -> Client {
        let mut c = Client::connect(to).await;
        c.call(&["HELLO", "3"]).await;
        c
    }

    /// Sends one command.
    pub async fn send(&mut self, args: &[&str]) {
        self.write_raw(&encode_command(args)).await;
    }

    /// Sends bytes as they are (a pipeline, an inline command).
    pub async fn write_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
    }

    /// Reads once more from the socket into the queue; false once the server has closed it.
    async fn fill(&mut self) -> bool {
        if self.closed {
            return false;
        }
        let mut buf = [0u8; 8192];
        let n = self.stream.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            self.closed = true;
            return false;
        }
        self.reader.extend(&buf[..n]);
        let frames = &mut self.frames;
        self.reader
            .drain(|_, raw, _| frames.push_back(raw.to_vec()))
            .expect("the server sends valid RESP3");
        true
    }

    /// The first frame (in order of arrival) that `pick` accepts, taken out of the queue; the
    /// others stay. `None` once the server has closed the connection without one.
    async fn take(&mut self, pick: impl Fn(&[u8]) -> bool) -> Option<Vec<u8>> {
        loop {
            if let Some(at) = self.frames.iter().position(|f| pick(f)) {
                return self.frames.remove(at);
            }
            if !self.fill().await {
                return None;
            }
        }
    }

    /// The next frame's bytes, or `None` once the server has closed the connection.
    pub async fn next(&mut self) -> Option<Vec<u8>> {
        self.take(|_| true).await
    }

    /// The next frame, which must come: `what` names it in the failure.
    pub async fn expect(&mut self, what: &str) -> Vec<u8> {
        match self.next().await {
            Some(f) => f,
            None => panic!("connection closed while waiting for {what}"),
        }
    }

    /// Sends a command and returns the next frame, its reply where no push comes between.
    pub async fn call(&mut self, args: &[&str]) -> Vec<u8> {
        self.send(args).await;
        self.expect(&args.join(" ")).await
    }

    /// The next reply, the pushes before it left queued for [`Client::push`].
    pub async fn reply(&mut self) -> Vec<u8> {
        let reply = self.take(|f| !is_push(f)).await;
        reply.expect("connection closed before a reply")
    }

    /// The next push, the replies before it left queued for [`Client::reply`].
    pub async fn push(&mut self) -> Vec<u8> {
        let push = self.take(is_push).await;
        push.expect("connection closed before a push")
    }

    /// Sends a command and returns its reply, pushes set aside.
    pub async fn command(&mut self, args: &[&str]) -> Vec<u8> {
        self.send(args).await;
        self.reply().await
    }

    /// HELLO 3, checked to be the simulator's RESP3 map (see [`is_hello_map`]).
    pub async fn hello3(&mut self) {
        let reply = self.call(&["HELLO", "3"]).await;
        assert!(is_hello_map(&reply), "{}", show(&reply));
    }

    /// HELLO 3, then the opt-in; returns the opt-in's reply, whatever it is.
    pub async fn try_opt_in(&mut self) -> Vec<u8> {
        self.hello3().await;
        self.call(&["CLIENT", "MAINT_NOTIFICATIONS", "ON"]).await
    }

    /// HELLO 3 and the opt-in, which must be accepted.
    pub async fn opt_in(&mut self) {
        let reply = self.try_opt_in().await;
        assert_eq!(show(&reply), "+OK\\r\\n");
    }

    /// How many frames were read and not yet taken.
    pub fn queued(&self) -> usize {
        self.frames.len()
    }

    /// Reads to the server's close; returns every frame that came before it.
    pub async fn until_closed(&mut self) -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        while let Some(f) = self.next().await {
            frames.push(f);
        }
        frames
    }

    /// Reads until the server closes the connection, dropping what comes; true once it has.
    pub async fn closed(&mut self) -> bool {
        self.until_closed().await;
        true
    }

    /// Proves nothing is queued before a fresh reply: PING must be answered by the next frame.
    pub async fn nothing_pending(&mut self) {
        let reply = self.call(&["PING"]).await;
        assert_eq!(
            show(&reply),
            "+PONG\\r\\n",
            "a frame was pending before PING's reply"
        );
    }
}
