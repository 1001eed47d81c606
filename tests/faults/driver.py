"""Run ``prep.cli.run_prepare(argv)`` in this process with one fault injected at its import site.

Used by the fault tests as ``python tests/faults/driver.py PREPARE-ARGS...`` with the fault in
the environment variable ``PREP_FAULT`` (JSON). Nothing under test is replaced: the target
callable is wrapped, the original still runs, and at the chosen call the wrapper does one
thing: SIGKILL this process, raise ``OSError(ENOSPC)``, or sleep (a slow batch).

Fault keys:

``target``          dotted path to wrap, resolved from its import site: ``prep.fsio.os.replace``
                    (the ``os`` that ``prep.fsio`` calls), ``prep.binfile.BinWriter.seal``,
                    ``prep.pipeline.publish``, ``pathlib.Path.unlink``...
``nth``             act at the Nth matching call (1-based; default 1)
``when``            ``before`` or ``after`` the original runs (default ``after``)
``action``          ``kill`` (SIGKILL), ``enospc`` (raise OSError(ENOSPC)), ``sleep`` (``seconds``)
``arg_contains``    only calls where some positional argument's ``str`` contains this
``within``          only calls with frames of these function names on the stack (a name or
                    a list of names)
``src_contains``    only calls whose first argument names a file containing this text (read
                    before the call: for ``os.replace`` that is the new content)
``after_log``       only once the ``prep`` logger has emitted a record containing this text

When the fault fires, the driver first appends a line to ``PREP_FAULT_MARK`` (if set), so a
test can tell that the site was reached.
"""

from __future__ import annotations

import errno
import functools
import importlib
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any


def _resolve(dotted: str) -> tuple[Any, str]:
    """The object holding the attribute to wrap, and the attribute's name."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:-1]:
            obj = getattr(obj, name)
        return obj, parts[-1]
    raise SystemExit(f"driver: cannot resolve {dotted}")


class _LogSeen(logging.Filter):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.seen = False

    def filter(self, record: logging.LogRecord) -> bool:
        if self.text in record.getMessage():
            self.seen = True
        return True


def _stack_names() -> set[str]:
    names = set()
    frame = sys._getframe(2)
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back  # type: ignore[assignment]
    return names


def install(fault: dict[str, Any]) -> None:
    holder, attr = _resolve(fault["target"])
    original = getattr(holder, attr)
    nth = int(fault.get("nth", 1))
    when = fault.get("when", "after")
    action = fault.get("action", "kill")
    mark = os.environ.get("PREP_FAULT_MARK")
    log_seen = None
    if "after_log" in fault:
        log_seen = _LogSeen(fault["after_log"])
        logging.getLogger("prep").addFilter(log_seen)
    within = fault.get("within", [])
    within = {within} if isinstance(within, str) else set(within)
    count = 0

    def matches(args: tuple[Any, ...]) -> bool:
        if "arg_contains" in fault and not any(fault["arg_contains"] in str(a) for a in args):
            return False
        if within and not within <= _stack_names():
            return False
        if log_seen is not None and not log_seen.seen:
            return False
        if "src_contains" in fault:
            try:
                text = Path(args[0]).read_text(errors="replace")
            except (OSError, TypeError):
                return False
            if fault["src_contains"] not in text:
                return False
        return True

    def act(args: tuple[Any, ...]) -> None:
        if mark:
            with open(mark, "a") as f:
                f.write(f"{fault['target']} call {count} {when}: {[str(a) for a in args]}\n")
        if action == "kill":
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "enospc":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        elif action == "sleep":
            time.sleep(float(fault.get("seconds", 30)))
        else:
            raise SystemExit(f"driver: unknown action {action}")

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal count
        fire = False
        if count < nth and matches(args):
            count += 1
            fire = count == nth
        if fire and when == "before":
            act(args)
        result = original(*args, **kwargs)
        if fire and when == "after":
            act(args)
        return result

    setattr(holder, attr, wrapper)


def main() -> int:
    spec = os.environ.get("PREP_FAULT")
    if spec:
        install(json.loads(spec))
    from prep.cli import run_prepare

    return run_prepare(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
