//! Golden vectors (format-spec/vectors/): this build must decode every committed vector forever,
//! and its writer must reproduce each byte for byte. `SIMDEX_REGEN_VECTORS=1 cargo test --test
//! golden` rewrites them — only ever do that together with a format version bump.

use std::path::PathBuf;

use simdex::Permutation;
use simdex::codec::Codec;
use simdex::table::{self, Table, TableOptions};

struct Vector {
    name: &'static str,
    block_size: u32,
    permutation: Permutation,
    codec: Codec,
    /// Keys per segment: 0 for format 1, else a format-2 or format-3 table.
    segment_keys: u32,
    /// Format 4: the prefix bits its segments are aligned to (0: other formats).
    aligned_prefix: u32,
    /// Whether this build's writer still writes the vector's format (format 2 is read, and
    /// no longer written: segmented tables are written in format 3).
    written: bool,
}

fn vectors() -> Vec<Vector> {
    vec![
        Vector {
            name: "v1-empty",
            block_size: 128,
            permutation: Permutation::identity(),
            codec: Codec::HDelta,
            segment_keys: 0,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v1-one-key",
            block_size: 128,
            permutation: Permutation::identity(),
            codec: Codec::HDelta,
            segment_keys: 0,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v1-worked-example",
            block_size: 128,
            permutation: Permutation::identity(),
            codec: Codec::HDelta,
            segment_keys: 0,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v1-multi-block",
            block_size: 128,
            permutation: Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap(),
            codec: Codec::HDelta,
            segment_keys: 0,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v1-gap-worked-example",
            block_size: 128,
            permutation: Permutation::identity(),
            codec: Codec::Gap,
            segment_keys: 0,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v1-gap-multi-block",
            block_size: 128,
            permutation: Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap(),
            codec: Codec::Gap,
            segment_keys: 0,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v2-worked-example",
            block_size: 128,
            permutation: Permutation::identity(),
            codec: Codec::HDelta,
            segment_keys: 2,
            aligned_prefix: 0,
            written: false,
        },
        Vector {
            name: "v2-multi-block",
            block_size: 256,
            permutation: Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap(),
            codec: Codec::HDelta,
            segment_keys: 5,
            aligned_prefix: 0,
            written: false,
        },
        Vector {
            name: "v2-gap-multi-block",
            block_size: 256,
            permutation: Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap(),
            codec: Codec::Gap,
            segment_keys: 5,
            aligned_prefix: 0,
            written: false,
        },
        Vector {
            name: "v3-worked-example",
            block_size: 128,
            permutation: Permutation::identity(),
            codec: Codec::HDelta,
            segment_keys: 2,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v3-multi-block",
            block_size: 256,
            permutation: Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap(),
            codec: Codec::HDelta,
            segment_keys: 5,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v3-gap-multi-block",
            block_size: 256,
            permutation: Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap(),
            codec: Codec::Gap,
            segment_keys: 5,
            aligned_prefix: 0,
            written: true,
        },
        Vector {
            name: "v4-worked-example",
            block_size: 128,
            permutation: Permutation::identity(),
            codec: Codec::HDelta,
            segment_keys: 2,
            aligned_prefix: 4,
            written: true,
        },
        Vector {
            name: "v4-multi-block",
            block_size: 256,
            permutation: Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap(),
            codec: Codec::HDelta,
            segment_keys: 3,
            aligned_prefix: 4,
            written: true,
        },
        Vector {
            name: "v4-gap-multi-block",
            block_size: 256,
            permutation: Permutation::with_top(&(16..32).collect::<Vec<u8>>()).unwrap(),
            codec: Codec::Gap,
            segment_keys: 3,
            aligned_prefix: 4,
            written: true,
        },
    ]
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("format-spec/vectors")
}

/// Compare `bytes` with the vector file `name` (with `SIMDEX_REGEN_VECTORS` set, write it first).
fn check(name: &str, bytes: &[u8]) {
    let p = dir().join(name);
    if std::env::var_os("SIMDEX_REGEN_VECTORS").is_some() {
        std::fs::write(&p, bytes).unwrap();
    }
    assert_eq!(std::fs::read(&p).unwrap(), bytes, "{name}");
}

