//! Classic pcap files read by hand. A record is a 16-byte header (time, captured length,
//! original length) and the packet's bytes, so reading one is four loads; on a capture of many
//! small packets `pcap-parser`'s per-record bookkeeping (its iterator, `nom`, a circular buffer
//! shifted every half-buffer) cost several times that. The modified (Kuznetzov) variant and
//! pcapng stay with `pcap-parser`.
//!
//! The outcomes are the parser path's: a file cut inside a record is read to its last whole one
//! and the leftover bytes are reported, and a record longer than [`MAX_BLOCK`] in a file that
//! goes on past it is an error naming its offset. `agrees_with_pcap_parser` checks both readers
//! on the same files, cut at every byte.

use super::{too_large, FileReport, Format, Packet, MAX_BLOCK};
use std::io::Read;
use std::time::{Duration, SystemTime};

/// The file header's size.
pub const HEADER: usize = 24;

/// Bytes read from the file at a time; grown for a record larger than it. Small enough for
/// the bytes the kernel just copied to still be in cache when they are parsed.
const CHUNK: usize = 256 << 10;

/// What the file header says about every record.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    big_endian: bool,
    nanos: bool,
    linktype: i32,
}

impl Header {
    /// The header of a classic pcap file in microseconds or nanoseconds, either byte order;
    /// `None` for anything else (the other formats, or fewer than [`HEADER`] bytes).
    pub fn parse(head: &[u8]) -> Option<Header> {
        let head: &[u8; HEADER] = head.try_into().ok()?;
        let (big_endian, nanos) = match u32::from_le_bytes(head[..4].try_into().ok()?) {
            0xa1b2_c3d4 => (false, false),
            0xa1b2_3c4d => (false, true),
            0xd4c3_b2a1 => (true, false),
            0x4d3c_b2a1 => (true, true),
            _ => return None,
        };
        let network: [u8; 4] = head[20..24].try_into().ok()?;
        let linktype = if big_endian {
            i32::from_be_bytes(network)
        } else {
            i32::from_le_bytes(network)
        };
        Some(Header {
            big_endian,
            nanos,
            linktype,
        })
    }

    fn word(&self, b: &[u8], at: usize) -> u32 {
        let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if self.big_endian {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    }
}

/// The bytes read and not yet handed on: `buf[start..end]`, the first of them at file offset
/// `offset`.
struct Window {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    offset: u64,
    /// The file gave its last byte.
    ended: bool,
}

impl Window {
    fn len(&self) -> usize {
        self.end - self.start
    }

