//! TLS client configuration and the explanation of TLS failures.
//!
//! Only the `ring` provider is used, and explicitly (`builder_with_provider`): with a second
//! provider compiled into the dependency graph, rustls' process-default lookup panics. Roots
//! are the system's unless `--cacert`/`--cacertdir` name others (redis-cli's rule: a given CA
//! replaces the system store). `--insecure` swaps in a verifier that accepts any certificate
//! but still checks the handshake signatures, so the session is encrypted to *someone*.
//!
//! A diagnostic tool has to say *why* TLS failed ("unknown CA", "certificate is for
//! cache.example, not 10.0.0.5"), not "invalid peer certificate", so failures are sorted into
//! [`TlsFailure`] with a sentence of detail.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;
use tokio_rustls::rustls::{
    self,
    client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier},
    client::{verify_server_name, WebPkiServerVerifier},
    crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider},
    pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer, ServerName, UnixTime},
    server::ParsedCertificate,
    AlertDescription, CertificateError, ClientConfig, DigitallySignedStruct, InconsistentKeys,
    RootCertStore, SignatureScheme,
};

use super::ConfigError;

/// The TLS material of the command line, as paths (read when a TLS endpoint needs them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// `--cacert`: a PEM bundle of trusted CAs (replaces the system roots).
    pub cacert: Option<PathBuf>,
    /// `--cacertdir`: every PEM certificate in this directory is trusted (replaces the system
    /// roots; combined with `--cacert` when both are given).
    pub cacertdir: Option<PathBuf>,
    /// `--cert` / `--key`: a client certificate chain and its key, for mutual TLS.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// `--insecure`: do not verify the server's certificate or name.
    pub insecure: bool,
}

/// The ring provider, the only one this crate uses.
fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Builds the client configuration. Reads files, so it is built once per run and shared.
pub fn client_config(files: &TlsFiles) -> Result<Arc<ClientConfig>, ConfigError> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| ConfigError::Tls {
            reason: e.to_string(),
        })?;
    let builder = if files.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate { provider }))
    } else {
        let (roots, pinned) = roots(files)?;
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| ConfigError::Tls {
                reason: e.to_string(),
            })?;
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(CacertOrWebPki { webpki, pinned }))
    };
    let config = match (&files.cert, &files.key) {
        (Some(cert), Some(key)) => {
            let chain = read_certs(cert)?;
            if chain.is_empty() {
                return Err(ConfigError::File {
                    path: cert.clone(),
                    reason: "no PEM certificate in it".into(),
                });
            }
            let key_path = key;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| ConfigError::File {
                path: key.clone(),
                reason: format!("cannot read a PEM private key: {e}"),
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| client_cert_error(e, cert, key_path))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(ConfigError::Tls {
                reason: "--cert and --key must be given together".into(),
            })
        }
    };
    Ok(Arc::new(config))
}

/// Why a client certificate and key were refused, told apart: a key that is not the
/// certificate's, and a certificate rustls cannot use at all (an X.509 v1 certificate, made by
/// `openssl x509 -req` without extensions, is the common case).
fn client_cert_error(e: rustls::Error, cert: &Path, key: &Path) -> ConfigError {
    let reason = match e {
        rustls::Error::InconsistentKeys(InconsistentKeys::KeyMismatch) => format!(
            "the private key in {} does not belong to the certificate in {} (--key must be the \
             key of --cert)",
            key.display(),
            cert.display()
        ),
        rustls::Error::InconsistentKeys(InconsistentKeys::Unknown) => format!(
            "cannot tell whether the key in {} belongs to the certificate in {}",
            key.display(),
            cert.display()
        ),
        rustls::Error::InvalidCertificate(c) => format!(
            "the client certificate in {} cannot be used: {}",
            cert.display(),
            match c {
                CertificateError::Other(o) if o.to_string().contains("UnsupportedCertVersion") => {
                    "it is an X.509 v1 certificate; only v3 is supported (reissue it with \
                     extensions, e.g. openssl x509 -req ... -extfile)"
                        .to_string()
                }
                other => other.to_string(),
            }
        ),
        other => format!("client certificate and key do not fit together: {other}"),
    };
    ConfigError::Tls { reason }
}

