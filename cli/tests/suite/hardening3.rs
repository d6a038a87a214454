//! Regression tests of hardening for the CLI: inputs that can be read only once
//! (pipes, FIFOs, `/dev/stdin`) are read once, and bad lines make short, located errors. Each
//! failed before its fix (a second read of a pipe saw nothing, and the command said it had
//! inserted, deleted or found nothing).

use crate::common;
use common::{fails, fifo_with, ok, pairs, simdex};

use std::path::Path;

fn stats(d: &Path, store: &str) -> String {
    ok(&simdex(&["stats", store, "--json"], None, d))
}

/// `insert --input /dev/stdin` and a FIFO insert every pair; `delete --ids` from a pipe deletes
/// every id; nothing hangs.
#[test]
fn insert_and_delete_read_pipes_and_fifos_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = pairs(5000);
    ok(&simdex(
        &["insert", "a", "--input", "/dev/stdin", "--quiet"],
        Some(text.as_bytes()),
        d,
    ));
    assert!(
        stats(d, "a").contains("\"delta_pairs\":5000"),
        "{}",
        stats(d, "a")
    );

    let writer = fifo_with(&d.join("fifo"), text.clone().into_bytes());
    ok(&simdex(
        &["insert", "b", "--input", "fifo", "--quiet"],
        None,
        d,
    ));
    writer.join().unwrap();
    assert!(
        stats(d, "b").contains("\"delta_pairs\":5000"),
        "{}",
        stats(d, "b")
    );

    let ids: String = (0..1000).map(|i| format!("{i}\n")).collect();
    ok(&simdex(
        &["delete", "a", "--ids", "/dev/stdin", "--quiet"],
        Some(ids.as_bytes()),
        d,
    ));
    assert!(
        stats(d, "a").contains("\"delta_deletes\":1000"),
        "{}",
        stats(d, "a")
    );
    // `-` was already held; it still works.
    ok(&simdex(
        &["delete", "b", "--ids", "-", "--quiet"],
        Some(ids.as_bytes()),
        d,
    ));
    assert!(stats(d, "b").contains("\"delta_deletes\":1000"));
    // A bad line at the end of a pipe: nothing is inserted, no store is left.
    let mut bad = pairs(100);
    bad.push_str("zz 1\n");
    fails(
        &simdex(
            &["insert", "c", "--input", "/dev/stdin"],
            Some(bad.as_bytes()),
            d,
        ),
        "line 101",
    );
    assert!(!d.join("c").exists());
}

/// A megabyte-long bad line makes a short error; a line that is not UTF-8 names its line.
#[test]
fn bad_lines_make_short_located_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long = format!("{} 5\n", "a".repeat(1 << 20));
    let o = simdex(&["insert", "s", "--input", "-"], Some(long.as_bytes()), d);
    fails(&o, "line 1");
    assert!(o.stderr.len() < 400, "{} bytes of error", o.stderr.len());
    let mut ids = b"1\n2\n".to_vec();
    ids.extend_from_slice(b"3\xff\n");
    ok(&simdex(
        &["insert", "s", "--input", "-", "--quiet"],
        Some(pairs(3).as_bytes()),
        d,
    ));
    fails(
        &simdex(&["delete", "s", "--ids", "-"], Some(&ids), d),
        "line 3: not UTF-8",
    );
    let id = format!("{}\n", "9".repeat(100_000));
    let o = simdex(&["delete", "s", "--ids", "-"], Some(id.as_bytes()), d);
    fails(&o, "is not a document id");
    assert!(o.stderr.len() < 400, "{} bytes of error", o.stderr.len());
    let mut hex = b"0000000000000001\n".to_vec();
    hex.extend_from_slice(b"\xfe00000000000002\n");
    std::fs::write(d.join("q.hex"), &hex).unwrap();
    std::fs::write(d.join("k.hex"), "0000000000000001\n").unwrap();
    fails(
        &simdex(
            &["build", "--input", "q.hex", "--out", "idx", "--quiet"],
            None,
            d,
        ),
        "line 2: not UTF-8",
    );
}

