//! End-to-end tests of the `simdex` binary: outputs, exit codes, and errors on bad input.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use crate::common;
use common::{fails, ok, simdex};

#[test]
fn gen_build_query_stats_verify() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let gen_args = [
        "gen",
        "--n",
        "5000",
        "--planted",
        "20",
        "--distances",
        "1,2,3,4",
    ];
    let to_file = [&gen_args[..], &["--out", "fps.hex"]].concat();
    ok(&simdex(&to_file, None, p));
    let text = std::fs::read_to_string(p.join("fps.hex")).unwrap();
    let fps: Vec<u64> = text
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect();
    assert_eq!(fps.len(), 5000 + 20 * 4);
    // Deterministic: the same seed gives the same bytes.
    let again = ok(&simdex(&gen_args, None, p));
    assert_eq!(again, text);
    // Planted neighbours are at the stated distances.
    for i in 0..20 {
        for (j, d) in (1..=4).enumerate() {
            assert_eq!((fps[i] ^ fps[5000 + i * 4 + j]).count_ones(), d);
        }
    }
    let built = simdex(
        &[
            "build",
            "--input",
            "fps.hex",
            "--out",
            "idx",
            "--design",
            "10",
            "--block-size",
            "256",
        ],
        None,
        p,
    );
    ok(&built);
    assert!(String::from_utf8_lossy(&built.stderr).contains("5080 distinct"));
    // Query in hex from stdin, planted originals first.
    let q = format!("{:016x}\n0x{:016X}\n", fps[0], fps[1]);
    let out = ok(&simdex(&["query", "idx"], Some(q.as_bytes()), p));
    let lines: Vec<&str> = out.lines().collect();
    // fps[0] matches itself and its neighbours at 1, 2, 3 (not 4), in distance order.
    let first: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with(&format!("{:016x}", fps[0])))
        .collect();
    assert_eq!(first.len(), 4, "{out}");
    for (d, l) in first.iter().enumerate() {
        let cols: Vec<&str> = l.split('\t').collect();
        assert_eq!(cols.len(), 3);
        assert_eq!(cols[2], d.to_string());
        assert_eq!(cols[1].len(), 16);
    }
    // Queries come out in input order.
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with(&format!("{:016x}", fps[1]))
    );
    // --k 1 and JSON.
    let out = ok(&simdex(
        &["query", "idx", "--k", "1", "--json"],
        Some(q.as_bytes()),
        p,
    ));
    assert_eq!(out.lines().count(), 2);
    assert!(out.lines().next().unwrap().contains("\"distance\":1"));
    assert!(!out.contains("\"distance\":2"));
    // u64 input from a file.
    let mut raw = Vec::new();
    raw.extend_from_slice(&fps[2].to_le_bytes());
    std::fs::write(p.join("q.u64"), &raw).unwrap();
    let out = ok(&simdex(
        &[
            "query", "idx", "--input", "q.u64", "--format", "u64", "--k", "0",
        ],
        None,
        p,
    ));
    assert_eq!(out, format!("{:016x}\t{:016x}\t0\n", fps[2], fps[2]));
    let st = ok(&simdex(&["stats", "idx", "--json"], None, p));
    assert!(
        st.contains("\"fingerprints\":5080")
            && st.contains("\"tables\":10")
            && st.contains("\"block_size\":256,\"segment_keys\":0"),
        "{st}"
    );
    assert!(ok(&simdex(&["stats", "idx"], None, p)).contains("design"));
    assert!(ok(&simdex(&["verify", "idx"], None, p)).starts_with("ok"));
    let ds = ok(&simdex(
        &["designs", "--n", "1000000000", "--k", "3"],
        None,
        p,
    ));
    assert_eq!(ds.lines().filter(|l| l.starts_with('*')).count(), 1, "{ds}");
}

