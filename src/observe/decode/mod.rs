//! `decode`'s reading: the bytes an input stands for and the frames in them. The input may be
//! raw bytes, escaped text as people paste it (including the indented raw-bytes lines `watch`
//! and `decode` print), hex, or a hex dump from `xxd` or `hexdump -C`; or bare
//! `AzureRedisEvents` payloads, one a line, as a client logs them. What went wrong is a
//! [`Failure`] naming the byte offset, after every frame read before it. How it is shown is
//! `present::output::decode_screen`; `commands::decode` wires the two.

mod dump;
mod input;

pub use input::{bytes_of, read_input, scan, Failure, Input, Scanned};
