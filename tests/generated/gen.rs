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
    name_synopsis_values(&mut bytes, cmd);
    if let Some(after) = after {
        // Its own sections (EXAMPLES, EXIT STATUS ...), not clap_mangen's one EXTRA.
        let sections: String = help_sections(&after)
            .iter()
            .map(|(title, text)| roff_section(title, text))
            .collect();
        // Before the VERSION section, where clap_mangen puts it (only the top page has one).
        let at = find(&bytes, b"\n.SH VERSION\n").map_or(bytes.len(), |i| i + 1);
        bytes.splice(at..at, sections.into_bytes());
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

/// clap_mangen's SYNOPSIS names a flag without its value (`[--from]`); a reader needs to see
/// that `--from` takes a FILE, as the OPTIONS do: each option that takes a value gets its value
/// names after it (`[--from FILE]`).
fn name_synopsis_values(bytes: &mut Vec<u8>, cmd: &clap::Command) {
    let Some(start) = find(bytes, b".SH SYNOPSIS\n") else {
        return;
    };
    let end = find(&bytes[start + 1..], b"\n.SH ").map_or(bytes.len(), |i| start + 1 + i);
    let mut synopsis = String::from_utf8_lossy(&bytes[start..end]).into_owned();
    for arg in cmd.get_arguments().filter(|a| !a.is_positional()) {
        let (Some(long), Some(values)) = (arg.get_long(), arg.get_value_names()) else {
            continue;
        };
        if !arg.get_action().takes_values() {
            continue;
        }
        let flag = format!("\\fB\\-\\-{}\\fR", long.replace('-', "\\-"));
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("\\fI{}\\fR", roff_escape(v)))
            .collect();
        synopsis = synopsis.replace(&format!("{flag}]"), &format!("{flag} {}]", names.join(" ")));
    }
    bytes.splice(start..end, synopsis.into_bytes());
}

/// The after-help text cut into man page sections by its own headings: `Examples:` is
/// EXAMPLES, `Exit codes:` EXIT STATUS, a text opening with `Scenarios` SCENARIOS; text before
/// any of them is NOTES. A heading that is only the section's name is left out of its text.
fn help_sections(text: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut after_blank = true;
    for line in text.lines() {
        let title = (after_blank && !line.starts_with(char::is_whitespace))
            .then(|| match line.split([' ', ':']).next() {
                Some("Examples") => Some("EXAMPLES"),
                Some("Exit") => Some("\"EXIT STATUS\""),
                Some("Scenarios") => Some("SCENARIOS"),
                _ => None,
            })
            .flatten();
        after_blank = line.trim().is_empty();
        if let Some(title) = title {
            sections.push((title.to_string(), String::new()));
            if matches!(line, "Examples:" | "Exit codes:" | "Scenarios:") {
                continue;
            }
        } else if sections.is_empty() {
            sections.push(("NOTES".to_string(), String::new()));
        }
        let body = &mut sections.last_mut().unwrap().1;
        body.push_str(line);
        body.push('\n');
    }
    sections
}

/// The most characters of a verbatim line: a page is read at 80 columns and man indents a
/// section's text by 7.
const VERBATIM: usize = 80 - 7;

/// A verbatim line (an example, a table row) cut to [`VERBATIM`] at spaces outside quotes: a
/// command goes on after a ` \` as the shell reads it, a table row under its last column. A
/// comment's alignment is given up first. A word longer than a line stays whole.
fn fit_verbatim(line: &str, command: bool) -> Vec<String> {
    let mut line = line.to_string();
    let lead = line.len() - line.trim_start().len();
    let mut out = Vec::new();
    if line.chars().count() > VERBATIM {
        if let Some(at) = line.find("  #") {
            let short = format!("{}  {}", line[..at].trim_end(), line[at..].trim_start());
            if short.chars().count() <= VERBATIM || !command {
                line = short;
            } else {
                // A command's comment goes on the line above it: a ` \` inside a comment
                // would not continue the command.
                out.push(format!("{}{}", &line[..lead], line[at..].trim_start()));
                line = line[..at].trim_end().to_string();
            }
        }
    }
    let hang = if command {
        lead + 4
    } else {
        // Under the last column, unless that leaves too little room for its words.
        line.rfind("  ")
            .filter(|&i| i > lead && i + 2 + 20 <= VERBATIM)
            .map_or(lead + 4, |i| i + 2)
    };
    let mut rest = line;
    while rest.chars().count() > VERBATIM {
        let room = VERBATIM - if command { 2 } else { 0 };
        let Some(cut) = break_at(&rest, room) else {
            break;
        };
        let (head, tail) = rest.split_at(cut);
        out.push(if command {
            format!("{} \\", head.trim_end())
        } else {
            head.trim_end().to_string()
        });
        rest = format!("{}{}", " ".repeat(hang), tail.trim_start());
    }
    out.push(rest);
    out
}