#[test]
fn bad_input_gives_one_line_errors_and_no_partial_index() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    std::fs::write(p.join("bad.hex"), "0000000000000001\nnot-hex\n").unwrap();
    fails(
        &simdex(&["build", "--input", "bad.hex", "--out", "idx"], None, p),
        "bad.hex: line 2",
    );
    std::fs::write(p.join("odd.u64"), [0u8; 12]).unwrap();
    fails(
        &simdex(
            &[
                "build", "--input", "odd.u64", "--format", "u64", "--out", "idx",
            ],
            None,
            p,
        ),
        "byte offset 8",
    );
    fails(
        &simdex(
            &["build", "--input", "missing.hex", "--out", "idx"],
            None,
            p,
        ),
        "missing.hex",
    );
    fails(
        &simdex(
            &["build", "--input", "bad.hex", "--out", "idx", "--k", "9"],
            None,
            p,
        ),
        "k = 9",
    );
    fails(
        &simdex(
            &[
                "build", "--input", "bad.hex", "--out", "idx", "--design", "banana",
            ],
            None,
            p,
        ),
        "unknown design",
    );
    // A block size that is no power of two; segments of 1 key, a number past u32, and blocks
    // too large for 16-bit offsets.
    for (seg, block, says) in [
        ("1", "auto", "segment length 1"),
        ("99999999999", "auto", "segment length"),
        ("banana", "auto", "segment length"),
        ("20", "16384", "8192"),
    ] {
        fails(
            &simdex(
                &[
                    "build",
                    "--input",
                    "bad.hex",
                    "--out",
                    "idx",
                    "--block-size",
                    block,
                    "--segment-keys",
                    seg,
                ],
                None,
                p,
            ),
            says,
        );
    }
    fails(
        &simdex(
            &["build", "--input", "bad.hex", "--out", "no/such/dir/idx"],
            None,
            p,
        ),
        "no/such/dir",
    );
    // Nothing was left behind by any of those.
    let mut names: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["bad.hex", "odd.u64"]);
    // Empty input builds an empty index that answers nothing.
    std::fs::write(p.join("empty.hex"), "").unwrap();
    ok(&simdex(
        &["build", "--input", "empty.hex", "--out", "empty"],
        None,
        p,
    ));
    assert_eq!(
        ok(&simdex(&["query", "empty"], Some(b"0000000000000000\n"), p)),
        ""
    );
    // Query errors.
    fails(
        &simdex(
            &["query", "empty", "--k", "4"],
            Some(b"0000000000000000\n"),
            p,
        ),
        "exceeds",
    );
    fails(
        &simdex(&["query", "empty"], Some(b"12345\n"), p),
        "<stdin>: line 1",
    );
    fails(
        &simdex(&["query", "nothere"], Some(b""), p),
        "not a simdex index",
    );
    fails(&simdex(&["stats", "bad.hex"], None, p), "bad.hex");
    // An existing output directory is refused.
    fails(
        &simdex(
            &["build", "--input", "empty.hex", "--out", "empty"],
            None,
            p,
        ),
        "already exists",
    );
    // A corrupted table fails verify with the file named, exit non-zero.
    let t = p.join("empty/table-00.sxt");
    let mut b = std::fs::read(&t).unwrap();
    b[1] ^= 1;
    std::fs::write(&t, b).unwrap();
    fails(&simdex(&["verify", "empty"], None, p), "table-00.sxt");
}

#[test]
fn demo_runs() {
    let d = tempfile::tempdir().unwrap();
    let out = ok(&simdex(&["demo", "--n", "20000"], None, d.path()));
    assert!(
        out.contains("verify: ") && out.contains("queries/s"),
        "{out}"
    );
}

#[test]
fn a_closed_stdout_is_not_a_crash() {
    use std::io::Read;
    for args in [
        &["gen", "--n", "2000000"][..],
        &["designs", "--n", "1000"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_simdex"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is closed now; the writer gets EPIPE on its next write.
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
    }
}

#[test]
fn batch_shards_merge_like_sort_m() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    ok(&simdex(
        &[
            "gen",
            "--n",
            "20000",
            "--planted",
            "300",
            "--out",
            "stored.hex",
        ],
        None,
        p,
    ));
    ok(&simdex(
        &["build", "--input", "stored.hex", "--out", "idx", "--quiet"],
        None,
        p,
    ));
    // The batch: planted originals (each has neighbours at 1..=3 stored) and new ones.
    let stored = std::fs::read_to_string(p.join("stored.hex")).unwrap();
    let mut batch: String = stored.lines().take(300).map(|l| format!("{l}\n")).collect();
    batch.push_str("0123456789abcdef\n");
    std::fs::write(p.join("batch.hex"), &batch).unwrap();
    ok(&simdex(
        &[
            "batch",
            "idx",
            "--input",
            "batch.hex",
            "--out",
            "all.tsv",
            "--within",
            "within.tsv",
            "--quiet",
        ],
        None,
        p,
    ));
    let all = std::fs::read_to_string(p.join("all.tsv")).unwrap();
    // Each planted original matches itself (0) and its neighbours at 1, 2, 3.
    assert_eq!(all.lines().count(), 300 * 4, "{all}");
    let mut merged: Vec<String> = Vec::new();
    for i in 0..3 {
        let out = ok(&simdex(
            &[
                "batch",
                "idx",
                "--input",
                "batch.hex",
                "--shard",
                &format!("{i}/3"),
                "--quiet",
            ],
            None,
            p,
        ));
        merged.extend(out.lines().map(String::from));
        assert!(
            out.lines()
                .collect::<Vec<_>>()
                .windows(2)
                .all(|w| w[0] < w[1]),
            "shard output sorted and distinct"
        );
    }
    merged.sort();
    assert_eq!(merged.join("\n") + "\n", all);
    fails(
        &simdex(
            &["batch", "idx", "--input", "batch.hex", "--shard", "3/3"],
            None,
            p,
        ),
        "shard",
    );
    fails(
        &simdex(
            &["batch", "idx", "--input", "batch.hex", "--k", "4"],
            None,
            p,
        ),
        "exceeds",
    );
    assert!(!p.join("missing").exists());
}

