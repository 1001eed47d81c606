"""End-to-end tests: the CLI in-process (``cli`` fixture) and as real subprocesses.

A package, so these modules import as ``e2e.test_*`` and never clash with same-named test
modules in the sibling directories.
"""
