"""``prep.TokenStream``: a published split as one memory-mapped token stream, in windows.

``TokenStream(path, split="train", seq_len=T)`` opens a dataset prep wrote, checks it
against its manifest (every file present, sizes exact; ``verify=True`` also re-hashes every
file) and maps each of the split's files. The split's stream is the concatenation of its
files in name order; with N tokens, ``len(ts) == (N - 1) // T`` and window ``i`` is::

    x = stream[i*T : i*T + T]        y = stream[i*T + 1 : i*T + T + 1]

``path`` may also be a bucket URI (``s3://``, ``gs://``): the split's files are copied once,
each checked against its SHA-256, into :func:`reader_cache` (a log line says where and how
many bytes) and mapped from there; a prefix without ``_MANIFEST.json`` is refused as
incomplete. Windows may cross file boundaries. :meth:`TokenStream.batches` deals windows to ranks:
deterministic, disjoint across ranks, and exactly resumable from a batch number. There is
no torch dependency; ``docs/format.md`` shows a ``torch.utils.data.DataLoader`` wrapper.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from prep.errors import IntegrityError, UsageError
from prep.formats import get_format
from prep.fsio import cache_home, file_sha256
from prep.outputs import is_uri, published_at
from prep.readers import documents as documents_
from prep.state.manifest import Manifest, ManifestFile

Batch = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]
# (x, y, cu_seqlens, position ids): a window or batch with its documents' boundaries
DocBatch = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int32],
                 npt.NDArray[np.int64]]


def reader_cache(location: str, manifest: Manifest) -> Path:
    """Where a dataset that must be copied to be memory-mapped (one in a bucket) is kept:
    ``$XDG_CACHE_HOME/prep/datasets/<location>/<manifest SHA-256, 16 digits>/`` (default
    ``~/.cache``). How much: the files of each split opened, once per published version
    (a new version's manifest has another SHA-256, so versions never mix); prep deletes
    nothing there. A local dataset is read in place and never copied."""
    version = hashlib.sha256(manifest.to_bytes()).hexdigest()[:16]
    return Path(cache_home(), "datasets", *location.replace("://", "/").split("/"), version)


def _shard_files(entry: ManifestFile) -> list[tuple[str, str]]:
    return [(entry.name, entry.sha256)] + [(c.name, c.sha256) for c in entry.companions]


def _check_hashes(directory: Path, entry: ManifestFile) -> None:
    """Re-hash every file of a shard against the manifest."""
    for name, want in _shard_files(entry):
        sha = file_sha256(directory / name)
        if sha != want:
            raise IntegrityError(
                f"{directory / name}: SHA-256 {sha[:12]}... does not match the manifest's "
                f"{want[:12]}...; the file changed after publishing (run `prep verify`)",
                path=directory / name,
            )


class TokenStream:
    """One split of a published dataset as a sequence of ``(x, y)`` windows of ``seq_len``.

    Raises ``IntegrityError`` on open when a listed file is missing, has the wrong size or
    (with ``verify=True``) the wrong SHA-256; ``UsageError`` for a bad split or length."""

    def __init__(
        self, path: str | Path, split: str = "train", seq_len: int = 1024, *,
        verify: bool = False, documents: bool = False,
    ) -> None:
        if seq_len < 1:
            raise UsageError(f"seq_len must be at least 1, got {seq_len}")
        self.path = path if is_uri(path) else Path(path)
        self.split = split
        self.seq_len = seq_len
        self.documents = documents
        where = published_at(self.path)
        manifest = where.published_manifest()
        if split not in manifest.totals:
            known = ", ".join(manifest.totals)
            raise UsageError(f"{self.path}: no split {split!r} (the manifest has {known})")
        fmt = get_format(manifest.format, manifest.dtype)
        entries = sorted((e for e in manifest.files if e.split == split), key=lambda e: e.name)
        files = {n: sha for e in entries for n, sha in _shard_files(e)}
        shards = []
        with where.reading(files, keep=reader_cache(str(where), manifest)) as directory:
            for entry in entries:
                shards.append(fmt.map_ids(directory, entry, manifest))
                if verify:
                    _check_hashes(directory, entry)
            # Every document's first offset in the stream (documents=True only).
            self._doc_starts = (documents_.doc_starts(fmt, directory, entries, shards, manifest)
                                if documents else None)
        # Plain ndarray views of the maps: slicing an np.memmap costs a subclass round trip.
        self._shards = [s.view(np.ndarray) for s in shards if s.size]
        sizes = np.array([s.size for s in self._shards], dtype=np.int64)
        self._starts = np.concatenate(([0], np.cumsum(sizes)))
        self.n_tokens = int(self._starts[-1])
        if self.n_tokens != manifest.totals[split].n_tokens:
            raise IntegrityError(
                f"{self.path}: {split} files hold {self.n_tokens:,} tokens but the manifest's "
                f"totals say {manifest.totals[split].n_tokens:,}",
                path=self.path,
            )

    def __getstate__(self) -> dict[str, Any]:
        # Pickle by reference, not by value: a DataLoader worker reopens the maps instead of
        # receiving a copy of every file (np.memmap pickles its data).
        return {"path": self.path, "split": self.split, "seq_len": self.seq_len,
                "documents": self.documents}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["path"], state["split"], state["seq_len"],  # type: ignore[misc]
                      documents=state.get("documents", False))

    def __len__(self) -> int:
        return max(0, (self.n_tokens - 1) // self.seq_len)

    def read(self, start: int, count: int) -> npt.NDArray[np.int64]:
        """``stream[start : start + count]`` as int64, across file boundaries."""
        if start < 0 or count < 0 or start + count > self.n_tokens:
            raise IndexError(f"tokens {start}..{start + count} outside 0..{self.n_tokens}")
        out = np.empty(count, dtype=np.int64)
        self._read_into(out, start)
        return out

    def _read_into(self, out: npt.NDArray[np.int64], start: int) -> None:
        k = int(np.searchsorted(self._starts, start, side="right")) - 1
        done = 0
        while done < out.size:
            shard = self._shards[k]
            at = start + done - int(self._starts[k])
            take = min(out.size - done, shard.size - at)
            out[done : done + take] = shard[at : at + take]
            done += take
            k += 1

    def __getitem__(self, i: int) -> Batch | DocBatch:
        """Window ``i``: ``(stream[i*T : i*T+T], stream[i*T+1 : i*T+T+1])`` as int64; with
        ``documents=True`` also x's ``cu_seqlens`` (int32, ``0 ... T``) and position ids
        (:mod:`prep.readers.documents`)."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"window {i} outside 0..{n - 1} ({self.split}, T = {self.seq_len})")
        w = self.read((i % n) * self.seq_len, self.seq_len + 1)
        if self._doc_starts is None:
            return w[:-1], w[1:]
        cu, positions = documents_.window(self._doc_starts, (i % n) * self.seq_len, self.seq_len)
        return w[:-1], w[1:], cu, positions

    def n_batches(self, batch_size: int, world_size: int = 1) -> int:
        """Batches each rank gets per epoch: whole global batches only, the rest dropped."""
        return len(self) // (batch_size * world_size)

    def order(self, *, shuffle: bool = True, seed: int = 0, epoch: int = 0) -> npt.NDArray[Any]:
        """The epoch's window order: ``Generator(PCG64(SeedSequence([seed, epoch])))
        .permutation(len(self))`` when shuffling, else ``0, 1, ...``."""
        if not shuffle:
            return np.arange(len(self), dtype=np.int64)
        if seed < 0 or epoch < 0:
            raise UsageError(f"seed and epoch must be >= 0, got seed={seed}, epoch={epoch}")
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, epoch])))
        return rng.permutation(len(self))

    def batches(
        self,
        batch_size: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        shuffle: bool = True,
        seed: int = 0,
        epoch: int = 0,
        start: int = 0,
    ) -> Iterator[Batch | DocBatch]:
        """Yield this rank's ``(x, y)`` batches, each ``(batch_size, seq_len)`` int64 (with
        ``documents=True`` also the batch's ``cu_seqlens`` over its flattened ``B*T``
        tokens and its ``(B, T)`` position ids, :func:`prep.readers.documents.batch`).

        Global batch ``b`` is windows ``order[b*B*W : (b+1)*B*W]`` of :meth:`order`; rank
        ``r`` takes its ``r``-th run of ``B``. Ranks are therefore disjoint, every rank gets
        :meth:`n_batches` batches, and ``start=b`` yields exactly what a full iteration
        yields from its ``b``-th batch on (pass the number of batches already consumed)."""
        if batch_size < 1 or world_size < 1 or not 0 <= rank < world_size or start < 0:
            raise UsageError(
                f"need batch_size >= 1, world_size >= 1, 0 <= rank < world_size and "
                f"start >= 0; got {batch_size}, {world_size}, {rank}, {start}"
            )
        order = self.order(shuffle=shuffle, seed=seed, epoch=epoch)
        step = batch_size * world_size
        for b in range(start, self.n_batches(batch_size, world_size)):
            mine = order[b * step + rank * batch_size : b * step + (rank + 1) * batch_size]
            buf = np.empty((batch_size, self.seq_len + 1), dtype=np.int64)
            self._fill(buf, mine * self.seq_len)
            if self._doc_starts is None:
                yield buf[:, :-1], buf[:, 1:]
            else:
                cu, positions = documents_.batch(self._doc_starts, mine * self.seq_len,
                                                 self.seq_len)
                yield buf[:, :-1], buf[:, 1:], cu, positions

    def _fill(self, buf: npt.NDArray[np.int64], starts: npt.NDArray[Any]) -> None:
        """Row ``r`` of ``buf`` = the stream from ``starts[r]``; the shard lookup is done
        for the whole batch at once, and a window inside one file is a single slice."""
        width = buf.shape[1]
        k = np.searchsorted(self._starts, starts, side="right") - 1
        at = starts - self._starts[k]
        inside = at + width <= self._starts[k + 1] - self._starts[k]
        rows = zip(k.tolist(), at.tolist(), inside.tolist(), strict=True)
        for row, (kk, a, one) in enumerate(rows):
            if one:
                buf[row] = self._shards[kk][a : a + width]
            else:
                self._read_into(buf[row], int(starts[row]))
