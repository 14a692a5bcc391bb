//! Reading one capture file, classic pcap or pcapng, packet by packet: the format told by its
//! first bytes, a malformed block skipped with a warning naming its offset, the file's report.
//! Kept apart from the folder's root, which is its map.

use crate::observe::pcap::read::legacy;
use pcap_parser::pcapng::Block;
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{PcapBlockOwned, PcapError};
use std::io::Read;
use std::time::{Duration, SystemTime};

/// Which container the file was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pcap,
    PcapNg,
}

/// One captured packet.
pub struct Packet<'a> {
    pub ts: SystemTime,
    pub linktype: i32,
    pub data: &'a [u8],
    /// Bytes the packet had on the wire (more than `data` when the snap length cut it).
    pub orig_len: u32,
}

/// What reading one file found besides its packets.
#[derive(Debug, Default, Clone)]
pub struct FileReport {
    pub format: Option<Format>,
    pub packets: u64,
    /// The file ends inside a packet: bytes left over after the last whole one.
    pub truncated: Option<u64>,
    /// pcapng blocks skipped as malformed (all of them counted).
    pub skipped_blocks: u64,
    /// The first [`MAX_SKIPPED_SHOWN`] of them, in file order.
    pub skipped: Vec<SkippedBlock>,
    /// Packets on an interface whose description block was skipped (their link type is unknown).
    pub packets_on_skipped_interfaces: u64,
}

/// One malformed pcapng block left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedBlock {
    /// Byte offset of the block's first byte in the file.
    pub offset: u64,
    /// The block type's name (or number).
    pub block: String,
    pub bytes: u64,
    pub what: String,
}

/// Skipped blocks kept for the warnings; a hostile file may have millions, the rest are counted.
pub const MAX_SKIPPED_SHOWN: usize = 100;

/// An interface whose description block was skipped: its packets are counted, not read.
pub(super) const SKIPPED_INTERFACE: i32 = i32::MIN;

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> ReadError {
        ReadError::Io(e)
    }
}

/// Why a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The OS error is in the text and not a source as well: shown with its chain (`{:#}`) it
    /// was said twice.
    #[error("cannot open: {0}")]
    Io(std::io::Error),
    #[error("not a pcap or pcapng file (unrecognised header)")]
    NotCapture,
    #[error("the file is empty")]
    Empty,
    #[error("unreadable block at byte {offset}: {what}")]
    Block { offset: u64, what: String },
}

/// The smallest read buffer; grown for packets larger than it.
pub(super) const BUFFER: usize = 1 << 20;

/// Larger blocks than this are taken as corruption rather than grown into.
pub(super) const MAX_BLOCK: usize = 256 << 20;

/// Opens a capture whose first bytes were already read into `head`, telling pcap from pcapng by
/// them.
pub(super) fn open(
    head: &[u8],
    file: std::fs::File,
) -> anyhow::Result<Box<dyn PcapReaderIterator + Send>> {
    let prefixed = Prefixed {
        head: head.to_vec(),
        at: 0,
        rest: file,
    };
    match pcap_parser::create_reader(BUFFER, prefixed) {
        Ok(r) => Ok(r),
        Err(PcapError::Eof) => Err(ReadError::Empty.into()),
        Err(PcapError::HeaderNotRecognized) | Err(PcapError::Incomplete(_)) => {
            Err(ReadError::NotCapture.into())
        }
        Err(e) => Err(ReadError::Block {
            offset: 0,
            what: describe(&e),
        }
        .into()),
    }
}

/// The bytes read to tell the format, then the rest of the file, as one reader. A read fills
/// what it can from both, so the parser's first read sees as much as it would have from the
/// file itself (it looks for the whole first block in it).
pub(super) struct Prefixed<R> {
    pub(super) head: Vec<u8>,
    pub(super) at: usize,
    pub(super) rest: R,
}

impl<R: Read> Read for Prefixed<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = (self.head.len() - self.at).min(buf.len());
        buf[..n].copy_from_slice(&self.head[self.at..self.at + n]);
        self.at += n;
        if n == buf.len() {
            return Ok(n);
        }
        match self.rest.read(&mut buf[n..]) {
            Ok(more) => Ok(n + more),
            Err(_) if n > 0 => Ok(n),
            Err(e) => Err(e),
        }
    }
}