fn simdex_to(args: &[&str], stdout: std::fs::File, cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_simdex"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn hostile_environments_give_clear_errors_and_leave_nothing() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    ok(&simdex(
        &["gen", "--n", "3000", "--planted", "10", "--out", "fps.hex"],
        None,
        p,
    ));
    ok(&simdex(
        &["build", "--input", "fps.hex", "--out", "idx", "--quiet"],
        None,
        p,
    ));
    // A full disk on stdout (/dev/full answers every write with ENOSPC).
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let o = simdex_to(&["gen", "--n", "100000"], full.try_clone().unwrap(), p);
        fails(&o, "No space left");
        let o = simdex_to(&["query", "idx", "--input", "fps.hex"], full, p);
        fails(&o, "No space left");
    }
    // Output paths whose parent is a file, or missing.
    fails(
        &simdex(
            &["gen", "--n", "10", "--planted", "0", "--out", "fps.hex/x"],
            None,
            p,
        ),
        "fps.hex",
    );
    fails(
        &simdex(
            &["build", "--input", "fps.hex", "--out", "fps.hex/idx"],
            None,
            p,
        ),
        "fps.hex",
    );
    fails(
        &simdex(
            &[
                "batch",
                "idx",
                "--input",
                "fps.hex",
                "--out",
                "nope/pairs.tsv",
            ],
            None,
            p,
        ),
        "nope",
    );
    // Inputs that are directories or empty.
    fails(
        &simdex(&["build", "--input", "idx", "--out", "x"], None, p),
        "is a directory",
    );
    std::fs::write(p.join("empty.u64"), b"").unwrap();
    ok(&simdex(
        &[
            "build",
            "--input",
            "empty.u64",
            "--format",
            "u64",
            "--out",
            "e",
            "--quiet",
        ],
        None,
        p,
    ));
    // Absurd options.
    fails(
        &simdex(
            &["build", "--input", "fps.hex", "--out", "y", "--mem", "10"],
            None,
            p,
        ),
        "memory budget",
    );
    fails(
        &simdex(
            &["build", "--input", "fps.hex", "--out", "y", "--mem", "lots"],
            None,
            p,
        ),
        "not a size",
    );
    fails(
        &simdex(&["gen", "--n", "5", "--planted", "6"], None, p),
        "exceed",
    );
    // A read-only directory (only meaningful when not running as root, who may write anyway).
    let ro = p.join("ro");
    std::fs::create_dir(&ro).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(ro.join("probe"), b"").is_err() {
        fails(
            &simdex(&["build", "--input", "fps.hex", "--out", "ro/idx"], None, p),
            "ro",
        );
        fails(
            &simdex(
                &["gen", "--n", "10", "--planted", "0", "--out", "ro/f.hex"],
                None,
                p,
            ),
            "ro",
        );
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _ = std::fs::remove_file(ro.join("probe"));
    // Nothing half-written anywhere.
    let mut names: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["e", "empty.u64", "fps.hex", "idx", "ro"]);
    assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0);
}

