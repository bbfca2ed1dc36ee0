"""Faults in writing and reading data, and in the Makefile, framework-free: no data lost,
no hang, and every bad input a clear error. Real files and real subprocesses (the
`gpu-course data` command), in one environment (`make test`'s core phase)."""
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from image_folders import leftovers, make_folder
from support import REPO, foreign_cifar, no_bigger_than, run_cli

from gpu_course import data
from gpu_course.data import cifar, folder, paths
from gpu_course.measure import guards, records


# -- data: never lost ----------------------------------------------------------------------
def test_data_never_replaces_a_data_set_it_did_not_write(tmp_path):
    theirs = foreign_cifar(tmp_path)
    for extra in ([], ["--overwrite"]):
        out = run_cli("data", "--out", tmp_path, "--train", 20, "--test", 10, *extra)
        assert out.returncode == 2 and "did not write" in out.stderr, out.stderr
    assert all((theirs / n).read_bytes() == b"theirs" for n in cifar.ALL_FILES)


def test_data_reuses_its_own_and_replaces_it_only_with_overwrite(tmp_path):
    assert run_cli("data", "--out", tmp_path, "--train", 20, "--test", 10).returncode == 0
    first = (tmp_path / cifar.FOLDER_NAME / "test_batch.bin").stat().st_mtime_ns
    assert run_cli("data", "--out", tmp_path, "--train", 20, "--test", 10).returncode == 0
    assert (tmp_path / cifar.FOLDER_NAME / "test_batch.bin").stat().st_mtime_ns == first
    out = run_cli("data", "--out", tmp_path, "--train", 30, "--test", 10)
    assert out.returncode == 2 and "--overwrite" in out.stderr
    out = run_cli("data", "--out", tmp_path, "--train", 30, "--test", 10, "--overwrite")
    assert out.returncode == 0, out.stderr
    assert cifar.read_cifar_binary(tmp_path / cifar.FOLDER_NAME).train_y.size == 30


def test_data_without_out_writes_to_the_data_folder(tmp_path):
    out = run_cli("data", "--train", 20, "--test", 10, env={"GPU_COURSE_DATA": tmp_path})
    assert out.returncode == 0, out.stderr
    assert cifar.is_complete(tmp_path / cifar.FOLDER_NAME) and str(tmp_path) in out.stdout


def test_folder_overwrite_keeps_unrelated_files_and_refuses_foreign_folders(tmp_path):
    root = make_folder(tmp_path, classes=2, per_class=2)
    (root / "my-notes.txt").write_text("mine")
    (root / "zz.mine").mkdir()
    (root / "zz.mine" / "photo.jpg").write_bytes(b"mine")
    folder.generate_folder(root, folder.Photos(classes=3, per_class=2, min_side=40, max_side=60),
                           workers=1, progress=False, overwrite=True)
    assert (root / "my-notes.txt").read_text() == "mine"
    assert (root / "zz.mine" / "photo.jpg").read_bytes() == b"mine"
    assert len(list(root.glob("00[123].*/*.jpg"))) == 6 and not leftovers(tmp_path)
    foreign = tmp_path / "theirs"
    (foreign / "cats").mkdir(parents=True)
    (foreign / "cats" / "1.jpg").write_bytes(b"cat")
    with pytest.raises(folder.DataError, match="did not write"):
        folder.generate_folder(foreign, folder.Photos(classes=2, per_class=2), overwrite=True,
                               workers=1, progress=False)
    assert (foreign / "cats" / "1.jpg").read_bytes() == b"cat"


