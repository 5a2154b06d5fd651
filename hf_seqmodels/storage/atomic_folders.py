"""The folders a run writes (the final model, the checkpoints, a Hub staging folder): replaced whole, never lost.

* `replacing` / `replace_dir`: a folder is written beside its target (``.<name>.tmp-<pid>``) and swapped into
  place in one step (Linux ``renameat2(RENAME_EXCHANGE)``), so a reader (or a killed run) always finds the complete
  old or the complete new folder. Without that call, the old folder is renamed aside (``.<name>.old-<pid>``) first;
  `remove_temporaries` puts it back if a kill came between the two renames.
* `saving`: a failed write (a full disk) removes the partial copy and says that the previous folder is kept.
* `MANIFEST`: every folder `replacing` writes lists the entries it wrote, and the sha256 of each weight file
  (`check_digests`: damaged weights are refused by name); replacing a folder drops only those of the earlier writer
  (for a folder from before manifests, those its content shows a run wrote: `earlier_runs`) and carries every other
  file (`foreign`) and folder into the new one as hard links (copies where the file system has none), before the
  swap: nothing of the user's is ever deleted, at whatever moment a run dies. The new folder takes the old one's
  permissions and owner.
* `remove_temporaries`: what killed runs left beside a folder, removed when the next run starts.
* `lock_folder`: one run at a time per folder; a second is refused with the pid, host and start time of the first.
* `rotate`: keep the newest checkpoints, and always the best one (`delete_dir`: a folder goes whole or not at all).
"""

import ctypes
import errno
import fcntl
import fnmatch
import glob
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

AT_FDCWD, RENAME_EXCHANGE = -100, 2  # from <fcntl.h> and <linux/fs.h>
_LIBC = ctypes.CDLL(None, use_errno=True)
_HELD_LOCKS: dict[Path, int] = {}  # folder -> open file descriptor of its lock, held until the process exits
MANIFEST = ".hf_seqmodels-files.json"  # in each folder hf_seqmodels writes: the names of the entries it wrote there
DIGESTED = "*.safetensors"  # the files whose sha256 a MANIFEST records
Recogniser = Callable[[Path], set[str]]  # a folder without a MANIFEST -> the names of the entries a run wrote there


def temp_path(target: Path) -> Path:
    """Where a new ``target`` is written before it replaces the old one."""
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