/// Kill `simdex build` with SIGKILL at staggered moments: the output path is then either absent
/// or a complete index that verifies — never a partial one.
#[test]
fn a_build_killed_at_any_moment_leaves_no_index_or_a_whole_one() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    ok(&simdex(
        &[
            "gen",
            "--n",
            "300000",
            "--planted",
            "0",
            "--format",
            "u64",
            "--out",
            "fps.u64",
        ],
        None,
        p,
    ));
    let mut outcomes = (0, 0);
    for trial in 0..12u64 {
        let out = format!("idx{trial}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_simdex"))
            .args([
                "build", "--input", "fps.u64", "--format", "u64", "--out", &out, "--design", "20",
                "--quiet",
            ])
            .current_dir(p)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(trial * 40));
        let _ = child.kill(); // SIGKILL; harmless if it already finished
        let _ = child.wait();
        let dir = p.join(&out);
        if dir.exists() {
            let idx = simdex::Index::open(&dir).expect("a visible index is complete");
            assert_eq!(idx.verify().unwrap().tables, 20);
            assert_eq!(idx.len(), 300_000);
            outcomes.1 += 1;
        } else {
            outcomes.0 += 1;
        }
    }
    // The staggered kills hit both sides of the final rename on this machine; if the machine is
    // much faster or slower one side may be empty, which is fine — the check above is the point.
    eprintln!(
        "killed before completion: {}, complete: {}",
        outcomes.0, outcomes.1
    );
}

#[test]
fn store_insert_query_delete_compact_merge_rebuild() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    // Two documents share a fingerprint; a third is 2 bits away; a fourth is far.
    let a = 0x1234_5678_9abc_def0u64;
    let pairs = format!(
        "{a:016x} 1\n{a:016x} 2\n\n{:016x} 3\n{:016x} 4\n",
        a ^ 0b11,
        !a
    );
    let o = simdex(
        &["insert", "s", "--design", "4", "--quiet"],
        Some(pairs.as_bytes()),
        p,
    );
    ok(&o);
    let q = format!("{a:016x}\n");
    let out = ok(&simdex(&["query", "s", "--k", "3"], Some(q.as_bytes()), p));
    assert_eq!(
        out,
        format!(
            "{a:016x}\t{a:016x}\t0\t1,2\n{a:016x}\t{:016x}\t2\t3\n",
            a ^ 0b11
        )
    );
    ok(&simdex(&["delete", "s", "--quiet"], Some(b"1\n3\n"), p));
    let out = ok(&simdex(&["query", "s"], Some(q.as_bytes()), p));
    assert_eq!(out, format!("{a:016x}\t{a:016x}\t0\t2\n"));
    let c = simdex(&["compact", "s"], None, p);
    ok(&c);
    assert!(String::from_utf8_lossy(&c.stderr).contains("generation 1"));
    assert!(ok(&simdex(&["verify", "s"], None, p)).starts_with("ok: generation 1"));
    let stats = ok(&simdex(&["stats", "s", "--json"], None, p));
    assert!(stats.contains("\"pairs\":2"), "{stats}");
    // A second store, merged.
    let more = format!("{:016x} 9\n", a ^ 0b100);
    ok(&simdex(
        &["insert", "t", "--design", "4", "--quiet"],
        Some(more.as_bytes()),
        p,
    ));
    ok(&simdex(
        &["merge", "s", "t", "--out", "m", "--quiet"],
        None,
        p,
    ));
    let out = ok(&simdex(&["query", "m", "--k", "1"], Some(q.as_bytes()), p));
    assert_eq!(
        out,
        format!(
            "{a:016x}\t{a:016x}\t0\t2\n{a:016x}\t{:016x}\t1\t9\n",
            a ^ 0b100
        )
    );
    ok(&simdex(
        &[
            "rebuild", "m", "--design", "10", "--codec", "gap", "--quiet",
        ],
        None,
        p,
    ));
    let out2 = ok(&simdex(&["query", "m", "--k", "1"], Some(q.as_bytes()), p));
    assert_eq!(out2, out);
    ok(&simdex(&["verify", "m"], None, p));
}

