//! `simdex serve`: each test starts the server on a loopback port of its own and stops it.
//! Answers against brute force and against `simdex ingest`, and every operation of
//! `format-spec/openapi.json`. The helpers here serve `serve_faults` too.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::{ok, pairs, simdex};

/// A running server.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: String,
    pub(crate) log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    pub(crate) fn start(dir: &Path, store: &str, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut c = Command::new(env!("CARGO_BIN_EXE_simdex"));
        c.args(["serve", store, "--listen", "127.0.0.1:0"])
            .args(extra)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().expect("a log line").unwrap();
        let v: Value = serde_json::from_str(&first).unwrap_or_else(|_| panic!("{first}"));
        assert_eq!(v["msg"], "listening", "{first}");
        let addr = v["addr"].as_str().unwrap().to_string();
        let log = Arc::new(Mutex::new(vec![first]));
        let l2 = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(|l| l.ok()) {
                l2.lock().unwrap().push(line);
            }
        });
        Server { child, addr, log }
    }

    /// One request on a connection of its own: (status, headers lowercased, body).
    pub(crate) fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Reply {
        call(&self.addr, method, path, headers, body)
    }

    pub(crate) fn json(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        let r = self.call(
            method,
            path,
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        );
        (r.status, r.json())
    }

    pub(crate) fn signal(&mut self, sig: &str) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args([sig, &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: BTreeMap<String, String>,
    pub(crate) body: Vec<u8>,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|_| panic!("{}: {}", self.status, String::from_utf8_lossy(&self.body)))
    }
}

pub(crate) fn call(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    req += "\r\n";
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    read_reply(&mut s)
}

pub(crate) fn read_reply(s: &mut TcpStream) -> Reply {
    let mut all = Vec::new();
    s.read_to_end(&mut all).unwrap();
    let at = all
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&all[..at]).into_owned();
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: all[at + 4..].to_vec(),
    }
}

