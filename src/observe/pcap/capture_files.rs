//! The capture files of one `pcap` run, each read through the one [`Analyzer`]: its packets fed
//! in file order with its lines handed on as they come, what its reading left out said in
//! sentences, and the last line, which names the files read and the analyzer's counters.

use crate::observe::pcap::capture_lines::{FileLine, Line, PcapLine};
use crate::observe::pcap::{packet, read, Analyzer, Stats};
use crate::observe::record::SCHEMA_VERSION;

/// Reads one capture file through `analyzer`, handing each line to `each` as it is made. A link
/// type the analyzer cannot read stops the file with an error naming it.
pub fn read_into(
    path: &std::path::Path,
    analyzer: &mut Analyzer,
    mut each: impl FnMut(&Line) -> anyhow::Result<()>,
) -> anyhow::Result<read::FileReport> {
    read::read_file(path, |p| {
        if !packet::supported(p.linktype) {
            anyhow::bail!(
                "{} is not supported (supported: Ethernet, Linux cooked capture v1 and v2, loopback/null, raw IP)",
                packet::linktype_name(p.linktype)
            );
        }
        analyzer.packet(&p);
        if analyzer.has_lines() {
            for l in analyzer.take_lines() {
                each(&l)?;
            }
        }
        Ok(())
    })
}

/// The file as the last line names it.
pub fn file_line(name: &str, report: &read::FileReport) -> FileLine {
    FileLine {
        file: name.to_string(),
        format: match report.format {
            Some(read::Format::PcapNg) => "pcapng",
            _ => "pcap",
        }
        .into(),
        packets: report.packets,
        truncated_bytes: report.truncated,
    }
}

/// The last line: the files read and the analyzer's counters.
pub fn end_line(files: Vec<FileLine>, s: &Stats) -> Line {
    Line::Pcap(PcapLine::PcapEnd {
        v: SCHEMA_VERSION,
        files,
        packets: s.packets,
        tcp_streams: s.tcp_streams,
        resp_conns: s.resp_conns,
        tls_streams: s.tls_streams,
        ignored_streams: s.ignored_streams,
        bad_packets: s.bad_packets,
        snapped_packets: s.snapped_packets,
        gaps: s.gaps,
        pruned_streams: s.pruned_streams,
    })
}

/// What a file's reading left out, one sentence each: skipped blocks, then a cut at the end.
pub fn warnings(report: &read::FileReport) -> Vec<String> {
    let mut out: Vec<String> = report
        .skipped
        .iter()
        .map(|b| {
            format!(
                "skipped a malformed pcapng {} block at byte {} ({} bytes: {}); read on from the next block",
                b.block, b.offset, b.bytes, b.what
            )
        })
        .collect();
    let unshown = report.skipped_blocks - report.skipped.len() as u64;
    if unshown > 0 {
        out.push(format!("skipped {unshown} more malformed pcapng block(s)"));
    }
    if report.packets_on_skipped_interfaces > 0 {
        out.push(format!(
            "{} packet(s) on an interface whose description block was skipped were not read (link type unknown)",
            report.packets_on_skipped_interfaces
        ));
    }
    if let Some(bytes) = report.truncated {
        out.push(format!(
            "the file ends inside a packet ({bytes} byte(s) after the last whole one): read up to the last whole packet"
        ));
    }
    out
}
