//! `simdex ingest`: duplicate lines, split inputs, recipes refused, bad lines, and a kill at
//! a random moment that loses no acknowledged document.

use std::io::BufRead;
use std::path::Path;

use simdex::store::{DocId, Store, StoreOptions};

use crate::common;
use common::{fails, ok, simdex};

/// JSONL of `n` documents of 300 random words (one changed word: Jaccard 295/301); every 10th copies the one before it with one word
/// changed (a planted near-duplicate). Ids: strings `u{i}`, every 4th numeric.
fn corpus(n: usize, seed: u64) -> (String, Vec<String>) {
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut prev: Vec<String> = Vec::new();
    let (mut out, mut ids) = (String::new(), Vec::new());
    for i in 0..n {
        let mut words: Vec<String> = if i % 10 == 9 {
            prev.clone()
        } else {
            (0..300).map(|_| format!("w{}", next() % 20000)).collect()
        };
        if i % 10 == 9 {
            let at = (next() % 300) as usize;
            words[at] = "changed".into();
        }
        let id = if i % 4 == 0 {
            format!("{i}")
        } else {
            format!("\"u{i}\"")
        };
        out.push_str(&format!(
            "{{\"id\": {id}, \"text\": \"{}\"}}\n",
            words.join(" ")
        ));
        ids.push(id.trim_matches('"').to_string());
        prev = words;
    }
    (out, ids)
}

#[test]
fn ingest_reports_duplicates_the_same_however_split_and_refuses_other_recipes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (text, ids) = corpus(400, 9);
    std::fs::write(d.join("all.jsonl"), &text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(d.join("a.jsonl"), lines[..150].join("\n") + "\n").unwrap();
    std::fs::write(d.join("b.jsonl"), lines[150..].join("\n") + "\n").unwrap();
    let args = ["--jsonl", "--verify", "jaccard:0.9", "--quiet"];
    let whole = ok(&simdex(
        &[&["ingest", "w", "all.jsonl"][..], &args].concat(),
        None,
        d,
    ));
    let expected: Vec<String> = (0..400)
        .filter(|i| i % 10 == 9)
        .map(|i| format!("{}\t{}\t", ids[i], ids[i - 1]))
        .collect();
    let got: Vec<&str> = whole.lines().collect();
    assert_eq!(got.len(), expected.len(), "{whole}");
    for (g, e) in got.iter().zip(&expected) {
        assert!(g.starts_with(e.as_str()), "{g:?} is not {e:?}...");
        let sim: f64 = g.rsplit('\t').next().unwrap().parse().unwrap();
        assert!((0.85..=1.0).contains(&sim), "{g}");
    }
    let a = ok(&simdex(
        &[&["ingest", "s", "a.jsonl"][..], &args].concat(),
        None,
        d,
    ));
    let b = ok(&simdex(
        &[&["ingest", "s", "-"][..], &args].concat(),
        Some(lines[150..].join("\n").as_bytes()),
        d,
    ));
    assert_eq!(
        a + &b,
        whole,
        "split into two runs (the second from a pipe)"
    );
    // --out, and a second run of the same input (a retry): the stored documents are already
    // stored, not duplicates of themselves; the duplicates are reported again, as before.
    let again = simdex(
        &[&["ingest", "w", "all.jsonl", "--out", "o.tsv"][..], &args].concat(),
        None,
        d,
    );
    assert_eq!(ok(&again), "");
    let o = std::fs::read_to_string(d.join("o.tsv")).unwrap();
    assert_eq!(o, whole);

    fails(
        &simdex(
            &["ingest", "w", "all.jsonl", "--jsonl", "--shingle", "3"],
            None,
            d,
        ),
        "2-word shingles",
    );
    fails(
        &simdex(&["ingest", "w", "all.jsonl", "--jsonl", "--html"], None, d),
        "reads plain text",
    );
    fails(
        &simdex(
            &["ingest", "w", "all.jsonl", "--jsonl", "--k", "9"],
            None,
            d,
        ),
        "above the store's k",
    );
    ok(&simdex(
        &["insert", "raw", "--quiet"],
        Some(b"00000000000000ff 1\n"),
        d,
    ));
    fails(
        &simdex(&["ingest", "raw", "all.jsonl", "--jsonl"], None, d),
        "raw fingerprints",
    );
    // A bad line is reported with its place and skipped.
    let bad = format!("{}\nnot json\n", lines[0]);
    let o = simdex(&["ingest", "n", "--jsonl", "-"], Some(bad.as_bytes()), d);
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 2") && err.contains("1 bad lines skipped"),
        "{err}"
    );
}

