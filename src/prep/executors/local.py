"""The ``local`` executor: the parts one after another, in this process."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from prep.errors import EXIT_OK
from prep.executors import PartsFailed, PrepareJob, part_argv
from prep.outputs import Output
from prep.partition import Part

logger = logging.getLogger(__name__)


class LocalExecutor:
    def run_parts(
        self, job: PrepareJob, argv: Sequence[str], out: Output, parts: Sequence[Part],
        threads: int | None,
    ) -> None:
        extra = [] if threads is None else ["--threads", str(threads)]
        for part in parts:
            logger.info("part %s: starting", part.name)
            code = job([*part_argv(argv, part), *extra])
            if code != EXIT_OK:
                raise PartsFailed({part.name: code})
