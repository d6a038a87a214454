#!/usr/bin/env python3
"""Near-duplicate dedup of a corpus on Apache Spark: the `simdex.spark` job as a file, for
`spark-submit` (every executor needs the simdex package: `pip install ./bindings/python[spark]`
on each node, or ship it with `--archives` as a packed virtual environment).

    spark-submit examples/spark/dedup.py corpus.jsonl --out dedup-out --pairs
    python3 examples/spark/dedup.py corpus.parquet --out dedup-out --master local[2]

Options: `python -m simdex.spark --help`.
"""
import sys

from simdex.spark.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
