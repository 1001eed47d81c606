"""Every script in benchmarks/ still imports against the package as it is.

Nothing else runs them in CI, so a removed function broke one unseen (engines.py still
imported ``load_gigatoken_file``). One child process imports them all, each with its own
directory on ``sys.path`` as ``python benchmarks/X.py`` has, without running their ``main``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"

IMPORT_ALL = """
import importlib.util, sys, traceback
failed = []
for path in sys.argv[1:]:
    name = "bench_" + path.rsplit("/", 1)[-1][:-3]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    sys.path.insert(0, path.rsplit("/", 1)[0])
    try:
        spec.loader.exec_module(module)
    except BaseException:
        failed.append(path + "\\n" + traceback.format_exc(limit=-2))
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


def test_every_benchmark_script_imports() -> None:
    scripts = sorted(str(p) for p in BENCH.glob("*.py"))
    assert len(scripts) >= 20, scripts
    done = subprocess.run([sys.executable, "-c", IMPORT_ALL, *scripts],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
