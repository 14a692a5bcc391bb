//! The shell completions and man pages, generated from the clap definitions and committed.
//!
//! They are committed so that packagers and people without a Rust toolchain get them, and they are
//! generated here, in a test-only module, rather than by a build script, so that a build never
//! writes into the source tree and the generators (`clap_complete`, `clap_mangen`) are
//! development dependencies, not part of the binary. `tests/generated/main.rs` regenerates them
//! into a temporary directory and compares bytes with the committed copies, so a CLI change that
//! was not regenerated fails the tests; `MAINTWATCH_REGENERATE=1 cargo test --test generated` rewrites them in place.
//!
//! The output depends on nothing but the clap definitions and the crate version: no date, no
//! terminal width, no environment.

use std::io;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use clap_complete::Shell;

use maintwatch::cli::Cli;

/// The binary's name, as the completions register it.
pub const BIN: &str = "maintwatch";

/// The directory of the completion scripts, relative to the repository root.
pub const COMPLETIONS_DIR: &str = "completions";

/// The directory of the man pages, relative to the repository root.
pub const MAN_DIR: &str = "man";

/// The shells completions are written for.
pub const SHELLS: [Shell; 5] = [
    Shell::Bash,
    Shell::Zsh,
    Shell::Fish,
    Shell::PowerShell,
    Shell::Elvish,
];

/// One generated file: where it goes, relative to the repository root, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// Every generated file, completions first, then man pages (the top page, then one per
/// subcommand, depth first), in a stable order.
pub fn all() -> io::Result<Vec<Generated>> {
    let mut out = completions();
    out.extend(man_pages()?);
    Ok(out)
}

/// Writes every generated file under `dir` (creating `completions/` and `man/` there) and returns
/// the paths written, in the order of [`all`].
pub fn write_all(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let files = all()?;
    let mut written = Vec::with_capacity(files.len());
    for file in files {
        let path = dir.join(&file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &file.bytes)?;
        written.push(path);
    }
    Ok(written)
}

/// One completion script per shell in [`SHELLS`], named as each shell looks for it
/// (`maintwatch.bash`, `_maintwatch`, `maintwatch.fish`, `_maintwatch.ps1`, `maintwatch.elv`).
pub fn completions() -> Vec<Generated> {
    SHELLS
        .iter()
        .map(|&shell| {
            let mut cmd = Cli::command();
            let mut bytes = Vec::new();
            clap_complete::generate(shell, &mut cmd, BIN, &mut bytes);
            Generated {
                path: Path::new(COMPLETIONS_DIR)
                    .join(clap_complete::Generator::file_name(&shell, BIN)),
                bytes,
            }
        })
        .collect()
}

/// `maintwatch.1`, then `maintwatch-SUBCOMMAND.1` for every visible subcommand (nested ones as
/// `maintwatch-SUB-SUBSUB.1`). The built-in `help` subcommand gets no page.
pub fn man_pages() -> io::Result<Vec<Generated>> {
    let mut cmd = Cli::command().disable_help_subcommand(true);
    // Building fills in what a page shows but a bare definition lacks: the display names
    // (`maintwatch-watch`) and the full usage (`maintwatch watch [OPTIONS] [URL]`).
    cmd.build();
    // A subcommand has no version of its own; every page names the program's.
    let source = format!("{BIN} {}", cmd.get_version().unwrap_or_default());
    let mut out = Vec::new();
    push_pages(&cmd, &source, &mut out)?;
    Ok(out)
}

fn push_pages(cmd: &clap::Command, source: &str, out: &mut Vec<Generated>) -> io::Result<()> {
    // clap_mangen fills the after-help text like prose, which runs the examples together and
    // justifies them; the page gets it without, and the text is added below as written.
    let after = cmd
        .get_after_long_help()
        .or_else(|| cmd.get_after_help())
        .map(|text| text.to_string());
    let bare = cmd
        .clone()
        .after_help(None::<&'static str>)
        .after_long_help(None::<&'static str>);
    let man = clap_mangen::Man::new(bare).source(source);
    let mut bytes = Vec::new();
    man.render(&mut bytes)?;
    if let Some(after) = after {
        // EXTRA, as clap_mangen names this section.
        let section = roff_section("EXTRA", &after);
        // Before the VERSION section, where clap_mangen puts it (only the top page has one).
        let at = find(&bytes, b"\n.SH VERSION\n").map_or(bytes.len(), |i| i + 1);
        bytes.splice(at..at, section.into_bytes());
    }
    out.push(Generated {
        path: Path::new(MAN_DIR).join(man.get_filename()),
        bytes,
    });
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        push_pages(sub, source, out)?;
    }
    Ok(())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A man page section holding help text as `--help` shows it: indented lines (examples, tables,
/// the scenario list) are set verbatim, other lines are filled but keep their line breaks, and a
/// blank line starts a new paragraph.
fn roff_section(title: &str, text: &str) -> String {
    let mut out = format!(".SH {title}\n");
    let mut verbatim = false;
    for line in text.trim_end().lines() {
        let indented = line.starts_with(char::is_whitespace) && !line.trim().is_empty();
        if indented != verbatim {
            out.push_str(if indented { ".nf\n" } else { ".fi\n" });
            verbatim = indented;
        }
        if line.trim().is_empty() {
            out.push_str(".PP\n");
        } else {
            out.push_str(&roff_escape(line));
            out.push('\n');
            if !indented {
                out.push_str(".br\n");
            }
        }
    }
    if verbatim {
        out.push_str(".fi\n");
    }
    out
}

/// Escapes a text line for roff: backslashes, hyphens (so that they stay minus signs one can
/// copy), apostrophes (through the `Aq` string clap_mangen's preamble defines) and a leading
/// control character.
fn roff_escape(line: &str) -> String {
    let escaped = line
        .replace('\\', "\\e")
        .replace('-', "\\-")
        .replace('\'', "\\*(Aq");
    if escaped.starts_with('.') {
        format!("\\&{escaped}")
    } else {
        escaped
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_definitions_give_the_same_bytes() {
        assert_eq!(all().unwrap(), all().unwrap());
    }

    #[test]
    fn help_text_becomes_roff_as_written() {
        let text = "Examples:\n  maintwatch decode <<< '>4\\r\\n'\n  maintwatch -x\n\nExit codes: 0 ok.\n.dot";
        assert_eq!(
            roff_section("EXTRA", text),
            ".SH EXTRA\nExamples:\n.br\n.nf\n  maintwatch decode <<< \\*(Aq>4\\er\\en\\*(Aq\n  \
             maintwatch \\-x\n.fi\n.PP\nExit codes: 0 ok.\n.br\n\\&.dot\n.br\n"
        );
    }

    #[test]
    fn every_file_has_a_distinct_path_and_content() {
        let files = all().unwrap();
        let mut paths: Vec<_> = files.iter().map(|f| &f.path).collect();
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), files.len(), "two files share a path");
        for f in &files {
            assert!(!f.bytes.is_empty(), "{} is empty", f.path.display());
        }
    }
}
