//! Simhash: golden vectors (format-spec/simhash.md), stability under small edits, distance
//! between unrelated texts, Chinese and Spanish, HTML.

use simdex::sample::splitmix64;
use simdex::simhash::{SimhashOptions, Simhasher, simhash_weighted};

const VOCAB: &str = "the of and to in a is that for it as was with be by on not he i this are or his \
    from at which but have an they you were her she there been one all we their has would when if \
    so no will more can about said what out up them some into only other time new could these two \
    may first then do any like my now over such our man me even most made after also did many off \
    before must well back through years much where your way down should because each just those \
    people how too little state good very make world still own see men work long get here between \
    both life being under never day same another know while last might us great old year come \
    since against go came right used take three";

/// A deterministic text of `n` words from a 200-word vocabulary.
fn text(n: usize, seed: u64) -> Vec<&'static str> {
    let vocab: Vec<&str> = VOCAB.split_whitespace().collect();
    let mut s = seed;
    (0..n)
        .map(|_| vocab[(splitmix64(&mut s) % vocab.len() as u64) as usize])
        .collect()
}

fn hasher(shingle: usize) -> Simhasher {
    Simhasher::new(
        SimhashOptions::default()
            .with_shingle(shingle)
            .with_weights(None),
    )
    .unwrap()
}

/// One word changed in a 500-word text: the default (2-shingles) stays within 3 bits for at
/// least 45 of 50 texts (47 when measured) and never beyond 6; single words are steadier.
/// Simhash is a random projection, so "always within 3" cannot be promised for every text.
#[test]
fn one_word_changed_in_500_stays_within_3_bits() {
    for (shingle, min_within3, max) in [(1usize, 50, 3), (2, 45, 6)] {
        let h = hasher(shingle);
        let mut dists = Vec::new();
        for seed in 0..50u64 {
            let words = text(500, seed);
            let a = h.hash_text(&words.join(" "));
            let mut edited = words.clone();
            edited[(seed as usize * 37) % 500] = "zyzzyva";
            let b = h.hash_text(&edited.join(" "));
            dists.push((a ^ b).count_ones());
        }
        let within3 = dists.iter().filter(|&&d| d <= 3).count();
        assert!(within3 >= min_within3, "shingle {shingle}: {dists:?}");
        assert!(
            dists.iter().all(|&d| d <= max),
            "shingle {shingle}: {dists:?}"
        );
    }
    assert_eq!(simdex::simhash::DEFAULT_SHINGLE, 2);
}

#[test]
fn unrelated_texts_are_far_apart() {
    let h = Simhasher::default();
    let fps: Vec<u64> = (0..40u64)
        .map(|s| h.hash_text(&text(300, 1000 + s).join(" ")))
        .collect();
    let mut dists = Vec::new();
    for i in 0..fps.len() {
        for j in i + 1..fps.len() {
            dists.push((fps[i] ^ fps[j]).count_ones());
        }
    }
    let mean = dists.iter().sum::<u32>() as f64 / dists.len() as f64;
    assert!((28.0..36.0).contains(&mean), "mean distance {mean}");
    assert!(dists.iter().all(|&d| d > 10), "{:?}", dists.iter().min());
}

const ZH_A: &str = "近日，国家统计局发布了最新的经济数据。数据显示，今年前三季度国内生产总值同比增长百分之五，\
    消费市场持续回暖，就业形势总体稳定。专家认为，随着一系列政策措施落地见效，经济运行有望保持平稳。\
    与此同时，新能源汽车产量大幅增长，服务业恢复势头良好，居民收入稳步提高。";
const ZH_B: &str = "春天来了，公园里的花都开了。孩子们在草地上放风筝，老人们在湖边散步聊天。\
    一阵微风吹过，柳枝轻轻摇摆，空气中弥漫着淡淡的花香。傍晚时分，夕阳把天空染成了橘红色，\
    人们三三两两地回家，准备享用丰盛的晚餐。";
const ES_A: &str = "El Instituto Nacional de Estadística publicó hoy los datos del tercer trimestre. \
    Según el informe, la economía creció un dos por ciento respecto al año anterior, impulsada por \
    el consumo de los hogares y el turismo. El desempleo bajó ligeramente y los salarios subieron.";
const ES_B: &str = "La primavera llegó al pueblo con lluvias suaves y días más largos. Los niños \
    juegan en la plaza mientras los mayores conversan a la sombra de los árboles. Por la tarde, el \
    olor del pan recién hecho sale de la panadería y llena las calles estrechas.";

