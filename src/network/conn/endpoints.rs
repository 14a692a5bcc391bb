//! Endpoint setup, once for every command that connects (`watch`, `probe`, `doctor`).
//!
//! Each of them used to gather its endpoints on its own: the URLs, a `--from` list, the check
//! that TLS flags apply to some endpoint, the resolver and the `--insecure` warning, three
//! times with three slightly different results. Here a [`Request`] (what the command line
//! named, as plain values: this module knows no clap type) becomes a [`Setup`]: validated
//! endpoints with their options, the lines of `--from` that were skipped, and the notes and
//! the one warning the command should show. Like the rest of `conn`, this module prints
//! nothing.

use std::io::Read;
use std::sync::Arc;

use anyhow::Context;

use super::probe::{parse_endpoint_list, read_endpoint_text};
use super::{ConfigError, ConnectConfig, ConnectOptions, RedisUrl};
use crate::network::dns::DnsResolver;

/// What to do with a bad line of a `--from` list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadLines {
    /// Skip it and go on with the others (`probe`: an audit reports what it can).
    Skip,
    /// Refuse the whole list (`watch`: a watch meant to run for days does not start with an
    /// endpoint silently left out).
    Refuse,
}

/// The endpoints a command line names, as plain values.
pub struct Request<'a> {
    /// URLs given as arguments, and `-u`'s.
    pub urls: Vec<RedisUrl>,
    /// The endpoint of `-h`/`-p` (redis-cli's default when neither is given), used when no URL
    /// and no `--from` names one.
    pub flags_endpoint: Result<RedisUrl, ConfigError>,
    /// Whether `-h` or `-p` was given: they cannot be combined with URLs.
    pub host_or_port: bool,
    /// `--from FILE`, `-` for standard input.
    pub from: Option<&'a str>,
    pub bad_lines: BadLines,
}

/// Validated endpoints with their options, and what to tell the user about them.
#[derive(Debug)]
pub struct Setup {
    /// One per endpoint, in the order named: arguments first, then `--from`'s lines.
    pub options: Vec<ConnectOptions>,
    /// Bad lines of `--from` that were skipped ([`BadLines::Skip`]), each naming its line.
    pub skipped: Vec<ConfigError>,
    /// Notes to show before connecting, each once however many endpoints share it.
    pub notes: Vec<String>,
    /// Warnings to show before connecting: at most one for `--insecure`.
    pub warnings: Vec<String>,
}

/// Gathers, parses and validates the endpoints of `request` with the flags of `config`.
/// `stdin` is read when `--from -`. Errors that are the user's to fix carry a [`ConfigError`]
/// (a usage error); a file that cannot be opened does not.
pub fn setup(
    request: Request<'_>,
    config: &ConnectConfig,
    stdin: &mut dyn Read,
) -> anyhow::Result<Setup> {
    let (urls, skipped) = gather(request, stdin)?;
    let options = urls
        .iter()
        .map(|url| config.options_for(url))
        .collect::<Result<Vec<_>, _>>()?;
    config.check_tls_flags_apply(&options)?;
    Ok(Setup {
        notes: notes(&options),
        warnings: insecure_warning(&options).into_iter().collect(),
        options,
        skipped,
    })
}

/// The URLs to use and the `--from` lines skipped.
fn gather(
    request: Request<'_>,
    stdin: &mut dyn Read,
) -> anyhow::Result<(Vec<RedisUrl>, Vec<ConfigError>)> {
    let mut urls = request.urls;
    let mut skipped = Vec::new();
    if let Some(from) = request.from {
        let (text, source) = read_list(from, stdin)?;
        let list = parse_endpoint_list(&text, &source);
        let mut errors = list.errors.into_iter();
        let nothing = list.urls.is_empty() && urls.is_empty();
        // Refused, or nothing left to use: the first bad line is the error.
        if let Some(e) = errors.next() {
            if request.bad_lines == BadLines::Refuse || nothing {
                return Err(anyhow::Error::new(e).context("--from"));
            }
            skipped = std::iter::once(e).chain(errors).collect();
        }
        if nothing {
            return Err(invalid(format!("--from: no endpoint in {source}")));
        }
        urls.extend(list.urls);
    }
    if urls.is_empty() {
        return Ok((vec![request.flags_endpoint?], skipped));
    }
    if request.host_or_port {
        return Err(invalid(
            "-h/-p cannot be combined with endpoint URLs: put the host and port in the URLs".into(),
        ));
    }
    Ok((urls, skipped))
}

/// The text of a `--from` list and the name it is reported under.
fn read_list(from: &str, stdin: &mut dyn Read) -> anyhow::Result<(String, String)> {
    if from == "-" {
        let source = "standard input".to_string();
        let text = read_endpoint_text(stdin, &source).context("--from -")?;
        return Ok((text, source));
    }
    let mut file =
        std::fs::File::open(from).with_context(|| format!("cannot read endpoints from {from}"))?;
    let text = read_endpoint_text(&mut file, from).context("--from")?;
    Ok((text, from.to_string()))
}