def _data_writer(*args):
    return subprocess.Popen([sys.executable, "-m", "gpu_course.cli", "data", *map(str, args)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_a_second_data_writer_waits_for_the_first(tmp_path):
    """While another process holds the folder, `gpu-course data` says so and waits; it
    writes once the lock is free."""
    target = tmp_path / "photos"
    with paths.writing(target):
        proc = _data_writer("--kind", "folder", "--out", target, "--classes", 2,
                            "--per-class", 2)
        line = proc.stderr.readline()  # blocks until the writer has tried the lock
        assert f"waiting for another gpu-course process that is writing into {tmp_path}" \
            in line and not target.exists()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert cifar.read_manifest(target)["per_class"] == 2


@pytest.mark.parametrize("signum, whom", [(signal.SIGTERM, "the command"),
                                         (signal.SIGTERM, "its process group"),
                                         (signal.SIGINT, "its process group")],
                         ids=["kill", "timeout", "ctrl-c"])
def test_a_stop_while_writing_photos_leaves_nothing_and_says_so(tmp_path, signum, whom):
    """`kill` (the command), `timeout` or Ctrl-C in a terminal (the group, workers too)
    while JPEGs are being written: one line, no worker tracebacks, no hang, no
    .photos.tmp-* folder left behind."""
    proc = subprocess.Popen([sys.executable, "-m", "gpu_course.cli", "data", "--kind",
                             "folder", "--out", tmp_path / "photos", "--per-class", "3000"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    seen = b""
    while b"JPEGs" not in seen:  # the progress bar: the workers are writing
        byte = proc.stderr.read(1)
        assert byte, proc.communicate()
        seen += byte
    if whom == "the command":
        os.kill(proc.pid, signum)
    else:
        os.killpg(proc.pid, signum)
    _, err = proc.communicate(timeout=120)  # a hang guard
    assert proc.returncode == 130 and b"Traceback" not in err, err[-3000:]
    assert b"gpu-course data: interrupted" in err and b"KeyboardInterrupt" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["folder", "synthetic"])
def test_two_data_writers_on_one_folder_leave_one_whole_data_set(tmp_path, kind):
    """Two `gpu-course data --overwrite` at once with different sizes: the folder ends
    as one of them wrote it, manifest and all (it was left a mix, owned by neither)."""
    if kind == "folder":
        target = tmp_path / "photos"
        sizes = [("--classes", 3, "--per-class", 12), ("--classes", 2, "--per-class", 20)]
        first = _data_writer("--kind", "folder", "--out", target, *sizes[0][:2],
                             "--per-class", 1)
    else:
        target = tmp_path / cifar.FOLDER_NAME
        sizes = [("--train", 3000, "--test", 10), ("--train", 2000, "--test", 20)]
        first = _data_writer("--out", tmp_path, "--train", 20, "--test", 10)
    assert first.wait(timeout=300) == 0
    procs = [_data_writer(*(["--kind", "folder", "--out", target] if kind == "folder"
                            else ["--out", tmp_path]), *size, "--overwrite")
             for size in sizes]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert not any("kept in" in out for out, _ in outs) and not leftovers(tmp_path)
    if kind == "folder":
        found = cifar.read_manifest(target)
        assert found is not None
        assert len(folder.scan_folder(target)) == found["classes"] * found["per_class"]
        assert sorted(p.name for p in target.iterdir() if p.is_dir()) == \
            [f"{k + 1:03d}.{folder.synthetic.CLASSES[k]}" for k in range(found["classes"])]
    else:
        found = cifar.read_manifest(target)
        assert found is not None
        assert cifar.read_cifar_binary(target).train_y.size == found["train_size"]


def test_synthetic_cache_never_goes_into_a_users_folder(tmp_path, monkeypatch, capsys):
    users = make_folder(tmp_path, classes=2, per_class=2, name="photos")
    before = sorted(p.name for p in users.iterdir())
    monkeypatch.setenv("GPU_COURSE_DATA", str(tmp_path / "course"))
    got = data.prepare("synthetic", root=users, train_size=20, test_size=10)
    assert sorted(p.name for p in users.iterdir()) == before
    assert Path(got).is_relative_to(tmp_path / "course")
    assert str(tmp_path / "course") in capsys.readouterr().out  # says where


def test_prepared_copies_go_to_the_cache_folder_the_user_sets(tmp_path, monkeypatch):
    from gpu_course.data import packed
    monkeypatch.setenv("GPU_COURSE_CACHE", str(tmp_path / "cache"))
    assert packed.prepared_dir(tmp_path / "photos").parent == tmp_path / "cache"


def test_cifar10_data_dir_can_name_the_batches_folder_or_says_what_is_missing(tmp_path):
    folder_path = data.generate_to(tmp_path, train_size=20, test_size=10)
    assert data.prepare("cifar10", root=folder_path) == folder_path
    (folder_path / cifar.META_FILE).unlink()
    for root in (tmp_path, folder_path):
        with pytest.raises(FileNotFoundError, match="missing batches.meta.txt") as err:
            data.prepare("cifar10", root=root)
        assert "download" not in str(err.value)


def test_paths_that_are_files_are_clear_errors(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    out = run_cli("data", "--out", a_file, "--train", 20, "--test", 10)
    assert out.returncode == 2 and "is a file" in out.stderr and "Traceback" not in out.stderr
    out = run_cli("runs", env={"GPU_COURSE_RUNS": a_file})
    assert out.returncode == 2 and f"GPU_COURSE_RUNS={a_file} is a file" in out.stderr
    out = run_cli("data", "--train", 20, "--test", 10, env={"GPU_COURSE_DATA": a_file})
    assert out.returncode == 2 and f"GPU_COURSE_DATA={a_file} is a file" in out.stderr
    out = run_cli("monitor", "--out", a_file / "m.csv", "--seconds", "0.1")
    assert out.returncode == 1 and "Traceback" not in out.stderr and str(a_file) in out.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_one_clear_line(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    out = run_cli("data", "--out", locked / "d", "--train", 20, "--test", 10)
    assert out.returncode == 1 and "permission denied while writing" in out.stderr
    out = run_cli("runs", env={"GPU_COURSE_RUNS": locked})
    assert out.returncode == 0  # reading is fine
    out = run_cli("monitor", "--out", locked / "m.csv", "--seconds", "0.1")
    assert out.returncode == 1 and "permission denied" in out.stderr


def test_running_out_of_space_while_writing_data_is_one_line_and_leaves_nothing(tmp_path):
    out = subprocess.run([sys.executable, "-m", "gpu_course.cli", "data", "--out", tmp_path,
                          "--train", "2000", "--test", "10"], cwd=REPO, capture_output=True,
                         text=True, timeout=120, preexec_fn=no_bigger_than(100_000))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "file too large" in out.stderr and str(tmp_path) in out.stderr
    assert list(tmp_path.iterdir()) == []  # no half-written folder, no temporary one
    disk_full = OSError(28, "No space left on device", str(tmp_path / "x.bin"))
    status, error = guards.status_of(disk_full, 2)
    assert status == "failed" and error.startswith(f"disk full while writing {tmp_path}")


def test_a_full_disk_while_writing_jpegs_is_one_line_naming_the_file_not_a_cut_short_jpeg(
        tmp_path):
    """Pillow writing a JPEG itself ignored a short write: the file was cut at the limit
    and `gpu-course data --kind folder` said it wrote them all."""
    out = subprocess.run([sys.executable, "-m", "gpu_course.cli", "data", "--kind", "folder",
                          "--per-class", "2", "--classes", "2", "--out", tmp_path / "photos"],
                         cwd=REPO, capture_output=True, text=True, timeout=120,
                         preexec_fn=no_bigger_than(4096))
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert "file too large" in out.stderr and ".jpg" in out.stderr and str(tmp_path) in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_what_a_writer_killed_outright_left_is_cleared_by_the_next(tmp_path):
    """SIGKILL leaves no time to clean up: its .photos.tmp-<pid> folder stayed for good."""
    stale = tmp_path / ".photos.tmp-999999" / "001.circle"
    stale.mkdir(parents=True)
    (stale / "001_0001.jpg").write_bytes(b"\xff\xd8")
    other = tmp_path / ".other.tmp-999999"   # another folder's: not this writer's to clear
    other.mkdir()
    folder.generate_folder(tmp_path / "photos", folder.Photos(classes=2, per_class=1),
                           workers=0, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.tmp-999999", "photos"]


def _die_on_three(n):
    if n == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    return n


def test_a_data_worker_that_dies_is_an_error_not_a_wait_forever():
    """The pool replaces a killed worker, but its task's result never comes: the map
    waited for it forever."""
    raised = []

    def run():
        try:
            list(folder.parallel_map(_die_on_three, list(range(8)), workers=2, progress=False))
        except Exception as err:
            raised.append(err)
    waiter = threading.Thread(target=run, daemon=True)
    waiter.start()
    waiter.join(60)
    assert not waiter.is_alive(), "the map still waits for the dead worker's result"
    assert isinstance(raised[0], folder.WorkerDied)
    assert re.match(r"worker process \d+ ended \(signal 9", str(raised[0]))


def test_a_full_disk_while_appending_steps_names_the_file(tmp_path, monkeypatch):
    """steps.csv is appended to: the write's error named no file, and the record said
    "disk full while writing a file"."""
    def full(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as raised:
        records.append_text(tmp_path / "steps.csv", "1,2\n")
    assert raised.value.filename == str(tmp_path / "steps.csv")
    status, error = guards.status_of(raised.value, 1)
    assert error.startswith(f"disk full while writing {tmp_path / 'steps.csv'}")


# -- images that cannot be read -------------------------------------------------------------
def test_corrupt_image_pickles_back_naming_the_file(tmp_path):
    err = folder.CorruptImage(tmp_path / "a.jpg", "truncated")
    back = pickle.loads(pickle.dumps(err))
    assert back.path == err.path and str(back) == str(err) and "skip_corrupt" in str(back)


def test_a_decompression_bomb_names_the_file(tmp_path, monkeypatch):
    from PIL import Image
    root = make_folder(tmp_path, classes=2, per_class=1)
    image = next(root.rglob("*.jpg"))
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # this image is > 2x that
    with pytest.raises(folder.CorruptImage, match="decompression bomb") as err:
        folder.load_image(image)
    assert str(image) in str(err.value)


# -- the Makefile ----------------------------------------------------------------------------
@pytest.mark.parametrize("env, words", [({"ENGINE": "foo"}, "ENGINE=foo is not a track"),
                                        ({"ENGINE": "torch"}, "ENGINE=pytorch"),
                                        ({"PYTHON": "false"}, "needs Python 3.11")])
def test_make_says_what_is_wrong_at_once(env, words):
    out = subprocess.run(["make", "-n", "run"], cwd=REPO, capture_output=True, text=True,
                         timeout=60, env={**os.environ, **env})
    assert out.returncode != 0 and words in out.stderr