#[test]
fn chinese_and_spanish_fingerprint_sensibly() {
    let h = Simhasher::default();
    for (a, b, edit) in [
        (
            ZH_A,
            ZH_B,
            ZH_A.replace("百分之五", "百分之六").replace("。", "！"),
        ),
        (
            ES_A,
            ES_B,
            ES_A.replace("dos por ciento", "tres por ciento")
                .replace('.', ";"),
        ),
    ] {
        let (fa, fb, fe) = (h.hash_text(a), h.hash_text(b), h.hash_text(&edit));
        assert_ne!(fa, u64::MAX, "collapsed to all ones");
        assert_ne!(fa, 0);
        assert!(
            (fa ^ fe).count_ones() <= 8,
            "edit moved {} bits",
            (fa ^ fe).count_ones()
        );
        assert!(
            (fa ^ fb).count_ones() >= 16,
            "unrelated only {} bits apart",
            (fa ^ fb).count_ones()
        );
        // Mean bit balance: not stuck near all ones or all zeros.
        assert!((16..=48).contains(&fa.count_ones()), "{fa:016x}");
    }
    // Punctuation alone never changes a Chinese fingerprint.
    assert_eq!(
        h.hash_text(ZH_A),
        h.hash_text(&ZH_A.replace('。', "，").replace('，', ""))
    );
}

#[test]
fn html_is_fingerprinted_by_its_visible_text() {
    let h = Simhasher::default();
    let body = "<p>Near duplicate detection for web crawling, with &quot;simhash&quot;.</p>";
    let page_a = format!(
        "<html><head><title>A</title><script>track(1)</script></head><body><nav>Home</nav>{body}</body></html>"
    );
    let page_b = format!(
        "<html><head><title>B</title><style>p{{color:red}}</style></head><body><nav>Start</nav>{body}<div style='display:none'>ad</div></body></html>"
    );
    assert_eq!(h.hash_html(&page_a), h.hash_html(&page_b));
    assert_eq!(
        h.hash_html(&page_a),
        h.hash_text("Near duplicate detection for web crawling, with \"simhash\".")
    );
}

fn vectors_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("format-spec/vectors/simhash-v1.jsonl")
}

/// (text, shingle, html) of every golden vector.
fn vector_inputs() -> Vec<(&'static str, usize, bool)> {
    vec![
        ("", 2, false),
        ("  ¡¿ ... !? 。、 ", 2, false),
        ("Hello, World!", 2, false),
        ("hello world", 2, false),
        ("The quick brown fox jumps over the lazy dog.", 1, false),
        ("The quick brown fox jumps over the lazy dog.", 2, false),
        ("The quick brown fox jumps over the lazy dog.", 3, false),
        ("the the the the the", 2, false),
        ("ﬁne ＡＢＣ Straße", 2, false),
        ("中国人民银行今天发布公告。天气很好！", 2, false),
        ("中国人民银行今天发布公告，天气很好", 2, false),
        ("東京は日本の首都です。カタカナもあります。", 2, false),
        (
            "El rápido zorro marrón salta sobre el perro perezoso; ¿verdad?",
            2,
            false,
        ),
        ("ภาษาไทยเขียนติดกัน", 2, false),
        (
            "<html><head><title>x</title></head><body><nav>menu</nav><p>Caf&eacute; &amp; \
             <b>bi</b>stro</p><script>var a=1;</script><div hidden>no</div></body></html>",
            2,
            true,
        ),
        // HTML rule 2: site boilerplate (header, footer, aside, landmark roles) is dropped.
        (
            "<html><body><header role=\"banner\">Site</header><div role=\"navigation\">Home \
             About</div><main><p>The article text</p></main><aside>Related</aside><footer>\
             Copyright</footer></body></html>",
            2,
            true,
        ),
    ]
}

#[test]
fn golden_vectors() {
    let path = vectors_path();
    let computed: Vec<serde_json::Value> = vector_inputs()
        .into_iter()
        .map(|(text, shingle, html)| {
            let h = hasher(shingle);
            let fp = if html {
                h.hash_html(text)
            } else {
                h.hash_text(text)
            };
            serde_json::json!({
                "text": text, "shingle": shingle, "html": html,
                "fingerprint": format!("{fp:016x}"),
            })
        })
        .collect();
    if std::env::var_os("SIMDEX_REGEN_VECTORS").is_some() {
        let body: String = computed.iter().map(|v| format!("{v}\n")).collect();
        std::fs::write(&path, body).unwrap();
    }
    let stored: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        stored, computed,
        "fingerprints changed: a format change needs a version bump"
    );
    let fp =
        |i: usize| u64::from_str_radix(computed[i]["fingerprint"].as_str().unwrap(), 16).unwrap();
    assert_eq!(fp(0), 0, "the empty document");
    assert_eq!(fp(1), 0, "punctuation only");
    assert_eq!(fp(2), fp(3), "case and punctuation do not matter");
    assert_eq!(
        fp(2),
        simdex::simhash::feature_hash("hello world"),
        "one feature: its hash"
    );
    assert_eq!(
        fp(9),
        fp(10),
        "Chinese punctuation does not break the fingerprint"
    );
    // The low-level entry point of the spec's worked example.
    assert_eq!(
        simhash_weighted([(0x0123_4567_89ab_cdef, 3), (0xfedc_ba98_7654_3210, 1)]),
        0x0123_4567_89ab_cdef
    );
}
