"""The package's version, in a module of its own so that any room can read it without importing
the package's public API (``prep/__init__.py``) from below."""

__version__ = "0.1.0"
