"""gpu_course.data.folder: the Caltech-256-shaped folder, written and read back."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gpu_course.data import folder
from image_folders import leftovers, make_folder, truncate

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def root(tmp_path):
    return make_folder(tmp_path)


def test_generated_folder_has_caltech_layout_and_real_jpegs(root):
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert classes == ["001.circle", "002.ring", "003.square"]
    files = sorted(p.name for p in (root / "002.ring").iterdir())
    assert files == [f"002_{j:04d}.jpg" for j in range(1, 13)]
    sides = []
    for path in root.rglob("*.jpg"):
        assert path.read_bytes()[:3] == b"\xff\xd8\xff"  # JPEG start-of-image marker
        with Image.open(path) as img:
            assert img.format == "JPEG" and img.mode == "RGB"
            sides += list(img.size)
    assert 40 <= min(sides) and max(sides) <= 90 and len(set(sides)) > 5  # varied sizes
    assert leftovers(root.parent) == []


def test_same_settings_reuse_the_folder_and_other_settings_need_overwrite(root):
    stamp = (root / "001.circle" / "001_0001.jpg").stat().st_mtime_ns
    assert make_folder(root.parent) == root
    assert (root / "001.circle" / "001_0001.jpg").stat().st_mtime_ns == stamp
    with pytest.raises(ValueError, match="overwrite"):
        make_folder(root.parent, per_class=5)
    folder.generate_folder(root, folder.Photos(classes=2, per_class=3, min_side=40, max_side=50),
                           workers=1, progress=False, overwrite=True)
    assert len(folder.scan_folder(root)) == 6


def test_an_interrupted_generation_leaves_nothing_behind(tmp_path, monkeypatch):
    calls = []

    def fail_on_fifth(task):
        calls.append(task)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(task)
    real = folder._write_photo
    monkeypatch.setattr(folder, "_write_photo", fail_on_fifth)
    with pytest.raises(KeyboardInterrupt):
        make_folder(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("bad", [dict(classes=0), dict(classes=11), dict(per_class=0),
                                 dict(min_side=100, max_side=50), dict(quality=0)])
def test_bad_generator_settings_are_value_errors(tmp_path, bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        folder.generate_folder(tmp_path / "x", folder.Photos(**bad), progress=False)


def test_scan_reads_classes_labels_and_ignores_other_files(root):
    (root / "002.ring" / "RENAME2").write_text("a stray file, as in Caltech-256")
    (root / "002.ring" / ".DS_Store").write_bytes(b"\0")
    Image.new("L", (50, 60), 128).save(root / "003.square" / "grey.png")
    index = folder.scan_folder(root)
    assert index.classes == ("001.circle", "002.ring", "003.square")
    assert len(index) == 37
    assert np.bincount(index.labels).tolist() == [12, 12, 13]
    assert index.paths[12] == "002.ring/002_0001.jpg" and index.labels[12] == 1
    assert index.path(0) == root / "001.circle" / "001_0001.jpg"
    grey = folder.load_image(root / "003.square" / "grey.png", 16)
    assert grey.shape == (16, 16, 3) and (grey == 128).all()  # greyscale becomes RGB


def test_missing_and_empty_folders_are_clear_errors(tmp_path, root):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        folder.scan_folder(tmp_path / "nope")
    with pytest.raises(ValueError, match="gpu-course data --kind folder"):
        folder.scan_folder(tmp_path / "nope")  # MissingData is also a ValueError
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no class folders"):
        folder.scan_folder(tmp_path / "empty")
    (root / "004.nothing").mkdir()
    (root / "004.nothing" / "notes.txt").write_text("no images here")
    with pytest.raises(ValueError, match="004.nothing has no images"):
        folder.scan_folder(root)


def test_split_is_deterministic_disjoint_and_balanced(root):
    index = folder.scan_folder(root)
    train, val = folder.split(index, seed=1)
    again, _ = folder.split(index, seed=1)
    other, _ = folder.split(index, seed=2)
    assert train.paths == again.paths and train.paths != other.paths
    assert len(val) == 7 and len(train) == 29
    assert not set(train.paths) & set(val.paths)
    assert sorted(np.bincount(val.labels).tolist()) == [2, 2, 3]  # round-robin over classes
    small_train, small_val = folder.split(index, train_size=9, test_size=3, seed=1)
    assert len(small_train) == 9 and np.bincount(small_train.labels).tolist() == [3, 3, 3]
    assert len(small_val) == 3


def test_load_image_resizes_the_centre_square(tmp_path):
    pixels = np.zeros((60, 120, 3), np.uint8)
    pixels[:, :30] = 255            # white outer quarters, left and right
    pixels[:, 90:] = 255
    Image.fromarray(pixels).save(tmp_path / "wide.png")
    image = folder.load_image(tmp_path / "wide.png", 20)
    assert image.shape == (20, 20, 3) and image.dtype == np.uint8
    assert image[:, 1:-1].max() == 0  # the centre 60x60 square is black (the filter
    assert image.mean() < 5           # reaches a pixel past it at the edges)
    assert folder.load_image(tmp_path / "wide.png").shape == (60, 120, 3)


def test_corrupt_and_truncated_images_name_the_file(root):
    bad = truncate(root / "001.circle" / "001_0003.jpg")
    with pytest.raises(folder.CorruptImage, match="001_0003.jpg") as err:
        folder.load_image(bad, 32)
    assert err.value.path == bad and "skip_corrupt" in str(err.value)
    junk = root / "002.ring" / "002_0001.jpg"
    junk.write_bytes(b"not a jpeg at all")
    with pytest.raises(ValueError, match="002_0001.jpg"):
        folder.load_image(junk)


def test_folder_source_skips_unreadable_images_only_when_asked(root):
    index = folder.scan_folder(root)
    truncate(index.path(4))
    strict = folder.FolderSource(index, 24)
    with pytest.raises(folder.CorruptImage, match=index.paths[4]):
        strict.fetch(4)
    lenient = folder.FolderSource(index, 24, skip_corrupt=True)
    image, label = lenient.fetch(4)
    assert np.array_equal(image, folder.load_image(index.path(5), 24))  # the next one
    assert label == index.labels[5] and lenient.skipped.count == 1
    lenient.fetch(3)
    assert lenient.skipped.count == 1


def test_skip_counter_adds_up_over_processes():
    counter = folder.SkipCounter()
    pids = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:  # child: count one skip and leave at once
            counter.add()
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    assert counter.count == 3


def test_parallel_map_keeps_order_with_workers():
    tasks = list(range(40))
    assert list(folder.parallel_map(abs, tasks, workers=2, progress=False)) == tasks
    assert list(folder.parallel_map(abs, tasks, workers=1, progress=False)) == tasks


def test_a_finished_pool_ends_its_workers_without_a_signal(monkeypatch):
    """Every task done, the workers leave as the queue tells them (exit code 0), and no
    SIGTERM is sent. Pool.terminate() signals each worker, and a worker forked an instant
    before can lose that signal (a child clears the signals that reached it before the
    interpreter could run their handlers): the pool then waited for it forever (a
    clean-clone run hung in test_packed, CI once in test_io_data). A consumer that leaves
    early still has its workers ended at once, not left waiting for work."""
    ended = []

    def watch(pool, stopped=False):
        workers = list(pool._pool)
        real_end_pool(pool, stopped)
        ended.append(sorted(w.exitcode for w in workers))
    real_end_pool = folder.end_pool
    monkeypatch.setattr(folder, "end_pool", watch)
    assert list(folder.parallel_map(abs, list(range(-8, 0)), workers=2, progress=False)) == \
        list(range(8, 0, -1))
    assert ended == [[0, 0]]
    left = folder.parallel_map(abs, list(range(-50, 0)), workers=2, progress=False)
    assert next(left) == 50
    left.close()
    # the work left undone: each worker killed, or gone already on the pool's last word
    assert len(ended[1]) == 2 and all(code in (0, -9) for code in ended[1]), ended


def _cli_makes_folders() -> bool:
    from gpu_course.cli import build_parser
    try:
        build_parser().parse_args(["data", "--kind", "folder", "--per-class", "3"])
        return True
    except SystemExit:
        return False


@pytest.mark.skipif(not _cli_makes_folders(), reason="cli.py's `data` verb has no --kind folder yet")
def test_the_cli_writes_a_folder(tmp_path):
    out = run_cli("data", "--kind", "folder", "--out", tmp_path / "f", "--classes", 2,
                  "--per-class", 3)
    assert out.returncode == 0, out.stderr
    assert "wrote 6 JPEGs in 2 class folders" in out.stdout
    assert len(folder.scan_folder(tmp_path / "f")) == 6
    out = run_cli("data", "--kind", "folder", "--out", tmp_path / "f", "--classes", 3)
    assert out.returncode == 2 and "--overwrite" in out.stderr


def run_cli(*args, timeout=600):
    """`python -m gpu_course.cli ARGS` as a real subprocess from the repository root."""
    return subprocess.run([sys.executable, "-m", "gpu_course.cli", *map(str, args)],
                          cwd=REPO, capture_output=True, text=True, timeout=timeout)


def test_overwrite_replaces_only_what_gpu_course_wrote(tmp_path, capsys):
    """A user's own photo in a generated class folder, and a file of their own in the
    generated CIFAR-10 folder, survive --overwrite, and are named."""
    from gpu_course.data import generate_to
    look = dict(min_side=16, max_side=20)
    photos = folder.generate_folder(tmp_path / "photos", folder.Photos(2, 2, **look),
                                    workers=1, progress=False)
    first = sorted(p.name for p in photos.iterdir() if p.is_dir())[0]
    mine = photos / first / "my_own.jpg"
    mine.write_bytes(b"not generated")
    again = folder.generate_folder(photos, folder.Photos(2, 3, seed=1, **look),
                                   workers=1, progress=False, overwrite=True)
    assert mine.read_bytes() == b"not generated"
    assert len(list((again / first).glob(f"{first[:3]}_*.jpg"))) == 3
    assert f"{first}/my_own.jpg" in capsys.readouterr().out
    cifar = generate_to(tmp_path / "data", train_size=20, test_size=10)
    readme = cifar / "README.mine"
    readme.write_text("my notes")
    generate_to(tmp_path / "data", seed=1, train_size=20, test_size=10, overwrite=True)
    assert readme.read_text() == "my notes"
    assert "README.mine" in capsys.readouterr().out


def test_a_folder_of_one_class_is_refused_naming_it(tmp_path):
    import shutil
    root = make_folder(tmp_path, classes=2, per_class=2)
    shutil.rmtree(sorted(p for p in root.iterdir() if p.is_dir())[1])   # one class left
    with pytest.raises(folder.DataError, match="has one class folder .*two or more"):
        folder.scan_folder(root)
    with pytest.raises(ValueError, match=r"classes=1 must be in 2\.\.10"):
        folder.generate_folder(tmp_path / "gen", folder.Photos(classes=1, per_class=1),
                               progress=False)