#[test]
fn store_commands_reject_bad_input_with_located_errors() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    ok(&simdex(
        &["insert", "s", "--design", "4", "--quiet"],
        Some(b""),
        p,
    ));
    fails(
        &simdex(&["insert", "s"], Some(b"0000000000000001 7\nxyz 8\n"), p),
        "line 2",
    );
    fails(
        &simdex(&["insert", "s"], Some(b"0000000000000001\n"), p),
        "two fields",
    );
    fails(
        &simdex(&["insert", "s"], Some(b"0000000000000001 -4\n"), p),
        "not a document id",
    );
    fails(&simdex(&["delete", "s"], Some(b"1\nnope\n"), p), "line 2");
    fails(
        &simdex(&["insert", "s", "--sync", "sometimes"], Some(b""), p),
        "group:",
    );
    fails(
        &simdex(&["compact", "missing"], None, p),
        "not a simdex store",
    );
    fails(
        &simdex(&["query", "s", "--k", "4"], Some(b"0000000000000001\n"), p),
        "k = 4",
    );
    // A plain index is not a store; inserting into it is refused without touching it.
    ok(&simdex(
        &["build", "--input", "-", "--out", "idx", "--quiet"],
        Some(b"0000000000000001\n"),
        p,
    ));
    fails(
        &simdex(&["insert", "idx"], Some(b"0000000000000001 1\n"), p),
        "read-only",
    );
    fails(
        &simdex(&["merge", "s", "idx", "--out", "m"], None, p),
        "not a simdex store",
    );
    assert!(!p.join("m").exists());
}

#[test]
fn hash_dedup_calibrate_idf_on_documents() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    let base = "near duplicate detection for web crawling keeps one copy of each page and drops \
                the rest so the index stays small and the crawl stays fast for everyone";
    std::fs::create_dir_all(p.join("docs/sub")).unwrap();
    std::fs::write(p.join("docs/a.txt"), base).unwrap();
    std::fs::write(p.join("docs/sub/b.txt"), base.replace("fast", "quick")).unwrap();
    std::fs::write(
        p.join("docs/c.txt"),
        "a completely different text about gardening and bees",
    )
    .unwrap();
    std::fs::write(
        p.join("docs/d.html"),
        format!("<p>{base}</p><script>x()</script>"),
    )
    .unwrap();
    // Files and directories: fingerprint<TAB>path, in name order.
    let out = ok(&simdex(&["hash", "docs", "--quiet"], None, p));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines[0].ends_with("\tdocs/a.txt") && lines[3].ends_with("\tdocs/sub/b.txt"),
        "{out}"
    );
    // The HTML file hashed as HTML equals the text file.
    let html = ok(&simdex(
        &["hash", "--html", "docs/d.html", "--quiet"],
        None,
        p,
    ));
    assert_eq!(html.split('\t').next(), lines[0].split('\t').next());
    // JSONL from stdin; a bad line is reported with its number and skipped, or fatal with --strict.
    let jsonl = format!(
        "{{\"id\": 1, \"text\": \"{base}\"}}\nnot json\n{{\"id\": \"x\", \"text\": \"{}\"}}\n",
        base.replace("fast", "quick")
    );
    let o = simdex(&["hash", "--jsonl", "-"], Some(jsonl.as_bytes()), p);
    let out = ok(&o);
    assert_eq!(out.lines().count(), 2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 2"));
    fails(
        &simdex(
            &["hash", "--jsonl", "--strict", "-"],
            Some(jsonl.as_bytes()),
            p,
        ),
        "line 2",
    );
    // Dedup: the near-duplicate pair (a, b, d) and the cluster; c stays alone.
    let out = ok(&simdex(
        &["dedup", "--html", "docs", "--k", "3", "--quiet"],
        None,
        p,
    ));
    let pairs: Vec<&str> = out.lines().collect();
    assert!(pairs.contains(&"docs/a.txt\tdocs/d.html\t0"), "{out}");
    assert!(pairs.iter().all(|l| !l.contains("c.txt")), "{out}");
    let out = ok(&simdex(
        &[
            "dedup",
            "--html",
            "docs",
            "--clusters",
            "--out",
            "clusters.tsv",
            "--quiet",
        ],
        None,
        p,
    ));
    assert!(out.is_empty());
    let clusters = std::fs::read_to_string(p.join("clusters.tsv")).unwrap();
    assert_eq!(clusters.lines().count(), 1, "{clusters}");
    assert!(
        clusters.starts_with("docs/a.txt\tdocs/d.html"),
        "{clusters}"
    );
    fails(&simdex(&["dedup", "docs", "--k", "9"], None, p), "k = 9");
    // Calibrate prints a precision/recall table per shingle size.
    let out = ok(&simdex(
        &["calibrate", "docs", "--shingles", "1,2", "--quiet"],
        None,
        p,
    ));
    // IDF learned from the corpus by default; counts on request.
    assert!(
        out.contains("| k | words + idf | 2-shingles + idf |"),
        "{out}"
    );
    assert_eq!(out.lines().filter(|l| l.starts_with("| ")).count(), 1 + 13);
    let out = ok(&simdex(
        &[
            "calibrate",
            "docs",
            "--shingles",
            "2",
            "--weights",
            "count",
            "--max-k",
            "7",
            "--quiet",
        ],
        None,
        p,
    ));
    assert!(out.contains("| k | 2-shingles |"), "{out}");
    assert_eq!(out.lines().filter(|l| l.starts_with("| ")).count(), 1 + 8);
    // Labelled pairs.
    std::fs::write(
        p.join("labels.tsv"),
        "docs/a.txt\tdocs/sub/b.txt\t1\ndocs/a.txt\tdocs/c.txt\t0\n",
    )
    .unwrap();
    let out = ok(&simdex(
        &["calibrate", "docs", "--pairs", "labels.tsv", "--quiet"],
        None,
        p,
    ));
    assert!(out.contains("1 near-duplicate pairs (labelled"), "{out}");
    std::fs::write(p.join("bad.tsv"), "docs/a.txt\tnope\t1\n").unwrap();
    fails(
        &simdex(
            &["calibrate", "docs", "--pairs", "bad.tsv", "--quiet"],
            None,
            p,
        ),
        "no document",
    );
    // IDF: learned, then used; a shingle mismatch is refused.
    ok(&simdex(
        &["idf", "docs", "--out", "w.idf", "--quiet"],
        None,
        p,
    ));
    ok(&simdex(
        &["hash", "docs", "--idf", "w.idf", "--quiet"],
        None,
        p,
    ));
    fails(
        &simdex(
            &["hash", "docs", "--idf", "w.idf", "--shingle", "3"],
            None,
            p,
        ),
        "--shingle 2",
    );
    fails(&simdex(&["hash", "missing-dir"], None, p), "missing-dir");
}

