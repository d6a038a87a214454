//! Index queries against a brute-force popcount scan: every design, every k up to the design's,
//! random data with neighbours planted at exactly 0..=k+1 bits, duplicates, all-zero and all-ones
//! fingerprints, empty and one-element indexes; in-memory and external builds.

use crate::common;

use std::collections::BTreeSet;
use std::path::Path;

use common::*;
use simdex::design::Design;
use simdex::index::{self, BuildOptions, DesignChoice};
use simdex::{Error, Index, Match};

/// Random fingerprints, plus for some of them neighbours at every distance 0..=k+1, plus
/// the extremes.
fn planted(n: usize, k: u32, seed: u64) -> Vec<u64> {
    let mut s = seed;
    let mut v = random_keys(n, seed);
    for i in 0..(n / 20).max(1).min(v.len()) {
        let base = v[i];
        for d in 0..=k + 1 {
            v.push(flip_bits(base, d, &mut s));
        }
    }
    v.extend([0, u64::MAX, 1, u64::MAX - 1]);
    v
}

fn brute(set: &BTreeSet<u64>, q: u64, k: u32) -> Vec<Match> {
    let mut v: Vec<Match> = set
        .iter()
        .filter(|&&f| (f ^ q).count_ones() <= k)
        .map(|&f| Match {
            distance: (f ^ q).count_ones(),
            fingerprint: f,
        })
        .collect();
    v.sort();
    v
}

fn build(
    dir: &Path,
    fps: &[u64],
    design: DesignChoice,
    k: u32,
    block_size: u32,
    mem: u64,
) -> Index {
    let opts = BuildOptions::default()
        .with_k(k)
        .with_design(design)
        .with_block_size(Some(block_size))
        .with_mem_bytes(mem);
    index::build(dir, fps.iter().map(|&x| Ok(x)), &opts).unwrap();
    Index::open(dir).unwrap()
}

fn check(idx: &Index, fps: &[u64], seed: u64) {
    let set: BTreeSet<u64> = fps.iter().copied().collect();
    let dk = idx.design().k();
    let mut s = seed;
    let mut queries: Vec<u64> = fps
        .iter()
        .step_by((fps.len() / 60).max(1))
        .copied()
        .collect();
    queries.extend(random_keys(30, seed ^ 7));
    // Queries at exact distances from stored fingerprints.
    for &f in fps.iter().take(40) {
        for d in 0..=dk + 1 {
            queries.push(flip_bits(f, d, &mut s));
        }
    }
    queries.extend([0, u64::MAX]);
    for k in 0..=dk {
        let many = idx.near_many(&queries, k).unwrap();
        for (q, got) in queries.iter().zip(many.iter()) {
            let want = brute(&set, *q, k);
            assert_eq!(
                got,
                want,
                "design {} k={k} query {q:#018x}",
                idx.design().name()
            );
            assert_eq!(idx.has_near(*q, k).unwrap(), !want.is_empty());
        }
    }
    assert_eq!(
        idx.near(queries[0], dk).unwrap(),
        brute(&set, queries[0], dk)
    );
    let err = idx.near(0, dk + 1).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert_eq!(idx.len(), set.len() as u64);
    idx.verify().unwrap();
}

#[test]
fn every_named_design_matches_brute_force() {
    let fps = planted(1500, 3, 1);
    for name in ["20", "16", "10", "4", "m2c1r1", "m4c2r1"] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("idx");
        let idx = build(&p, &fps, DesignChoice::Named(name.into()), 3, 256, 1 << 30);
        assert_eq!(
            idx.design().tables().len(),
            Design::by_name(name, 3).unwrap().tables().len()
        );
        check(&idx, &fps, 3);
    }
}

#[test]
fn auto_designs_for_every_k_match_brute_force() {
    for k in 0..=7 {
        let fps = planted(800, k, 10 + k as u64);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("idx");
        let idx = build(&p, &fps, DesignChoice::Auto, k, 128, 1 << 30);
        assert_eq!(idx.design().k(), k);
        check(&idx, &fps, k as u64);
    }
}

#[test]
fn multi_probe_and_two_level_designs_for_other_k() {
    for (k, d) in [
        (2, Design::two_level(2, 3, 3).unwrap()),
        (4, Design::one_level(4, 3, 1, 1).unwrap()),
        (1, Design::one_level(1, 2, 1, 0).unwrap()),
    ] {
        let fps = planted(600, k, 5);
        let dir = tempfile::tempdir().unwrap();
        let idx = build(
            &dir.path().join("i"),
            &fps,
            DesignChoice::Given(d),
            k,
            512,
            1 << 30,
        );
        check(&idx, &fps, 9);
    }
}

#[test]
fn empty_and_single_fingerprint_indexes() {
    for fps in [vec![], vec![0u64], vec![u64::MAX], vec![42, 42, 42]] {
        let dir = tempfile::tempdir().unwrap();
        let idx = build(
            &dir.path().join("i"),
            &fps,
            DesignChoice::Named("10".into()),
            3,
            1024,
            1 << 30,
        );
        let set: BTreeSet<u64> = fps.iter().copied().collect();
        for q in [0u64, 1, 7, 42, 43, u64::MAX, u64::MAX ^ 0b111] {
            assert_eq!(idx.near(q, 3).unwrap(), brute(&set, q, 3));
        }
        idx.verify().unwrap();
    }
}

