"""The attendee's copies of the notebooks (`make workshop`, `make lab`): notebooks/ copied
into workshop/, which git ignores, so that running and editing a lesson never touches the
checkout.

    python -m tools.workshop                    # notebooks/ -> workshop/
    python -m tools.workshop --source S --dest D

Each run, for every notebook (and course_setup.py):
- a copy that is missing is made;
- a copy the attendee never edited (it is still the version this tool last copied, by
  its hash in workshop/.course-copies.json) is replaced by the course's current version,
  so a `git pull` reaches it;
- a copy the attendee edited is kept, the course's new version is put beside it as
  <name>.new.ipynb, and the tool says so;
- a notebook copy that is not readable JSON (cut short, say by a full disk) is moved aside
  as <name>.unreadable-<n> and copied afresh: nothing is deleted.
Every file is written to a temporary name and renamed, so an interrupted or failed copy
leaves no part-written notebook. Any error names the path and ends with exit status 1.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = ".course-copies.json"
EXTRA = ("course_setup.py",)


class Done(Enum):
    COPIED = "copied"
    UPDATED = "updated (you had not edited it)"
    CURRENT = "current"
    KEPT = "kept: you edited it; the course's version has changed since, and is beside it"
    REPLACED_UNREADABLE = "was not a readable notebook: moved aside, copied afresh"


@dataclass(frozen=True)
class Outcome:
    path: str
    done: Done
    aside: str | None = None


class WorkshopError(RuntimeError):
    """A copy that could not be made; the message names the path."""


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sources(source: Path) -> list[Path]:
    """The files attendees get: every notebook in `source` and its track folders, and the
    first cell's helper."""
    found = sorted(source.glob("*.ipynb")) + sorted(source.glob("*/*.ipynb"))
    found = [p for p in found if "solutions" not in p.relative_to(source).parts]
    return [source / name for name in EXTRA if (source / name).is_file()] + found


def readable(path: Path) -> bool:
    if path.suffix != ".ipynb":
        return True
    try:
        return isinstance(json.loads(path.read_text(encoding="utf-8")), dict)
    except (ValueError, UnicodeDecodeError):
        return False


def write_atomically(data: bytes, target: Path) -> None:
    """`data` into `target` through a temporary file in the same folder and a rename: an
    error (a full disk) leaves `target` as it was and no temporary file."""
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def aside_name(path: Path) -> Path:
    n = 1
    while path.with_name(f"{path.name}.unreadable-{n}").exists():
        n += 1
    return path.with_name(f"{path.name}.unreadable-{n}")


def sync(source: Path, dest: Path) -> list[Outcome]:
    """Bring `dest` up to date with `source` as the module says; the outcome of each file."""
    if not source.is_dir():
        raise WorkshopError(f"{source} is not a folder of notebooks")
    manifest_path = dest / MANIFEST
    if dest.exists() and not dest.is_dir():
        raise WorkshopError(f"{dest} is a file, not a folder: move it aside")
    try:
        dest.mkdir(parents=True, exist_ok=True)
        copied = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    except (OSError, ValueError) as err:
        raise WorkshopError(f"{dest}: {err}") from None
    copied = copied if isinstance(copied, dict) else {}
    outcomes = []
    for src in sources(source):
        rel = src.relative_to(source).as_posix()
        target = dest / rel
        try:
            if target.parent.exists() and not target.parent.is_dir():
                raise WorkshopError(f"{target.parent} is a file, not a folder: move it aside")
            target.parent.mkdir(parents=True, exist_ok=True)
            data = src.read_bytes()
            new = hashlib.sha256(data).hexdigest()
            aside = None
            if not target.exists():
                done = Done.COPIED
            elif target.is_dir():
                raise WorkshopError(f"{target} is a folder, not {rel}'s copy: move it aside")
            elif digest(target) == new:
                done = Done.CURRENT
            elif not readable(target):
                aside = aside_name(target)
                os.replace(target, aside)
                done = Done.REPLACED_UNREADABLE
            elif copied.get(rel) == digest(target):
                done = Done.UPDATED
            else:   # edited: kept, and the course's new version beside it
                beside = target.with_name(f"{target.stem}.new{target.suffix}")
                if not beside.exists() or digest(beside) != new:
                    write_atomically(data, beside)
                outcomes.append(Outcome(rel, Done.KEPT, str(beside.relative_to(dest))))
                continue
            if done != Done.CURRENT:
                write_atomically(data, target)
            copied[rel] = new
            outcomes.append(Outcome(rel, done, aside and str(aside.relative_to(dest))))
        except OSError as err:
            raise WorkshopError(f"could not copy {rel} to {target}: {err.strerror or err}") from None
        finally:   # what was copied so far is recorded, even when a later copy fails
            try:
                write_atomically(json.dumps(copied, indent=1, sort_keys=True).encode(),
                                 manifest_path)
            except OSError:
                pass
    return outcomes


def report(outcomes: list[Outcome], dest: Path) -> str:
    lines = []
    for o in outcomes:
        if o.done == Done.CURRENT:
            continue
        where = {Done.KEPT: f" (the course's version: {o.aside})",
                 Done.REPLACED_UNREADABLE: f" (what was there: {o.aside})"}.get(o.done, "")
        lines.append(f"  {o.path}: {o.done.value}{where}")
    if any(o.done == Done.KEPT for o in outcomes):
        lines.append(f"  To work on the course's new version of a kept copy, open the .new one, or "
                     f"rename or delete yours in {dest} and run `make workshop` again.")
    return "\n".join([f"workshop: {len(outcomes)} files in {dest}"] + lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.workshop", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", type=Path, default=REPO / "notebooks")
    parser.add_argument("--dest", type=Path, default=REPO / "workshop")
    args = parser.parse_args(argv)
    try:
        outcomes = sync(args.source, args.dest)
    except WorkshopError as err:
        print(f"workshop: {err}. Nothing that was there is lost; fix it and run `make workshop` "
              "again.", file=sys.stderr)
        return 1
    print(report(outcomes, args.dest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