/// The trust anchors, and the certificates of `--cacert` themselves (see [`CacertOrWebPki`]).
fn roots(files: &TlsFiles) -> Result<(RootCertStore, Vec<CertificateDer<'static>>), ConfigError> {
    let mut store = RootCertStore::empty();
    let mut pinned = Vec::new();
    if files.cacert.is_none() && files.cacertdir.is_none() {
        let native = rustls_native_certs::load_native_certs();
        let (added, _ignored) = store.add_parsable_certificates(native.certs);
        if added == 0 {
            let why = native
                .errors
                .first()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            return Err(ConfigError::Tls {
                reason: format!(
                    "no usable system CA certificates{why}; give --cacert or --cacertdir (or \
                     --insecure)"
                ),
            });
        }
        return Ok((store, pinned));
    }
    if let Some(path) = &files.cacert {
        let certs = read_certs(path)?;
        if certs.is_empty() {
            return Err(ConfigError::File {
                path: path.clone(),
                reason: "no PEM certificate in it".into(),
            });
        }
        for cert in certs {
            store.add(cert.clone()).map_err(|e| ConfigError::File {
                path: path.clone(),
                reason: format!("not a usable CA certificate: {e}"),
            })?;
            pinned.push(cert);
        }
    }
    if let Some(dir) = &files.cacertdir {
        let entries = std::fs::read_dir(dir).map_err(|e| ConfigError::File {
            path: dir.clone(),
            reason: e.to_string(),
        })?;
        let mut found = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_file() {
                continue;
            }
            // A CA directory (OpenSSL's hashed layout included) holds other files too: anything
            // that does not parse as PEM certificates is skipped, not fatal.
            if let Ok(certs) = read_certs(&path) {
                let (added, _) = store.add_parsable_certificates(certs);
                found += added;
            }
        }
        if found == 0 {
            return Err(ConfigError::File {
                path: dir.clone(),
                reason: "no PEM CA certificate in this directory".into(),
            });
        }
    }
    Ok((store, pinned))
}

