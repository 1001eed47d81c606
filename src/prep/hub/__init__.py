"""The Hugging Face Hub: a client with retries and typed errors (:mod:`prep.hub.calls`),
verified downloads at a pinned commit (:mod:`prep.hub.files`), the local cache read offline
(:mod:`prep.hub.offline`) and the ``hf://`` / ``hf:`` syntax (:mod:`prep.hub.paths`).
Imports nothing from ``prep.sources`` or ``prep.encoders``: they use it."""
