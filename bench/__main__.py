"""``python -m bench [NAME ...]``: run the benchmarks (all by default) and print their tables.
``python -m bench NAME [OPTIONS]`` runs one with its options (``python -m bench NAME --help``
lists them); ``python -m bench --help`` lists the benchmarks.

Benchmarks measure speed and quality on this machine; tests never assert wall-clock limits.
"""
import ast
import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
USAGE = ("usage: python -m bench [-h] [NAME ...]\n"
         "       python -m bench NAME [OPTIONS]   (python -m bench NAME --help: its options)")


def benches() -> dict[str, str]:
    """Every benchmark's short name (``planning`` for ``bench_planning``) and the first line
    of its docstring, read without importing it (some import rclpy)."""
    out = {}
    for path in sorted(HERE.glob("bench_*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        para = " ".join(doc.strip().split("\n\n")[0].split())   # the first paragraph
        out[path.stem[len("bench_"):]] = para.split(". ")[0].rstrip(".") if para else ""
    return out


def usage() -> str:
    """The usage text with the list of benchmarks."""
    listed = benches()
    width = max(len(n) for n in listed)
    return "\n".join([USAGE, "", "Run the benchmarks (all by default) and print their tables.",
                      "", "benchmarks (NAME, or bench_NAME):"]
                     + [f"  {n.ljust(width)}  {d}" for n, d in listed.items()]
                     + ["", "options:", "  -h, --help  show this message and exit"])


def main(argv: list[str]) -> int:
    """Entry point; returns the exit status (2 on an unknown benchmark or misplaced options)."""
    if any(a in ("-h", "--help") for a in argv[:1]):
        print(usage())
        return 0
    first_opt = next((i for i, a in enumerate(argv) if a.startswith("-")), len(argv))
    names, options = argv[:first_opt], argv[first_opt:]
    known = benches()
    for name in names:
        short = name[len("bench_"):] if name.startswith("bench_") else name
        if short not in known:
            print(f"{USAGE}\npython -m bench: error: no benchmark {name!r}; choose from "
                  f"{', '.join(known)}", file=sys.stderr)
            return 2
    if options and len(names) != 1:
        print(f"{USAGE}\npython -m bench: error: options ({' '.join(options)}) need exactly "
              f"one benchmark NAME before them", file=sys.stderr)
        return 2
    status = 0
    for name in names or list(known):
        module = name if name.startswith("bench_") else f"bench_{name}"
        mod = importlib.import_module(f"bench.{module}")
        print(f"\n=== {mod.__name__} ===", flush=True)
        t0 = time.perf_counter()
        rc = mod.main(list(options)) if hasattr(mod, "main") else 0
        print(f"--- {mod.__name__}: {time.perf_counter() - t0:.1f} s", flush=True)
        status = status or (rc or 0)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
