"""Reading a published dataset, wherever an output can be: ``prep verify``
(:mod:`~prep.readers.verify`), ``prep inspect`` (:mod:`~prep.readers.inspector`) and
``prep.TokenStream`` (:mod:`~prep.readers.tokenstream`). Read-only, through the format."""
