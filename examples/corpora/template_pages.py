"""Generate a template-heavy corpus (JSON Lines: {"id", "text"}) like the pages of one
documentation site: every page is a site template (header, a long navigation list, footer,
repeated section headings) around a small unique article; some articles appear twice, edited
and sometimes in a newer template version. Deterministic for a seed.

    python3 examples/corpora/template_pages.py --pages 5000 --seed 1 > pages.jsonl

The ground truth is not planted: `simdex calibrate` computes it exactly (word 3-shingle Jaccard),
so template siblings whose unique parts are small are near-duplicates too, as on real sites.
"""

import argparse
import json
import random


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--html", action="store_true", help="emit HTML pages (header/nav/footer elements)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    vocab = [f"w{i}" for i in range(30000)]
    weights = [1.0 / (i + 1) ** 1.1 for i in range(len(vocab))]

    def words(n: int) -> list[str]:
        return rng.choices(vocab, weights=weights, k=n)

    headings = ["Overview", "Parameters", "Returns", "Examples", "See also", "Notes", "Raises"]
    # Two versions of the site template: the second renames and adds navigation entries.
    nav_v1 = [" ".join(words(rng.randint(2, 5))) for _ in range(120)]
    nav_v2 = list(nav_v1)
    for i in rng.sample(range(len(nav_v2)), 12):
        nav_v2[i] = " ".join(words(rng.randint(2, 5)))
    nav_v2 += [" ".join(words(3)) for _ in range(10)]
    header = " ".join(words(25))
    footer = " ".join(words(60))

    def article() -> list[list[str]]:
        secs = []
        for h in rng.sample(headings, rng.randint(2, 5)):
            secs.append([h] + words(rng.randint(15, 160)))
        return secs

    def edit(secs: list[list[str]], rate: float) -> list[list[str]]:
        out = []
        for s in secs:
            s = list(s)
            for _ in range(max(1, int(len(s) * rate))):
                op = rng.random()
                i = rng.randrange(len(s))
                if op < 0.4:
                    s[i] = words(1)[0]
                elif op < 0.7:
                    s.insert(i, words(1)[0])
                elif len(s) > 2:
                    del s[i]
            out.append(s)
        return out

    def render(secs: list[list[str]], nav: list[str], title: str) -> str:
        if a.html:
            body = "".join(f"<h2>{s[0]}</h2><p>{' '.join(s[1:])}</p>" for s in secs)
            navs = "".join(f"<li>{n}</li>" for n in nav)
            return (f"<html><head><title>{title}</title></head><body><header>{header}</header>"
                    f"<nav><ul>{navs}</ul></nav><main><h1>{title}</h1>{body}</main>"
                    f"<footer>{footer}</footer></body></html>")
        body = "\n".join(s[0] + "\n" + " ".join(s[1:]) for s in secs)
        return f"{header}\n" + "\n".join(nav) + f"\n{title}\n{body}\n{footer}"

    n = 0
    while n < a.pages:
        title = " ".join(words(3))
        secs = article()
        nav = nav_v1 if rng.random() < 0.7 else nav_v2
        print(json.dumps({"id": f"p{n}", "text": render(secs, nav, title)}))
        n += 1
        if rng.random() < 0.2 and n < a.pages:
            # A second copy: lightly edited, and a third of the time in the other template.
            copy_nav = nav if rng.random() < 0.67 else (nav_v2 if nav is nav_v1 else nav_v1)
            print(json.dumps({"id": f"p{n}", "text": render(edit(secs, rng.choice([0.0, 0.01, 0.03, 0.08])), copy_nav, title)}))
            n += 1


if __name__ == "__main__":
    main()