fn corpus() -> String {
    let words: Vec<String> = (0..300).map(|i| format!("w{i}")).collect();
    let mut out = String::new();
    for i in 0..240u64 {
        // Triples of near-duplicates: one base text per triple, one word changed in two of them.
        let mut x = (i / 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut t: Vec<String> = (0..80)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                words[(x % 300) as usize].clone()
            })
            .collect();
        if i % 3 != 0 {
            t[(i as usize * 7) % 80] = format!("x{i}");
        }
        out.push_str(&format!("{{\"id\": {i}, \"text\": \"{}\"}}\n", t.join(" ")));
    }
    out
}

/// `dedup` learns IDF weights in a first pass: from `-`, `/dev/stdin` or a FIFO it gives what
/// it gives from the file (before: stdin fell back to count weights; `/dev/stdin` and FIFOs gave
/// nothing at all).
#[test]
fn dedup_from_pipes_equals_dedup_from_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = corpus();
    std::fs::write(d.join("c.jsonl"), &text).unwrap();
    let want = ok(&simdex(
        &["dedup", "--jsonl", "c.jsonl", "--quiet"],
        None,
        d,
    ));
    assert!(want.lines().count() >= 40, "{want}");
    for input in ["-", "/dev/stdin"] {
        let got = ok(&simdex(
            &["dedup", "--jsonl", input, "--quiet"],
            Some(text.as_bytes()),
            d,
        ));
        assert_eq!(got, want, "dedup --jsonl {input}");
    }
    let writer = fifo_with(&d.join("fifo"), text.clone().into_bytes());
    let got = ok(&simdex(&["dedup", "--jsonl", "fifo", "--quiet"], None, d));
    writer.join().unwrap();
    assert_eq!(got, want, "dedup --jsonl FIFO");
    let weights = ["--weights", "idf"];
    let got = ok(&simdex(
        &[&["dedup", "--jsonl", "-", "--quiet"][..], &weights[..]].concat(),
        Some(text.as_bytes()),
        d,
    ));
    assert_eq!(got, want, "--weights idf from standard input");
    // Verification reads the candidates' texts again, in passes over the input.
    let args = [
        "dedup",
        "--jsonl",
        "c.jsonl",
        "--quiet",
        "--verify",
        "jaccard:0.5",
    ];
    let want = ok(&simdex(&args, None, d));
    assert!(want.lines().count() >= 10, "{want}");
    // From a pipe too; and the shingle sets held at once stay within --mem: a tiny budget
    // takes more passes over the input (the pipe, copied once) and gives the same answer.
    let verify = [
        "dedup",
        "--jsonl",
        "-",
        "--quiet",
        "--verify",
        "jaccard:0.5",
    ];
    // A budget below what the run needs is refused, naming the least that would do (it
    // would otherwise read the input once per row); that least gives the same answer.
    let tiny = simdex(
        &[&verify[..], &["--mem", "4K"][..]].concat(),
        Some(text.as_bytes()),
        d,
    );
    let err = String::from_utf8_lossy(&tiny.stderr).into_owned();
    assert!(!tiny.status.success() && err.contains("too small"), "{err}");
    let least = err
        .split("at least ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    for extra in [&[][..], &["--mem", least][..]] {
        let got = ok(&simdex(
            &[&verify[..], extra].concat(),
            Some(text.as_bytes()),
            d,
        ));
        assert_eq!(got, want, "dedup --verify from standard input {extra:?}");
    }
}

