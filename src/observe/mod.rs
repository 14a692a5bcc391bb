//! Watching: the watch engine (`watch`), the timeline that turns what it sees into lines
//! (`timeline`), the lines as records (`record`), and captures read as the same lines (`pcap`).

pub mod pcap;
pub mod record;
pub mod timeline;
pub mod watch;
