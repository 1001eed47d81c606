"""Hub source and Hub tokenizer tests, offline: the real huggingface_hub client against a
loopback server (fakehub.py). A package, so its modules never clash with same-named test
modules elsewhere."""