def _exchange(a: Path, b: Path) -> bool:
    """Swap the folders ``a`` and ``b`` in one atomic step; False where the C library, the kernel or the file
    system does not offer it (the caller then renames twice)."""
    renameat2 = getattr(_LIBC, "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def check_replaceable(target: Path) -> None:
    """Raise a FileExistsError unless ``target`` is a folder or absent: a file or a link is never replaced."""
    if target.is_symlink() or (target.exists() and not target.is_dir()):
        raise FileExistsError(f"{target} is not a folder (a file or a link), so it is not replaced; remove it or "
                              f"save elsewhere.")


def replace_dir(new: Path, target: Path) -> None:
    """Put the complete folder ``new`` in place of ``target`` (created if absent), so that ``target`` is at every
    moment either the complete old or the complete new folder, then delete the old one."""
    new, target = Path(new), Path(target)
    check_replaceable(target)
    if not target.exists():
        new.rename(target)
    elif _exchange(new, target):
        shutil.rmtree(new, ignore_errors=True)  # now the old folder; a kill here leaves it to remove_temporaries
    else:
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        target.rename(old)
        new.rename(target)
        shutil.rmtree(old, ignore_errors=True)


@contextmanager
def saving(temp: Path, target: Path) -> Iterator[None]:
    """Around the writing of ``temp`` (which is to replace ``target``): on failure remove ``temp``, and turn an
    OSError (a full disk, a missing permission) into one that names ``target`` and says what is left of it."""
    try:
        yield
    except BaseException as error:
        shutil.rmtree(temp, ignore_errors=True)
        error = as_os_error(error)
        if not isinstance(error, OSError):
            raise
        kept = (f"the previous {target} is kept unchanged" if target.is_dir() else
                f"{target} was not created (what is beside it is untouched)")
        message = (f"Saving {target} failed ({error}); {kept} and the partial copy {temp} was removed. Free disk "
                   f"space (or fix the permissions) and save again.")
        raise (OSError(error.errno, message) if error.errno else OSError(message)) from error


def as_os_error(error: BaseException) -> BaseException:
    """``error``, or the OSError that safetensors' writer reports in its own words (``SafetensorError: Error while
    serializing: I/O error: No space left on device (os error 28)``, a full disk)."""
    found = re.search(r"\(os error (\d+)\)", str(error)) if type(error).__name__ == "SafetensorError" else None
    if found is None:
        return error
    code = int(found.group(1))
    return OSError(code, os.strerror(code))


@contextmanager
def replacing(target: str | Path, recognise: Recogniser | None = None) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``target``; once the block has written it completely, it gets the
    `MANIFEST` of what it wrote and links to every entry of ``target`` that an earlier writer did not write
    (`foreign`; ``recognise`` knows an earlier run's entries in a folder without a manifest), takes ``target``'s
    permissions and owner, then replaces ``target`` (`replace_dir`). If the block fails, ``target`` is left as it
    was (`saving`); a name written by both the block and the user is refused (a ValueError listing them), the
    user's file kept. ``target`` may be relative, ``.`` included."""
    target = _absolute(target)
    check_replaceable(target)
    temp = temp_path(target)
    shutil.rmtree(temp, ignore_errors=True)
    with saving(temp, target):
        temp.mkdir(parents=True)
        yield temp
        write_manifest(temp)
        kept = foreign(target, recognise)
        if clashes := [name for name in kept if (temp / name).exists() or (temp / name).is_symlink()]:
            raise ValueError(f"{target} holds {', '.join(clashes)}, which no earlier run wrote, and the new one writes "
                             f"files of the same names: nothing was replaced. Move them out of {target} and run "
                             f"again, or save elsewhere.")
        for name in kept:
            link_entry(target / name, temp / name)
        take_mode_and_owner(target, temp)
        working = Path(os.getcwd())
        replace_dir(temp, target)
        if target in (working, *working.parents):  # the working folder was swapped away: the same path, in the new one
            os.chdir(working if working.is_dir() else target)


def take_mode_and_owner(old: Path, new: Path) -> None:
    """Give the folder ``new`` the permissions and owner of the folder ``old`` (nothing if ``old`` is absent)."""
    if not old.is_dir():
        return
    status, mine = old.stat(), new.stat()
    os.chmod(new, stat.S_IMODE(status.st_mode))
    if (status.st_uid, status.st_gid) != (mine.st_uid, mine.st_gid):
        os.chown(new, status.st_uid, status.st_gid)


def write_manifest(folder: Path) -> None:
    """Record the entries of ``folder`` (all written by this run) in its `MANIFEST`, with their digests."""
    _write_manifest(folder, [path.name for path in folder.iterdir() if path.name != MANIFEST], {})


def add_to_manifest(folder: str | Path, *names: str) -> None:
    """Record ``names``, just written into ``folder``, in its `MANIFEST`; nothing for a folder without one (not
    written by a run of hf_seqmodels)."""
    folder = Path(folder)
    if (manifest := _read_manifest(folder)) is not None:
        kept = {name: digest for name, digest in manifest.get("sha256", {}).items() if name not in names}
        _write_manifest(folder, {*names, *manifest["files"]}, kept)


def _write_manifest(folder: Path, names, digests: dict[str, str]) -> None:
    digests = {**digests, **{name: sha256(folder / name) for name in names
                             if matches(name, [DIGESTED]) and name not in digests and (folder / name).is_file()}}
    temp = folder / f"{MANIFEST}.tmp-{os.getpid()}"
    temp.write_text(json.dumps({"written_by": "hf_seqmodels", "files": sorted(names), "sha256": digests},
                               indent=1, sort_keys=True) + "\n")
    os.replace(temp, folder / MANIFEST)


def sha256(path: Path) -> str:
    """The sha256 of the file ``path``, in hexadecimal."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def check_digests(folder: str | Path) -> None:
    """Raise an OSError naming the file unless every weight file of ``folder`` whose sha256 its `MANIFEST` records
    still has it (nothing to check without a manifest: a folder no run wrote, a Hub download; a missing file is the
    loader's to name)."""
    folder = Path(folder)
    manifest = _read_manifest(folder) if folder.is_dir() else None
    for name, digest in (manifest or {}).get("sha256", {}).items():
        if (path := folder / name).is_file() and sha256(path) != digest:
            raise OSError(f"{path} does not hold the bytes the run saved (its sha256 differs from the one "
                          f"{folder / MANIFEST} recorded): the file is damaged or was changed since, and loading it "
                          f"could compute with wrong weights. Save or copy the model again; if you wrote new weights "
                          f"there yourself, delete its entry under \"sha256\" in {MANIFEST}.")


def ours(folder: Path, recognise: Recogniser | None = None) -> bool:
    """Whether ``folder`` was written by hf_seqmodels: it has a `MANIFEST`, or ``recognise`` finds what an earlier
    version wrote there before manifests."""
    return (folder / MANIFEST).is_file() or bool(recognise and recognise(folder))


def foreign(folder: Path, recognise: Recogniser | None = None) -> list[str]:
    """The names of the entries of ``folder`` (none if absent) that hf_seqmodels did not write there: those its
    `MANIFEST` does not list, or without one, those ``recognise`` does not know as an earlier run's (all, without
    it); the manifest and what a kill left of its rewriting excepted."""
    if not folder.is_dir():
        return []
    ran = written(folder, recognise)
    return sorted(path.name for path in folder.iterdir() if not path.name.startswith(MANIFEST) and path.name not in ran)


def written(folder: Path, recognise: Recogniser | None = None) -> set[str]:
    """The names of the entries hf_seqmodels wrote in the folder ``folder``: those its `MANIFEST` lists, or without
    one, those ``recognise`` knows as an earlier run's (none, without it)."""
    manifest = _read_manifest(folder)
    return set(manifest["files"]) if manifest is not None else recognise(folder) if recognise else set()


def _read_manifest(folder: Path) -> dict | None:
    """The `MANIFEST` of ``folder`` (``files``: the names a run wrote; ``sha256``: name -> digest); None without
    one."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    try:
        found = json.loads(manifest.read_text())
        written, digests = found["files"], found.get("sha256", {})
        if isinstance(written, list) and all(isinstance(name, str) for name in written) and isinstance(
                digests, dict) and all(isinstance(value, str) for value in digests.values()):
            return found
    except (ValueError, KeyError, TypeError):
        pass
    raise ValueError(f"{manifest} is damaged (not the JSON list of the files a run wrote there), so what in {folder} "
                     f"is yours is unknown: nothing is replaced. Move your files out of {folder} and delete that "
                     f"file, or use another folder.")


def matches(name: str, patterns: Sequence[str]) -> bool:
    """Whether ``name`` matches one of the glob ``patterns`` (case-sensitive)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)


def link_entry(source: Path, target: Path) -> None:
    """Make ``target`` the same entry as ``source``: a hard link of a file (a copy where the file system has
    none), a folder of such links, a link with the same destination."""
    if source.is_symlink():
        os.symlink(os.readlink(source), target)
    elif source.is_dir():
        shutil.copytree(source, target, symlinks=True, copy_function=_link_file)
    else:
        _link_file(source, target)


def _link_file(source: str | Path, target: str | Path) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def remove_temporaries(folder: Path, names: str) -> list[Path]:
    """Remove what killed runs left in ``folder`` (which this process has locked: `lock_folder`) beside the folders
    whose names match the glob ``names``: the temporary ``.<name>.tmp*`` folders, and the ``.<name>.old-<pid>``
    ones, except that an old folder whose ``<name>`` is missing (a kill between the two renames of `replace_dir`)
    is renamed back. Returns what was removed; nothing without the lock, as another run may be writing there."""
    if not holds_lock(folder):
        return []
    return _remove_temporaries(Path(folder), names)


def remove_temporaries_of(target: Path) -> list[Path]:
    """`remove_temporaries` beside the one folder ``target``, which this process has locked."""
    target = _absolute(target)
    return _remove_temporaries(target.parent, glob.escape(target.name)) if holds_lock(target) else []


def _remove_temporaries(folder: Path, names: str) -> list[Path]:
    removed = []
    for old in sorted(folder.glob(f".{names}.old-*")):
        target = folder / old.name[1:].rsplit(".old-", 1)[0]
        if not target.exists():
            old.rename(target)
    for stale in sorted(folder.glob(f".{names}.tmp*")) + sorted(folder.glob(f".{names}.old-*")):
        shutil.rmtree(stale, ignore_errors=True)
        removed.append(stale)
    return removed


def _absolute(path: str | Path) -> Path:
    """``path`` from the root, without ``..`` (one folder, one lock, whichever way it is named)."""
    return Path(os.path.abspath(path))


def holds_lock(folder: Path) -> bool:
    """Whether this process holds the lock of ``folder`` (`lock_folder`)."""
    return _absolute(folder) in _HELD_LOCKS


def lock_path(folder: Path) -> Path:
    """The lock file of ``folder``: beside it (inside, it would be swapped away with the folder it locks)."""
    folder = _absolute(folder)
    return folder.with_name(f".{folder.name}.lock")


def lock_folder(folder: str | Path, option: str) -> bool:
    """Lock ``folder`` for this process until it exits or `unlock_folders` (``flock`` on `lock_path`), or raise a
    BlockingIOError naming the process that holds it. The kernel drops the lock of a process that ended, however
    it ended, so a killed run never blocks the next. Returns False for a folder this process holds already.

    ``option`` names the folder in messages (e.g. ``--output_dir``).
    """
    folder = _absolute(folder)
    if holds_lock(folder):
        return False
    path = lock_path(folder)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as error:
        raise OSError(error.errno, f"{option}={folder}: cannot write in {path.parent} ({error.strerror}); the run "
                                   f"writes its files beside the folder before renaming them into place. Pass a "
                                   f"folder where you can write.") from error
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as error:
        holder = os.read(descriptor, 4096).decode(errors="replace")
        os.close(descriptor)
        raise BlockingIOError(errno.EWOULDBLOCK, f"{option}={folder} is in use by another run ({_describe(holder)}; "
                                                 f"lock file {path}): wait for it to end, stop it, or pass another "
                                                 f"{option}.") from error
    os.ftruncate(descriptor, 0)
    os.write(descriptor, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                     "started": time.strftime("%Y-%m-%d %H:%M:%S %Z")}).encode())
    _HELD_LOCKS[folder] = descriptor
    return True


