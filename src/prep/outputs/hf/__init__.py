"""``--out hf://datasets/OWNER/NAME[@BRANCH][/PATH]``: the output and its reading
(:mod:`~prep.outputs.hf.output`), its run's commits and last commit
(:mod:`~prep.outputs.hf.run`), the repository as object calls with commits
(:mod:`~prep.outputs.hf.store`) and the dataset card (:mod:`~prep.outputs.hf.card`)."""
