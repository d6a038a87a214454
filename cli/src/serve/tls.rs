//! TLS for `simdex serve` (rustls with the ring provider): the certificate chain and private key
//! from PEM files, TLS 1.2 and 1.3 with rustls' safe defaults, no client certificates.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use simdex::{Error, Result};

/// The server's TLS configuration from `cert` (a PEM chain, leaf first) and `key` (a PEM
/// private key: PKCS#8, PKCS#1 or SEC1).
pub fn config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>> {
    let bad = |what: &str, p: &Path, e: &dyn std::fmt::Display| {
        Error::InvalidArgument(format!("{what} {}: {e}", p.display()))
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad("--tls-cert", cert, &e))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad("--tls-cert", cert, &e))?;
    if certs.is_empty() {
        return Err(bad(
            "--tls-cert",
            cert,
            &"no certificate in it (PEM expected)",
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad("--tls-key", key, &e))?;
    // ring rather than aws-lc-rs (which adds post-quantum key exchange, hence the deprecation
    // note) because aws-lc-rs builds with cmake and a long C compile on every fresh machine.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::InvalidArgument(format!("TLS: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            Error::InvalidArgument(format!(
                "--tls-cert and --tls-key do not make a usable certificate: {e}"
            ))
        })?;
    Ok(Arc::new(cfg))
}
