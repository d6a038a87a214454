//! Two builds of simdex in one process, timed in turns on the same queries (`run.sh` builds
//! it; not a workspace target). This 2-core VM's speed moves by up to 2x between runs and
//! within one, so separate processes of two builds compare badly; here each round times
//! build A and build B back to back on the same batch of queries (their order alternating),
//! and the ratio B/A is taken over each pair of rounds, one in each order.
//!
//! usage: ab-harness INDEX QUERIES.u64 BATCH ROUNDS MODE   (MODE: many | near)
//!
//! INDEX may be `DIR_A,DIR_B`: A opens the first, B the second (two builds of the same keys
//! in two layouts, such as a format only B reads).
//!
//! Both indexes are opened (and populated: every page read, every block's crc checked) on all
//! the cores the process may use, then the rounds run on one thread, pinned to core `AB_PIN`
//! where that is set: at 1B keys a one-thread open would cost ~12 s an index. With
//! `AB_B_IN_MEMORY` set, B reads its index into memory (`Index::open_in_memory`: huge pages
//! where the kernel allows) instead of mapping it.

use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() != 6 {
        eprintln!("usage: ab-harness INDEX QUERIES.u64 BATCH ROUNDS many|near");
        std::process::exit(2);
    }
    let mode = a[5].as_str();
    let (dir_a, dir_b) = a[1].split_once(',').unwrap_or((&a[1], &a[1]));
    let bytes = std::fs::read(&a[2]).expect("query file");
    let qs: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let n: usize = a[3].parse().expect("BATCH");
    let rounds: usize = a[4].parse().expect("ROUNDS");
    assert!(n > 0 && n < qs.len(), "BATCH must be below the query count");
    assert!(
        rounds >= 2,
        "ROUNDS must be at least 2 (a pair: one in each order)"
    );
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let open_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(cores)
        .build()
        .expect("open pool");
    let t = Instant::now();
    let ia = open_pool.install(|| {
        simdex_a::Index::open_with(
            dir_a,
            &simdex_a::index::OpenOptions::default().with_populate(true),
        )
        .expect("open A")
    });
    if std::env::var_os("AB_B_IN_MEMORY").is_some() {
        let ib = open_pool
            .install(|| simdex_b::Index::open_in_memory(dir_b))
            .expect("open B in memory");
        return time_pinned(open_pool, cores, t, || {
            rounds_of(&ia, &ib, &a, &qs, n, rounds, mode)
        });
    }
    let ib = open_pool.install(|| {
        simdex_b::Index::open_with(
            dir_b,
            &simdex_b::index::OpenOptions::default().with_populate(true),
        )
        .expect("open B")
    });
    time_pinned(open_pool, cores, t, || {
        rounds_of(&ia, &ib, &a, &qs, n, rounds, mode)
    });
}

/// Close the pool both indexes were opened on (`t`: when the opening started), then pin
/// (`AB_PIN`) and run the timed `rounds` on one thread.
fn time_pinned(
    open_pool: rayon::ThreadPool,
    cores: usize,
    t: Instant,
    rounds: impl FnOnce() + Send,
) {
    drop(open_pool);
    eprintln!(
        "opened both on {cores} threads in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    // How much of the process the kernel holds in huge pages (B in memory asks for them).
    if let Ok(s) = std::fs::read_to_string("/proc/self/smaps_rollup") {
        for l in s.lines().filter(|l| {
            ["Rss", "AnonHuge", "FilePmd"]
                .iter()
                .any(|k| l.starts_with(k))
        }) {
            eprintln!("  {}", l.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    if let Some(core) = std::env::var("AB_PIN")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
    {
        // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET writes inside it.
        let ok = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(core, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
        };
        assert!(ok, "AB_PIN={core}: sched_setaffinity failed");
    }
    // Built after pinning, so that its one worker inherits the pin.
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("query pool");
    one.install(rounds);
}

/// Time `rounds` rounds of `n` queries on A and B in turns and print the medians.
fn rounds_of<DA: AsRef<[u8]> + Sync, DB: AsRef<[u8]> + Sync>(
    ia: &simdex_a::Index<DA>,
    ib: &simdex_b::Index<DB>,
    a: &[String],
    qs: &[u64],
    n: usize,
    rounds: usize,
    mode: &str,
) {
    let run_a = |q: &[u64]| -> usize {
        match mode {
            "near" => q.iter().map(|&f| ia.near(f, 3).unwrap().len()).sum(),
            _ => ia.near_many(q, 3).unwrap().iter().map(|m| m.len()).sum(),
        }
    };
    let run_b = |q: &[u64]| -> usize {
        match mode {
            "near" => q.iter().map(|&f| ib.near(f, 3).unwrap().len()).sum(),
            _ => ib.near_many(q, 3).unwrap().iter().map(|m| m.len()).sum(),
        }
    };
    let (mut ta, mut tb, mut ratio) = (vec![], vec![], vec![]);
    let mut off = 0;
    // Round 0 warms both up and is not counted.
    for r in 0..=rounds {
        let q = &qs[off..off + n];
        off = (off + n) % (qs.len() - n);
        let time = |f: &dyn Fn(&[u64]) -> usize| {
            let t = Instant::now();
            let found = f(q);
            (t.elapsed().as_secs_f64() * 1e6 / n as f64, found)
        };
        let ((a, fa), (b, fb)) = if r % 2 == 0 {
            let x = time(&run_a);
            (x, time(&run_b))
        } else {
            let y = time(&run_b);
            (time(&run_a), y)
        };
        assert_eq!(
            fa, fb,
            "A and B found different numbers of matches in round {r}"
        );
        if r > 0 {
            ta.push(a);
            tb.push(b);
            ratio.push(b / a);
        }
    }
    // The build timed second in a round reads what the first just brought into the caches
    // (the same queries, and at 100M keys the same page-cache pages: both open one index):
    // 1-6% faster at 100M in runs of one build against itself. Rounds alternate the order, so
    // each pair of rounds holds one of each: their geometric mean cancels the order's share.
    let mut paired: Vec<f64> = ratio
        .chunks_exact(2)
        .map(|p| (p[0] * p[1]).sqrt())
        .collect();
    let (mut b_first, mut a_first): (Vec<f64>, Vec<f64>) = (
        ratio.iter().step_by(2).copied().collect(),
        ratio.iter().skip(1).step_by(2).copied().collect(),
    );
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (min_a, min_b) = (
        ta.iter().copied().fold(f64::MAX, f64::min),
        tb.iter().copied().fold(f64::MAX, f64::min),
    );
    println!(
        "{} {mode}: µs/query A median {:.3} (min {min_a:.3}), B median {:.3} (min {min_b:.3}); B/A by pair of rounds (one in each order): median {:.3} (B first {:.3}, A first {:.3})",
        a[1],
        med(&mut ta),
        med(&mut tb),
        med(&mut paired),
        med(&mut b_first),
        med(&mut a_first),
    );
}