/// A full disk, simulated without root: `ulimit -f` caps file size and SIGXFSZ is ignored, so
/// writes past the cap fail with EFBIG. Every command fails with one clear line, non-zero, and
/// leaves no partial output; a store keeps only whole records.
#[cfg(unix)]
#[test]
fn a_full_disk_fails_cleanly() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    ok(&simdex(
        &["gen", "--n", "20000", "--out", "fps.hex"],
        None,
        p,
    ));
    let text = std::fs::read_to_string(p.join("fps.hex")).unwrap();
    let pairs: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| format!("{l} {i}\n"))
        .collect();
    std::fs::write(p.join("pairs.txt"), pairs).unwrap();
    std::fs::create_dir(p.join("docs")).unwrap();
    for i in 0..200 {
        std::fs::write(
            p.join(format!("docs/{i}.txt")),
            format!("same text here {}", i % 3),
        )
        .unwrap();
    }
    let capped = |cmd: &str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "trap '' XFSZ; ulimit -f 64; exec {} {cmd}",
                env!("CARGO_BIN_EXE_simdex")
            ))
            .current_dir(p)
            .output()
            .unwrap()
    };
    fails(
        &capped("build --input fps.hex --out idx --quiet"),
        "File too large",
    );
    assert!(!p.join("idx").exists());
    fails(&capped("gen --n 100000 --out big.hex"), "File too large");
    assert!(!p.join("big.hex").exists());
    // 3 groups of ~67 identical documents: ~6 600 pairs, beyond the cap.
    fails(&capped("dedup docs --out c.tsv --quiet"), "File too large");
    assert!(!p.join("c.tsv").exists());
    fails(
        &capped("insert st --input pairs.txt --design 10 --quiet"),
        "File too large",
    );
    // The failed write left part of a record: readers report it, verify fails, and the next
    // writer drops it; then the store verifies.
    let o = simdex(&["verify", "st"], None, p);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("log tail"));
    ok(&simdex(&["compact", "st", "--quiet"], None, p));
    ok(&simdex(&["verify", "st"], None, p));
    let left: Vec<String> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

