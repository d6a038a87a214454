#!/usr/bin/env python3
"""Generate include/simdex.h from the crate's Rust source (the cbindgen subset this crate uses).

    python3 bindings/c/gen_header.py          # write include/simdex.h
    python3 bindings/c/gen_header.py --check  # fail if it differs from the source (CI)

What it reads, and what it writes for it (doc comments become C comments):
  pub type NAME = T;                          typedef T NAME;
  pub const SIMDEX_X: T = V;                  #define SIMDEX_X V
  #[repr(C)] pub struct NAME { pub f: T, }    typedef struct NAME { T f; } NAME;
  pub struct NAME { .. }  (no repr(C))        typedef struct NAME NAME;  (an opaque handle)
  pub [unsafe] extern "C" fn NAME(a: T) -> R  R NAME(T a);
The source's own style is the grammar: one item per line start, fields and parameters one per
line as rustfmt writes them. Anything else is an error, so the header never silently lacks a
function.
"""
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Sections in the order a reader meets them.
FILES = ["ffi.rs", "results.rs", "index.rs", "store_options.rs", "store.rs", "store_docs.rs"]
HEADER = HERE / "include" / "simdex.h"

SCALARS = {
    "i32": "int32_t", "u32": "uint32_t", "i64": "int64_t", "u64": "uint64_t",
    "usize": "size_t", "f64": "double", "c_char": "char", "u8": "uint8_t",
}
CONSTS = {"u32::MAX": "UINT32_MAX", "u64::MAX": "UINT64_MAX"}


def ctype(t: str) -> str:
    t = t.strip()
    for kw, const in (("*const ", True), ("*mut ", False)):
        if t.startswith(kw):
            inner = t[len(kw):].strip()
            base = ctype(inner)
            if inner.startswith("*"):
                return base + ("*" if not const else " const *")
            return ("const " if const else "") + base + " *"
    if t in SCALARS:
        return SCALARS[t]
    if re.fullmatch(r"simdex_\w+", t):
        return t
    raise SystemExit(f"gen_header: no C type for Rust type {t!r}")


def decl(ty: str, name: str) -> str:
    c = ctype(ty)
    return f"{c}{name}" if c.endswith("*") else f"{c} {name}"


def comment(doc: list[str], indent: str = "") -> list[str]:
    if not doc:
        return []
    if len(doc) == 1:
        return [f"{indent}/* {doc[0]} */"]
    return [f"{indent}/*"] + [f"{indent} * {d}".rstrip() for d in doc] + [f"{indent} */"]


def parse(path: Path):
    """(module doc, opaque names, C blocks) of one source file."""
    lines = path.read_text().splitlines()
    module_doc, opaque, blocks, doc = [], [], [], []
    repr_c = False
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        i += 1
        if line.startswith("//!"):
            module_doc.append(line[4:].rstrip())
            continue
        if line.startswith("///"):
            doc.append(line[4:].rstrip())
            continue
        if line == "#[repr(C)]":
            repr_c = True
            continue
        if line.startswith("#["):
            continue
        m = re.match(r"pub type (simdex_\w+) = (.+);$", line)
        if m:
            blocks.append(comment(doc) + [f"typedef {ctype(m[2])} {m[1]};"])
        elif m := re.match(r"pub const (SIMDEX_\w+): \w+ = (.+);$", line):
            value = CONSTS.get(m[2], m[2].replace("_", ""))
            blocks.append(comment(doc) + [f"#define {m[1]} {value}"])
        elif m := re.match(r"pub struct (simdex_\w+) \{$", line):
            fields, fdoc = [], []
            while (f := lines[i].strip()) != "}":
                i += 1
                if f.startswith("///"):
                    fdoc.append(f[3:].strip())
                elif fm := re.match(r"pub (\w+): (.+),$", f):
                    fields += comment(fdoc, "    ") + [f"    {decl(fm[2], fm[1])};"]
                    fdoc = []
                elif repr_c:
                    raise SystemExit(f"gen_header: {path.name}:{i}: private field {f!r}")
            i += 1
            if repr_c:
                blocks.append(comment(doc) + [f"typedef struct {m[1]} {{"] + fields
                              + [f"}} {m[1]};"])
            else:
                opaque.append(comment(doc) + [f"typedef struct {m[1]} {m[1]};"])
        elif m := re.match(r'pub (?:unsafe )?extern "C" fn (simdex_\w+)\((.*)$', line):
            sig = m[2]
            while not re.search(r"\{$", sig):
                sig += " " + lines[i].strip()
                i += 1
            sm = re.fullmatch(r"(.*)\)\s*(?:->\s*(.+?))?\s*\{", sig.strip())
            if not sm:
                raise SystemExit(f"gen_header: {path.name}:{i}: cannot read {sig!r}")
            params = [p.strip() for p in sm[1].split(",") if p.strip()]
            cparams = []
            for p in params:
                pn, pt = p.split(":", 1)
                cparams.append(decl(pt, pn.strip()))
            ret = ctype(sm[2]) if sm[2] else "void"
            head = f"{ret} {m[1]}(" if not ret.endswith("*") else f"{ret}{m[1]}("
            if not cparams:
                body = [head + "void);"]
            elif len(head) + sum(len(c) + 2 for c in cparams) <= 100:
                body = [head + ", ".join(cparams) + ");"]
            else:
                body = [head] + [f"    {c}," for c in cparams[:-1]] + [f"    {cparams[-1]});"]
            blocks.append(comment(doc) + body)
        elif re.match(r"pub .*(fn|struct|const|type|enum|static) simdex_", line, re.I) or \
                re.match(r"pub (const|static) SIMDEX_", line):
            raise SystemExit(f"gen_header: {path.name}:{i}: cannot read {line!r}")
        if not line.startswith("#["):
            repr_c = False
        doc = []
    return module_doc, opaque, blocks


def generate() -> str:
    crate_doc, _, _ = parse(HERE / "src" / "lib.rs")
    out = [
        "/*",
        " * simdex.h: the C API of simdex, a storage engine for simhash fingerprints.",
        " *",
        " * Generated from bindings/c/src by bindings/c/gen_header.py: do not edit.",
        " *",
    ] + [f" * {d}".rstrip() for d in crate_doc] + [
        " */",
        "#ifndef SIMDEX_H",
        "#define SIMDEX_H",
        "",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
    ]
    parsed = [(f, parse(HERE / "src" / f)) for f in FILES]
    out += ["", "/* Handles. */", ""]
    for _, (_, opaque, _) in parsed:
        for o in opaque:
            out += o + [""]
    for f, (mdoc, _, blocks) in parsed:
        title = " ".join(mdoc).split(": ")[0].split("; ")[0].split(". ")[0].rstrip(".")
        out += ["", "/* " + "-" * 70, f" * {title}.", " */", ""]
        for b in blocks:
            out += b + [""]
    out += ["#ifdef __cplusplus", "}", "#endif", "", "#endif /* SIMDEX_H */", ""]
    return "\n".join(out)


def main() -> None:
    text = generate()
    if sys.argv[1:] == ["--check"]:
        if not HEADER.exists() or HEADER.read_text() != text:
            sys.exit(f"{HEADER} differs from the Rust source: run python3 {Path(__file__).name}")
        print(f"{HEADER.name} matches the source")
    elif sys.argv[1:]:
        sys.exit(__doc__)
    else:
        HEADER.write_text(text)
        print(f"wrote {HEADER}")


if __name__ == "__main__":
    main()