fn invalid(message: String) -> anyhow::Error {
    anyhow::Error::new(ConfigError::Invalid(message))
}

/// Every endpoint's notes, each once.
fn notes(options: &[ConnectOptions]) -> Vec<String> {
    let mut seen = std::collections::BTreeSet::new();
    options
        .iter()
        .flat_map(ConnectOptions::notes)
        .filter(|n| seen.insert(n.clone()))
        .collect()
}

/// One warning for `--insecure`, however many endpoints it affects: the endpoint's own for one,
/// a count for several.
fn insecure_warning(options: &[ConnectOptions]) -> Option<String> {
    let insecure: Vec<&ConnectOptions> = options.iter().filter(|o| o.insecure()).collect();
    match insecure.as_slice() {
        [] => None,
        [one] => one.warnings().into_iter().next(),
        many => Some(format!(
            "--insecure: the certificates of {} TLS endpoints are NOT verified; anyone on the \
             path can read and change these sessions",
            many.len()
        )),
    }
}

impl Setup {
    /// A resolver only when some endpoint is a name: connecting to addresses must work even
    /// where the system resolver configuration is missing.
    pub fn resolver(&self) -> anyhow::Result<Option<Arc<DnsResolver>>> {
        let Some(named) = self.options.iter().find(|o| !o.host_is_ip()) else {
            return Ok(None);
        };
        let dns =
            DnsResolver::new(&named.dns_options()).context("cannot set up the DNS resolver")?;
        Ok(Some(Arc::new(dns)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> RedisUrl {
        RedisUrl::parse(text).unwrap()
    }

    fn request(urls: &[&str]) -> Request<'static> {
        Request {
            urls: urls.iter().map(|u| url(u)).collect(),
            flags_endpoint: Ok(url("redis://127.0.0.1:6379")),
            host_or_port: false,
            from: None,
            bad_lines: BadLines::Skip,
        }
    }

    fn run(request: Request<'_>, config: &ConnectConfig, stdin: &str) -> anyhow::Result<Setup> {
        setup(request, config, &mut stdin.as_bytes())
    }

    #[test]
    fn no_url_means_the_flags_endpoint() {
        let s = run(request(&[]), &ConnectConfig::default(), "").unwrap();
        assert_eq!(s.options.len(), 1);
        assert_eq!(s.options[0].port(), 6379);
        assert!(
            s.resolver().unwrap().is_none(),
            "an address needs no resolver"
        );
    }

    #[test]
    fn bad_lines_are_skipped_or_refused_as_asked() {
        let list = "redis://a:1\nnot a url at all ::\nb:2\n";
        let mut r = request(&[]);
        r.from = Some("-");
        let s = run(r, &ConnectConfig::default(), list).unwrap();
        assert_eq!((s.options.len(), s.skipped.len()), (2, 1));
        let mut r = request(&[]);
        r.from = Some("-");
        r.bad_lines = BadLines::Refuse;
        let e = run(r, &ConnectConfig::default(), list).unwrap_err();
        assert!(e.chain().any(|c| c.is::<ConfigError>()), "{e:#}");
        assert!(e.to_string().starts_with("--from"), "{e:#}");
    }

    #[test]
    fn an_empty_list_and_host_flags_with_urls_are_usage_errors() {
        let mut r = request(&[]);
        r.from = Some("-");
        let e = run(r, &ConnectConfig::default(), "# nothing\n").unwrap_err();
        assert_eq!(e.to_string(), "--from: no endpoint in standard input");
        let mut r = request(&["redis://a:1"]);
        r.host_or_port = true;
        let e = run(r, &ConnectConfig::default(), "").unwrap_err();
        assert!(e.to_string().starts_with("-h/-p cannot be combined"), "{e}");
    }

    #[test]
    fn insecure_is_one_warning_however_many_endpoints() {
        let mut config = ConnectConfig::default();
        config.tls_files.insecure = true;
        let one = run(request(&["rediss://a:1"]), &config, "").unwrap();
        assert_eq!(one.warnings.len(), 1);
        assert!(one.warnings[0].contains("a:1"), "{:?}", one.warnings);
        let three = request(&["rediss://a:1", "rediss://b:1", "rediss://c:1"]);
        let three = run(three, &config, "").unwrap();
        assert_eq!(three.warnings.len(), 1);
        assert!(
            three.warnings[0].contains("3 TLS endpoints"),
            "{:?}",
            three.warnings
        );
    }

    #[test]
    fn tls_flags_that_apply_to_no_endpoint_are_refused() {
        let mut config = ConnectConfig::default();
        config.tls_files.insecure = true;
        let e = run(request(&["redis://a:1"]), &config, "").unwrap_err();
        assert!(e.chain().any(|c| c.is::<ConfigError>()), "{e:#}");
    }
}