/// The last space at or before `room` characters that is outside quotes and past the indent.
fn break_at(line: &str, room: usize) -> Option<usize> {
    let lead = line.len() - line.trim_start().len();
    let mut quote = None;
    let mut best = None;
    let mut previous = ' ';
    for (i, c) in line.char_indices().take(room + 1) {
        match (c, quote) {
            // A quote opens a word (`'>4...'`), not inside one (`primary's`).
            ('\'' | '"', None) if previous == ' ' || previous == '=' => quote = Some(c),
            (c, Some(q)) if c == q => quote = None,
            (' ', None) if i > lead => best = Some(i),
            _ => {}
        }
        previous = c;
    }
    best
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
        } else if indented {
            for part in fit_verbatim(line, title == "EXAMPLES") {
                out.push_str(&roff_escape(&part));
                out.push('\n');
            }
        } else {
            out.push_str(&roff_escape(line));
            out.push_str("\n.br\n");
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
        let sections = help_sections(text);
        assert_eq!(
            sections,
            [
                (
                    "EXAMPLES".to_string(),
                    "  maintwatch decode <<< '>4\\r\\n'\n  maintwatch -x\n\n".to_string()
                ),
                (
                    "\"EXIT STATUS\"".to_string(),
                    "Exit codes: 0 ok.\n.dot\n".to_string()
                )
            ]
        );
        assert_eq!(
            roff_section(&sections[0].0, &sections[0].1),
            ".SH EXAMPLES\n.nf\n  maintwatch decode <<< \\*(Aq>4\\er\\en\\*(Aq\n  \
             maintwatch \\-x\n.fi\n"
        );
        assert_eq!(
            roff_section(&sections[1].0, &sections[1].1),
            ".SH \"EXIT STATUS\"\nExit codes: 0 ok.\n.br\n\\&.dot\n.br\n"
        );
    }

    #[test]
    fn a_long_verbatim_line_is_cut_at_spaces_outside_quotes() {
        let command = format!(
            "  maintwatch decode '{}' --format escaped --json",
            "a b".repeat(12)
        );
        let parts = fit_verbatim(&command, true);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[0].ends_with(" \\"), "{parts:?}");
        assert!(parts.iter().all(|p| p.len() <= VERBATIM), "{parts:?}");
        let joined: Vec<&str> = parts
            .iter()
            .flat_map(|p| p.trim_end_matches('\\').split_whitespace())
            .collect();
        assert_eq!(joined.join(" "), command.trim());
        // Never inside a quoted argument; an apostrophe in a word is not a quote.
        assert!(parts[0].contains("'a b"), "{parts:?}");
        let prose = format!("  {} primary's connections closed", "word ".repeat(14));
        assert_eq!(fit_verbatim(&prose, false).len(), 2);
        let commented = format!("  maintwatch simulate {}  # a comment", "--flag ".repeat(8));
        let parts = fit_verbatim(&commented, true);
        assert_eq!(parts[0], "  # a comment", "{parts:?}");
        assert!(!parts[1].contains('#'), "{parts:?}");
        let row = format!("  name     18 s  {}", "word ".repeat(20));
        let parts = fit_verbatim(row.trim_end(), false);
        assert!(parts.iter().all(|p| p.len() <= VERBATIM), "{parts:?}");
        assert!(parts[1].starts_with(&" ".repeat(17)), "{parts:?}");
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
