//! Crafted manifests with a correct crc (a hostile user recomputes it) over real tables: every
//! one is refused on open with a clear error, none aborts or answers short. And designs over
//! the budget are refused before anything is built.

use simdex::index::{self, BuildOptions, DesignChoice};
use simdex::{Design, Error, Index};

fn index_dir() -> (tempfile::TempDir, Vec<u8>, Vec<Vec<u8>>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let fps: Vec<u64> = (0..500u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .collect();
    let opts = BuildOptions::default().with_design(DesignChoice::Named("4".into()));
    index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
    let manifest = std::fs::read(path.join("MANIFEST")).unwrap();
    let tables = (0..4)
        .map(|i| std::fs::read(path.join(format!("table-{i:02}.sxt"))).unwrap())
        .collect();
    (dir, manifest, tables)
}

/// The manifest with `edit` applied to its body and the crc line recomputed.
fn resealed(manifest: &[u8], edit: impl Fn(&str) -> String) -> Vec<u8> {
    let text = std::str::from_utf8(manifest).unwrap();
    let body = &text[..text.rfind("crc32 ").unwrap()];
    simdex::sealed::seal(edit(body)).into_bytes()
}

#[test]
fn crafted_manifests_are_refused() {
    let (_dir, manifest, tables) = index_dir();
    // Sanity: the untouched manifest, resealed, opens.
    Index::from_parts(&resealed(&manifest, |b| b.to_string()), tables.clone()).unwrap();
    type Edit = Box<dyn Fn(&str) -> String>;
    let cases: [(&str, Edit); 5] = [
        // A radius that would enumerate C(64, <=40) probes (aborted on a 4 GiB allocation).
        (
            "radius",
            Box::new(|b: &str| {
                b.replace("radius 0", "radius 3")
                    .replace("k 3", "k 7")
                    .replace("radius 3", "radius 7")
            }),
        ),
        // k = 2^32 + 3 once read as 3.
        (
            "k",
            Box::new(|b: &str| b.replace("k 3\n", "k 4294967299\n")),
        ),
        // A design that does not cover its k: claim k = 4 for the paper's 4-table design.
        ("not exact", Box::new(|b: &str| b.replace("k 3\n", "k 4\n"))),
        // More tables than the budget.
        (
            "tables",
            Box::new(|b: &str| b.replace("tables 4\n", "tables 100000\n")),
        ),
        // A block size that does not fit u32.
        (
            "block-size",
            Box::new(|b: &str| {
                let at = b.find("block-size ").unwrap();
                let end = at + b[at..].find('\n').unwrap();
                format!("{}block-size 4294967424{}", &b[..at], &b[end..])
            }),
        ),
    ];
    for (what, edit) in cases {
        let m = resealed(&manifest, edit);
        let err = Index::from_parts(&m, tables.clone()).err();
        assert!(
            matches!(err, Some(Error::Corrupt { .. })),
            "{what}: expected a corruption error, got {err:?}"
        );
    }
}

#[test]
fn designs_over_the_budget_are_refused_before_building() {
    for (name, k) in [("m64c32r3", 3), ("m40c37r0", 3), ("m1c1r7", 7)] {
        let err = Design::by_name(name, k).unwrap_err().to_string();
        assert!(err.contains("budget"), "{name}: {err}");
    }
    // The paper's designs and the automatic ones stay within it.
    for name in ["20", "16", "10", "4"] {
        Design::by_name(name, 3).unwrap();
    }
    for k in 0..=7 {
        for n in [1_000u64, 1_000_000_000, 8_000_000_000] {
            let d = Design::auto(n, k).unwrap();
            assert!(
                d.probes_per_query() <= simdex::design::MAX_PROBES,
                "{}",
                d.name()
            );
        }
    }
}

/// Tables open in parallel, yet with several tables damaged the error always names the first
/// of them, as a sequential open would.
#[test]
fn with_several_tables_damaged_the_first_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("idx");
    let fps = simdex::sample::random(20_000, 3);
    let opts = BuildOptions::default().with_design(DesignChoice::Named("10".into()));
    index::build(&path, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
    for t in [3, 7, 9] {
        // The last byte before the trailer is the footer's: its crc no longer matches.
        let f = path.join(format!("table-{t:02}.sxt"));
        let mut b = std::fs::read(&f).unwrap();
        let n = b.len();
        b[n - 40] ^= 0x10;
        std::fs::write(&f, b).unwrap();
    }
    for _ in 0..32 {
        let e = Index::open(&path).unwrap_err().to_string();
        assert!(e.contains("table-03.sxt"), "{e}");
    }
}
