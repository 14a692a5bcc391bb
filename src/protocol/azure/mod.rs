//! Azure Cache for Redis's maintenance announcements: a pure, tolerant parse of one message on
//! its `AzureRedisEvents` pub/sub channel (docs/protocol.md section 9).
//!
//! Azure Cache for Redis predates the push notifications the rest of maintwatch reads: it
//! publishes one line of `key|value|key|value...` text per event on a channel clients SUBSCRIBE
//! to. Nothing specifies that text beyond one format line; Azure's own page sends readers to the
//! one shipped parser, StackExchange.Redis's `AzureMaintenanceEvent.cs`. So this parse walks the
//! text exactly as that parser does (the same pairs, the same skipped `|`, the same place to
//! stop) and then reads each field more forgivingly, saying where it did: every tolerance is a
//! note, and whatever would make the reference client ignore or misread the message is spelled
//! out in `reference_ignores`. The rules are those of `notification`: the type decides, a damaged
//! field costs only itself, unparsed text is kept as sent.
//!
//! The payload is server input of any size, so the walk is one pass and what is kept is capped:
//! at most [`MAX_TEXT`] bytes of any one text, [`MAX_EXTRA`] unknown pairs and [`MAX_NOTES`]
//! notes, each cut announced in a note with how much was left out. The exact bytes are kept by
//! whoever holds the payload (`decode` writes them beside the parse).

mod parse;
#[cfg(test)]
mod tests;

pub use parse::{
    is_azure_host, message_payload, parse, AzureEvent, AzureKind, AZURE_CACHE_DOMAINS, CHANNEL,
    LEGACY_FAILOVER, MAX_EXTRA, MAX_NOTES, MAX_TEXT,
};