/// Log 0 holding one documents record that puts `doc` under id 0x1234 with fingerprint `fp`,
/// as a writer frames it: compared with the vector file `name`, and parsed back.
fn check_log_of_one_put(name: &str, fp: u64, doc: &simdex::store::DocMeta) {
    use simdex::store::wal;
    let rec = wal::Record::Docs(vec![wal::Put {
        fingerprint: fp,
        id: 0x1234,
        replaces: false,
        doc: doc.clone(),
        prefix: None,
    }]);
    let tmp = tempfile::tempdir().unwrap();
    let mut w = wal::LogWriter::create(tmp.path(), 0, &simdex::store::storage::OsStorage).unwrap();
    w.append(&rec).unwrap();
    let log = std::fs::read(w.path()).unwrap();
    check(name, &log);
    assert_eq!(wal::parse(&log, 0).unwrap().records, vec![rec]);
}

fn read_keys(name: &str) -> Vec<u64> {
    let text = std::fs::read_to_string(dir().join(format!("{name}.keys"))).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| u64::from_str_radix(l.trim(), 16).unwrap())
        .collect()
}

use simdex::sample::splitmix64 as splitmix;

/// The keys each vector was generated from (used only when regenerating).
fn source_keys(v: &Vector) -> Vec<u64> {
    let mut keys = match v.name {
        "v1-empty" => vec![],
        "v1-one-key" => vec![0x0123_4567_89AB_CDEF],
        "v1-worked-example"
        | "v1-gap-worked-example"
        | "v2-worked-example"
        | "v3-worked-example" => vec![
            0x1000_0000_0000_0000,
            0x1000_0000_0000_0001,
            0x1000_0000_0000_01A5,
            0x1A2B_3C4D_5E6F_7081,
            0x1A2B_3C4D_5E6F_70F0,
        ],
        // Two runs under the top 4 bits: the second starts a segment (format 4's alignment).
        "v4-worked-example" => vec![
            0x1000_0000_0000_0000,
            0x1000_0000_0000_0001,
            0x1000_0000_0000_01A5,
            0x2A2B_3C4D_5E6F_7081,
            0x2A2B_3C4D_5E6F_7090,
            0x2A2B_3C4D_5E6F_70F0,
        ],
        "v1-multi-block" | "v1-gap-multi-block" | "v2-multi-block" | "v2-gap-multi-block"
        | "v3-multi-block" | "v3-gap-multi-block" | "v4-multi-block" | "v4-gap-multi-block" => {
            let mut s = 7;
            (0..300)
                .map(|_| v.permutation.apply(splitmix(&mut s)))
                .collect()
        }
        _ => unreachable!(),
    };
    keys.sort_unstable();
    keys.dedup();
    keys
}

#[test]
fn golden_vectors_decode_and_reproduce() {
    let regen = std::env::var_os("SIMDEX_REGEN_VECTORS").is_some();
    for v in vectors() {
        let opts = TableOptions::default()
            .with_block_size(v.block_size)
            .with_permutation(v.permutation.clone())
            .with_codec(v.codec)
            .with_segment_keys(v.segment_keys)
            .with_aligned_prefix(v.aligned_prefix);
        let bin = dir().join(format!("{}.sxt", v.name));
        if regen && v.written {
            let keys = source_keys(&v);
            let segments = match (v.segment_keys, v.aligned_prefix) {
                (0, _) => String::new(),
                (s, 0) => format!(", {s} keys per segment"),
                (s, p) => format!(", segments of at least {s} keys aligned to {p} prefix bits"),
            };
            let mut txt = format!(
                "# {}: {} keys, block size {}{segments}, hex, ascending\n",
                v.name,
                keys.len(),
                v.block_size
            );
            for k in &keys {
                txt.push_str(&format!("{k:016x}\n"));
            }
            std::fs::write(dir().join(format!("{}.keys", v.name)), txt).unwrap();
            std::fs::write(&bin, table::build_bytes(&keys, &opts).unwrap()).unwrap();
        }
        let keys = read_keys(v.name);
        let bytes = std::fs::read(&bin).unwrap();
        let t = Table::from_bytes(bytes.as_slice()).unwrap();
        assert_eq!(
            t.iter().collect::<simdex::Result<Vec<_>>>().unwrap(),
            keys,
            "{}",
            v.name
        );
        assert_eq!(t.verify().unwrap().keys, keys.len() as u64);
        assert_eq!(t.permutation(), &v.permutation, "{}", v.name);
        assert_eq!(t.block_size(), v.block_size);
        assert_eq!(t.codec(), v.codec);
        assert_eq!(t.segment_keys(), v.segment_keys, "{}", v.name);
        assert_eq!(t.aligned_prefix(), v.aligned_prefix, "{}", v.name);
        assert_eq!(
            t.format_version(),
            v.name[1..2].parse::<u32>().unwrap(),
            "{}",
            v.name
        );
        if v.written {
            assert!(
                table::build_bytes(&keys, &opts).unwrap() == bytes,
                "{}: writer no longer reproduces the vector",
                v.name
            );
        }
    }
}

