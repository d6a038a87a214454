//! `simdex serve` under bad input and faults: every refusal a JSON error (the server stays
//! up), the token, SIGTERM and SIGKILL under concurrent writers (no acknowledged write lost,
//! none applied twice), and a read-only server following a writer (of an exact document store
//! too).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use simdex::ReadOnlyStore;

use crate::common::{ok, simdex};
use crate::serve::{Server, docs, jsonl, le, raw_store, read_reply};

/// (method, path, headers, body, status, error code).
type Case<'a> = (
    &'a str,
    &'a str,
    Vec<(&'a str, &'a str)>,
    Vec<u8>,
    u16,
    &'a str,
);

#[test]
fn refuses_bad_requests_with_json_errors_and_stays_up() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    raw_store(d, "s", 100);
    let srv = Server::start(d, "s", &["--max-body", "4K", "--deadline", "1"], &[]);
    let j = ("Content-Type", "application/json");
    let b = ("Content-Type", "application/octet-stream");
    let cases: Vec<Case<'_>> = vec![
        (
            "POST",
            "/v1/near",
            vec![j],
            b"{\"fingerprint\": ".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/near",
            vec![j],
            b"[1, 2]".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/near",
            vec![("Content-Type", "text/plain")],
            b"{}".to_vec(),
            415,
            "unsupported_media_type",
        ),
        (
            "POST",
            "/v1/near",
            vec![j],
            b"{\"fingerprint\": 1, \"k\": 1000}".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/near",
            vec![j],
            b"{\"fingerprint\": -1}".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/near",
            vec![j],
            b"{\"fingerprint\": \"xyz\"}".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/near",
            vec![j],
            b"{\"fingerprint\": 1, \"kk\": 1}".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            "GET",
            "/v1/near?fingerprint=ff&k=99999999999999999999",
            vec![],
            vec![],
            400,
            "invalid_argument",
        ),
        ("GET", "/v1/near", vec![], vec![], 400, "invalid_argument"),
        (
            "POST",
            "/v1/near-many",
            vec![b],
            vec![1, 2, 3, 4, 5, 6, 7],
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/insert",
            vec![b],
            vec![0; 24],
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/insert",
            vec![j],
            b"{\"fingerprints\": [1], \"ids\": []}".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/ingest",
            vec![j],
            b"{\"ids\": [], \"texts\": []}".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            "POST",
            "/v1/near-many",
            vec![b],
            vec![0; 8192],
            413,
            "too_large",
        ),
        (
            "GET",
            "/v1/insert",
            vec![],
            vec![],
            405,
            "method_not_allowed",
        ),
        ("GET", "/nope", vec![], vec![], 404, "not_found"),
    ];
    for (method, path, headers, body, status, code) in cases {
        let r = srv.call(method, path, &headers, &body);
        assert_eq!(
            r.status,
            status,
            "{method} {path}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert_eq!(r.json()["error"]["code"], code, "{method} {path}");
        assert!(!r.json()["error"]["message"].as_str().unwrap().is_empty());
    }
    // Raw garbage, a stalled head and a stalled body: an error or a close, never a hang.
    for raw in [
        &b"\x16\x03\x01\x00\xa5garbage\r\n\r\n"[..],
        b"GET /v1/health HTTP/1.1\r\nHo",
        b"POST /v1/near HTTP/1.1\r\nContent-Length: 50\r\n\r\n{",
    ] {
        let mut s = TcpStream::connect(&srv.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(raw).unwrap();
        let t = Instant::now();
        let r = read_reply(&mut s);
        assert!(matches!(r.status, 400 | 408), "{}", r.status);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
    // Still up, and counting what it refused.
    assert_eq!(srv.call("GET", "/v1/health", &[], b"").status, 200);
    let m = String::from_utf8(srv.call("GET", "/metrics", &[], b"").body).unwrap();
    assert!(
        m.contains("simdex_refused_total{reason=\"too_large\"} 1"),
        "{m}"
    );
    assert!(m.contains("simdex_request_duration_seconds_bucket{op=\"near\""));
    // Refusals are logged as structured lines.
    let log = srv.log.lock().unwrap().join("\n");
    assert!(log.contains("\"status\":415"), "{log}");
}

/// Past --max-connections a connection is answered 503 with Retry-After and closed; once one
/// closes, the next is served.
#[test]
fn connections_past_the_limit_get_503_and_retry_after() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    raw_store(d, "s", 10);
    let srv = Server::start(d, "s", &["--max-connections", "1"], &[]);
    // One keep-alive connection, answered (so the server holds it).
    let mut first = TcpStream::connect(&srv.addr).unwrap();
    first
        .write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 4096];
    let n = first.read(&mut buf).unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let r = srv.call("GET", "/v1/health", &[], b"");
    assert_eq!(r.status, 503);
    assert_eq!(r.headers.get("retry-after").map(String::as_str), Some("1"));
    assert_eq!(r.json()["error"]["code"], "overloaded");
    drop(first);
    let t = Instant::now();
    while srv.call("GET", "/v1/health", &[], b"").status != 200 {
        assert!(
            t.elapsed() < Duration::from_secs(5),
            "the slot never came back"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_token_is_required_when_configured() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    raw_store(d, "s", 10);
    std::fs::write(d.join("token"), "s3cret-token\n").unwrap();
    let srv = Server::start(d, "s", &["--token-file", "token"], &[]);
    let r = srv.call("GET", "/v1/stats", &[], b"");
    assert_eq!(
        (
            r.status,
            r.headers.get("www-authenticate").map(String::as_str)
        ),
        (401, Some("Bearer"))
    );
    let r = srv.call(
        "GET",
        "/metrics",
        &[("Authorization", "Bearer s3cret-tokeX")],
        b"",
    );
    assert_eq!(r.status, 401);
    let r = srv.call(
        "GET",
        "/v1/stats",
        &[("Authorization", "Bearer s3cret-token")],
        b"",
    );
    assert_eq!(r.status, 200);
    drop(srv);
    let srv = Server::start(d, "s", &[], &[("SIMDEX_TOKEN", "abc")]);
    assert_eq!(srv.call("GET", "/v1/health", &[], b"").status, 401);
    assert_eq!(
        srv.call("GET", "/v1/health", &[("Authorization", "Bearer abc")], b"")
            .status,
        200
    );
}

/// 8 writers insert through the server, then SIGTERM (graceful) or SIGKILL at a random moment:
/// every acknowledged pair is in the reopened store, and none is there twice.
#[test]
fn no_acknowledged_write_is_lost_to_sigterm_or_sigkill() {
    for (round, sig) in ["-TERM", "-KILL", "-KILL", "-KILL"].iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        raw_store(d, "s", 1);
        let mut srv = Server::start(d, "s", &["--max-pending-writes", "4"], &[]);
        let acked = Arc::new(Mutex::new(Vec::<(u64, u64)>::new()));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writers: Vec<_> = (0..8u64)
            .map(|w| {
                let (addr, acked, stop) = (srv.addr.clone(), Arc::clone(&acked), Arc::clone(&stop));
                std::thread::spawn(move || {
                    let mut i = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let ids: Vec<u64> = (0..50).map(|j| (w << 40) | (i * 50 + j)).collect();
                        let fps: Vec<u64> = ids.iter().map(|x| x.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
                        let body = le(&[fps.clone(), ids.clone()].concat());
                        let Ok(mut s) = TcpStream::connect(&addr) else { return };
                        let head = format!(
                            "POST /v1/insert HTTP/1.1\r\nContent-Type: application/octet-stream\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
                            body.len()
                        );
                        if s.write_all(head.as_bytes()).and_then(|_| s.write_all(&body)).is_err() {
                            return;
                        }
                        let mut all = Vec::new();
                        if s.read_to_end(&mut all).is_err() {
                            return;
                        }
                        if all.starts_with(b"HTTP/1.1 200") {
                            acked.lock().unwrap().extend(fps.into_iter().zip(ids));
                        } else if !all.starts_with(b"HTTP/1.1 503") {
                            return; // cut off by the kill
                        }
                        i += 1;
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300 + 150 * round as u64));
        let status = srv.signal(sig);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        if *sig == "-TERM" {
            assert!(status.success(), "{status:?}");
            let log = srv.log.lock().unwrap().join("\n");
            assert!(log.contains("\"msg\":\"stopped\""), "{log}");
        }
        let acked = acked.lock().unwrap();
        assert!(!acked.is_empty());
        let s = ReadOnlyStore::open(d.join("s")).unwrap();
        for &(fp, id) in acked.iter() {
            let ids = s.ids_of(fp).unwrap();
            assert_eq!(
                ids.iter().filter(|&&x| x == id).count(),
                1,
                "{sig}: pair {fp:x} {id}"
            );
        }
    }
}

/// A read-only server answers from a store another process writes, and picks up what it
/// adds; writes to it are refused.
#[test]
fn a_read_only_server_follows_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    raw_store(d, "s", 100);
    let srv = Server::start(d, "s", &["--read-only", "--refresh", "0.05"], &[]);
    let (s, v) = srv.json(
        "POST",
        "/v1/insert",
        json!({"fingerprints": [1], "ids": [1]}),
    );
    assert_eq!((s, v["error"]["code"].as_str()), (403, Some("read_only")));
    let probe = 0x0123_4567_89ab_cdefu64;
    let found = |srv: &Server| {
        srv.call(
            "GET",
            &format!("/v1/ids-of?fingerprint={probe:x}"),
            &[],
            b"",
        )
        .json()["ids"]
            .clone()
    };
    assert_eq!(found(&srv), json!([]));
    let line = format!("{probe:016x} 4242\n");
    ok(&simdex(
        &["insert", "s", "--quiet", "--sync", "per-write"],
        Some(line.as_bytes()),
        d,
    ));
    let t = Instant::now();
    while found(&srv) != json!([4242]) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "never saw the new pair"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    ok(&simdex(&["compact", "s", "--quiet"], None, d));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(found(&srv), json!([4242]));
}

/// A read-only server following an exact document store answers checks as the writer's own
/// store would, across the writer's new documents (its reader opened again, the generation's
/// prefix index shared) and a compaction (a new generation, its index built before the new
/// reader answers).
#[test]
fn a_read_only_server_follows_an_exact_writer() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let all = docs(400, 11);
    let (first, second) = all.split_at(300);
    std::fs::write(d.join("first.jsonl"), jsonl(first)).unwrap();
    std::fs::write(d.join("second.jsonl"), jsonl(second)).unwrap();
    // Probes: the second part's pages, a word changed.
    let probe: Vec<(String, String)> = (second.iter())
        .map(|(id, t)| (format!("q{id}"), format!("{t} probe")))
        .collect();
    std::fs::write(d.join("probe.jsonl"), jsonl(&probe)).unwrap();
    let ingest = |store: &str, file: &str| {
        let args = ["--jsonl", "--verify", "jaccard:0.9", "--quiet"];
        ok(&simdex(
            &[&["ingest", store, file][..], &args].concat(),
            None,
            d,
        ))
    };
    let check = |store: &str| {
        let args = [
            "--jsonl",
            "--verify",
            "jaccard:0.9",
            "--quiet",
            "--check-only",
        ];
        ok(&simdex(
            &[&["ingest", store, "probe.jsonl"][..], &args].concat(),
            None,
            d,
        ))
    };
    for store in ["a", "b"] {
        ingest(store, "first.jsonl");
    }
    ok(&simdex(&["compact", "a", "--quiet"], None, d));
    let srv = Server::start(d, "a", &["--read-only", "--refresh", "0.05"], &[]);
    let served = |srv: &Server| -> String {
        let body = json!({
            "ids": probe.iter().map(|p| &p.0).collect::<Vec<_>>(),
            "texts": probe.iter().map(|p| &p.1).collect::<Vec<_>>(),
            "verify": 0.9,
        });
        let (s, v) = srv.json("POST", "/v1/check", body);
        assert_eq!(s, 200, "{v}");
        let mut out = String::new();
        for (i, (id, _)) in probe.iter().enumerate() {
            if v["duplicate"][i] == json!(true) {
                let m = v["matched"][i].as_str().unwrap().to_string();
                out += &format!("{id}\t{m}\t{:.4}\n", v["similarity"][i].as_f64().unwrap());
            }
        }
        out
    };
    let before = check("b");
    assert_eq!(served(&srv), before);
    let until = |want: &str| {
        let t = Instant::now();
        while served(&srv) != want {
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "never answered {want}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    for store in ["a", "b"] {
        ingest(store, "second.jsonl");
    }
    let want = check("b");
    assert!(want.lines().count() > before.lines().count() + 50, "{want}");
    until(&want);
    ok(&simdex(&["compact", "a", "--quiet"], None, d));
    std::thread::sleep(Duration::from_millis(300));
    until(&want);
}

/// With --tls-cert and --tls-key the server speaks HTTPS: a client that trusts the certificate
/// gets answers, plain HTTP gets nothing, and unusable certificate files are named.
#[test]
fn tls_when_a_certificate_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    raw_store(d, "s", 10);
    test_certificate(d);
    let srv = Server::start(
        d,
        "s",
        &["--tls-cert", "cert.pem", "--tls-key", "key.pem"],
        &[],
    );
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    for c in rustls::pki_types::CertificateDer::pem_file_iter(d.join("ca.pem")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    #[allow(deprecated)]
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(std::sync::Arc::new(cfg), name).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, TcpStream::connect(&srv.addr).unwrap());
    tls.write_all(b"GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = tls.read_to_end(&mut got); // a close without close_notify is fine here
    let got = String::from_utf8_lossy(&got);
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.contains("\"status\":\"ok\""), "{got}");
    // Plain HTTP to the TLS port: no answer, and the server stays up.
    let mut s = TcpStream::connect(&srv.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /v1/health HTTP/1.1\r\n\r\n").unwrap();
    let mut plain = Vec::new();
    let _ = s.read_to_end(&mut plain);
    assert!(!plain.starts_with(b"HTTP/1.1 200"));
    drop(srv);
    let o = simdex(
        &[
            "serve",
            "s",
            "--tls-cert",
            "key.pem",
            "--tls-key",
            "key.pem",
        ],
        None,
        d,
    );
    crate::common::fails(&o, "--tls-cert");
}

/// A test CA (`ca.pem`) and a certificate it signed for 127.0.0.1 (`cert.pem`, `key.pem`), by
/// the openssl command.
fn test_certificate(d: &std::path::Path) {
    std::fs::write(
        d.join("leaf.ext"),
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n\
         keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    let steps = [
        format!("req -x509 {ec} -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca"),
        format!("req {ec} -keyout key.pem -out leaf.csr -subj /CN=localhost"),
        "x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out cert.pem -days 2 \
         -extfile leaf.ext"
            .to_string(),
    ];
    for args in steps {
        let o = std::process::Command::new("openssl")
            .args(args.split_whitespace())
            .current_dir(d)
            .output()
            .expect("the openssl command, to make a test certificate");
        assert!(
            o.status.success(),
            "openssl {args}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}
