"""RecordIO, the Gluon track's "one file read sequentially" rung: `pack_recordio` writes
`<name>.rec`, `.idx` and `.json` as `im2rec.py` does; `RecordIter` wraps MXNet's C++ reader."""
from __future__ import annotations

import io
import json
import os
import re
import time
from pathlib import Path

import mxnet as mx
import numpy as np
from mxnet import recordio
from mxnet.gluon.data.vision import ImageRecordDataset

from ...analyse import profiling
from ...data.folder import (DataError, FolderIndex, MissingData, SkipCounter, fetch_or_skip,
                            load_image, parallel_map)
from ...data.packed import QUALITY, PrepResult, decoded, prepared_dir, tmp_name


def pack_recordio(index: FolderIndex, out, size: int, workers: int | None = None,
                  progress: bool = True, skip_corrupt: bool = False) -> PrepResult:
    """Pack `index` into `out` (.rec, JPEGs of QUALITY; the .idx and .json beside it)."""
    rec = Path(out).with_suffix(".rec")
    idx, sidecar = rec.with_suffix(".idx"), rec.with_suffix(".json")
    rec.parent.mkdir(parents=True, exist_ok=True)
    tmp = {p: tmp_name(p) for p in (rec, idx, sidecar)}
    start, sources, skipped = time.perf_counter(), [], []
    writer = recordio.MXIndexedRecordIO(str(tmp[idx]), str(tmp[rec]), "w")
    try:
        tasks = [(str(index.path(i)), size, QUALITY) for i in range(len(index))]
        for i, jpeg in decoded(index, _encode_task, tasks, skip_corrupt, skipped, workers=workers,
                               progress=progress, desc=f"packing {rec.name}"):
            key = len(sources)  # record keys are 0..N-1, in order
            writer.write_idx(key, recordio.pack(recordio.IRHeader(0, float(index.labels[i]), key, 0), jpeg))
            sources.append((index.paths[i], int(index.labels[i])))
        writer.close()
        if not sources:
            raise DataError(f"no image of {index.root} could be decoded; nothing packed")
        tmp[sidecar].write_text(json.dumps({
            "classes": list(index.classes), "sources": sources, "size": size,
            "quality": QUALITY, "source_root": str(index.root), "skipped": skipped}))
        for final in (sidecar, rec, idx):  # the .idx last: with it the set is complete
            os.replace(tmp[final], final)
    finally:
        writer.close()
        for path in tmp.values():
            path.unlink(missing_ok=True)
    return PrepResult(rec, len(sources), skipped, time.perf_counter() - start,
                      rec.stat().st_size + idx.stat().st_size)


def _encode_task(task):
    from PIL import Image
    path, size, quality = task
    try:
        image = load_image(path, size)
    except DataError as err:
        return None, str(err)
    Image.fromarray(image).save(buffer := io.BytesIO(), "JPEG", quality=quality)
    return buffer.getvalue(), None


def recordio_path(index: FolderIndex, size: int, cache_dir=None) -> Path:
    """Where the record file of `index` at `size` lives; complete once its .idx exists."""
    return prepared_dir(index.root, cache_dir) / f"{size}px-{index.fingerprint()}.rec"


def ensure_recordio(index: FolderIndex, size: int, cache_dir=None, **kwargs) -> Path:
    """The record file of `index` at `size` (packed once, then reused)."""
    target = recordio_path(index, size, cache_dir)
    if not target.with_suffix(".idx").exists():
        print(pack_recordio(index, target, size, **kwargs))
    return target


def open_record_file(path) -> recordio.MXIndexedRecordIO:
    """Open `<name>.rec` with its `<name>.idx`; a missing file is a clear error."""
    rec, idx = Path(path), Path(path).with_suffix(".idx")
    if not rec.exists():
        raise MissingData(f"record file {rec} does not exist: make it with gluon.recordio.pack_recordio")
    if not idx.exists():
        raise MissingData(f"record file {rec} has no index {idx.name}: pack the images again")
    return recordio.MXIndexedRecordIO(str(idx), str(rec), "r")


def read_record(reader: recordio.MXIndexedRecordIO, key: int, path) -> tuple:
    """(header, image bytes) of record `key`; DataError naming a damaged one."""
    try:
        if (raw := reader.read_idx(key)) is None:
            raise ValueError("past the end of the file")
        header, payload = recordio.unpack(raw)
    except (mx.base.MXNetError, ValueError, KeyError, OSError) as err:
        reader.reset()  # a read past the end leaves the stream stuck: reopen it
        raise DataError(f"{path}: record {key} is damaged or truncated ({_reason(err)})") from None
    return header, payload