/// SIGKILL `simdex ingest` once it has acknowledged some chunks (their duplicate lines are
/// written only after the chunk is durable): every new document before the last line read is
/// in the store, the store opens cleanly, and running the whole input again ends with the same
/// documents stored as a run that was never interrupted.
#[test]
fn a_killed_ingest_loses_no_acknowledged_document() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let n = 30_000;
    let (text, ids) = corpus(n, 5);
    std::fs::write(d.join("in.jsonl"), &text).unwrap();
    let run = |store: &str| {
        ok(&simdex(
            &[
                "ingest",
                store,
                "in.jsonl",
                "--jsonl",
                "--verify",
                "jaccard:0.9",
                "--quiet",
            ],
            None,
            d,
        ))
    };
    run("calm");
    // --verify on a new store keeps shingle sets: the kill lands on exact data.
    assert!(
        Store::open_read_only(d.join("calm"))
            .unwrap()
            .recipe()
            .is_some_and(|r| r.exact() == Some(0.9))
    );
    let stored = |p: &Path| -> Vec<bool> {
        let s = Store::open_read_only(p).unwrap();
        ids.iter()
            .map(|id| s.doc_id(&DocId::parse(id)).unwrap().is_some())
            .collect()
    };
    let calm = stored(&d.join("calm"));
    // Only planted copies are left out, and nearly all of them (a few lie beyond k = 7).
    let left_out: Vec<usize> = (0..n).filter(|&i| !calm[i]).collect();
    assert!(left_out.iter().all(|i| i % 10 == 9), "{left_out:?}");
    assert!(
        left_out.len() * 100 >= n / 10 * 99,
        "{} left out",
        left_out.len()
    );
    // Steps of 4096 documents (409 or 410 lines each), so that the kill lands mid-run.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_simdex"))
        .args([
            "ingest",
            "k",
            "in.jsonl",
            "--jsonl",
            "--verify",
            "jaccard:0.9",
            "--batch",
            "4096",
            "--quiet",
        ])
        .current_dir(d)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    // Past the first steps, then kill: before the input's end (the kill was mid-run).
    let mut last = String::new();
    for _ in 0..1000 {
        last.clear();
        out.read_line(&mut last).unwrap();
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "ingest ended before the kill: {status:?}"
    );
    let acked = ids
        .iter()
        .position(|i| last.starts_with(&format!("{i}\t")))
        .unwrap();
    let after_kill = stored(&d.join("k"));
    for i in 0..acked {
        assert_eq!(
            after_kill[i], calm[i],
            "document {i} ({}) before the last line read",
            ids[i]
        );
    }
    run("k");
    assert_eq!(stored(&d.join("k")), calm);
    Store::open(d.join("k"), &StoreOptions::default())
        .unwrap()
        .verify()
        .unwrap();
}

/// Ctrl-C (SIGINT) during `ingest --out`: the steps done are synced, their lines are in the
/// output file (no temporary file is left), the exit status is 130, and running the whole
/// input again reports exactly what one uninterrupted run reports, the documents stored before
/// the interrupt as already stored.
#[test]
fn an_interrupted_ingest_keeps_its_answers_and_a_rerun_completes_them() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (text, ids) = corpus(12_000, 3);
    std::fs::write(d.join("in.jsonl"), &text).unwrap();
    let args = ["--jsonl", "--verify", "jaccard:0.9", "--quiet"];
    let whole = ok(&simdex(
        &[&["ingest", "calm", "in.jsonl"][..], &args].concat(),
        None,
        d,
    ));
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_simdex"))
        // (An exact store is created once it has read its first --learn documents.)
        .args([
            "ingest", "st", "-", "--batch", "1000", "--out", "o.tsv", "--learn", "1000",
        ])
        .args(args)
        .current_dir(d)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    input
        .write_all((lines[..5000].join("\n") + "\n").as_bytes())
        .unwrap();
    input.flush().unwrap();
    // Wait until the first chunk's steps are stored (document 3998 is not a planted copy).
    let probe = DocId::parse(&ids[3998]);
    let t0 = std::time::Instant::now();
    while !Store::open_read_only(d.join("st")).is_ok_and(|s| s.doc_id(&probe).unwrap().is_some()) {
        assert!(t0.elapsed().as_secs() < 60, "ingest made no progress");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    // The next chunk read ends the run at its first step.
    let _ = input.write_all((lines[5000..].join("\n") + "\n").as_bytes());
    drop(input);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    let part = std::fs::read_to_string(d.join("o.tsv")).unwrap();
    assert!(!part.is_empty() && whole.starts_with(&part), "{part}");
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let rest = ok(&simdex(
        &[&["ingest", "st", "in.jsonl", "--out", "o2.tsv"][..], &args].concat(),
        None,
        d,
    ));
    assert_eq!(rest, "");
    let again = std::fs::read_to_string(d.join("o2.tsv")).unwrap();
    assert!(!again.lines().any(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        f[0] == f[1]
    }));
    assert_eq!(again, whole, "the rerun reports what one run reports");
}

