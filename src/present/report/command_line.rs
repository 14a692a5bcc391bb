//! The command line a page was made by, for its header: the whole of it (issue 50: a header
//! `maintwatch pcap --grade` left out the `--dns-port` that changed the verdict), with every
//! secret taken out, since a page is shared.

/// Flags whose value is a secret: the value that follows them (or after `=`, or joined to the
/// short flag as `-aSECRET`) is replaced.
const SECRET_FLAGS: [&str; 4] = ["-a", "--pass", "--password", "--user-password"];

/// What replaces a secret.
const WITHHELD: &str = "***";

/// This process's arguments after `maintwatch`, secrets removed, or `fallback` when the process
/// is not the maintwatch binary (a test calling a command as a library).
pub fn command_line(fallback: &str) -> String {
    let mut args = std::env::args_os();
    let is_ours = args
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n == "maintwatch")
        })
        .unwrap_or(false);
    if !is_ours {
        return fallback.to_string();
    }
    let args: Vec<String> = args.map(|a| a.to_string_lossy().into_owned()).collect();
    redacted(&args)
}

/// `args` joined as a shell reads them, secrets replaced by `***`.
pub fn redacted(args: &[String]) -> String {
    let mut out = Vec::with_capacity(args.len());
    let mut secret_next = false;
    for arg in args {
        let shown = if secret_next {
            WITHHELD.to_string()
        } else if let Some((flag, _)) = arg
            .split_once('=')
            .filter(|(f, _)| SECRET_FLAGS.contains(f))
        {
            format!("{flag}={WITHHELD}")
        } else if arg.len() > 2 && arg.starts_with("-a") && !arg.starts_with("--") {
            // clap reads `-aSECRET` as `-a SECRET`.
            format!("-a{WITHHELD}")
        } else {
            without_url_password(arg)
        };
        secret_next = SECRET_FLAGS.contains(&arg.as_str());
        out.push(quoted(&shown));
    }
    out.join(" ")
}

/// A URL's password replaced, read as an endpoint is read (`crate::network::conn::url`): the user-info
/// runs to the last `@`, and one without a `:` is the password itself (`redis://PASSWORD@host`,
/// as redis-cli reads it), with or without a scheme (a bare `user:PASSWORD@host` is an
/// endpoint too). Any other argument holding an `@` is masked the same way: a page may show too
/// little of an argument, never a secret.
fn without_url_password(arg: &str) -> String {
    if arg.starts_with('-') && !arg.contains("://") {
        return arg.to_string();
    }
    crate::network::conn::url::redact(arg)
}

/// An argument in single quotes when a shell would split or expand it.
fn quoted(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%*".contains(c));
    match plain {
        true => arg.to_string(),
        false => format!("'{}'", arg.replace('\'', "'\\''")),
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn every_secret_is_withheld_and_the_rest_is_whole() {
        let args: Vec<String> = [
            "pcap",
            "--grade",
            "--dns-port",
            "5353",
            "-a",
            "s3cret",
            "--pass=s3cret",
            "-as3cret",
            "redis://app:s3cret@db:6379",
            "redis://s3cret@db:6379",
            "rediss://app:s3c/r@t@db",
            "app:s3cret@db:6379",
            "--askpass",
            "a b",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let line = redacted(&args);
        assert!(!line.contains("s3c"), "{line}");
        assert_eq!(
            line,
            "pcap --grade --dns-port 5353 -a *** --pass=*** -a*** redis://app:***@db:6379 \
             redis://***@db:6379 rediss://app:***@db app:***@db:6379 --askpass 'a b'"
        );
    }
}
