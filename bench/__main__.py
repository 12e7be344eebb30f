"""``python -m bench [NAME ...]``: run the benchmarks (all by default) and print their tables.

Benchmarks measure speed and quality on this machine; tests never assert wall-clock limits.
"""
import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    names = argv or sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                           if m.name.startswith("bench_"))
    status = 0
    for name in names:
        module = name if name.startswith("bench_") else f"bench_{name}"
        mod = importlib.import_module(f"bench.{module}")
        print(f"\n=== {mod.__name__} ===", flush=True)
        t0 = time.perf_counter()
        rc = mod.main([]) if hasattr(mod, "main") else 0
        print(f"--- {mod.__name__}: {time.perf_counter() - t0:.1f} s", flush=True)
        status = status or (rc or 0)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