#[test]
fn external_build_is_byte_identical_to_in_memory_build() {
    let fps = planted(150_000, 3, 77);
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("mem");
    let b = dir.path().join("ext");
    let opts = |mem| {
        BuildOptions::default()
            .with_k(3)
            .with_design(DesignChoice::Named("10".into()))
            .with_block_size(Some(1024))
            .with_mem_bytes(mem)
    };
    let sa = index::build(&a, fps.iter().map(|&x| Ok(x)), &opts(1 << 30)).unwrap();
    let sb = index::build(&b, fps.iter().map(|&x| Ok(x)), &opts(1 << 20)).unwrap();
    assert!(!sa.external && sb.external);
    assert_eq!(sa.keys, sb.keys);
    assert_eq!(
        std::fs::read(a.join("MANIFEST")).unwrap(),
        std::fs::read(b.join("MANIFEST")).unwrap()
    );
    for i in 0..10 {
        let f = format!("table-{i:02}.sxt");
        assert!(
            std::fs::read(a.join(&f)).unwrap() == std::fs::read(b.join(&f)).unwrap(),
            "{f}"
        );
    }
    check(&Index::open(&b).unwrap(), &fps, 1);
}

#[test]
fn failed_builds_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("idx");
    // Bad input in the middle of the stream.
    let input = vec![
        Ok(1u64),
        Ok(2),
        Err(Error::InvalidArgument("bad record".into())),
        Ok(3),
    ];
    let err = index::build(&out, input.into_iter(), &BuildOptions::default()).unwrap_err();
    assert!(err.to_string().contains("bad record"));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "staging left behind"
    );
    // An existing output directory is refused and left alone.
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep"), b"x").unwrap();
    let err = index::build(&out, [1u64].into_iter().map(Ok), &BuildOptions::default()).unwrap_err();
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(std::fs::read(out.join("keep")).unwrap(), b"x");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn index_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Index>();
}

#[test]
fn damaged_index_files_are_reported() {
    let fps = planted(3000, 3, 4);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("idx");
    build(&p, &fps, DesignChoice::Named("4".into()), 3, 1024, 1 << 30);
    // Flip a byte inside a block of table 2: open is fine (cheap), verify names the table.
    let t2 = p.join("table-02.sxt");
    let mut b = std::fs::read(&t2).unwrap();
    b[300] ^= 0x40;
    std::fs::write(&t2, &b).unwrap();
    let idx = Index::open(&p).unwrap();
    let msg = idx.verify().unwrap_err().to_string();
    assert!(msg.contains("table-02.sxt"), "{msg}");
    // Queries never return a wrong answer: either an error or the truth.
    let set: BTreeSet<u64> = fps.iter().copied().collect();
    for &q in fps.iter().step_by(50) {
        if let Ok(got) = idx.near(q, 3) {
            assert_eq!(got, brute(&set, q, 3));
        }
    }
    // A missing table and a missing manifest give clear errors.
    std::fs::remove_file(&t2).unwrap();
    assert!(
        Index::open(&p)
            .unwrap_err()
            .to_string()
            .contains("table-02.sxt")
    );
    std::fs::remove_file(p.join("MANIFEST")).unwrap();
    let msg = Index::open(&p).unwrap_err().to_string();
    assert!(msg.contains("not a simdex index"), "{msg}");
}

#[test]
fn gap_codec_indexes_match_brute_force() {
    let fps = planted(1500, 3, 21);
    for design in ["10", "m2c1r1"] {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("idx");
        let opts = BuildOptions::default()
            .with_design(DesignChoice::Named(design.into()))
            .with_block_size(Some(256))
            .with_codec(simdex::codec::Codec::Gap);
        index::build(&p, fps.iter().map(|&x| Ok(x)), &opts).unwrap();
        let idx = Index::open(&p).unwrap();
        assert!(
            idx.tables()
                .iter()
                .all(|t| t.codec() == simdex::codec::Codec::Gap)
        );
        assert_eq!(idx.codec(), simdex::codec::Codec::Gap);
        check(&idx, &fps, 5);
    }
}

#[cfg(unix)]
#[test]
fn index_files_get_ordinary_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("idx");
    index::build(
        &p,
        [1u64, 2, 3].into_iter().map(Ok),
        &BuildOptions::default(),
    )
    .unwrap();
    // Readable by others, as File::create and create_dir make them under the usual umask
    // (the test checks the bits the umask cannot add, not the exact mode).
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&p) & 0o700, 0o700);
    for e in std::fs::read_dir(&p).unwrap() {
        let m = mode(&e.unwrap().path());
        assert_eq!(m & 0o600, 0o600);
        assert_ne!(
            m, 0o600,
            "index files must not be owner-only like temporary files"
        );
    }
}