/// The usual chain verification against the trust anchors, plus redis-cli's acceptance of a
/// self-signed server certificate given as `--cacert` (OpenSSL trusts a certificate that is
/// itself in the trust store; webpki refuses it with `CaUsedAsEndEntity` or an unknown issuer).
/// The exception is narrow: the server's certificate must be byte-equal to one given in
/// `--cacert`, the chain verifier must have failed only on the issuer (validity errors come
/// first in webpki and are kept), and the name is still checked.
#[derive(Debug)]
struct CacertOrWebPki {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for CacertOrWebPki {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verdict = self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        );
        match verdict {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::UnknownIssuer | CertificateError::Other(_),
            )) if self
                .pinned
                .iter()
                .any(|p| p.as_ref() == end_entity.as_ref()) =>
            {
                verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, ConfigError> {
    let fail = |reason: String| ConfigError::File {
        path: path.to_path_buf(),
        reason,
    };
    CertificateDer::pem_file_iter(path)
        .map_err(|e| fail(format!("cannot read: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(format!("bad PEM: {e}")))
}

/// The server name to send (SNI) and verify: `--sni` when given, else the host. An IP address is
/// verified against the certificate's IP SANs and sends no SNI.
pub fn server_name(host: &str, sni: Option<&str>) -> Result<ServerName<'static>, ConfigError> {
    let name = sni.unwrap_or(host);
    ServerName::try_from(name.to_string()).map_err(|_| ConfigError::Tls {
        reason: format!("{name:?} is not a valid TLS server name"),
    })
}

/// `--insecure`: any certificate, any name; signatures still checked.
#[derive(Debug)]
struct AcceptAnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Why a TLS session could not be established, in the terms an operator acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TlsFailure {
    /// The server's chain does not lead to a trusted CA (`--cacert`?).
    UnknownCa,
    /// The certificate does not name the host (or `--sni`) that was asked for.
    NameMismatch,
    Expired,
    NotYetValid,
    Revoked,
    /// Any other problem with the server's certificate.
    BadCertificate,
    /// The server requires a client certificate (`--cert`/`--key`) and got none.
    ClientCertRequired,
    /// The server rejected the client certificate it was given.
    ClientCertRejected,
    /// The server does not speak TLS on this port (it answered in plaintext).
    NotTls,
    /// The server aborted the handshake with some other alert, or protocol failure.
    Handshake,
}

impl TlsFailure {
    pub fn name(self) -> &'static str {
        match self {
            TlsFailure::UnknownCa => "unknown CA",
            TlsFailure::NameMismatch => "name mismatch",
            TlsFailure::Expired => "certificate expired",
            TlsFailure::NotYetValid => "certificate not yet valid",
            TlsFailure::Revoked => "certificate revoked",
            TlsFailure::BadCertificate => "bad certificate",
            TlsFailure::ClientCertRequired => "client certificate required",
            TlsFailure::ClientCertRejected => "client certificate rejected",
            TlsFailure::NotTls => "not a TLS server",
            TlsFailure::Handshake => "handshake failed",
        }
    }
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// webpki lists the certificate's names Debug-formatted (`DnsName("a.example")`,
/// `IpAddress(10.0.0.1)`); people want the names.
fn plain_name(presented: &str) -> &str {
    for (open, close) in [("DnsName(\"", "\")"), ("IpAddress(", ")")] {
        if let Some(inner) = presented
            .strip_prefix(open)
            .and_then(|rest| rest.strip_suffix(close))
        {
            return inner;
        }
    }
    presented
}

/// The rustls error inside an I/O error, if any: tokio-rustls wraps handshake and record
/// failures that way.
pub fn rustls_error(e: &std::io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

/// Sorts a rustls error into a [`TlsFailure`] and a sentence for people. `expected` is the name
/// that was verified (host or `--sni`).
pub fn explain(e: &rustls::Error, expected: &str) -> (TlsFailure, String) {
    use TlsFailure as F;
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => (
                F::UnknownCa,
                "the server's certificate is not signed by a trusted CA (give its CA with \
                 --cacert)"
                    .into(),
            ),
            CertificateError::NotValidForName => (
                F::NameMismatch,
                format!("the server's certificate is not valid for {expected:?}"),
            ),
            CertificateError::NotValidForNameContext { presented, .. } => (
                F::NameMismatch,
                format!(
                    "the server's certificate is not valid for {expected:?}; it names {} (use \
                     --sni NAME to verify another name)",
                    if presented.is_empty() {
                        "no host".to_string()
                    } else {
                        presented
                            .iter()
                            .map(|p| plain_name(p))
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            ),
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => (
                F::Expired,
                format!("the server's certificate expired ({c})"),
            ),
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => (
                F::NotYetValid,
                format!("the server's certificate is not valid yet ({c})"),
            ),
            CertificateError::Revoked => (F::Revoked, "the server's certificate is revoked".into()),
            other => (
                F::BadCertificate,
                format!("the server's certificate was rejected: {other}"),
            ),
        },
        rustls::Error::AlertReceived(alert) => match alert {
            AlertDescription::CertificateRequired => (
                F::ClientCertRequired,
                "the server requires a client certificate (--cert and --key)".into(),
            ),
            AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateRevoked
            | AlertDescription::AccessDenied => (
                F::ClientCertRejected,
                format!("the server rejected the client certificate (alert {alert:?})"),
            ),
            other => (
                F::Handshake,
                format!("the server aborted the TLS handshake (alert {other:?})"),
            ),
        },
        rustls::Error::InvalidMessage(_)
        | rustls::Error::InappropriateMessage { .. }
        | rustls::Error::InappropriateHandshakeMessage { .. } => (
            F::NotTls,
            format!(
                "the server did not answer with TLS ({e}); is TLS enabled on this port? (try \
                 without --tls / with redis://)"
            ),
        ),
        other => (F::Handshake, format!("TLS handshake failed: {other}")),
    }
}
