//! `simdex serve` under load, against the library in the same run: single-fingerprint queries
//! from 16 keep-alive connections (requests/s, p50, p99), batch queries of 1,000 (keys/s
//! against `ReadOnlyStore::near_many` on the same batches), inserts in batches of 1,000 under
//! per-write durability (fingerprints/s), document ingest (documents/s against `simdex ingest`
//! on the same input), floods of slow, oversized and malformed requests (the other clients' p99
//! against its unloaded value), and SIGKILL under 64 writing clients (every acknowledged write
//! present after restart, none twice).
//!
//! `bash benches/serve.sh` (builds the CLI first). Knobs: SIMDEX_BENCH_N (stored fingerprints,
//! default 10M), SIMDEX_BENCH_SECS (seconds per load phase, default 5), SIMDEX_BENCH_KILLS
//! (default 20), SIMDEX_BIN (default target/release/simdex).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use simdex::index::DesignChoice;
use simdex::sample;
use simdex::store::{CreateOptions, ReadOnlyStore, Store};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn bin() -> String {
    let b = std::env::var("SIMDEX_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/target/release/simdex").to_string()
    });
    assert!(
        Path::new(&b).exists(),
        "{b} is missing: cargo build --release -p simdex-cli first (benches/serve.sh does)"
    );
    b
}

struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(store: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(bin())
            .arg("serve")
            .arg(store)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let at = first.find("\"addr\":\"").unwrap() + 8;
        let addr = first[at..at + first[at..].find('"').unwrap()].to_string();
        std::thread::spawn(move || for _ in lines.map_while(|l| l.ok()) {});
        Server { child, addr }
    }

    fn kill(&mut self, sig: &str) {
        Command::new("kill")
            .args([sig, &self.child.id().to_string()])
            .status()
            .unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A keep-alive connection.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

impl Conn {
    fn new(addr: &str) -> Conn {
        let s = TcpStream::connect(addr).unwrap();
        s.set_nodelay(true).unwrap();
        Conn { s, buf: Vec::new() }
    }

    /// (status, body).
    fn call(&mut self, method: &str, path: &str, ct: &str, body: &[u8]) -> (u16, Vec<u8>) {
        self.try_call(method, path, ct, body).unwrap()
    }

    /// (status, body), or the connection's failure.
    fn try_call(
        &mut self,
        method: &str,
        path: &str,
        ct: &str,
        body: &[u8],
    ) -> std::io::Result<(u16, Vec<u8>)> {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: b\r\nContent-Type: {ct}\r\nAccept: \
             application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let mut all = head.into_bytes();
        all.extend_from_slice(body);
        self.s.write_all(&all)?;
        let mut chunk = [0u8; 65536];
        let closed = || std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&self.buf[..end]).to_ascii_lowercase();
                let status = head[9..12].parse().map_err(|_| closed())?;
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                while self.buf.len() < end + 4 + len {
                    let n = self.s.read(&mut chunk)?;
                    if n == 0 {
                        return Err(closed());
                    }
                    self.buf.extend_from_slice(&chunk[..n]);
                }
                let body = self.buf[end + 4..end + 4 + len].to_vec();
                self.buf.drain(..end + 4 + len);
                return Ok((status, body));
            }
            let n = self.s.read(&mut chunk)?;
            if n == 0 {
                return Err(closed());
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn le(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort_unstable();
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

/// `conns` threads, each on its own connection, querying single fingerprints for `secs`:
/// (requests/s, p50, p99).
fn single_load(addr: &str, keys: &[u64], conns: usize, secs: f64) -> (f64, Duration, Duration) {
    let stop = AtomicBool::new(false);
    let lat: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
    let t0 = Instant::now();
    std::thread::scope(|sc| {
        for c in 0..conns {
            let (stop, lat) = (&stop, &lat);
            sc.spawn(move || {
                let mut conn = Conn::new(addr);
                let mut mine = Vec::new();
                let mut i = c * 7919;
                while !stop.load(Relaxed) {
                    let q = keys[i % keys.len()] ^ (1 << (i % 64));
                    let t = Instant::now();
                    let (s, _) = conn.call(
                        "GET",
                        &format!("/v1/near?fingerprint={q:x}&k=3"),
                        "text/plain",
                        b"",
                    );
                    mine.push(t.elapsed());
                    assert_eq!(s, 200);
                    i += 1;
                }
                lat.lock().unwrap().extend(mine);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Relaxed);
    });
    let el = t0.elapsed().as_secs_f64();
    let mut v = lat.into_inner().unwrap();
    (v.len() as f64 / el, pct(&mut v, 0.5), pct(&mut v, 0.99))
}

fn main() {
    if std::env::args().any(|a| a == "--test" || a == "--list") {
        return;
    }
    let n = env_u64("SIMDEX_BENCH_N", 10_000_000) as usize;
    let secs = env_u64("SIMDEX_BENCH_SECS", 5) as f64;
    let kills = env_u64("SIMDEX_BENCH_KILLS", 20);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let keys = sample::random(n, 1);
    let mut base: Vec<(u64, u64)> = keys
        .iter()
        .enumerate()
        .map(|(i, &f)| (f, i as u64))
        .collect();
    base.sort_unstable();
    Store::create_from_sorted(
        &path,
        &CreateOptions::default().with_design(DesignChoice::Named("10".into())),
        base.iter().map(|&p| Ok(p)),
    )
    .unwrap();
    drop(base);
    println!("what\tserver\tbaseline\tratio");
    let srv = Server::start(&path, &[]);

    // Single queries, 16 connections.
    let (rps, p50, p99) = single_load(&srv.addr, &keys, 16, secs);
    println!("near, 16 connections\t{rps:.0} req/s, p50 {p50:.2?}, p99 {p99:.2?}\t\t");

    // Floods: the same 8-connection query load alone, then beside slow, oversized and
    // malformed clients.
    let (_, _, calm) = single_load(&srv.addr, &keys, 8, secs);
    let flooding = AtomicBool::new(true);
    let slow: Vec<TcpStream> = (0..200)
        .filter_map(|_| TcpStream::connect(&srv.addr).ok())
        .collect();
    let (_, _, loaded) = std::thread::scope(|sc| {
        let (flooding, addr, slow) = (&flooding, &srv.addr, &slow);
        sc.spawn(move || {
            // Slow clients: a byte of a request head each, every 100 ms.
            let mut i = 0;
            while flooding.load(Relaxed) {
                for mut s in slow {
                    let _ = s.write_all(&[b"GET /v1/health HTTP/1.1\r\n"[i % 25]]);
                }
                i += 1;
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        for bad in [
            &b"POST /v1/insert HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n"[..],
            b"\x16\x03\x01garbage garbage\r\n\r\n",
            b"POST /v1/near HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\n{{{{{",
        ] {
            sc.spawn(move || {
                while flooding.load(Relaxed) {
                    if let Ok(mut s) = TcpStream::connect(addr) {
                        let _ = s.write_all(bad);
                        let _ = s.read(&mut [0u8; 512]);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            });
        }
        let r = single_load(addr, &keys, 8, secs);
        flooding.store(false, Relaxed);
        r
    });
    println!(
        "near p99 beside floods (200 slow clients, oversized and malformed requests)\t{loaded:.2?}\t{calm:.2?} (unloaded)\t{:.2}x",
        loaded.as_secs_f64() / calm.as_secs_f64()
    );
    drop(slow);

    // Batches of 1,000, one connection, against the library on the same batches.
    let batches: Vec<Vec<u64>> = (0..200)
        .map(|b| {
            (0..1000)
                .map(|i| keys[(b * 1000 + i) % n] ^ (1 << (i % 64)))
                .collect()
        })
        .collect();
    let mut conn = Conn::new(&srv.addr);
    let lib = ReadOnlyStore::open(&path).unwrap();
    let mut best = (0.0f64, 0.0f64);
    for _ in 0..3 {
        let t = Instant::now();
        let mut done = 0;
        while t.elapsed().as_secs_f64() < secs / 2.0 {
            for b in &batches[..20] {
                let (s, _) = conn.call(
                    "POST",
                    "/v1/near-many?k=3",
                    "application/octet-stream",
                    &le(b),
                );
                assert_eq!(s, 200);
                done += b.len();
            }
        }
        let server = done as f64 / t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut done = 0;
        while t.elapsed().as_secs_f64() < secs / 2.0 {
            for b in &batches[..20] {
                let r = lib.near_many(b, 3).unwrap();
                std::hint::black_box(r);
                done += b.len();
            }
        }
        let library = done as f64 / t.elapsed().as_secs_f64();
        best = (best.0.max(server), best.1.max(library));
    }
    drop(lib);
    println!(
        "near-many, batches of 1,000\t{:.0} keys/s\t{:.0} keys/s (library)\t{:.2}x",
        best.0,
        best.1,
        best.0 / best.1
    );

    // Inserts of 1,000 pairs, per-write durability, 8 connections.
    let next_id = AtomicU64::new(1 << 40);
    let stop = AtomicBool::new(false);
    let t0 = Instant::now();
    std::thread::scope(|sc| {
        for _ in 0..8 {
            let (stop, next_id, addr) = (&stop, &next_id, &srv.addr);
            sc.spawn(move || {
                let mut conn = Conn::new(addr);
                while !stop.load(Relaxed) {
                    let first = next_id.fetch_add(1000, Relaxed);
                    let ids: Vec<u64> = (first..first + 1000).collect();
                    let fps: Vec<u64> = ids
                        .iter()
                        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                        .collect();
                    let (s, _) = conn.call(
                        "POST",
                        "/v1/insert",
                        "application/octet-stream",
                        &le(&[fps, ids].concat()),
                    );
                    assert_eq!(s, 200);
                }
            });
        }
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Relaxed);
    });
    let inserted = (next_id.load(Relaxed) - (1 << 40)) as f64;
    println!(
        "insert, batches of 1,000, per-write, 8 connections\t{:.0} fingerprints/s\t\t",
        inserted / t0.elapsed().as_secs_f64()
    );

    drop(srv);

    // Documents: the server against `simdex ingest` on the same input.
    ingest_phase(dir.path());

    // SIGKILL under 64 writing clients.
    let mut ok_rounds = 0;
    let mut acked_total = 0;
    for round in 0..kills {
        let p = dir.path().join(format!("k{round}"));
        Store::create_from_sorted(&p, &CreateOptions::default(), std::iter::empty()).unwrap();
        let mut srv = Server::start(&p, &[]);
        let addr = srv.addr.clone();
        let acked: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());
        let stop = AtomicBool::new(false);
        std::thread::scope(|sc| {
            for w in 0..64u64 {
                let (stop, acked, addr) = (&stop, &acked, &addr);
                sc.spawn(move || {
                    let Ok(s) = TcpStream::connect(addr) else {
                        return;
                    };
                    let mut conn = Conn { s, buf: Vec::new() };
                    let mut i = 0u64;
                    while !stop.load(Relaxed) {
                        let ids: Vec<u64> = (0..10).map(|j| (w << 32) | (i * 10 + j)).collect();
                        let fps: Vec<u64> = ids
                            .iter()
                            .map(|x| x.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                            .collect();
                        let body = le(&[fps.clone(), ids.clone()].concat());
                        match conn.try_call("POST", "/v1/insert", "application/octet-stream", &body)
                        {
                            Ok((200, _)) => acked.lock().unwrap().extend(fps.into_iter().zip(ids)),
                            Ok((503, _)) => {}
                            _ => return,
                        }
                        i += 1;
                    }
                });
            }
            let mut x = round + 1;
            std::thread::sleep(Duration::from_millis(
                100 + sample::splitmix64(&mut x) % 500,
            ));
            srv.kill("-KILL");
            stop.store(true, Relaxed);
        });
        let acked = acked.into_inner().unwrap();
        let s = ReadOnlyStore::open(&p).unwrap();
        let good = acked
            .iter()
            .all(|&(fp, id)| s.ids_of(fp).unwrap().iter().filter(|&&x| x == id).count() == 1);
        ok_rounds += u64::from(good && !acked.is_empty());
        acked_total += acked.len();
    }
    println!(
        "SIGKILL under 64 writing clients\t{ok_rounds} of {kills} rounds: every acknowledged pair present once ({acked_total} pairs)\t\t"
    );
}

/// `simdex ingest` of a generated site (pages of one template with small changes) against
/// the server's /v1/ingest on the same documents, both after the same first part.
fn ingest_phase(d: &Path) {
    let docs = site(40_000, 5);
    let jsonl = |part: &[(String, String)]| -> String {
        part.iter()
            .map(|(id, t)| format!("{{\"id\": \"{id}\", \"text\": \"{t}\"}}\n"))
            .collect()
    };
    let (first, rest) = docs.split_at(4096);
    std::fs::write(d.join("first.jsonl"), jsonl(first)).unwrap();
    std::fs::write(d.join("rest.jsonl"), jsonl(rest)).unwrap();
    let ingest = |store: &str, file: &str| {
        let t = Instant::now();
        let o = Command::new(bin())
            .args([
                "ingest",
                store,
                file,
                "--jsonl",
                "--verify",
                "jaccard:0.9",
                "--quiet",
                "--out",
                "answers.tsv",
            ])
            .current_dir(d)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        t.elapsed()
    };
    // The bodies are made before the clock starts (the client shares the machine).
    let bodies: Vec<Vec<u8>> = rest
        .chunks(4096)
        .map(|part| {
            let quoted = |f: &dyn Fn(&(String, String)) -> &str| {
                part.iter()
                    .map(|p| format!("\"{}\"", f(p)))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            format!(
                "{{\"ids\": [{}], \"texts\": [{}], \"verify\": 0.9}}",
                quoted(&|p| &p.0),
                quoted(&|p| &p.1)
            )
            .into_bytes()
        })
        .collect();
    // Three rounds in turns, each into stores that hold the same first part; best of each.
    let (mut cli, mut server) = (Duration::MAX, Duration::MAX);
    for round in 0..3 {
        let (a, b) = (format!("a{round}"), format!("b{round}"));
        ingest(&a, "first.jsonl");
        ingest(&b, "first.jsonl");
        cli = cli.min(ingest(&b, "rest.jsonl"));
        let srv = Server::start(&d.join(&a), &[]);
        // Two clients, each sending the next call when its last is answered: one call's body
        // is read and parsed while the other's documents are checked.
        let next = AtomicU64::new(0);
        let t = Instant::now();
        std::thread::scope(|sc| {
            for _ in 0..2 {
                let (next, bodies, addr) = (&next, &bodies, &srv.addr);
                sc.spawn(move || {
                    let mut conn = Conn::new(addr);
                    while let Some(body) = bodies.get(next.fetch_add(1, Relaxed) as usize) {
                        let (s, b) = conn.call("POST", "/v1/ingest", "application/json", body);
                        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&b));
                    }
                });
            }
        });
        server = server.min(t.elapsed());
    }
    let per = |e: Duration| rest.len() as f64 / e.as_secs_f64();
    println!(
        "ingest --verify jaccard:0.9, calls of 4,096 documents from 2 clients (best of 3, in turns)\t{:.0} documents/s\t{:.0} documents/s (simdex ingest)\t{:.2}x",
        per(server),
        per(cli),
        per(server) / per(cli)
    );
}

/// `n` pages of a site: a shared template of 150 words, 40 to 200 words of their own, every
/// 7th a near-copy of an earlier page.
fn site(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut x = seed;
    let mut next = move || sample::splitmix64(&mut x);
    let template: Vec<String> = (0..150).map(|i| format!("nav{i}")).collect();
    let mut out: Vec<(String, String)> = Vec::with_capacity(n);
    for i in 0..n {
        let text = if i % 7 == 6 && i > 0 {
            let src = &out[(next() % i as u64) as usize].1;
            let mut w: Vec<&str> = src.split(' ').collect();
            let at = (next() % w.len() as u64) as usize;
            w[at] = "edited";
            w.join(" ")
        } else {
            let own = 40 + next() % 160;
            let mut w = template.clone();
            w.extend((0..own).map(|_| format!("w{}", next() % 30_000)));
            w.join(" ")
        };
        out.push((format!("https://example.org/p/{i}"), text));
    }
    out
}