def lock_folders(folders: dict[str, str | Path]) -> list[Path]:
    """`lock_folder` each of ``folders`` (option -> folder), all or none: when one is in use, those just locked
    are released. Returns the folders newly locked."""
    taken = []
    try:
        for option, folder in folders.items():
            if lock_folder(folder, option):
                taken.append(_absolute(folder))
    except OSError:
        unlock_folders(taken)
        raise
    return taken


def unlock_folders(folders: list[Path]) -> None:
    """Release the locks of ``folders`` (taken by `lock_folder`); their lock files stay, for the next run."""
    for folder in folders:
        os.close(_HELD_LOCKS.pop(_absolute(folder)))


def _describe(holder: str) -> str:
    try:
        info = json.loads(holder)
        return f"process {info['pid']} on host {info['host']}, started {info['started']}"
    except (ValueError, KeyError, TypeError):
        return "a process that has not yet written its pid and host"


def rotate(folders: Sequence[Path], limit: int, keep: Path | None = None) -> list[Path]:
    """Delete the oldest of ``folders`` (given oldest first) until at most ``limit`` remain, never ``keep`` (the
    best checkpoint) nor the newest (the one to resume from): with ``limit`` 1 and an older ``keep``, two remain.
    Returns the deleted folders."""
    candidates = [folder for folder in folders[:-1] if folder != keep]
    deleted = candidates[:max(0, len(folders) - limit)]
    for folder in deleted:
        delete_dir(folder)
    return deleted


def delete_dir(folder: Path) -> None:
    """Delete ``folder`` whole or not at all: it is renamed to a temporary name first (`temp_path`), which
    `remove_temporaries` removes if a kill stops the deletion."""
    hidden = temp_path(folder)
    shutil.rmtree(hidden, ignore_errors=True)
    folder.rename(hidden)
    shutil.rmtree(hidden)
