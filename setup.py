"""The one compiled part of prep: the BPE trainer (src/prep/tokenizer/_bpe.c).

Optional: where no C compiler is found the build goes on without it and prep trains with its
pure-Python twin (same merges, much slower); `prep train-tokenizer` says which it uses."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "prep.tokenizer._bpe",
            ["src/prep/tokenizer/_bpe.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