#[test]
fn query_timing_reports_library_time_and_work_per_query() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(&simdex(&["gen", "--n", "3000", "--out", "f.hex"], None, d));
    ok(&simdex(
        &["build", "--input", "f.hex", "--out", "idx", "--quiet"],
        None,
        d,
    ));
    let o = simdex(&["query", "idx", "--input", "f.hex", "--timing"], None, d);
    let out = ok(&o);
    assert!(
        out.lines().count() >= 3000,
        "every stored fingerprint finds itself"
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("3000 queries") || err.contains("queries in"),
        "{err}"
    );
    assert!(err.contains("µs/query") && err.contains("probes"), "{err}");
    // --populate maps the tables first; the answers are the same.
    let o = simdex(
        &["query", "idx", "--input", "f.hex", "--populate", "--timing"],
        None,
        d,
    );
    assert_eq!(ok(&o), out);
    // So does --in-memory, which reads them whole; it is for indexes, and not with --populate.
    let o = simdex(
        &["query", "idx", "--input", "f.hex", "--in-memory"],
        None,
        d,
    );
    assert_eq!(ok(&o), out);
    let o = simdex(
        &[
            "query",
            "idx",
            "--input",
            "f.hex",
            "--in-memory",
            "--populate",
        ],
        None,
        d,
    );
    fails(&o, "--populate");
    std::fs::write(d.join("pairs.txt"), "00000000000000ff 7\n").unwrap();
    ok(&simdex(&["insert", "st", "--input", "pairs.txt"], None, d));
    let o = simdex(&["query", "st", "--input", "f.hex", "--in-memory"], None, d);
    fails(&o, "is a store");
    // A store answers as the index of the same fingerprints does, in input order (its
    // queries go in batches on all cores), and reports its timing too (it printed nothing).
    let fps = std::fs::read_to_string(d.join("f.hex")).unwrap();
    let pairs: String = fps
        .lines()
        .filter(|l| !l.is_empty())
        .enumerate()
        .map(|(i, l)| format!("{l} {i}\n"))
        .collect();
    std::fs::write(d.join("pairs3000.txt"), pairs).unwrap();
    ok(&simdex(
        &["insert", "st2", "--input", "pairs3000.txt", "--quiet"],
        None,
        d,
    ));
    let o = simdex(&["query", "st2", "--input", "f.hex", "--timing"], None, d);
    let got = ok(&o);
    let without_ids: String = got
        .lines()
        .map(|l| format!("{}\n", &l[..l.rfind('\t').unwrap()]))
        .collect();
    assert_eq!(without_ids, out);
    let err = String::from_utf8_lossy(&o.stderr);
    let asked = fps.lines().filter(|l| !l.is_empty()).count();
    assert!(
        err.contains(&format!("{asked} queries")) && err.contains("µs/query"),
        "{err}"
    );
    // Without --timing, nothing on stderr.
    let o = simdex(&["query", "idx", "--input", "f.hex"], None, d);
    ok(&o);
    assert!(o.stderr.is_empty());
}

/// `calibrate --idf FILE` uses the file's weights (it used to learn from the corpus and ignore
/// the file); a table of another shingle size is an error.
#[test]
fn calibrate_uses_the_idf_file_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let docs: String = (0..60)
        .map(|i| {
            let body: Vec<String> = (0..40)
                .map(|j| format!("w{}", (i * 7 + j * 13) % 97))
                .collect();
            format!(
                "{{\"id\": {i}, \"text\": \"shared header words {}\"}}\n",
                body.join(" ")
            )
        })
        .collect();
    std::fs::write(d.join("c.jsonl"), &docs).unwrap();
    std::fs::write(d.join("one.jsonl"), docs.lines().next().unwrap()).unwrap();
    ok(&simdex(
        &["idf", "--jsonl", "one.jsonl", "--out", "one.idf", "--quiet"],
        None,
        d,
    ));
    ok(&simdex(
        &[
            "idf",
            "--jsonl",
            "c.jsonl",
            "--shingle",
            "3",
            "--out",
            "three.idf",
            "--quiet",
        ],
        None,
        d,
    ));
    let args = [
        "calibrate",
        "--jsonl",
        "c.jsonl",
        "--shingles",
        "2",
        "--weights",
        "idf",
        "--threshold",
        "0.3",
        "--quiet",
    ];
    let learned = ok(&simdex(&args, None, d));
    let given = ok(&simdex(
        &[&args[..], &["--idf", "one.idf"]].concat(),
        None,
        d,
    ));
    assert_ne!(
        learned, given,
        "a table learned from one document weighs like none"
    );
    fails(
        &simdex(&[&args[..], &["--idf", "three.idf"]].concat(), None, d),
        "--shingle 3",
    );
}
