"""The CPython semantics suite (issue 26's second peer suite): rebuild it and check it.

The files are CPython's own tests as PyTorch's repository ports them
(``test/dynamo/cpython/3_13/``); the project keeps only ``cpython_manifest.json``
(where each file comes from, its length and hashes), never the files.

    python tools/peer/cpython_suite.py check DIR
        DIR holds the rebuilt files (``test_set.py``, ..., ``mathdata/``): every file of the
        manifest must be there with the recorded length and sha256.

    python tools/peer/cpython_suite.py build --cpython-lib LIB --diffs DIFFS DIR
        LIB holds CPython's ``Lib/test`` files at the manifest's tags (each file's ``base.git_blob``
        is checked), DIFFS PyTorch's ``.diff`` files at the manifest's commits; each file is
        written to DIR as LIB's file with the diff applied (``patch``), the data files are copied,
        ``cpython_conftest.py`` becomes DIR/conftest.py, and DIR is checked.

DIR must end in ``cpython/v<major>_<minor>`` of the interpreter that runs it (torch's
CPythonTestCase skips every test otherwise). tools/peer/README.md has the whole procedure.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "cpython_manifest.json"


def git_blob(data: bytes) -> str:
    """git's object id of a file with these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def local_name(entry: dict) -> str:
    """Where a manifest file lives inside the suite folder (``mathdata/`` kept)."""
    path = entry["path"].split("/3_13/", 1)[1]
    return path


def check(folder: Path, manifest: dict) -> bool:
    """Print one line per manifest file; True when all are present and equal."""
    ok = True
    for entry in manifest["files"]:
        path = folder / local_name(entry)
        if not path.exists():
            print(f"MISSING {path}")
            ok = False
            continue
        text = path.read_text(encoding="utf-8")
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        good = len(text) == entry["chars"] and digest == entry["sha256_16"]
        ok &= good
        print(f"{'OK  ' if good else 'BAD '} {path}: {len(text)} chars (want {entry['chars']}), "
              f"sha256_16 {digest} (want {entry['sha256_16']})")
    return ok


def build(lib: Path, diffs: Path, folder: Path, manifest: dict) -> bool:
    """Write every manifest file into ``folder`` from CPython's file and PyTorch's diff."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in manifest["files"]:
        name = local_name(entry)
        base = lib / entry["base"]["path"].removeprefix("Lib/test/")
        if git_blob(base.read_bytes()) != entry["base"]["git_blob"]:
            raise SystemExit(f"{base} is not CPython {entry['base']['cpython_tag']}'s file "
                             f"(git blob {entry['base']['git_blob']})")
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(base, target)
        if "diff" in entry:
            diff = diffs / Path(entry["diff"]["path"]).name
            with open(diff, "rb") as patch_input:
                subprocess.run(["patch", "-s", "--no-backup-if-mismatch", str(target)], stdin=patch_input,
                               check=True)
    shutil.copyfile(HERE / "cpython_conftest.py", folder / "conftest.py")
    return check(folder, manifest)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check").add_argument("folder", type=Path)
    b = sub.add_parser("build")
    b.add_argument("--cpython-lib", type=Path, required=True)
    b.add_argument("--diffs", type=Path, required=True)
    b.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    manifest = json.loads(MANIFEST.read_text())
    if args.command == "check":
        return 0 if check(args.folder, manifest) else 1
    return 0 if build(args.cpython_lib, args.diffs, args.folder, manifest) else 1


if __name__ == "__main__":
    sys.exit(main())