def _reason(err: BaseException) -> str:
    """The telling line of an error; MXNet's start with a C++ stack trace."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("Traceback", "File ", "[bt]"))
              and not line[:1].isdigit()]
    return (useful or lines or [type(err).__name__])[-1][:200]


class RecordDataset(ImageRecordDataset):
    """Gluon's ImageRecordDataset with clear errors; skip_corrupt moves to the next good one."""

    def __init__(self, filename, skip_corrupt: bool = False):
        open_record_file(filename).close()  # the clear errors, before Gluon's own
        super().__init__(str(filename), flag=1)
        self.skip_corrupt, self.skipped = skip_corrupt, SkipCounter()

    def __getitem__(self, i):
        return fetch_or_skip(self._read, i, len(self), self.skip_corrupt, self.skipped)

    def _read(self, i):
        header, payload = read_record(self._record, self._record.keys[i], self.filename)
        try:
            image = mx.image.imdecode(payload, self._flag)
        except mx.base.MXNetError as err:
            raise DataError(f"{self.filename}: record {i} does not decode ({_reason(err)})") from None
        return image, header.label


def sidecar(rec: Path) -> dict:
    """The JSON beside a record file (classes, source images); DataError if missing or damaged."""
    path = rec.with_suffix(".json")
    try:
        meta = json.loads(path.read_text())
        if isinstance(meta, dict) and isinstance(meta.get("sources"), list):
            return meta
        why = "no list of sources"
    except (OSError, ValueError) as err:
        why = str(err)
    raise DataError(f"{path} is unreadable ({why}): pack the images again")


def check_recordio(path, index: FolderIndex, workers: int | None = None,
                   progress: bool = True) -> int:
    """Check every record of a record file against its source image; returns the count."""
    rec = Path(path)
    meta, reader = sidecar(rec), open_record_file(rec)
    try:
        keys = list(reader.keys)
        if keys != list(range(len(meta["sources"]))):
            raise DataError(f"{rec}: index keys are not 0..{len(meta['sources']) - 1} in order")
        labels = dict(zip(index.paths, index.labels.tolist()))
        size, quality = meta["size"], meta["quality"]
        tasks = [(str(index.root / s), size, quality) for s, _ in meta["sources"]]
        for key, (jpeg, error) in enumerate(parallel_map(
                _encode_task, tasks, workers=workers, progress=progress, desc="checking")):
            source, label = meta["sources"][key]
            header, payload = read_record(reader, key, rec)
            if error is not None:
                raise DataError(f"record {key}: its source {source} no longer decodes: {error}")
            if header.id != key or int(header.label) != label or labels.get(source) != label:
                raise DataError(f"record {key} ({source}): id {header.id}, label {header.label}; "
                                f"expected {key}, {labels.get(source)}")
            if payload != jpeg:
                raise DataError(f"record {key} ({source}): image bytes differ from the source's")
            if mx.image.imdecode(payload).shape != (size, size, 3):
                raise DataError(f"record {key} ({source}): does not decode to {size}x{size}x3")
    finally:
        reader.close()
    return len(keys)


def _cpp_info_filtered():
    """Hold back the thread-count line MXNet's C++ parser writes to file descriptor 2."""
    return profiling.held_stderr(re.compile("ImageRecordIOParser"))


class RecordIter:
    """MXNet's C++ ImageRecordIter as a Gluon-style loader, decoding in `threads` C++ threads."""

    def __init__(self, path, batch_size: int, size: int, train: bool = True,
                 threads: int = 1, seed: int = 0):
        open_record_file(path).close()
        from ... import data as course_data
        mean = np.asarray(course_data.CIFAR_MEAN) * 255   # as every course loader normalises
        std = np.asarray(course_data.CIFAR_STD) * 255
        with _cpp_info_filtered():
            self.iter = mx.io.ImageRecordIter(
                path_imgrec=str(path), path_imgidx=str(Path(path).with_suffix(".idx")),
                data_shape=(3, size, size), batch_size=batch_size, shuffle=train,
                rand_crop=train, rand_mirror=train, pad=4 if train else 0, fill_value=0,
                mean_r=mean[0], mean_g=mean[1], mean_b=mean[2],
                std_r=std[0], std_g=std[1], std_b=std[2],
                preprocess_threads=threads, round_batch=False, seed=seed)
        self.batch_size, self.count = batch_size, len(sidecar(Path(path))["sources"])

    def __len__(self) -> int:
        return self.count // self.batch_size

    def __iter__(self):
        with _cpp_info_filtered():  # a reset starts the parser again
            self.iter.reset()
        # full batches only, like the DataLoader's last_batch="discard" (MXNet 1.9 does
        # not mark the short last batch's padding with round_batch=False)
        for _, batch in zip(range(len(self)), self.iter):
            yield batch.data[0], batch.label[0]
