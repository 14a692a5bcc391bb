//! `maintwatch pcap`: reads capture files through [`crate::pcap`] and writes its lines, human
//! or JSON, as they come, then the summary.

use crate::cli::pcap::PcapArgs;
use crate::exit;
use crate::pcap::line::{self, FileLine, Line, PcapLine};
use crate::pcap::{packet, read, Analyzer, Settings};
use crate::record::SCHEMA_VERSION;
use std::io::Write;

pub fn run(args: &PcapArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<i32> {
    if !(args.sim_speed.is_finite() && args.sim_speed > 0.0) {
        anyhow::bail!(
            "--sim-speed must be a positive number, not {}",
            args.sim_speed
        );
    }
    let style = args.color.style(args.json);
    let names: Vec<String> = args.files.iter().map(|f| f.display().to_string()).collect();
    let mut analyzer = Analyzer::new(
        Settings {
            ports: args.port.clone(),
            speed: args.sim_speed,
            grade: args.grade,
            dns_ports: if args.dns_port.is_empty() {
                vec![53]
            } else {
                args.dns_port.clone()
            },
        },
        format!("capture {}", names.join(", ")),
    );
    let write = |line: &Line, out: &mut dyn Write| -> anyhow::Result<()> {
        if args.json {
            serde_json::to_writer(&mut *out, line)?;
            writeln!(out)?;
        } else {
            for text in line::render(line, &style) {
                writeln!(out, "{text}")?;
            }
        }
        Ok(())
    };
    let mut files = Vec::new();
    for (path, name) in args.files.iter().zip(&names) {
        let report = read::read_file(path, |p| {
            if !packet::supported(p.linktype) {
                anyhow::bail!(
                    "{} is not supported (supported: Ethernet, Linux cooked capture v1 and v2, loopback/null, raw IP)",
                    packet::linktype_name(p.linktype)
                );
            }
            analyzer.packet(&p);
            if analyzer.has_lines() {
                for l in analyzer.take_lines() {
                    write(&l, out)?;
                }
            }
            Ok(())
        });
        let report = match report {
            Ok(r) => r,
            Err(e) => {
                out.flush()?;
                writeln!(err, "maintwatch pcap: {name}: {e:#}")?;
                return Ok(exit::FAILURE);
            }
        };
        for text in warnings(&report) {
            writeln!(err, "maintwatch pcap: warning: {name}: {text}")?;
            if args.json {
                write(
                    &Line::Pcap(PcapLine::PcapWarning {
                        v: SCHEMA_VERSION,
                        file: name.clone(),
                        text,
                    }),
                    out,
                )?;
            }
        }
        files.push(FileLine {
            file: name.clone(),
            format: match report.format {
                Some(read::Format::PcapNg) => "pcapng",
                _ => "pcap",
            }
            .into(),
            packets: report.packets,
            truncated_bytes: report.truncated,
        });
    }
    let summary = analyzer.finish();
    for l in analyzer.take_lines() {
        write(&l, out)?;
    }
    write(&Line::Watch(summary), out)?;
    let s = analyzer.stats.clone();
    write(
        &Line::Pcap(PcapLine::PcapEnd {
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
        }),
        out,
    )?;
    let mut code = exit::SUCCESS;
    let dropped = analyzer.dns_dropped();
    if dropped > 0 {
        writeln!(
            err,
            "maintwatch pcap: warning: {dropped} DNS answer(s) past the first 65536 were not used by the grade"
        )?;
    }
    if let Some(obs) = analyzer.observations() {
        let g = crate::judge::judge(&obs);
        if args.json {
            out.write_all(crate::judge::lines::write(&obs, &g)?.as_bytes())?;
        } else {
            write!(out, "{}", g.table())?;
        }
        if !g.passed {
            code = exit::FAILURE;
        }
    }
    out.flush()?;
    Ok(code)
}

/// What a file's reading left out, one sentence each: skipped blocks, then a cut at the end.
fn warnings(report: &read::FileReport) -> Vec<String> {
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
