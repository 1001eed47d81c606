"""Reading a published dataset, wherever an output can be: ``prep verify``
(:mod:`~prep.readers.verify`), ``prep inspect`` (:mod:`~prep.readers.inspector`) and
``prep.TokenStream`` (:mod:`~prep.readers.tokenstream`). Read-only, through the format.

Also home of the public ``prep.Manifest``: importing it here loads :mod:`prep.outputs`,
which registers how :meth:`~prep.state.manifest.Manifest.load` reads a location."""

from prep.outputs import published_at
from prep.state.manifest import Manifest

__all__ = ["Manifest", "published_at"]
