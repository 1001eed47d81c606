"""Worker processes: the pool that runs a generator over tasks and streams results back in
task order (:mod:`~prep.procs.pool`), how workers start (:mod:`~prep.procs.launch`), their
shared-memory arenas (:mod:`~prep.procs.arena`), the copier processes that write ids into
shard files (:mod:`~prep.procs.copiers`), how many cores a process may use
(:mod:`~prep.procs.cores`), a producer thread with a bounded queue
(:mod:`~prep.procs.readahead`) and each thread's CPU time (:mod:`~prep.procs.threadcpu`).
Knows processes and buffers, never documents, tokenizers or shards."""
