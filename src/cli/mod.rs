//! The command line: clap definitions only. Each subcommand's arguments are validated into plain
//! settings by the code that uses them, so no clap type travels past the command layer.

pub mod connect;
pub mod simulate;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Watch and diagnose Redis maintenance notifications.
#[derive(Parser, Debug)]
#[command(
    name = "maintwatch",
    version,
    about = "Watch and diagnose Redis maintenance notifications (MOVING, MIGRATING, FAILING_OVER, SMIGRATING ...)",
    long_about = "maintwatch connects to a Redis endpoint with a forced RESP3 opt-in \
(HELLO 3 + CLIENT MAINT_NOTIFICATIONS ON), prints every maintenance notification beside the exact \
bytes it came from, and times what follows: DNS changes, the server closing the socket, reconnects. \
It also decodes frames, replays captures, probes endpoints for the opt-in, and ships a simulator \
of measured maintenance scenarios.",
    after_help = "Examples:\n  maintwatch demo\n  maintwatch decode --format escaped <<< '>4\\r\\n$6\\r\\nMOVING\\r\\n:0\\r\\n:15\\r\\n_\\r\\n'\n  maintwatch simulate --list"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Parse frames from files or stdin (raw, escaped or hex) and show each beside its bytes.
    Decode(DecodeArgs),
}

/// How `decode` should read its input.
#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputFormatArg {
    /// Escaped text if it has `\r\n` escapes, hex if only hex digits, else raw bytes.
    Auto,
    /// The bytes as they are.
    Raw,
    /// Text with escapes as people paste it: `>4\r\n$6\r\nMOVING\r\n...`.
    Escaped,
    /// Hex digits; whitespace, `0x` and `:` between bytes are ignored.
    Hex,
}

#[derive(Args, Debug, Clone)]
#[command(
    long_about = "Reads RESP3 frames from files (or standard input when none, or `-`) and prints each \
one parsed, beside its exact bytes, escaped. Frames that are not maintenance notifications are \
named as what they are. A framing error stops that input with the byte offset where it went \
wrong, after every frame before it has been printed, and the exit code is 1.",
    after_help = "Examples:\n  maintwatch decode capture.resp\n  maintwatch decode --json capture.resp | jq .frame.parsed\n  printf '>4\\\\r\\\\n$6\\\\r\\\\nMOVING\\\\r\\\\n:0\\\\r\\\\n:15\\\\r\\\\n_\\\\r\\\\n' | maintwatch decode\n  maintwatch decode --format hex dump.hex"
)]
pub struct DecodeArgs {
    /// Input files; `-` or none reads standard input.
    pub inputs: Vec<String>,
    /// How the input encodes the bytes.
    #[arg(long, value_enum, default_value_t = InputFormatArg::Auto)]
    pub format: InputFormatArg,
    /// One JSON object per frame (schema: docs/jsonl.md).
    #[arg(long)]
    pub json: bool,
}
