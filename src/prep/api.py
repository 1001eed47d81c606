"""prep as a library: :func:`prepare` runs the job ``prep prepare`` runs, from a notebook, an
Airflow or Dagster task, or a Ray task, and returns the typed :class:`Manifest`.

It is the same job, not a second implementation: the lock on ``out``, staging with
checkpoints, ``resume=True`` continuing ``out.incomplete/`` to the same bytes, the atomic
publish. The CLI is a thin layer over :func:`prepare_outcome` (argument parsing, signals,
messages and exit codes). A library never exits or prints: failures are the typed
``PrepError`` subclasses (their ``exit_code`` says what the CLI would exit with), progress
goes to a callback or to ``logging`` (logger ``prep.progress``), and an interruption
(``KeyboardInterrupt``, a signal, a killed process) loses at most the work since the last
checkpoint: call again with ``resume=True``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from prep.encoders import canonical_tokenizer, set_threads
from prep.encoders.engine import check_engine
from prep.errors import UsageError, never
from prep.formats import get_format
from prep.hub.calls import offline_default as hub_offline_default
from prep.outputs import location, resolve_output
from prep.outputs.hf.card import CardOptions
from prep.outputs.hf.output import HubSettings
from prep.partition import Part
from prep.progress import LineReporter, Reporter, Snapshot, silent
from prep.recipe import DEFAULTS, RECIPE_FIELDS, REQUIRED, Recipe, RunOptions, validate
from prep.redact import environment_secrets, redact_argv
from prep.run.lifecycle import Outcome, run
from prep.sources import SOURCE_FORMS, canonical_source
from prep.state.manifest import Manifest

__all__ = ["Outcome", "hub_offline_default", "hub_token", "prepare", "prepare_outcome"]

# ``out`` is prepare's first argument; ``argv`` the command line the CLI passes
_RUN_FIELDS = frozenset(f.name for f in dataclasses.fields(RunOptions)) - {"out", "argv"}


def hub_token(given: str | None) -> str | None:
    """The Hugging Face token a run uses: ``--token`` (``token=``), else ``HF_TOKEN``. The
    one place this default is decided (the CLI asks it too, for what to mask)."""
    return given or os.environ.get("HF_TOKEN")


def hub_settings(opts: RunOptions) -> HubSettings:
    """How a Hub ``--out`` is written: the run's token, ``--create-repo`` and the card's
    options (the Hub reached as huggingface_hub's environment says)."""
    return HubSettings(token=opts.token, create_repo=opts.create_repo,
                       card=CardOptions(opts.license, opts.card_template))


def _hub_defaults(run_options: dict[str, Any]) -> dict[str, Any]:
    """``run_options`` with ``token`` and ``offline`` decided: the given ones, else
    ``HF_TOKEN`` and ``HF_HUB_OFFLINE`` (``offline`` given as False stays offline off)."""
    offline = run_options.get("offline")
    return {**run_options, "token": hub_token(run_options.get("token")),
            "offline": hub_offline_default() if offline is None else offline}


_MISSING = {
    "source": f"--source is required to start a run: {SOURCE_FORMS}, or `--source sample` "
    "for the bundled sample corpus",
    "tokenizer": "--tokenizer is required to start a run: a tokenizer.json or its directory, "
    "hf:OWNER/NAME, or `--tokenizer byte` for UTF-8 bytes (vocabulary 256, no separator)",
}


def _check_intent(typed: dict[str, Any], run_options: dict[str, Any]) -> None:
    """A run that must start fresh names its source and tokenizer: no default dataset ever
    stands in. A resume or refresh may leave them out (the checkpoint has the recipe; the
    pipeline refuses when there is nothing to take it from)."""
    lines = [_MISSING[name] for name in REQUIRED if name not in typed]
    if not lines or run_options.get("resume") or run_options.get("refresh"):
        return
    token = run_options.get("token")
    if "tokenizer" not in typed and token and os.path.exists(token):
        lines.append(
            "--token was given a path: --token is the Hugging Face access token; the "
            "tokenizer is --tokenizer"
        )
    lines.append(
        "(to continue an interrupted run, add --resume: its recipe comes from its checkpoint)"
    )
    raise UsageError("\n".join(lines))


def _canonical(typed: dict[str, Any]) -> dict[str, Any]:
    """Typed ``source`` and ``tokenizer`` resolved once, from the current directory, to the
    spelling the checkpoint and manifest record."""
    out = dict(typed)
    if "source" in out:
        out["source"] = canonical_source(out["source"])
    if "tokenizer" in out:
        out["tokenizer"] = canonical_tokenizer(out["tokenizer"])
    return out


def prepare_outcome(
    out: str | os.PathLike[str],
    typed: dict[str, Any],
    run_options: dict[str, Any],
    *,
    stop: Callable[[], bool] = never,
    reporter: Reporter | None = None,
    argv: list[str] | None = None,
) -> Outcome:
    """The job behind :func:`prepare` and ``prep prepare``: ``typed`` holds the recipe
    settings the caller gave (on resume they must agree with the checkpoint's; a fresh run
    needs ``source`` and ``tokenizer``), ``run_options`` the :class:`RunOptions` fields given
    (``token`` and ``offline`` not given default here: ``HF_TOKEN``, ``HF_HUB_OFFLINE``).
    ``argv`` is the command line, recorded (its secrets masked) and quoted in advice.

    Everything the settings decide is decided here, once: the defaults, the output format
    (a ``format``/``dtype`` pair that cannot be is refused before the lock), the engine's
    name, where ``out`` is (:func:`~prep.outputs.resolve_output`); the run gets them made.

    Returns what the run did (published, already complete, up to date). Raises the typed
    ``PrepError`` subclasses; ``UsageError`` for an unknown or out-of-range setting, or a
    fresh run without ``source`` or ``tokenizer``; ``InputError`` for a path that does not
    exist; ``MissingRecipe`` for a resume with nothing to resume and no recipe given."""
    unknown = sorted(set(typed) - RECIPE_FIELDS) + sorted(set(run_options) - _RUN_FIELDS)
    if unknown:
        raise UsageError(
            f"unknown setting(s) {', '.join(unknown)}; recipe settings are "
            f"{', '.join(sorted(RECIPE_FIELDS))}, run options "
            f"{', '.join(sorted(_RUN_FIELDS))}"
        )
    run_options = _hub_defaults(run_options)
    _check_intent(typed, run_options)
    if run_options.get("rehash") and not run_options.get("refresh"):
        raise UsageError(
            "--rehash only changes what --refresh reads (every input file hashed, no "
            "fingerprint trusted); add --refresh, or drop --rehash"
        )
    try:
        validate(typed)
        typed = _canonical(typed)
        typed, out = _for_part(typed, out, run_options)
        # Without source or tokenizer there is no recipe to start from: only a resume, which
        # takes it from the checkpoint (the pipeline refuses to start fresh).
        complete = all(name in typed for name in REQUIRED)
        recipe = Recipe(**{**DEFAULTS, **typed}) if complete else None
        recorded = None if argv is None else tuple(redact_argv(
            argv, [run_options["token"], *environment_secrets(os.environ)]
        ))
        opts = RunOptions(out=out, argv=recorded, **run_options)
        check_engine(opts.engine)
    except TypeError as e:  # a value of the wrong type, from Python code
        raise UsageError(f"a setting has the wrong type: {e}") from e
    set_threads(opts.threads)
    if recipe is not None:  # a resume's comes from its checkpoint, checked as it is read
        get_format(recipe.format, recipe.dtype)
    return run(
        recipe,
        opts,
        resolve_output(opts.out, opts.staging, hub_settings(opts)),
        typed=typed,
        stop_requested=stop,
        reporter=reporter or LineReporter(opts.log_interval),
    )


def _for_part(
    typed: dict[str, Any], out: str | os.PathLike[str], run_options: dict[str, Any]
) -> tuple[dict[str, Any], Path | str]:
    """A part (``part="I/N"``) writes ``DIR.parts/I-of-N``; its dataset name defaults to
    ``DIR``'s, so that every part of one run records the same name. ``out`` as a run
    takes it: a local path, or a URI as typed."""
    where = location(out)
    if typed.get("part") is None:
        return typed, where
    part = Part.parse(typed["part"])
    if run_options.get("refresh"):
        raise UsageError("--refresh does not apply to one part; refresh the merged dataset")
    target = resolve_output(where, run_options.get("staging"))
    return {"dataset": target.name, **typed}, target.part_out(part)


class _Callback:
    """A :class:`Reporter` that hands every snapshot to the caller's function."""

    def __init__(self, fn: Callable[[Snapshot], None]) -> None:
        self.fn = fn

    def __call__(self, snap: Snapshot, final: bool = False) -> None:
        self.fn(snap)


def prepare(
    *,
    out: str | os.PathLike[str],
    source: str | os.PathLike[str] | None = None,
    tokenizer: str | os.PathLike[str] | None = None,
    resume: bool = False,
    offline: bool | None = None,
    token: str | None = None,
    progress: Callable[[Snapshot], None] | None = None,
    stop: Callable[[], bool] | None = None,
    **settings: object,
) -> Manifest:
    """Prepare ``source`` into the dataset directory ``out`` with ``tokenizer`` and return
    its manifest; the same job, and the same bytes, as ``prep prepare --out OUT ...``.

    ``settings`` are the CLI's options in snake_case: recipe settings (``val_fraction``,
    ``seed``, ``max_file_tokens``, ``doc_sep_id``, ...; omitted ones take the CLI's
    defaults) and run options (``batch_size``, ``threads``, ``workers``, ``engine``,
    ``checkpoint_interval``,
    ``wait_lock``, ``refresh``, ``rehash``, ``allow_version_change``, ``log_interval``, ``quiet``).
    ``source`` and ``tokenizer`` are required to start (``"sample"`` names the bundled
    corpus, ``"byte"`` the byte tokenizer); relative paths are resolved once, from the
    current directory. ``resume=True`` continues ``out.incomplete/`` from its last
    checkpoint (the recipe comes from the checkpoint; settings given must agree with it).
    ``offline`` reads Hub sources and tokenizers from the local cache only (default:
    ``HF_HUB_OFFLINE``); ``token`` defaults to ``HF_TOKEN``.

    ``progress(snapshot)`` is called after every committed batch and at the end; without it
    progress is logged every ``log_interval`` seconds (``quiet=True``: not at all, and the
    ``prep`` loggers say only warnings and errors during the call). ``stop()`` is polled
    between batches: when it returns True the run checkpoints and raises ``Interrupted``
    (exit code 75).

    Returns the published (or already complete) dataset's :class:`Manifest`. Raises
    ``UsageError``, ``InputError``, ``OutputError``, ``IntegrityError``, ``LockedError``,
    ``TransientError`` or ``Interrupted`` (all ``PrepError``); never exits or prints."""
    typed: dict[str, Any] = {
        k: (str(v) if isinstance(v, os.PathLike) else v)
        for k, v in (("source", source), ("tokenizer", tokenizer))
        if v is not None
    }
    run_options = {k: v for k, v in settings.items() if k not in RECIPE_FIELDS}
    typed.update({k: v for k, v in settings.items() if k in RECIPE_FIELDS})
    run_options.update(resume=resume, offline=offline, token=token)
    quiet = bool(run_options.get("quiet"))
    reporter = _Callback(progress) if progress else (silent if quiet else None)
    with _quiet_logs(quiet):
        outcome = prepare_outcome(out, typed, run_options, stop=stop or never, reporter=reporter)
    return outcome.manifest if outcome.manifest is not None else Manifest.load(outcome.out)


@contextmanager
def _quiet_logs(quiet: bool) -> Iterator[None]:
    """``quiet=True``: the ``prep`` loggers say only warnings and errors for the call (their
    level, restored after; the application's handlers are not touched)."""
    logger = logging.getLogger("prep")
    level = logger.level
    if quiet:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)