/// Bad ids are bad lines: reported with their place and skipped, the rest of the input is
/// ingested; `.jsonl.gz` is read decompressed; a small first run gets count weights (idf from
/// a few documents would be frozen into the store), `--weights idf` on it is refused, and
/// `--learn-from` creates an idf store from a sample.
#[test]
fn bad_ids_gz_input_and_weights_of_a_small_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut text = String::new();
    for i in 0..3000 {
        text += &format!(
            "{{\"id\": \"k{i}\", \"text\": \"document number {i} has words {}\"}}\n",
            i % 7
        );
        if i == 1500 {
            text += "{\"id\": \"\", \"text\": \"empty id\"}\n";
            text += &format!(
                "{{\"id\": \"{}\", \"text\": \"long id\"}}\n",
                "x".repeat(2049)
            );
        }
    }
    std::fs::write(d.join("in.jsonl"), &text).unwrap();
    let o = simdex(
        &[
            "ingest",
            "e",
            "in.jsonl",
            "--jsonl",
            "--batch",
            "100",
            "--verify",
            "jaccard:0.9",
        ],
        None,
        d,
    );
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 1502: \"id\" is empty")
            && err.contains("line 1503: \"id\" is 2049 bytes"),
        "{err}"
    );
    assert!(
        err.contains("3000 documents") && err.contains("2 bad lines"),
        "{err}"
    );
    // Gzip-compressed JSON Lines.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, text.as_bytes()).unwrap();
    std::fs::write(d.join("in.jsonl.gz"), gz.finish().unwrap()).unwrap();
    let h = ok(&simdex(
        &["hash", "--jsonl", "in.jsonl.gz", "--quiet"],
        None,
        d,
    ));
    assert_eq!(h.lines().count(), 3000);
    // A first run of 20 documents: count weights, and an existing store's weights are its own.
    let small: String = text.lines().take(20).map(|l| format!("{l}\n")).collect();
    let o = simdex(
        &["ingest", "small", "-", "--jsonl"],
        Some(small.as_bytes()),
        d,
    );
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("weights count: idf needs 10000"), "{err}");
    fails(
        &simdex(
            &["ingest", "small", "-", "--jsonl", "--weights", "idf"],
            Some(small.as_bytes()),
            d,
        ),
        "count weights",
    );
    fails(
        &simdex(
            &["ingest", "tiny", "-", "--jsonl", "--weights", "idf"],
            Some(small.as_bytes()),
            d,
        ),
        "at least 1000",
    );
    let o = simdex(
        &[
            "ingest",
            "learned",
            "-",
            "--jsonl",
            "--learn-from",
            "in.jsonl",
        ],
        Some(small.as_bytes()),
        d,
    );
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("idf learned from 3000 documents"), "{err}");
}

/// Takedowns: a document store's documents are deleted by the ids they were ingested under
/// (URLs included), and `query` names matches by those ids.
#[test]
fn documents_are_deleted_and_named_by_their_ids() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs = "{\"id\": \"https://a.example/x?q=1\", \"text\": \"alpha beta gamma delta epsilon zeta eta theta\"}\n\
                {\"id\": 42, \"text\": \"one two three four five six seven eight nine ten\"}\n";
    ok(&simdex(
        &["ingest", "st", "-", "--jsonl", "--quiet"],
        Some(docs.as_bytes()),
        d,
    ));
    let fp = ok(&simdex(
        &["hash", "-"],
        Some(b"alpha beta gamma delta epsilon zeta eta theta"),
        d,
    ));
    let fp = fp.split('\t').next().unwrap().to_string();
    let q = ok(&simdex(
        &["query", "st", "--input", "-"],
        Some(fp.as_bytes()),
        d,
    ));
    assert!(q.trim_end().ends_with("\thttps://a.example/x?q=1"), "{q}");
    let o = simdex(
        &["delete", "st", "--keys", "-"],
        Some(b"https://a.example/x?q=1\nabsent\n42\n"),
        d,
    );
    ok(&o);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("deleted 2 documents") && err.contains("1 ids had none"),
        "{err}"
    );
    assert_eq!(
        ok(&simdex(
            &["query", "st", "--input", "-"],
            Some(fp.as_bytes()),
            d
        )),
        ""
    );
}
