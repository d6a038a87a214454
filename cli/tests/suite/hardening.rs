//! Regression tests of the hostile-user findings (issue "Hardening II"): each failed before its
//! fix.

use crate::common;
use common::{fails, ok, pairs, simdex};

use std::path::Path;

fn write(p: &Path, s: &str) {
    std::fs::write(p, s).unwrap();
}

/// `--out` into a FIFO streams into it (the reader gets the data) and leaves the FIFO a FIFO; a
/// symlink keeps being a link and the file it points to is replaced; a directory is refused.
#[test]
fn out_follows_links_streams_into_special_files_and_refuses_directories() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // FIFO: a reader gets every line.
    let fifo = d.join("f");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    ok(&simdex(&["gen", "--n", "5000", "--out", "f"], None, d));
    let got = reader.join().unwrap();
    ok(&simdex(
        &["gen", "--n", "5000", "--out", "ref.txt"],
        None,
        d,
    ));
    assert_eq!(got, std::fs::read_to_string(d.join("ref.txt")).unwrap());
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    // Symlink (also a chain of two, and a dangling one): the target file is written.
    write(&d.join("t.txt"), "old\n");
    std::os::unix::fs::symlink("t.txt", d.join("l")).unwrap();
    std::os::unix::fs::symlink("l", d.join("l2")).unwrap();
    ok(&simdex(&["gen", "--n", "2000", "--out", "l2"], None, d));
    assert!(
        std::fs::symlink_metadata(d.join("l"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::read_to_string(d.join("t.txt"))
            .unwrap()
            .lines()
            .count()
            >= 100
    );
    std::os::unix::fs::symlink("new.txt", d.join("dangling")).unwrap();
    ok(&simdex(
        &["gen", "--n", "2000", "--out", "dangling"],
        None,
        d,
    ));
    assert!(
        std::fs::read_to_string(d.join("new.txt"))
            .unwrap()
            .lines()
            .count()
            >= 10
    );
    // A directory is an error, and stays a directory.
    std::fs::create_dir(d.join("adir")).unwrap();
    fails(
        &simdex(&["gen", "--n", "2000", "--out", "adir"], None, d),
        "is a directory",
    );
    assert!(d.join("adir").is_dir());
    // A link loop is an error, not a hang.
    std::os::unix::fs::symlink("loop2", d.join("loop1")).unwrap();
    std::os::unix::fs::symlink("loop1", d.join("loop2")).unwrap();
    fails(
        &simdex(&["gen", "--n", "2000", "--out", "loop1"], None, d),
        "symbolic links",
    );
}

/// `rebuild` keeps k, design, codec and block size unless given; `insert` refuses to change
/// them silently.
#[test]
fn rebuild_keeps_the_store_shape_and_insert_refuses_to_change_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("p.txt"), &pairs(200));
    ok(&simdex(
        &["insert", "st", "--input", "p.txt", "--k", "5", "--quiet"],
        None,
        d,
    ));
    let stats = |d: &Path| ok(&simdex(&["stats", "st", "--json"], None, d));
    assert!(stats(d).contains("\"k\":5"), "{}", stats(d));
    ok(&simdex(
        &["rebuild", "st", "--codec", "gap", "--quiet"],
        None,
        d,
    ));
    let s = stats(d);
    assert!(s.contains("\"k\":5"), "rebuild kept k = 5: {s}");
    // A query at distance 5 still works without --k.
    write(&d.join("q.hex"), "0000000000000000\n");
    ok(&simdex(
        &["query", "st", "--input", "q.hex", "--k", "5"],
        None,
        d,
    ));
    // insert with a different k, design or codec is refused, with what to do instead.
    fails(
        &simdex(&["insert", "st", "--input", "p.txt", "--k", "3"], None, d),
        "simdex rebuild",
    );
    fails(
        &simdex(
            &["insert", "st", "--input", "p.txt", "--codec", "h-delta"],
            None,
            d,
        ),
        "codec",
    );
    // The same values are fine.
    ok(&simdex(
        &["insert", "st", "--input", "p.txt", "--k", "5", "--quiet"],
        None,
        d,
    ));
}

