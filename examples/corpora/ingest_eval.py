"""Precision and recall of `simdex ingest` against exact word 3-shingle Jaccard (docs/log/benchmarks.md,
"Documents in the store").

    simdex ingest st --jsonl pages.jsonl --verify jaccard:0.9 > ingest.tsv
    simdex dedup --jsonl pages.jsonl --verify jaccard:0.9 --candidate-k 16 > truth.tsv
    python3 examples/corpora/ingest_eval.py pages.jsonl ingest.tsv truth.tsv

Precision: of the reported documents, the share whose exact Jaccard with the reported match is
at least 0.85. Recall: of the documents that have an earlier document at exact Jaccard >= 0.95
(pairs of the truth file), the share reported. Words are lowercase runs of word characters,
which equals simdex's tokens on generated corpora (words like "w123").
"""

import json
import re
import sys


def main() -> None:
    corpus, reported_path, truth_path = sys.argv[1:4]
    ids, texts = [], []
    with open(corpus) as f:
        for line in f:
            o = json.loads(line)
            ids.append(str(o["id"]))
            texts.append(o["text"])
    pos = {d: i for i, d in enumerate(ids)}
    sets: dict[int, set[str]] = {}

    def shingles(i: int) -> set[str]:
        if i not in sets:
            w = re.findall(r"\w+", texts[i].lower())
            sets[i] = {" ".join(w[j : j + 3]) for j in range(max(1, len(w) - 2))}
        return sets[i]

    def jaccard(a: int, b: int) -> float:
        x, y = shingles(a), shingles(b)
        return len(x & y) / len(x | y) if x | y else 0.0

    with open(reported_path) as f:
        reported = [line.rstrip("\n").split("\t") for line in f]
    good = sum(jaccard(pos[a], pos[b]) >= 0.85 for a, b, _ in reported)
    print(f"reported {len(reported)}, precision(J>=0.85) {good / max(1, len(reported)):.4f}")
    flagged = {pos[a] for a, _, _ in reported}
    need = set()
    with open(truth_path) as f:
        for line in f:
            a, b, _, j = line.rstrip("\n").split("\t")
            if float(j) >= 0.95:
                need.add(max(pos[a], pos[b]))
    print(f"docs with an earlier doc at J>=0.95: {len(need)}, "
          f"reported {len(need & flagged) / max(1, len(need)):.4f}")


if __name__ == "__main__":
    main()
