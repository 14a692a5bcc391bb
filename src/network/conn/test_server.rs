//! A scripted RESP server on 127.0.0.1 for the unit tests of the commands that connect
//! (`probe`, `doctor`): it lives here, beside the connection code, so no command's tests reach
//! into another command.

use crate::protocol::resp::StreamReader;
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// On every connection, answers the commands in order with `replies`, then every further
/// command with `then`.
pub(crate) async fn serve(replies: Vec<&'static [u8]>, then: &'static [u8]) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut replies = replies.clone().into_iter();
            tokio::spawn(async move {
                let mut reader = StreamReader::default();
                let mut buf = [0u8; 1024];
                while let Ok(n @ 1..) = s.read(&mut buf).await {
                    reader.extend(&buf[..n]);
                    let mut commands = 0;
                    if reader.drain(|_, _, _| commands += 1).is_err() {
                        return;
                    }
                    for _ in 0..commands {
                        let reply = replies.next().unwrap_or(then);
                        if s.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}