/// A bad line at the end of the input applies nothing and creates nothing.
#[test]
fn insert_and_delete_check_the_whole_input_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut text = pairs(70_000);
    text.push_str("not a pair\n");
    write(&d.join("bad.txt"), &text);
    fails(
        &simdex(&["insert", "st", "--input", "bad.txt"], None, d),
        "line 70001",
    );
    assert!(!d.join("st").exists(), "no store was created");
    write(&d.join("good.txt"), &pairs(10));
    ok(&simdex(
        &["insert", "st", "--input", "good.txt", "--quiet"],
        None,
        d,
    ));
    let mut ids: String = (0..10).map(|i| format!("{i}\n")).collect();
    ids.push_str("x\n");
    fails(
        &simdex(
            &["delete", "st", "--ids", "-", "--quiet"],
            Some(ids.as_bytes()),
            d,
        ),
        "line 11",
    );
    let out = ok(&simdex(&["stats", "st", "--json"], None, d));
    assert!(
        out.contains("\"delta_deletes\":0"),
        "nothing deleted: {out}"
    );
}

/// A cut or damaged last log record is reported by readers and makes `verify` fail; a missing
/// live log is an error for every command.
#[test]
fn log_damage_is_never_silent() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(&d.join("p.txt"), &pairs(10));
    ok(&simdex(
        &["insert", "st", "--input", "p.txt", "--quiet"],
        None,
        d,
    ));
    let log = d.join("st").join("wal-000000.log");
    let len = std::fs::metadata(&log).unwrap().len();
    // Cut the last record short.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(len - 3)
        .unwrap();
    let o = simdex(&["stats", "st"], None, d);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("warning") && err.contains("wal-000000.log"),
        "{err}"
    );
    let o = simdex(&["verify", "st"], None, d);
    assert!(!o.status.success(), "verify must fail on a torn tail");
    assert!(String::from_utf8_lossy(&o.stderr).contains("log tail"));
    // The writer's warning does not claim the lost write was never acknowledged.
    let o = simdex(&["compact", "st"], None, d);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("never acknowledged"), "{err}");
    // A deleted live log: every command refuses.
    ok(&simdex(
        &["insert", "st", "--input", "p.txt", "--quiet"],
        None,
        d,
    ));
    let live: Vec<_> = std::fs::read_dir(d.join("st"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".log"))
        .collect();
    assert_eq!(live.len(), 1);
    std::fs::remove_file(&live[0]).unwrap();
    write(&d.join("q.hex"), "0000000000000000\n");
    for args in [
        &["query", "st", "--input", "q.hex"][..],
        &["stats", "st"],
        &["verify", "st"],
        &["insert", "st", "--input", "p.txt"],
    ] {
        fails(&simdex(args, None, d), "lost");
    }
}

/// Messages say what is wrong and what to do, without suggesting commands that do not exist.
#[test]
fn messages_name_the_file_and_a_real_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("empty")).unwrap();
    let o = simdex(&["insert", "empty", "--input", "-"], Some(b""), d);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no CURRENT"), "{err}");
    assert!(!err.contains("--create"), "{err}");
    write(&d.join("p.txt"), &pairs(10));
    ok(&simdex(
        &["insert", "st", "--input", "p.txt", "--quiet"],
        None,
        d,
    ));
    write(&d.join("q.hex"), "0000000000000000\n");
    let o = simdex(&["query", "st", "--input", "q.hex", "--k", "6"], None, d);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("rebuild"), "{err}");
    // Beyond what any design answers: no suggestion of a rebuild that would be refused.
    let o = simdex(&["query", "st", "--input", "q.hex", "--k", "64"], None, d);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && !err.contains("rebuild") && err.contains("at most"),
        "{err}"
    );
}

