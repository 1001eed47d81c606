"""The command line: :mod:`~prep.cli.commands` (``main``: the subcommands, signals and the one
error boundary that prints and picks exit codes), the grammar (:mod:`~prep.cli.options` for
``prepare``, ``merge``, ``verify`` and ``inspect``; :mod:`~prep.cli.train` for
``train-tokenizer``), its value types (:mod:`~prep.cli.values`) and what the operator sees on
stderr (:mod:`~prep.cli.console`). The CLI only parses and prints: every decision is the
library's (:mod:`prep.api`)."""