#[test]
fn golden_index_opens_answers_and_reproduces() {
    use simdex::index::{self, BuildOptions, DesignChoice};
    let vdir = dir().join("v1-index");
    let fps_path = dir().join("v1-index.fps");
    let opts = BuildOptions::default()
        .with_design(DesignChoice::Named("4".into()))
        .with_block_size(Some(128));
    if std::env::var_os("SIMDEX_REGEN_VECTORS").is_some() {
        let mut s = 11;
        let mut fps: Vec<u64> = (0..30).map(|_| splitmix(&mut s)).collect();
        // Near-duplicates at 1, 2, 3 and 4 bits, a duplicate, and the extremes.
        fps.extend([
            fps[0] ^ 1,
            fps[0] ^ 0x8000_0000_0000_0001,
            fps[0] ^ 0x0101_0000_0000_0100,
        ]);
        fps.extend([fps[1] ^ 0xF, fps[2], 0, u64::MAX, 1 << 63, 1, u64::MAX - 1]);
        let text: String = fps.iter().map(|f| format!("{f:016x}\n")).collect();
        std::fs::write(&fps_path, text).unwrap();
        let _ = std::fs::remove_dir_all(&vdir);
        index::build(&vdir, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
    }
    let fps: Vec<u64> = std::fs::read_to_string(&fps_path)
        .unwrap()
        .lines()
        .map(|l| u64::from_str_radix(l, 16).unwrap())
        .collect();
    let idx = simdex::Index::open(&vdir).unwrap();
    idx.verify().unwrap();
    for &q in &fps {
        let want: Vec<u64> = {
            let mut v: Vec<(u32, u64)> = fps
                .iter()
                .map(|&f| ((f ^ q).count_ones(), f))
                .filter(|&(d, _)| d <= 3)
                .collect();
            v.sort();
            v.dedup();
            v.into_iter().map(|(_, f)| f).collect()
        };
        let got: Vec<u64> = idx
            .near(q, 3)
            .unwrap()
            .iter()
            .map(|m| m.fingerprint)
            .collect();
        assert_eq!(got, want);
    }
    let tmp = tempfile::tempdir().unwrap();
    let rebuilt = tmp.path().join("i");
    index::build(&rebuilt, fps.iter().map(|&f| Ok(f)), &opts).unwrap();
    for e in std::fs::read_dir(&vdir).unwrap() {
        let name = e.unwrap().file_name();
        assert!(
            std::fs::read(vdir.join(&name)).unwrap() == std::fs::read(rebuilt.join(&name)).unwrap(),
            "{name:?} differs"
        );
    }
}

/// The store's worked examples (format-spec/store.md): the log and the id map, byte for byte.
#[test]
fn golden_store_log_and_id_map() {
    use simdex::store::{ids, wal};
    let log = std::fs::read(dir().join("v1-store.wal")).unwrap();
    let c = wal::parse(&log, 0).unwrap();
    let want = vec![
        wal::Record::Insert(vec![(0x0123_4567_89ab_cdef, 42)]),
        wal::Record::Delete(vec![42]),
    ];
    assert_eq!(c.records, want);
    assert_eq!((c.valid_len, c.torn_bytes), (96, 0));
    let tmp = tempfile::tempdir().unwrap();
    let mut w = wal::LogWriter::create(tmp.path(), 0, &simdex::store::storage::OsStorage).unwrap();
    for r in &want {
        w.append(r).unwrap();
    }
    assert_eq!(std::fs::read(w.path()).unwrap(), log);

    let map = std::fs::read(dir().join("v1-store.ids")).unwrap();
    let pairs = [(0x10, 7), (0x10, 9), (0x25, 3)];
    assert_eq!(ids::build_bytes(&pairs, 64).unwrap(), map);
    let m = ids::IdMap::from_bytes(&map[..]).unwrap();
    m.verify().unwrap();
    assert_eq!(m.ids_of(0x10).unwrap(), vec![7, 9]);
    assert_eq!(m.ids_of(0x25).unwrap(), vec![3]);
    assert_eq!((m.pairs(), m.fingerprints()), (3, 2));
}

/// The document store's files (format-spec/store.md, store format 2): a recipe, a document
/// map whose sketches are those of known texts, and a log with a documents record, each
/// decoded and rewritten byte for byte.
#[test]
fn golden_document_store_files() {
    use simdex::dedup::sketch::SketchShape;
    use simdex::dedup::verify::shingle_set;
    use simdex::store::{DocMeta, Recipe, docs};
    let texts = [
        "the quick brown fox jumps over the lazy dog",
        "the quick brown fox",
    ];
    let recipe = Recipe::learn(2, false, SketchShape::new(16, 4).unwrap(), texts).unwrap();
    check("v2-store.recipe", recipe.encode().as_bytes());
    assert_eq!(
        Recipe::decode(&std::fs::read(dir().join("v2-store.recipe")).unwrap()).unwrap(),
        recipe
    );
    let shape = recipe.sketch_shape();
    let sketch = |t: &str| -> std::sync::Arc<[u8]> { shape.sketch(&shingle_set(t, 3)).into() };
    assert_eq!(&*sketch(texts[0]), &recipe.hash(texts[0]).sketch[..]);
    let entries = vec![
        (
            7,
            DocMeta {
                key: None,
                sketch: sketch(texts[0]),
                set: None,
            },
        ),
        (
            0x1234,
            DocMeta {
                key: Some("https://example.org/".into()),
                sketch: sketch(texts[1]),
                set: None,
            },
        ),
    ];
    let map = docs::build_bytes(&entries, shape.bytes()).unwrap();
    check("v2-store.docs", &map);
    let m = docs::DocMap::from_bytes(&map[..]).unwrap();
    m.verify().unwrap();
    assert_eq!(m.get(0x1234).unwrap(), Some(entries[1].1.clone()));

    check_log_of_one_put(
        "v2-store.wal",
        recipe.hash(texts[1]).fingerprint.unwrap(),
        &entries[1].1,
    );
}

/// A store that verifies exactly (format-spec/store.md, "Exact verification"): its recipe
/// (version 2: the threshold and the shingle order learned from three texts), a document map
/// of version 2 with its shingle sets, and a log with a documents record of type 4, each
/// decoded and rewritten byte for byte.
#[test]
fn golden_exact_store_files() {
    use simdex::dedup::sketch::SketchShape;
    use simdex::dedup::verify::shingle_set;
    use simdex::store::{DocMeta, DocSet, Recipe, docs};
    let texts = [
        "the quick brown fox jumps over the lazy dog",
        "the quick brown fox",
        "a quick brown fox jumps",
    ];
    let recipe = Recipe::new(2, false, SketchShape::new(16, 4).unwrap(), None)
        .unwrap()
        .with_exact(Some(0.8))
        .unwrap()
        .learn_order(texts);
    check("v2-exact.recipe", recipe.encode().as_bytes());
    assert_eq!(
        Recipe::decode(&std::fs::read(dir().join("v2-exact.recipe")).unwrap()).unwrap(),
        recipe
    );
    let doc = |i: usize, key: Option<&str>, seq: u64| {
        let h = recipe.hash(texts[i]);
        assert_eq!(h.set.as_deref(), Some(&shingle_set(texts[i], 3)[..]));
        DocMeta {
            key: key.map(Into::into),
            sketch: h.sketch,
            set: Some(std::sync::Arc::new(DocSet {
                fingerprint: h.fingerprint.unwrap(),
                seq,
                // 2026-12-06 00:00:00 UTC, plus a second per seq.
                time: 1_796_515_200_000 + 1000 * seq,
                hashes: h.set.unwrap().into(),
            })),
        }
    };
    let entries = vec![
        (7, doc(0, None, 1)),
        (0x1234, doc(1, Some("https://example.org/"), 2)),
    ];
    let (map, sets) = docs::build_bytes_with_sets(&entries, 8).unwrap();
    check("v2-exact.docs", &map);
    check("v2-exact.sets", &sets);
    let m = docs::DocMap::from_bytes_with_sets(&map[..], Some(&sets[..])).unwrap();
    m.verify().unwrap();
    assert_eq!(m.max_seq(), 2);
    assert_eq!(m.sets_live(), sets.len() as u64 - 16);
    assert_eq!(m.get(0x1234).unwrap(), Some(entries[1].1.clone()));
    check_log_of_one_put(
        "v2-exact.wal",
        entries[1].1.set.as_ref().unwrap().fingerprint,
        &entries[1].1,
    );
}
