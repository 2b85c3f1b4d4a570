"""The two archives the finder's worker imports are the canonical archives of the members the
check accepted, byte for byte (``verify/archive.py``, ``verify.artifact.check_canonical``).

The attack (a reviewer's, reproduced): the check reads an archive with this CPython's
``zipfile``, the worker imports it with Pyodide's ``zipimport`` (CPython 3.14), and the two
parsers can read different members from the same bytes. ``zipimport`` takes a Zip64 end record
whenever ``PK\\6\\6`` stands 76 bytes before the end record, without its locator; ``zipfile``
only with the locator ``PK\\6\\7``. A forged archive holds the genuine central directory for
``zipfile`` and, in the last entry's comment, a second one and a Zip64 record for
``zipimport``, pointing a module at planted bytes: the check accepted it and the worker ran
the planted module. The oracle that the forgery is real: the pinned Pyodide's own ``zipimport``
(under Node.js, ``node_modules/pyodide``) reads the planted bytes from it, and this
``zipfile`` the genuine ones. The fix refuses the kind, not the trick: any archive whose bytes
are not what the build's writer writes of its members (a comment, an extra field, a data
descriptor, compression, a byte before or after) is refused, one line naming the file.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import struct
import subprocess
import zipfile
import zlib

import pytest

from hooks.finder.pyodide_assets import BUNDLE_URI, PYODIDE_DIR, STDLIB_URI
from tests.verify.test_artifact_calculator import PLANTED, SNIPPETS, VRAM, genuine, pack, refused, unpack
from verify.archive import canonical_zip
from verify.artifact import check_calculator
from verify.precompile import pyc

NOT_CANONICAL = "the archive is not the canonical archive of its members"
PLANTED_STDLIB = pyc(b"raise SystemExit", "/lib/python314.zip/json/__init__.py")
TARGETS = {BUNDLE_URI: ("vram/job.pyc", PLANTED), STDLIB_URI: ("json/__init__.pyc", PLANTED_STDLIB)}


def members_of(packed: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(unpack(packed))) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


# ---------------------------------------------------------------- the forgery (the reviewer's construction)
def _local(name: bytes, data: bytes) -> bytes:
    """A stored member's local header (version 20, no flags, DOS date 1980-01-01) and its bytes."""
    fields = (b"PK\3\4", 20, 0, 0, 0, 0x21, zlib.crc32(data), len(data), len(data), len(name), 0)
    return struct.pack("<4s5H3L2H", *fields) + name + data


def _central(name: bytes, data: bytes, offset: int, comment: bytes = b"") -> bytes:
    fields = (b"PK\1\2", 20, 20, 0, 0, 0, 0x21, zlib.crc32(data), len(data), len(data), len(name), 0, len(comment))
    return struct.pack("<4s6H3L5H2L", *fields, 0, 0, 0, offset) + name + comment


def split_directory(members: list[tuple[str, bytes]], planted: dict[str, bytes]) -> bytes:
    """An archive in which ``zipfile`` reads ``members`` and ``zipimport`` reads ``members`` with
    ``planted`` instead of theirs: a second central directory and a Zip64 end record (no
    locator) in the last entry's comment, 76 bytes before the end record."""
    out, offsets, planted_offsets = bytearray(), {}, {}
    for name, data in members:
        offsets[name] = len(out)
        out += _local(name.encode(), data)
    for name, data in planted.items():  # no entry of zipfile's directory points here
        planted_offsets[name] = len(out)
        out += _local(name.encode(), data)
    hidden = b"".join(_central(n.encode(), planted.get(n, d), planted_offsets.get(n, offsets[n])) for n, d in members)
    directory_offset = len(out)
    entries = [_central(n.encode(), d, offsets[n]) for n, d in members[:-1]]
    last_name, last_data = members[-1]
    hidden_offset = directory_offset + sum(map(len, entries)) + 46 + len(last_name)  # the comment's start
    count = len(members)
    zip64 = struct.pack("<4sQ2H2L4Q", b"PK\6\6", 44, 20, 20, 0, 0, count, count, len(hidden), hidden_offset)
    comment = hidden + zip64 + b" " * 20  # where a Zip64 locator would stand: zipfile finds none
    entries.append(_central(last_name.encode(), last_data, offsets[last_name], comment))
    directory = b"".join(entries)
    out += directory + struct.pack("<4s4H2LH", b"PK\5\6", 0, 0, count, count, len(directory), directory_offset, 0)
    return bytes(out)


def forged(files: dict[str, bytes], uri: str) -> bytes:
    """The packed archive at ``uri`` with its ``TARGETS`` member split: zipfile reads the genuine one."""
    name, planted = TARGETS[uri]
    return pack(split_directory(members_of(files[uri]), {name: planted}))


ZIPIMPORT = """
import { loadPyodide } from %(pyodide)s;
import fs from "fs";
const pyodide = await loadPyodide({ indexURL: %(index)s });
const read = {};
for (const [uri, [path, name]] of Object.entries(%(archives)s)) {
  const archive = "/home/pyodide/" + path.split("/").pop();  // one path each: zipimport keeps a path's directory
  pyodide.FS.writeFile(archive, fs.readFileSync(path));
  read[uri] = pyodide.runPython(`
import hashlib, zipimport
hashlib.sha256(zipimport.zipimporter("${archive}").get_data("${name}")).hexdigest()
`);
}
console.log(JSON.stringify(read));
"""