/// Entries of `d` starting with a dot (staging and spill directories).
fn hidden(d: &Path) -> Vec<String> {
    std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// Start `simdex build` reading a FIFO, feed it half its input, send `signal` once its staging
/// directory exists, feed the rest; its exit status.
fn interrupted_build(d: &Path, signal: &str) -> std::process::ExitStatus {
    use std::io::Write;
    let fifo = d.join("in.fifo");
    let _ = std::fs::remove_file(&fifo);
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_simdex"))
        .args(["build", "--input", "in.fifo", "--out", "idx", "--quiet"])
        .current_dir(d)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
    let half = pairs(300_000)
        .lines()
        .map(|l| format!("{}\n", &l[..16]))
        .collect::<String>();
    w.write_all(half.as_bytes()).unwrap();
    let t0 = std::time::Instant::now();
    while hidden(d).len() < 2 {
        assert!(
            t0.elapsed().as_secs() < 30,
            "no staging directory: {:?}",
            hidden(d)
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap()
            .success()
    );
    // The rest of the input (the build may be gone already: a broken pipe is fine).
    let _ = w.write_all(half.as_bytes());
    drop(w);
    child.wait().unwrap()
}

/// SIGINT and SIGTERM stop a build, remove its staging and spill directories and exit 130 and
/// 143 (before, both stayed forever: 458 MiB for 30M fingerprints); after SIGKILL the next
/// build of that name removes them.
#[test]
fn interrupted_builds_leave_nothing_behind() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let status = interrupted_build(d, signal);
        assert_eq!(status.code(), Some(code), "{signal}: {status:?}");
        assert!(!d.join("idx").exists());
        assert_eq!(hidden(d), Vec::<String>::new(), "{signal}");
    }
    let status = interrupted_build(d, "-KILL");
    assert_eq!(status.signal(), Some(9));
    assert_eq!(
        hidden(d).len(),
        2,
        "SIGKILL cannot be caught: {:?}",
        hidden(d)
    );
    std::fs::write(d.join("f.hex"), "0000000000000001\n").unwrap();
    ok(&simdex(
        &["build", "--input", "f.hex", "--out", "idx", "--quiet"],
        None,
        d,
    ));
    assert_eq!(hidden(d), Vec::<String>::new());
}

/// `gen` with an absurd `--n` is refused before any work, with the budget (it aborted on a
/// failed allocation).
#[test]
fn gen_has_a_budget() {
    let dir = tempfile::tempdir().unwrap();
    for n in ["100000000000000", "18446744073709551615"] {
        fails(
            &simdex(&["gen", "--n", n, "--out", "x.hex"], None, dir.path()),
            "over the budget",
        );
    }
    assert!(!dir.path().join("x.hex").exists());
}

/// An output directory that cannot be made names the directory, absolutely (it said
/// "create staging directory in failed", or named only `.`).
#[test]
fn failed_creations_name_their_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("f.hex"), "0000000000000001\n").unwrap();
    std::fs::write(d.join("plain"), "a file, not a directory").unwrap();
    let o = simdex(
        &["build", "--input", "f.hex", "--out", "plain/idx"],
        None,
        d,
    );
    let want = format!(
        "{}: create a staging directory in the directory failed",
        d.join("plain").display()
    );
    fails(&o, &want);
    let o = simdex(
        &["insert", "plain/st", "--input", "-"],
        Some(b"0000000000000001 1\n"),
        d,
    );
    fails(&o, &format!("{}", d.join("plain").display()));
}

/// SIGINT during a long `insert` stops it between chunks: exit 130, the pairs applied are
/// synced and said, and the store holds exactly them (before, the signal killed the process
/// with whatever the last chunk had left unsynced, and said nothing).
#[test]
fn an_interrupted_insert_says_what_it_applied() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("big.txt"), pairs(3_000_000)).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_simdex"))
        .args(["insert", "st", "--input", "big.txt", "--quiet"])
        .current_dir(d)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !d.join("st").join("CURRENT").exists() {
        assert!(t0.elapsed().as_secs() < 60, "no store was created");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let pid = child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    let n: u64 = err
        .split("inserted ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no count in {err:?}"));
    assert!(n < 3_000_000 && n.is_multiple_of(1 << 16), "{n}");
    assert!(
        stats(d, "st").contains(&format!("\"delta_pairs\":{n}")),
        "{}",
        stats(d, "st")
    );
}

/// A bad `--out` is refused before the input is read: with a FIFO nobody writes, `dedup` and
/// `idf` return at once naming the missing directory (they read everything first, then
/// failed to write).
#[test]
fn bad_outputs_fail_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let fifo = d.join("idle");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    for args in [
        &["dedup", "--jsonl", "idle", "--out", "missing/pairs.tsv"][..],
        &["idf", "--jsonl", "idle", "--out", "missing/t.idf"][..],
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_simdex"))
            .args(args)
            .current_dir(d)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > std::time::Duration::from_secs(20) {
                child.kill().unwrap();
                panic!("{args:?} waited for its input instead of refusing its output");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = child.wait_with_output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("missing"), "{args:?}: {err}");
    }
}
