//! Capture files in, packets out: pcap and pcapng through `pcap-parser`, each packet with its
//! capture time and link type. A file cut mid-packet (a capture killed while writing, a copy
//! taken while it grew) is read up to its last whole packet and the cut is reported, since
//! everything before it is still good evidence.
//!
//! A pcapng block that is whole by its own length fields but malformed inside (a name-resolution
//! record running past its block, an enhanced packet whose captured length exceeds its block, a
//! decryption-secrets block the parser refuses) is skipped with a warning naming its byte
//! offset, and reading resumes at the next block: the length fields at both ends of a block are
//! what lets a reader resynchronise, and one bad block says nothing about the packets after it.
//! A block whose own length fields are wrong gives no next block to resume at: that stays a cut
//! or an error.

mod file;
mod legacy;

pub use file::{read_file, FileReport, Format, Packet, ReadError, SkippedBlock, MAX_SKIPPED_SHOWN};
// For the folder's own files, until each imports from where a name is defined.
use file::{too_large, MAX_BLOCK};