@pytest.mark.skipif(shutil.which("node") is None or not (PYODIDE_DIR / "pyodide.mjs").exists(), reason="npm ci")
def test_the_forgery_makes_the_workers_zipimport_read_what_zipfile_does_not(tmp_path):
    """The fixture is the attack: Pyodide's zipimport reads the planted member from each forged
    archive, this zipfile the genuine one (and every other member as it is)."""
    files = genuine()
    archives = {}
    for uri, (name, planted) in TARGETS.items():
        data = unpack(forged(files, uri))
        assert dict(members_of(pack(data))) == dict(members_of(files[uri]))  # what the check reads
        assert dict(members_of(files[uri]))[name] != planted
        (tmp_path / f"{name.replace('/', '_')}.zip").write_bytes(data)
        archives[uri] = [str(tmp_path / f"{name.replace('/', '_')}.zip"), name]
    script = tmp_path / "zipimport.mjs"
    script.write_text(
        ZIPIMPORT
        % {
            "pyodide": json.dumps((PYODIDE_DIR / "pyodide.mjs").resolve().as_uri()),
            "index": json.dumps(str(PYODIDE_DIR.resolve()) + "/"),
            "archives": json.dumps(archives),
        },
        encoding="utf-8",
    )
    run = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    read = json.loads(run.stdout.strip().splitlines()[-1])
    assert read == {uri: hashlib.sha256(planted).hexdigest() for uri, (_, planted) in TARGETS.items()}


@pytest.mark.parametrize("uri", list(TARGETS))
def test_a_second_directory_for_zipimport_is_refused(uri):
    files = genuine()
    files[uri] = forged(files, uri)
    refused(files, uri, NOT_CANONICAL)


# ---------------------------------------------------------------- the rest of the kind
def _rewritten(packed: bytes, seekable: bool = True, **settings) -> bytes:
    """The same members, written by zipfile with ``settings`` (a comment, an extra field,
    compression), into an output it cannot seek back in unless ``seekable`` (then it writes
    each member's sizes after its bytes, in a data descriptor), packed."""
    out = io.BytesIO() if seekable else _Unseekable()
    with zipfile.ZipFile(out, "w") as target:
        target.comment = settings.get("comment", b"")
        for name, data in members_of(packed):
            info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = settings.get("compression", zipfile.ZIP_STORED)
            info.extra = settings.get("extra", b"")
            target.writestr(info, data)
    return pack(out.getvalue() if isinstance(out, io.BytesIO) else out.written)


class _Unseekable(io.RawIOBase):
    """An output zipfile cannot seek back in."""

    def __init__(self) -> None:
        self.written = b""

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.written += bytes(data)
        return len(data)


VARIANTS = {
    "the build's own writer (the control)": lambda b: pack(canonical_zip(members_of(b))),
    "an archive comment": lambda b: _rewritten(b, comment=b"a comment"),
    "a member's extra field": lambda b: _rewritten(b, extra=struct.pack("<2H", 0xCAFE, 0)),
    "data descriptors": lambda b: _rewritten(b, seekable=False),
    "members compressed": lambda b: _rewritten(b, compression=zipfile.ZIP_DEFLATED),
    "a byte after the end record": lambda b: pack(unpack(b) + b"\0"),
    "a byte before the first member": lambda b: pack(b"\0" + unpack(b)),
}


@pytest.mark.parametrize("uri", list(TARGETS))
@pytest.mark.parametrize("variant", list(VARIANTS), ids=list(VARIANTS))
def test_an_archive_that_is_not_its_members_canonical_archive_is_refused(variant, uri):
    """Each variant holds the genuine members as zipfile reads them (the checks of the members
    pass); only its bytes differ from the build's. The control, the same members written by
    ``canonical_zip``, passes."""
    files = genuine()
    built = unpack(files[uri])
    changed = VARIANTS[variant](files[uri])
    assert members_of(changed) == members_of(files[uri])
    files[uri] = changed
    if variant.startswith("the build's own writer"):
        assert unpack(changed) == built  # the build writes with canonical_zip
        check_calculator(files, VRAM, SNIPPETS)
    else:
        assert unpack(changed) != built
        refused(files, uri, NOT_CANONICAL, "byte ")


def _flags_and_method(packed: bytes, flags: int, method: int) -> bytes:
    """The archive with every member's general purpose flags and compression method changed,
    in its local header and its directory entry alike (the bytes themselves unchanged)."""
    data = bytearray(unpack(packed))
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        headers = [info.header_offset + 6 for info in archive.infolist()]  # a local header's flags
    count, _, entry = struct.unpack_from("<HLL", data, len(data) - 22 + 10)  # the end record's
    for _ in range(count):  # each directory entry's flags, then the next entry
        headers.append(entry + 8)
        entry += 46 + sum(struct.unpack_from("<3H", data, entry + 28))
    for at in headers:
        data[at : at + 4] = struct.pack("<2H", flags, method)
    return pack(bytes(data))


UNREADABLE = {
    "members said encrypted": (1, 0, "not a zip the worker reads"),
    "an unknown compression method": (0, 99, "not a zip the worker reads"),
    "stored bytes said deflated": (0, 8, "not a readable zip"),
}


@pytest.mark.parametrize("kind", list(UNREADABLE), ids=list(UNREADABLE))
def test_an_archive_zipfile_cannot_read_is_refused_in_one_line(kind):
    flags, method, message = UNREADABLE[kind]
    files = genuine()
    files[BUNDLE_URI] = _flags_and_method(files[BUNDLE_URI], flags, method)
    refused(files, BUNDLE_URI, message)