    /// Moves what is left to the front, makes room for `want` bytes, and reads once.
    fn refill(&mut self, file: &mut impl Read, want: usize) -> std::io::Result<()> {
        self.buf.copy_within(self.start..self.end, 0);
        self.end -= self.start;
        self.start = 0;
        if want > self.buf.len() {
            self.buf.resize(want.next_power_of_two(), 0);
        }
        loop {
            match file.read(&mut self.buf[self.end..]) {
                Ok(0) => self.ended = true,
                Ok(n) => self.end += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            return Ok(());
        }
    }
}

/// Reads every record after the file header, in order.
pub fn read(
    mut file: impl Read,
    header: Header,
    mut each: impl FnMut(Packet<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<FileReport> {
    let mut report = FileReport {
        format: Some(Format::Pcap),
        ..FileReport::default()
    };
    let mut w = Window {
        buf: vec![0; CHUNK],
        start: 0,
        end: 0,
        offset: HEADER as u64,
        ended: false,
    };
    loop {
        let want = records(&mut w, header, &mut report, &mut each)?;
        if w.ended {
            if w.len() > 0 {
                report.truncated = Some(w.len() as u64);
            }
            return Ok(report);
        }
        if want > MAX_BLOCK {
            return past_the_largest(&mut file, &mut w, report);
        }
        w.refill(&mut file, want)
            .map_err(|_| read_error(w.offset))?;
    }
}

fn read_error(offset: u64) -> anyhow::Error {
    super::ReadError::Block {
        offset,
        what: "read error".into(),
    }
    .into()
}

/// A record longer than [`MAX_BLOCK`]: an error if the file holds that much more, a cut if it
/// ends first, as the parser path tells them apart. The bytes are counted, not kept.
fn past_the_largest(
    file: &mut impl Read,
    w: &mut Window,
    mut report: FileReport,
) -> anyhow::Result<FileReport> {
    let mut left = w.len() as u64;
    while left < MAX_BLOCK as u64 {
        match file.read(&mut w.buf) {
            Ok(0) => {
                report.truncated = Some(left);
                return Ok(report);
            }
            Ok(n) => left += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(read_error(w.offset)),
        }
    }
    Err(too_large(w.offset))
}

/// Hands on every whole record in the window; the bytes the next one needs.
#[inline]
fn records(
    w: &mut Window,
    header: Header,
    report: &mut FileReport,
    each: &mut impl FnMut(Packet<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<usize> {
    loop {
        let rest = &w.buf[w.start..w.end];
        if rest.len() < 16 {
            return Ok(16);
        }
        let want = 16 + header.word(rest, 8) as usize;
        if rest.len() < want {
            return Ok(want);
        }
        let (secs, frac, orig_len) = (
            header.word(rest, 0),
            header.word(rest, 4),
            header.word(rest, 12),
        );
        let nanos = if header.nanos {
            frac
        } else {
            frac.saturating_mul(1000)
        };
        report.packets += 1;
        each(Packet {
            ts: SystemTime::UNIX_EPOCH + Duration::new(u64::from(secs), nanos.min(999_999_999)),
            linktype: header.linktype,
            data: &rest[16..want],
            orig_len,
        })?;
        w.start += want;
        w.offset += want as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::super::file::read_blocks;
    use super::super::{read_file, FileReport};
    use std::io::Write;

    /// A pcap file: `records` of (seconds, fraction, bytes, original length), in either order.
    fn file(big: bool, nanos: bool, records: &[(u32, u32, Vec<u8>, u32)]) -> Vec<u8> {
        let w = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let magic: u32 = if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        let mut out = Vec::new();
        out.extend_from_slice(&w(magic));
        out.extend_from_slice(&if big { [0, 2, 0, 4] } else { [2, 0, 4, 0] });
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&w(65535));
        out.extend_from_slice(&w(1));
        for (secs, frac, data, orig) in records {
            for v in [*secs, *frac, data.len() as u32, *orig] {
                out.extend_from_slice(&w(v));
            }
            out.extend_from_slice(data);
        }
        out
    }

    type Seen = (Vec<(std::time::SystemTime, i32, Vec<u8>, u32)>, String);

    fn seen(
        result: anyhow::Result<FileReport>,
        packets: Vec<(std::time::SystemTime, i32, Vec<u8>, u32)>,
    ) -> Seen {
        let report = match result {
            Ok(r) => format!("{:?} {} {:?}", r.format, r.packets, r.truncated),
            Err(e) => format!("error: {e:#}"),
        };
        (packets, report)
    }

    fn by_hand(path: &std::path::Path) -> Seen {
        let mut packets = Vec::new();
        let r = read_file(path, |p| {
            packets.push((p.ts, p.linktype, p.data.to_vec(), p.orig_len));
            Ok(())
        });
        seen(r, packets)
    }

    fn by_parser(bytes: &[u8]) -> Seen {
        let mut packets = Vec::new();
        let r = pcap_parser::create_reader(4096, bytes)
            .map_err(|e| anyhow::anyhow!("{e:?}"))
            .and_then(|reader| {
                read_blocks(reader, |p| {
                    packets.push((p.ts, p.linktype, p.data.to_vec(), p.orig_len));
                    Ok(())
                })
            });
        seen(r, packets)
    }

    #[test]
    fn agrees_with_pcap_parser() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.pcap");
        let records = vec![
            (1_700_000_000, 999_999, b"abc".to_vec(), 3),
            (1_700_000_001, 5, vec![7; 300], 1500),
            (2, 4_000_000_000, Vec::new(), 0),
            (u32::MAX, 0, b"x".to_vec(), 1),
        ];
        for big in [false, true] {
            for nanos in [false, true] {
                let whole = file(big, nanos, &records);
                // Cut at every byte: a whole file, a cut header, a cut record.
                for cut in 24..=whole.len() {
                    std::fs::File::create(&path)
                        .unwrap()
                        .write_all(&whole[..cut])
                        .unwrap();
                    let (hand, parser) = (by_hand(&path), by_parser(&whole[..cut]));
                    assert_eq!(hand, parser, "big {big} nanos {nanos} cut at {cut}");
                }
                let (packets, report) = by_hand(&path);
                assert_eq!(packets.len(), 4);
                assert!(report.starts_with("Some(Pcap) 4 None"), "{report}");
            }
        }
    }

    #[test]
    fn a_record_claiming_more_than_the_file_holds_is_a_cut() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.pcap");
        let mut bytes = file(false, false, &[(1, 0, b"ok".to_vec(), 2)]);
        // A header claiming 1 GiB, then 100 bytes.
        bytes.extend_from_slice(&[0; 8]);
        bytes.extend_from_slice(&(1u32 << 30).to_le_bytes());
        bytes.extend_from_slice(&[0; 4]);
        bytes.extend_from_slice(&[9; 100]);
        std::fs::write(&path, &bytes).unwrap();
        let hand = by_hand(&path);
        assert_eq!(hand, by_parser(&bytes));
        assert_eq!(hand.1, "Some(Pcap) 1 Some(116)");
    }
}