/// Inside directories, what cannot be read is reported and skipped (fatal with --strict), and
/// never blocks: a FIFO, a dangling link, a link loop, an unreadable directory, a corrupt .gz.
/// A non-UTF-8 JSONL line is one bad line, named by number.
#[test]
fn unreadable_inputs_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = d.join("docs");
    std::fs::create_dir_all(docs.join("sub")).unwrap();
    write(&docs.join("a.txt"), "some words that make a document");
    write(
        &docs.join("sub").join("b.txt"),
        "other words that make another document",
    );
    assert!(
        std::process::Command::new("mkfifo")
            .arg(docs.join("fifo"))
            .status()
            .unwrap()
            .success()
    );
    std::os::unix::fs::symlink("missing", docs.join("dangling")).unwrap();
    std::os::unix::fs::symlink("..", docs.join("sub").join("up")).unwrap();
    write(&docs.join("bad.gz"), "this is not gzip");
    let o = simdex(&["hash", "docs"], None, d);
    let out = ok(&o);
    assert_eq!(out.lines().count(), 2, "{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    for needle in ["fifo", "dangling", "loop", "bad.gz"] {
        assert!(err.contains(needle), "{needle} not reported: {err}");
    }
    let o = simdex(&["hash", "docs", "--strict"], None, d);
    assert!(!o.status.success());
    // JSONL: a non-UTF-8 line is skipped with its number; the lines after it are read.
    let mut jsonl =
        b"{\"id\":1,\"text\":\"first line\"}\n{\"id\":2,\"text\":\"bad \xff byte\"}\n".to_vec();
    jsonl.extend_from_slice(b"{\"id\":18446744073709551616,\"text\":\"big id\"}\n");
    jsonl.extend_from_slice(b"{\"id\":3,\"text\":\"third line\"}\n");
    std::fs::write(d.join("x.jsonl"), jsonl).unwrap();
    let o = simdex(&["hash", "--jsonl", "x.jsonl"], None, d);
    let out = ok(&o);
    let ids: Vec<&str> = out.lines().map(|l| l.split('\t').nth(1).unwrap()).collect();
    assert_eq!(ids, ["1", "3"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("line 2") && err.contains("UTF-8"), "{err}");
    assert!(err.contains("line 3") && err.contains("64 bits"), "{err}");
    // `dedup` reads the corpus twice (IDF, then fingerprints) but reports each bad line once.
    let o = simdex(&["dedup", "--jsonl", "x.jsonl", "--quiet"], None, d);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("line 2").count(), 1, "{err}");
    assert_eq!(err.matches("line 3").count(), 1, "{err}");
}

/// Documents without any word do not pair with each other.
#[test]
fn featureless_documents_are_left_out_of_dedup() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = d.join("docs");
    std::fs::create_dir(&docs).unwrap();
    for i in 0..50 {
        write(
            &docs.join(format!("e{i:02}.txt")),
            if i % 2 == 0 { "" } else { "!!! ..." },
        );
    }
    write(&docs.join("x.txt"), "a real document with words");
    write(&docs.join("y.txt"), "A real document, with words!");
    let o = simdex(&["dedup", "docs"], None, d);
    let out = ok(&o);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("50 documents without any word"));
    assert_eq!(
        ok(&simdex(&["dedup", "docs", "--clusters"], None, d))
            .lines()
            .count(),
        1
    );
}

/// What a killed build leaves beside its output is removed by the next one; a BOM is named.
#[test]
fn stale_staging_directories_are_removed_and_a_bom_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&simdex(&["gen", "--n", "2000", "--out", "f.hex"], None, d));
    std::fs::create_dir(d.join(".idx.building-AbC123")).unwrap();
    std::fs::create_dir(d.join(".idx.spill-XyZ789")).unwrap();
    write(
        &d.join(".idx.building-AbC123").join("table-00.sxt"),
        "partial",
    );
    ok(&simdex(
        &["build", "--input", "f.hex", "--out", "idx", "--quiet"],
        None,
        d,
    ));
    let hidden: Vec<String> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(hidden.is_empty(), "{hidden:?}");
    write(&d.join("bom.hex"), "\u{feff}0000000000000001\n");
    fails(
        &simdex(&["build", "--input", "bom.hex", "--out", "i2"], None, d),
        "byte-order mark",
    );
}

/// `batch --mem` splits a large batch into rounds; the output is the same as in one round,
/// pairs inside the batch included.
#[test]
fn batch_in_rounds_equals_one_round() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&simdex(&["gen", "--n", "20000", "--out", "f.hex"], None, d));
    ok(&simdex(
        &["build", "--input", "f.hex", "--out", "idx", "--quiet"],
        None,
        d,
    ));
    // The batch is the stored set itself (every fingerprint pairs at least with itself).
    std::fs::copy(d.join("f.hex"), d.join("b.hex")).unwrap();
    let one = ok(&simdex(
        &[
            "batch", "idx", "--input", "b.hex", "--within", "w1.tsv", "--quiet",
        ],
        None,
        d,
    ));
    // 1 MiB at 16 bytes x 4 probes per fingerprint: rounds of 16 384, so two rounds.
    let rounds = ok(&simdex(
        &[
            "batch", "idx", "--input", "b.hex", "--within", "w2.tsv", "--mem", "1M", "--quiet",
        ],
        None,
        d,
    ));
    assert!(!one.is_empty());
    assert_eq!(one, rounds);
    assert_eq!(
        std::fs::read_to_string(d.join("w1.tsv")).unwrap(),
        std::fs::read_to_string(d.join("w2.tsv")).unwrap()
    );
}