pub(crate) fn le(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn u64s(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// (distance, fingerprint, id) rows of `q` within `k` among `stored`, sorted.
fn brute(stored: &[(u64, u64)], q: u64, k: u32) -> Vec<(u32, u64, u64)> {
    let mut v: Vec<(u32, u64, u64)> = stored
        .iter()
        .filter(|(f, _)| (f ^ q).count_ones() <= k)
        .map(|&(f, id)| ((f ^ q).count_ones(), f, id))
        .collect();
    v.sort_unstable();
    v
}

fn rows_of(v: &Value) -> Vec<(u32, u64, u64)> {
    let f = v["fingerprint"].as_array().unwrap();
    (0..f.len())
        .map(|i| {
            (
                v["distance"][i].as_u64().unwrap() as u32,
                u64::from_str_radix(f[i].as_str().unwrap(), 16).unwrap(),
                v["id"][i].as_u64().unwrap(),
            )
        })
        .collect()
}

/// A store of `n` pairs made by `simdex insert`, and the pairs (with near neighbours of some).
pub(crate) fn raw_store(d: &Path, name: &str, n: u64) -> Vec<(u64, u64)> {
    let text = pairs(n);
    ok(&simdex(
        &["insert", name, "--quiet"],
        Some(text.as_bytes()),
        d,
    ));
    text.lines()
        .map(|l| {
            let (f, id) = l.split_once(' ').unwrap();
            (u64::from_str_radix(f, 16).unwrap(), id.parse().unwrap())
        })
        .collect()
}

#[test]
fn answers_queries_and_writes_as_brute_force_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut stored = raw_store(d, "s", 2000);
    let srv = Server::start(d, "s", &[], &[]);
    // Near neighbours: flipped bits of stored fingerprints, as JSON and as binary.
    let mut next = xorshift(7);
    let mut new: Vec<(u64, u64)> = Vec::new();
    for i in 0..300u64 {
        let base = stored[(next() % 2000) as usize].0;
        new.push((
            base ^ (1 << (next() % 64)) ^ (1 << (next() % 64)),
            10_000 + i,
        ));
    }
    let fps: Vec<u64> = new.iter().map(|p| p.0).collect();
    let ids: Vec<u64> = new.iter().map(|p| p.1).collect();
    let (half_f, rest_f) = fps.split_at(150);
    let (half_i, rest_i) = ids.split_at(150);
    let (s, v) = srv.json(
        "POST",
        "/v1/insert",
        json!({"fingerprints": half_f.iter().map(|f| format!("{f:x}")).collect::<Vec<_>>(), "ids": half_i}),
    );
    assert_eq!((s, v["inserted"].as_u64()), (200, Some(150)));
    let r = srv.call(
        "POST",
        "/v1/insert",
        &[("Content-Type", "application/octet-stream")],
        &le(&[rest_f, rest_i].concat()),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    stored.extend(new.iter().copied());
    // Delete some, by JSON.
    let gone: Vec<u64> = (0..2000).step_by(7).collect();
    let (s, _) = srv.json("POST", "/v1/delete", json!({ "ids": gone }));
    assert_eq!(s, 200);
    let gone: HashSet<u64> = gone.into_iter().collect();
    stored.retain(|p| !gone.contains(&p.1));
    let queries: Vec<u64> = (0..200)
        .map(|i| stored[(i * 11) % stored.len()].0 ^ (1 << (i % 64)))
        .collect();
    let check = |srv: &Server| {
        for (i, &q) in queries.iter().enumerate().take(60) {
            let k = (i % 4) as u32;
            let want = brute(&stored, q, k);
            let r = srv.call(
                "GET",
                &format!("/v1/near?fingerprint={q:016x}&k={k}"),
                &[],
                b"",
            );
            assert_eq!(rows_of(&r.json()), want, "query {q:x} k {k}");
            let (_, v) = srv.json("POST", "/v1/near", json!({"fingerprint": q, "k": k}));
            assert_eq!(rows_of(&v), want);
        }
        // A batch, binary both ways.
        let r = srv.call(
            "POST",
            "/v1/near-many?k=3",
            &[
                ("Content-Type", "application/octet-stream"),
                ("Accept", "application/octet-stream"),
            ],
            &le(&queries),
        );
        assert_eq!(r.status, 200);
        let n = u64::from_le_bytes(r.body[..8].try_into().unwrap()) as usize;
        assert_eq!(r.body.len(), 8 + n * 28);
        let cols = u64s(&r.body[8..8 + 24 * n]);
        let dist: Vec<u32> = r.body[8 + 24 * n..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        let mut got: Vec<Vec<(u32, u64, u64)>> = vec![Vec::new(); queries.len()];
        for i in 0..n {
            got[cols[i] as usize].push((dist[i], cols[n + i], cols[2 * n + i]));
        }
        for (q, mut g) in queries.iter().zip(got) {
            g.sort_unstable();
            assert_eq!(g, brute(&stored, *q, 3), "batch query {q:x}");
        }
    };
    check(&srv);
    let (s, v) = srv.json("POST", "/v1/compact", json!({}));
    assert_eq!((s, v["compacted"].as_bool()), (200, Some(true)), "{v}");
    check(&srv);
    let (_, st) = srv.json("GET", "/v1/stats", json!({}));
    assert_eq!(st["pairs"].as_u64(), Some(stored.len() as u64), "{st}");
    let r = srv.call(
        "GET",
        &format!("/v1/ids-of?fingerprint={:x}", stored[5].0),
        &[],
        b"",
    );
    assert_eq!(r.json()["ids"], json!([stored[5].1]));
}

/// A xorshift generator from `seed` (not 0).
fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

/// JSONL of `n` documents: 120 random words each, every 5th a copy of the one before with one
/// word changed; ids `d{i}`.
pub(crate) fn docs(n: usize, seed: u64) -> Vec<(String, String)> {
    let mut next = xorshift(seed);
    let mut out: Vec<(String, String)> = Vec::new();
    for i in 0..n {
        let text = match (i % 5 == 4, out.last()) {
            (true, Some(prev)) => {
                let mut w: Vec<String> = prev.1.split(' ').map(str::to_string).collect();
                let at = (next() % w.len() as u64) as usize;
                w[at] = "changed".into();
                w.join(" ")
            }
            _ => (0..120)
                .map(|_| format!("w{}", next() % 5000))
                .collect::<Vec<_>>()
                .join(" "),
        };
        out.push((format!("d{i}"), text));
    }
    out
}

pub(crate) fn jsonl(docs: &[(String, String)]) -> String {
    docs.iter()
        .map(|(id, t)| format!("{}\n", json!({"id": id, "text": t})))
        .collect()
}

/// Ingest and check over HTTP answer exactly as `simdex ingest` does on the same input.
#[test]
fn documents_are_answered_as_simdex_ingest_answers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let all = docs(1200, 3);
    let (first, second) = all.split_at(600);
    std::fs::write(d.join("first.jsonl"), jsonl(first)).unwrap();
    std::fs::write(d.join("second.jsonl"), jsonl(second)).unwrap();
    let args = ["--jsonl", "--verify", "jaccard:0.9", "--quiet"];
    ok(&simdex(
        &[&["ingest", "a", "first.jsonl"][..], &args].concat(),
        None,
        d,
    ));
    ok(&simdex(
        &[&["ingest", "b", "first.jsonl"][..], &args].concat(),
        None,
        d,
    ));
    let want = ok(&simdex(
        &[&["ingest", "b", "second.jsonl"][..], &args].concat(),
        None,
        d,
    ));
    let srv = Server::start(d, "a", &[], &[]);
    // Check-only first: the same answers, nothing stored.
    let body = |part: &[(String, String)]| {
        json!({
            "ids": part.iter().map(|p| &p.0).collect::<Vec<_>>(),
            "texts": part.iter().map(|p| &p.1).collect::<Vec<_>>(),
            "verify": 0.9,
        })
    };
    let lines = |v: &Value, part: &[(String, String)]| -> String {
        let mut s = String::new();
        for (i, (id, _)) in part.iter().enumerate() {
            if v["duplicate"][i] == json!(true) {
                let m = &v["matched"][i];
                let m = m
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| m.to_string());
                s += &format!("{id}\t{m}\t{:.4}\n", v["similarity"][i].as_f64().unwrap());
            }
        }
        s
    };
    let (s, checked) = srv.json("POST", "/v1/check", body(second));
    assert_eq!(s, 200, "{checked}");
    assert_eq!(lines(&checked, second), want);
    assert!(
        checked["stored"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b == false)
    );
    // Ingest in uneven calls: the same lines.
    let mut got = String::new();
    let mut at = 0;
    for size in [1, 99, 250, 250] {
        let part = &second[at..at + size];
        let (s, v) = srv.json("POST", "/v1/ingest", body(part));
        assert_eq!(s, 200, "{v}");
        got += &lines(&v, part);
        at += size;
    }
    assert_eq!(got, want);
    // A retry is already stored, never its own duplicate.
    let (_, v) = srv.json("POST", "/v1/ingest", body(&second[..3]));
    assert_eq!(v["already_stored"], json!([true, true, true]), "{v}");
    // Delete by id, expire by seq.
    let (s, v) = srv.json("POST", "/v1/delete", json!({"ids": ["d600", "nope"]}));
    assert_eq!((s, v["documents"].as_u64()), (200, Some(1)), "{v}");
    let (s, v) = srv.json("POST", "/v1/expire", json!({"before_seq": 10}));
    assert_eq!(s, 200, "{v}");
    assert!(v["deleted"].as_u64().unwrap() > 0);
    let (_, st) = srv.json("GET", "/v1/stats", json!({}));
    assert_eq!(st["recipe"]["exact"], json!(0.9), "{st}");
}

/// Every operation the OpenAPI file lists is served with a documented status, its JSON
/// answers carry the documented required fields, and nothing is served that it does not list.
#[test]
fn the_openapi_file_describes_what_is_served() {
    let spec: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../format-spec/openapi.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    raw_store(d, "s", 50);
    std::fs::write(d.join("docs.jsonl"), jsonl(&docs(20, 1))).unwrap();
    ok(&simdex(
        &[
            "ingest",
            "t",
            "docs.jsonl",
            "--jsonl",
            "--verify",
            "jaccard:0.9",
            "--quiet",
        ],
        None,
        d,
    ));
    let raw = Server::start(d, "s", &[], &[]);
    let doc = Server::start(d, "t", &[], &[]);
    let paths = spec["paths"].as_object().unwrap();
    let mut served = 0;
    for (path, ops) in paths {
        for (method, op) in ops.as_object().unwrap() {
            let example = &op["x-example"];
            let srv = if example["store"] == "documents" {
                &doc
            } else {
                &raw
            };
            let query = example["query"].as_str().unwrap_or("");
            let body = example
                .get("body")
                .map(|b| b.to_string())
                .unwrap_or_default();
            let r = srv.call(
                &method.to_uppercase(),
                &format!("{path}{query}"),
                &[("Content-Type", "application/json")],
                body.as_bytes(),
            );
            let documented = op["responses"].as_object().unwrap();
            assert!(
                documented.contains_key(&r.status.to_string()),
                "{method} {path}: {} not documented ({})",
                r.status,
                String::from_utf8_lossy(&r.body)
            );
            assert_eq!(
                r.status,
                200,
                "{method} {path}: {}",
                String::from_utf8_lossy(&r.body)
            );
            let schema = &documented["200"]["content"]["application/json"]["schema"];
            let schema = resolve(&spec, schema);
            if let Some(required) = schema["required"].as_array() {
                let v = r.json();
                for key in required {
                    let key = key.as_str().unwrap();
                    assert!(v.get(key).is_some(), "{method} {path}: no {key:?} in {v}");
                }
                // Nothing undocumented either.
                let props = schema["properties"].as_object().unwrap();
                for k in v.as_object().unwrap().keys() {
                    assert!(
                        props.contains_key(k),
                        "{method} {path}: {k:?} is not documented"
                    );
                }
            }
            served += 1;
        }
    }
    assert!(served >= 14, "{served}");
    // Every path the server routes is in the file (an unknown path is 404).
    for p in [
        "/v1/health",
        "/metrics",
        "/v1/stats",
        "/v1/near",
        "/v1/near-many",
        "/v1/ids-of",
        "/v1/insert",
        "/v1/delete",
        "/v1/ingest",
        "/v1/check",
        "/v1/expire",
        "/v1/flush",
        "/v1/compact",
    ] {
        assert!(paths.contains_key(p), "{p} is served but not documented");
    }
    // The error shape.
    let err = resolve(&spec, &spec["components"]["schemas"]["Error"]);
    assert_eq!(err["required"], json!(["error"]));
}

fn resolve<'a>(spec: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap();
            &spec["components"]["schemas"][name]
        }
        None => schema,
    }
}
