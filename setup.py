"""The compiled parts of prep: the BPE trainer (src/prep/tokenizer/_bpe.c), the BPE encoder
of the ``bpe`` engine (src/prep/encoders/_merges.c), the JSON Lines scanner
(src/prep/sources/_jsonl.c) and the prefix digest's chain (src/prep/stream/chain/_chain.c,
over OpenSSL's SHA-256).

Optional: where no C compiler (or no OpenSSL headers) is found the build goes on without them
and prep uses their pure-Python twins (the same results, slower; the JSON Lines scanner's is
pyarrow's JSON reader); `prep train-tokenizer` says which trainer it uses."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "prep.tokenizer._bpe",
            ["src/prep/tokenizer/_bpe.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "prep.encoders._merges",
            ["src/prep/encoders/_merges.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "prep.sources._jsonl",
            ["src/prep/sources/_jsonl.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "prep.stream.chain._chain",
            ["src/prep/stream/chain/_chain.c"],
            libraries=["crypto"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
