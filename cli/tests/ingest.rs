//! `simdex ingest`: duplicate lines, split inputs, recipes refused, bad lines, and a kill at
//! a random moment that loses no acknowledged document.

use std::io::BufRead;
use std::path::Path;

use simdex::store::{DocId, Store, StoreOptions};

mod common;
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
    // --out, and a second run of the same input: every stored document is its own duplicate.
    let again = simdex(
        &[&["ingest", "w", "all.jsonl", "--out", "o.tsv"][..], &args].concat(),
        None,
        d,
    );
    assert_eq!(ok(&again), "");
    let o = std::fs::read_to_string(d.join("o.tsv")).unwrap();
    assert_eq!(o.lines().count(), 400);
    assert!(o.lines().any(|l| l == "u1\tu1\t1.0000"), "{o}");

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
    let stored = |p: &Path| -> Vec<bool> {
        let s = Store::open_read_only(p).unwrap();
        ids.iter()
            .map(|id| {
                let id = match id.parse::<u64>() {
                    Ok(v) => DocId::Num(v),
                    Err(_) => DocId::Key(id.as_str().into()),
                };
                s.doc_id(&id).unwrap().is_some()
            })
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
