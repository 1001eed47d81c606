"""Run ``prep.cli.commands.run_prepare(argv)`` (or ``prep merge``) in this process with faults
injected at their import sites. Started through ``tests/harness.py`` by the fault tests
(tests/faults) and the operations tests (tests/ops).

Used as ``python tests/fault_driver.py PREPARE-ARGS...`` (or ``merge DIR``, or
``train-tokenizer ARGS...``) with the fault,
or a list of them, in the environment variable ``PREP_FAULT`` (JSON). Nothing under test is
replaced: the target callable is wrapped, the original still runs (except for ``return``),
and at the chosen call the wrapper does one thing: SIGKILL this process, raise
``OSError(ENOSPC)``, sleep (a slow batch), park on a gate, record the call, or return a
fixed value.

Fault keys:

``target``          dotted path to wrap, resolved from its import site: ``prep.fsio.os.replace``
                    (the ``os`` that ``prep.fsio`` calls), ``prep.formats.idfile.IdFileWriter``,
                    ``prep.outputs.local.LocalDir.publish``, ``pathlib.Path.unlink``...
``nth``             act at the Nth matching call (1-based; default 1)
``when``            ``before`` or ``after`` the original runs (default ``after``)
``action``          ``kill`` (SIGKILL), ``enospc`` (raise OSError(ENOSPC)), ``sleep`` (``seconds``),
                    ``set`` (not a call: the target is a module constant, set to ``value``
                    before the run starts: a retry policy made short),
                    ``gate`` (touch ``reached``, then wait until ``release`` exists, at most
                    ``timeout`` s: the test decides when the process goes on), ``record``
                    (append the first argument to ``record``, at every matching call), or
                    ``return`` (skip the original and return ``value``)
``arg_contains``    only calls where some positional argument's ``str`` contains this
``within``          only calls with frames of these function names on the stack (a name or
                    a list of names); work handed to a thread pool (a background seal) runs
                    within the frames of the call that handed it over
``src_contains``    only calls whose first argument names a file containing this text (read
                    before the call: for ``os.replace`` that is the new content)
``after_log``       only once the ``prep`` logger has emitted a record containing this text
``every``           act at every matching call from the ``nth`` on, not only at the ``nth``
                    (``record`` always does): a ``sleep`` before each batch paces a run

When the fault fires, the driver first appends a line to ``PREP_FAULT_MARK`` (if set), so a
test can tell that the site was reached.
"""

from __future__ import annotations

import errno
import functools
import importlib
import itertools
import json
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
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


_log_watchers: list[_LogSeen] = []


def _watch_logs(watcher: _LogSeen) -> None:
    """Show ``watcher`` every record of prep's loggers (``prep`` and ``prep.*``): a filter
    on the ``prep`` logger itself would see only what is logged on it, not what its
    children (``prep.outputs.bucket.mirror``...) pass up to its handlers."""
    if not _log_watchers:
        calling = logging.Logger.callHandlers

        def watched(self: logging.Logger, record: logging.LogRecord) -> None:
            if record.name == "prep" or record.name.startswith("prep."):
                for w in _log_watchers:
                    w.filter(record)
            calling(self, record)

        logging.Logger.callHandlers = watched  # type: ignore[method-assign]
    _log_watchers.append(watcher)


_handed_over = threading.local()  # .names: the stack of the call that submitted the work


def _stack_names(depth: int = 2) -> set[str]:
    names = set(getattr(_handed_over, "names", ()))
    frame = sys._getframe(depth)
    while frame is not None:
        names.add(frame.f_code.co_name)
        frame = frame.f_back  # type: ignore[assignment]
    return names


def _carry_stacks() -> None:
    """Make work submitted to a ``ThreadPoolExecutor`` run with the submitting call's
    frames as part of its stack, so ``within`` names the logical caller (``_roll`` for a
    seal that runs in the background) whatever thread does the work."""
    submit = ThreadPoolExecutor.submit

    def carrying(self: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        names = frozenset(_stack_names(depth=2))

        def run(*a: Any, **k: Any) -> Any:
            _handed_over.names = names
            try:
                return fn(*a, **k)
            finally:
                _handed_over.names = frozenset()

        return submit(self, run, *args, **kwargs)

    ThreadPoolExecutor.submit = carrying  # type: ignore[method-assign]


def install(fault: dict[str, Any]) -> None:
    holder, attr = _resolve(fault["target"])
    original = getattr(holder, attr)
    if fault.get("action") == "set":
        setattr(holder, attr, fault["value"])
        return
    nth = int(fault.get("nth", 1))
    when = fault.get("when", "after")
    action = fault.get("action", "kill")
    mark = os.environ.get("PREP_FAULT_MARK")
    log_seen = None
    if "after_log" in fault:
        log_seen = _LogSeen(fault["after_log"])
        _watch_logs(log_seen)
    every = bool(fault.get("every", False))
    within = fault.get("within", [])
    within = {within} if isinstance(within, str) else set(within)
    # One number per call even when the target runs in several threads (sealing pool,
    # hashing): next() of an itertools.count is one atomic step under the GIL, and unlike
    # a lock it cannot be copied held into a forked worker.
    numbers = itertools.count(1)

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

    def act(args: tuple[Any, ...], n: int) -> None:
        if mark:
            with open(mark, "a") as f:
                f.write(f"{fault['target']} call {n} {when}: {[str(a) for a in args]}\n")
        if action == "kill":
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "enospc":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        elif action == "sleep":
            time.sleep(float(fault.get("seconds", 30)))
        elif action == "gate":
            Path(fault["reached"]).touch()
            deadline = time.monotonic() + float(fault.get("timeout", 120))
            while not Path(fault["release"]).exists() and time.monotonic() < deadline:
                time.sleep(0.005)
        elif action == "record":
            with open(fault["record"], "a") as f:
                f.write(str(args[0] if args else "") + "\n")
        elif action != "return":
            raise SystemExit(f"driver: unknown action {action}")

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        fire, n = False, 0
        if matches(args):
            n = next(numbers)
            fire = n == nth or (n > nth and every) or action == "record"
        if fire and action == "return":
            act(args, n)
            return fault["value"]
        if fire and when == "before":
            act(args, n)
        result = original(*args, **kwargs)
        if fire and when == "after":
            act(args, n)
        return result

    setattr(holder, attr, wrapper)


def main() -> int:
    from prep.startup import dump_stacks_on_signal

    dump_stacks_on_signal()  # as scripts/prepare.py does: a hung run says where it is
    spec = json.loads(os.environ.get("PREP_FAULT") or "[]")
    _carry_stacks()
    for fault in spec if isinstance(spec, list) else [spec]:
        install(fault)
    from prep.cli.commands import main as prep_main
    from prep.cli.commands import run_prepare

    if sys.argv[1:2] in (["merge"], ["train-tokenizer"]):  # the other commands a fault may target
        return prep_main(sys.argv[1:])
    return run_prepare(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
