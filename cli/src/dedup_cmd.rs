//! `simdex dedup`: every near-duplicate pair (or cluster) of a corpus.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use simdex::{Error, Result};

use crate::docs::*;

/// Arguments of `simdex dedup`.
#[derive(clap::Args)]
pub struct DedupArgs {
    #[command(flatten)]
    pub docs: DocArgs,
    /// Largest distance of a near-duplicate pair (0..=7).
    #[arg(long, default_value_t = 3)]
    pub k: u32,
    /// One line per cluster (connected component of near-duplicate pairs, 2+ documents) instead
    /// of one line per pair.
    #[arg(long)]
    pub clusters: bool,
    /// Output file (written atomically); standard output if absent.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Memory budget of the index build.
    #[arg(long, default_value = "1G", value_parser = crate::util::parse_size)]
    pub mem: u64,
}

fn find(parent: &mut [u32], mut x: u32) -> u32 {
    while parent[x as usize] != x {
        parent[x as usize] = parent[parent[x as usize] as usize];
        x = parent[x as usize];
    }
    x
}

/// Run `dedup`: every near-duplicate pair `id_a<TAB>id_b<TAB>distance` (input order), or the
/// clusters.
pub fn dedup(a: DedupArgs) -> Result<()> {
    if a.k > 7 {
        return Err(Error::InvalidArgument(format!(
            "k = {} is not in 0..=7",
            a.k
        )));
    }
    let mut fps = Vec::new();
    let mut ids = Vec::new();
    let mut featureless = 0u64;
    // Documents without any feature (empty, punctuation only) all hash to 0 and would all pair
    // with each other: they take no part (counted in the summary).
    let (_, bad) = for_each_doc(&a.docs, |fp, d| {
        match fp {
            Some(fp) => {
                fps.push(fp);
                ids.push(d.id.clone());
            }
            None => featureless += 1,
        }
        Ok(())
    })?;
    // Documents by fingerprint; pairs of distinct fingerprints from the index self-join.
    let mut groups: HashMap<u64, Vec<u32>> = HashMap::new();
    for (i, &fp) in fps.iter().enumerate() {
        groups.entry(fp).or_default().push(i as u32);
    }
    let tmp = match &a.out {
        Some(p) => p
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf),
        None => std::env::temp_dir(),
    };
    let joined = simdex::index::self_join(
        &fps,
        a.k,
        &tmp,
        a.mem,
        &crate::progress::handle(!a.docs.quiet),
    )?;
    // Pairs mode lists every pair (quadratic in the size of a group of equal fingerprints);
    // clusters mode only unions groups, so large duplicate groups cost nothing extra.
    let mut pairs: Vec<(u32, u32, u32)> = Vec::new();
    let mut parent: Vec<u32> = (0..fps.len() as u32).collect();
    let mut union = |i: u32, j: u32| {
        let (ri, rj) = (find(&mut parent, i), find(&mut parent, j));
        if ri != rj {
            parent[ri.max(rj) as usize] = ri.min(rj);
        }
    };
    if a.clusters {
        for g in groups.values() {
            for &j in &g[1..] {
                union(g[0], j);
            }
        }
        for p in &joined {
            union(groups[&p.batch][0], groups[&p.stored][0]);
        }
    }
    for g in groups.values().filter(|_| !a.clusters) {
        for (x, &i) in g.iter().enumerate() {
            for &j in &g[x + 1..] {
                pairs.push((i, j, 0));
            }
        }
    }
    for p in joined.iter().filter(|_| !a.clusters) {
        for &i in &groups[&p.batch] {
            for &j in &groups[&p.stored] {
                pairs.push((i.min(j), i.max(j), p.distance));
            }
        }
    }
    pairs.sort_unstable();
    let mut text = String::new();
    use std::fmt::Write as _;
    if a.clusters {
        let mut clusters: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for i in 0..fps.len() as u32 {
            let r = find(&mut parent, i);
            clusters.entry(r).or_default().push(i);
        }
        for members in clusters.values().filter(|m| m.len() > 1) {
            let line: Vec<&str> = members.iter().map(|&i| ids[i as usize].as_str()).collect();
            let _ = writeln!(text, "{}", line.join("\t"));
        }
    } else {
        for &(i, j, d) in &pairs {
            let _ = writeln!(text, "{}\t{}\t{d}", ids[i as usize], ids[j as usize]);
        }
    }
    match &a.out {
        Some(p) => crate::output::write_output(p, |w| {
            w.write_all(text.as_bytes())
                .map_err(|e| Error::io(p.clone(), "write", e))
        })?,
        None => {
            let mut w = crate::util::stdout();
            w.write_all(text.as_bytes()).map_err(crate::util::out_err)?;
            crate::util::flush(&mut w)?;
        }
    }
    if !a.docs.quiet {
        eprintln!(
            "{} documents, {} distinct fingerprints, {} near-duplicate pairs within k = {}{}{}",
            fps.len() as u64 + featureless,
            groups.len(),
            groups
                .values()
                .map(|g| (g.len() * (g.len() - 1) / 2) as u64)
                .sum::<u64>()
                + joined
                    .iter()
                    .map(|p| (groups[&p.batch].len() * groups[&p.stored].len()) as u64)
                    .sum::<u64>(),
            a.k,
            if featureless > 0 {
                format!("; {featureless} documents without any word left out")
            } else {
                String::new()
            },
            if bad > 0 {
                format!("; skipped {bad} bad lines")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}