/// Reads until `buf` is full or the file ends: how many bytes it got.
pub(super) fn read_full(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match file.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// What the blocks read so far say about the ones to come.
pub(super) struct State {
    pub(super) report: FileReport,
    /// pcap: one link type and time unit (nanoseconds or not) for the whole file.
    pub(super) legacy: Option<(i32, bool)>,
    /// pcapng: per interface, its link type, time units per second and offset.
    pub(super) interfaces: Vec<(i32, u64, i64)>,
    /// A simple packet block has no time of its own: it takes the previous packet's.
    pub(super) last_ts: SystemTime,
    /// pcapng: the current section's byte order.
    pub(super) big_endian: bool,
}

impl State {
    pub(super) fn block(
        &mut self,
        block: PcapBlockOwned<'_>,
        each: &mut impl FnMut(Packet<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        match block {
            PcapBlockOwned::LegacyHeader(h) => {
                self.report.format = Some(Format::Pcap);
                self.legacy = Some((h.network.0, h.is_nanosecond_precision()));
            }
            PcapBlockOwned::Legacy(b) => {
                let (linktype, nanos) = self.legacy.unwrap_or((1, false));
                let frac = if nanos {
                    b.ts_usec
                } else {
                    b.ts_usec.saturating_mul(1000)
                };
                self.report.packets += 1;
                self.last_ts = SystemTime::UNIX_EPOCH
                    + Duration::new(u64::from(b.ts_sec), frac.min(999_999_999));
                each(Packet {
                    ts: self.last_ts,
                    linktype,
                    data: b.data,
                    orig_len: b.origlen,
                })?;
            }
            PcapBlockOwned::NG(block) => {
                self.report.format = Some(Format::PcapNg);
                if let Block::SectionHeader(shb) = &block {
                    self.big_endian = shb.big_endian();
                }
                ng_block(
                    block,
                    &mut self.interfaces,
                    &mut self.report,
                    &mut self.last_ts,
                    each,
                )?;
            }
        }
        Ok(())
    }
}

/// Reads every packet of `path` in file order.
pub fn read_file(
    path: &std::path::Path,
    each: impl FnMut(Packet<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<FileReport> {
    let mut file = std::fs::File::open(path).map_err(ReadError::Io)?;
    let mut head = [0u8; legacy::HEADER];
    // Unreadable from its first byte (a directory, an I/O error): the OS's words, as for a
    // file that does not open ("Is a directory", where "read error" named nothing).
    let got = read_full(&mut file, &mut head).map_err(ReadError::Io)?;
    match legacy::Header::parse(&head[..got]) {
        Some(header) => legacy::read(file, header, each),
        None => read_blocks(open(&head[..got], file)?, each),
    }
}

/// Reads every block through `pcap-parser`: pcapng, and the rare pcap variants [`legacy`]
/// leaves to it.
pub(super) fn read_blocks(
    mut reader: Box<dyn PcapReaderIterator + Send + '_>,
    mut each: impl FnMut(Packet<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<FileReport> {
    let mut state = State {
        report: FileReport::default(),
        legacy: None,
        interfaces: Vec::new(),
        last_ts: SystemTime::UNIX_EPOCH,
        big_endian: false,
    };
    let mut size = BUFFER;
    let mut offset: u64 = 0;
    let mut last_refill_len = usize::MAX;
    loop {
        let failed = match reader.next() {
            Ok((n, block)) => {
                state.block(block, &mut each)?;
                offset += n as u64;
                reader.consume(n);
                continue;
            }
            Err(e) => Failed::from(e),
        };
        if state.report.format == Some(Format::PcapNg) && failed != Failed::Eof {
            if let Some((kind, len)) = whole_block(reader.data(), state.big_endian) {
                state.skip(offset, kind, len, failed.what());
                offset += len as u64;
                reader.consume(len);
                continue;
            }
        }
        match failed {
            Failed::Eof => break,
            Failed::Incomplete => {
                // A refill that brings nothing at the end of the file: the rest is a cut packet.
                let have = reader.data().len();
                if reader.reader_exhausted() && have == last_refill_len {
                    state.report.truncated = Some(have as u64);
                    break;
                }
                last_refill_len = have;
                refill(&mut *reader, offset)?;
            }
            Failed::TooSmall if size < MAX_BLOCK => {
                size *= 4;
                reader.grow(size);
                refill(&mut *reader, offset)?;
            }
            Failed::TooSmall => return Err(too_large(offset)),
            Failed::UnexpectedEof => {
                state.report.truncated = Some(reader.data().len() as u64);
                break;
            }
            Failed::Other(what) => return Err(ReadError::Block { offset, what }.into()),
        }
    }
    Ok(state.report)
}

pub(super) fn too_large(offset: u64) -> anyhow::Error {
    ReadError::Block {
        offset,
        what: format!("a block larger than {} MiB", MAX_BLOCK >> 20),
    }
    .into()
}

/// A reader's error, owned, so that the reader can be looked at again.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Failed {
    Eof,
    Incomplete,
    TooSmall,
    UnexpectedEof,
    Other(String),
}

impl From<PcapError<&[u8]>> for Failed {
    fn from(e: PcapError<&[u8]>) -> Failed {
        match e {
            PcapError::Eof => Failed::Eof,
            PcapError::Incomplete(_) => Failed::Incomplete,
            PcapError::BufferTooSmall => Failed::TooSmall,
            PcapError::UnexpectedEof => Failed::UnexpectedEof,
            e => Failed::Other(describe(&e)),
        }
    }
}

impl Failed {
    pub(super) fn what(&self) -> String {
        match self {
            // The parser asked for more bytes than the block holds: a length inside it is wrong.
            Failed::Incomplete | Failed::TooSmall | Failed::UnexpectedEof => {
                "a length inside it runs past the block's end".into()
            }
            Failed::Eof => "end of file".into(),
            Failed::Other(what) => what.clone(),
        }
    }
}

pub(super) const SHB: u32 = 0x0a0d_0d0a;

pub(super) const BYTE_ORDER: u32 = 0x1a2b_3c4d;

/// The block at the start of `data`, if it is all there and its two length fields agree: its
/// type and total length. Those are the facts a reader needs to step over it.
pub(super) fn whole_block(data: &[u8], section_big_endian: bool) -> Option<(u32, usize)> {
    let word = |at: usize, big: bool| -> Option<u32> {
        let b: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
        Some(if big {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    };
    // A section header carries its own byte order; other blocks follow their section's.
    let big = if word(0, false)? == SHB {
        match word(8, false)? {
            BYTE_ORDER => false,
            o if o.swap_bytes() == BYTE_ORDER => true,
            _ => return None,
        }
    } else {
        section_big_endian
    };
    let kind = word(0, big)?;
    let len = word(4, big)? as usize;
    if len < 12 || len % 4 != 0 || len > MAX_BLOCK || data.len() < len {
        return None;
    }
    (word(len - 4, big)? as usize == len).then_some((kind, len))
}

pub(super) fn block_name(kind: u32) -> String {
    match kind {
        SHB => "section header".into(),
        1 => "interface description".into(),
        2 => "packet (obsolete)".into(),
        3 => "simple packet".into(),
        4 => "name resolution".into(),
        5 => "interface statistics".into(),
        6 => "enhanced packet".into(),
        9 => "systemd journal export".into(),
        0x0a => "decryption secrets".into(),
        0x8000_0001 => "process information".into(),
        0x0000_0bad | 0x4000_0bad => "custom".into(),
        other => format!("type {other:#x}"),
    }
}

impl State {
    pub(super) fn skip(&mut self, offset: u64, kind: u32, len: usize, what: String) {
        let r = &mut self.report;
        r.skipped_blocks += 1;
        if r.skipped.len() < MAX_SKIPPED_SHOWN {
            r.skipped.push(SkippedBlock {
                offset,
                block: block_name(kind),
                bytes: len as u64,
                what,
            });
        }
        // Later packets name interfaces by position: a skipped description still takes its place.
        if kind == 1 {
            self.interfaces.push((SKIPPED_INTERFACE, 1, 0));
        }
    }
}

pub(super) fn refill(reader: &mut dyn PcapReaderIterator, offset: u64) -> anyhow::Result<()> {
    reader.refill().map_err(|e| {
        ReadError::Block {
            offset,
            what: describe(&e),
        }
        .into()
    })
}

pub(super) fn describe(e: &PcapError<&[u8]>) -> String {
    match e {
        PcapError::NomError(_, kind) | PcapError::OwnedNomError(_, kind) => {
            format!("malformed ({kind:?})")
        }
        PcapError::ReadError => "read error".into(),
        other => format!("{other:?}"),
    }
}

pub(super) fn ng_block(
    block: Block<'_>,
    interfaces: &mut Vec<(i32, u64, i64)>,
    report: &mut FileReport,
    last_ts: &mut SystemTime,
    each: &mut impl FnMut(Packet<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    use pcap_parser::traits::PcapNGPacketBlock;
    match block {
        // A new section starts its own interface numbering.
        Block::SectionHeader(_) => interfaces.clear(),
        Block::InterfaceDescription(idb) => {
            let unit = pcap_parser::build_ts_resolution(idb.if_tsresol).unwrap_or(1_000_000);
            interfaces.push((idb.linktype.0, unit.max(1), idb.if_tsoffset));
        }
        Block::EnhancedPacket(epb) => {
            let Some(&(linktype, unit, tsoffset)) = interfaces.get(epb.if_id as usize) else {
                anyhow::bail!(
                    "packet {} names interface {} that the file never described",
                    report.packets + 1,
                    epb.if_id
                );
            };
            if linktype == SKIPPED_INTERFACE {
                report.packets_on_skipped_interfaces += 1;
                return Ok(());
            }
            let ticks = (u64::from(epb.ts_high) << 32) | u64::from(epb.ts_low);
            let secs = (ticks / unit) as i64 + tsoffset;
            let nanos = ((ticks % unit) as u128 * 1_000_000_000 / unit as u128) as u32;
            report.packets += 1;
            *last_ts =
                SystemTime::UNIX_EPOCH + Duration::new(secs.max(0) as u64, nanos.min(999_999_999));
            each(Packet {
                ts: *last_ts,
                linktype,
                data: epb.packet_data(),
                orig_len: epb.orig_len(),
            })?;
        }
        Block::SimplePacket(spb) => {
            let linktype = interfaces.first().map_or(1, |i| i.0);
            if linktype == SKIPPED_INTERFACE {
                report.packets_on_skipped_interfaces += 1;
                return Ok(());
            }
            report.packets += 1;
            each(Packet {
                ts: *last_ts,
                linktype,
                data: spb.packet_data(),
                orig_len: spb.orig_len(),
            })?;
        }
        _ => {}
    }
    Ok(())
}
