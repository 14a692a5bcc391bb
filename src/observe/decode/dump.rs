//! Hex dumps as people paste them: `hexdump -C` and `xxd`. Both put an offset first and an ASCII
//! column last; only the hex in between is data, and the offsets are checked so that a line lost
//! from a paste is an error rather than a silently shorter frame.

/// Which tool wrote a dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `00000000  3e 34 0d 0a ...  |>4..|`, `*` for repeated lines, a last offset-only line.
    HexdumpC,
    /// `00000000: 3e34 0d0a ...  >4..`
    Xxd,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::HexdumpC => "hexdump -C",
            Kind::Xxd => "xxd",
        }
    }
}

/// The offset that starts a dump line, and what follows it.
fn offset(line: &str) -> Option<(u64, &str)> {
    let digits = line.bytes().take_while(u8::is_ascii_hexdigit).count();
    if digits < 7 {
        return None;
    }
    let value = u64::from_str_radix(&line[..digits], 16).ok()?;
    Some((value, &line[digits..]))
}

/// Which dump the text is, judged by its first non-blank line.
pub fn kind(text: &str) -> Option<Kind> {
    let first = text.lines().map(str::trim_end).find(|l| !l.is_empty())?;
    let (_, rest) = offset(first)?;
    if rest.starts_with(": ") {
        Some(Kind::Xxd)
    } else if rest.starts_with("  ") && rest.contains('|') {
        Some(Kind::HexdumpC)
    } else {
        None
    }
}

/// The bytes of a dump; errors name the line.
pub fn read(text: &str, kind: Kind) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut repeat: Option<Vec<u8>> = None;
    for (index, line) in text.lines().enumerate() {
        let n = index + 1;
        let line = line.trim_end();
        if line.is_empty() {
            continue;
        }
        if kind == Kind::HexdumpC && line == "*" {
            // hexdump -C collapses identical lines: the next offset says how many.
            repeat = Some(out[out.len().saturating_sub(16)..].to_vec());
            continue;
        }
        let Some((at, rest)) = offset(line) else {
            return Err(format!(
                "line {n}: expected an offset at the start of the line"
            ));
        };
        if let Some(block) = repeat.take() {
            fill(&mut out, &block, at, n)?;
        }
        if at != out.len() as u64 {
            return Err(format!(
                "line {n}: offset {at:#x} does not follow the {} bytes before it (a line \
                 missing from the paste?)",
                out.len()
            ));
        }
        let hex = match kind {
            // The ASCII column sits between bars.
            Kind::HexdumpC => rest.split('|').next().unwrap_or(""),
            // The ASCII column follows the hex after two spaces; the hex has single spaces.
            Kind::Xxd => {
                let hex = rest
                    .strip_prefix(':')
                    .unwrap_or(rest)
                    .trim_start_matches(' ');
                hex.split("  ").next().unwrap_or("")
            }
        };
        hex_bytes(hex, n, &mut out)?;
    }
    Ok(out)
}

/// The most bytes one `*` line may stand for: a pasted frame is far smaller, and a forged
/// offset must not make a few bytes of text expand without bound.
const MAX_REPEAT: u64 = 64 << 20;

/// Repeats `block` (a `*` line) up to the offset of the next line.
fn fill(out: &mut Vec<u8>, block: &[u8], until: u64, n: usize) -> Result<(), String> {
    let gap = until.saturating_sub(out.len() as u64);
    if block.is_empty() || gap % block.len() as u64 != 0 {
        return Err(format!(
            "line {n}: offset {until:#x} does not end a run of repeated lines"
        ));
    }
    if gap > MAX_REPEAT {
        return Err(format!(
            "line {n}: offset {until:#x} repeats a line over more than {} MiB",
            MAX_REPEAT >> 20
        ));
    }
    for _ in 0..gap / block.len() as u64 {
        out.extend_from_slice(block);
    }
    Ok(())
}

/// Appends the bytes of whitespace-separated hex groups (`3e`, or xxd's `3e34`).
fn hex_bytes(hex: &str, n: usize, out: &mut Vec<u8>) -> Result<(), String> {
    for group in hex.split_whitespace() {
        if group.len() % 2 != 0 || !group.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("line {n}: {group:?} is not hex bytes"));
        }
        for pair in group.as_bytes().chunks(2) {
            let pair = std::str::from_utf8(pair).unwrap_or("");
            out.push(u8::from_str_radix(pair, 16).map_err(|e| format!("line {n}: {e}"))?);
        }
    }
    Ok(())
}
