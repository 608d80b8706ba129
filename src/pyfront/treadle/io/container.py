"""The container every treadle file uses: a magic tag, a format version, the
payload length and a CRC-32 of the payload, so a truncated or corrupt file is
reported as such before any protobuf parser sees it."""

import os
import secrets
import stat
import struct
import zlib

from treadle import errors

MAGIC = b"TRDL"
_HEADER = struct.Struct("<4sIQI")  # magic, version, payload length, crc32
MAX_PAYLOAD = 1 << 34
# The kinds of treadle files, each defined here once. The version field holds
# the kind in its high bits and that kind's format version in the low byte
# (version_field); io/file_kinds says which code saves and loads each kind.
KIND_FUNCTION = 1
KIND_LOOM = 2
KIND_CHECKPOINT = 3
KIND_NAMES = {KIND_FUNCTION: "a saved function", KIND_LOOM: "a saved loom", KIND_CHECKPOINT: "a checkpoint"}


def version_field(kind, format_version):
    """The header's version field of a file of `kind` in `format_version` (< 256)."""
    return (kind << 8) | format_version


def kind_name(kind):
    return KIND_NAMES.get(kind, f"a treadle file of unknown kind {kind}")


def write_container(path, kind_version, payload):
    """Writes the file atomically: a reader (or a writer killed mid-way)
    sees the old file or the new one, never a part of either."""
    header = _HEADER.pack(MAGIC, kind_version, len(payload), zlib.crc32(payload) & 0xFFFFFFFF)
    atomic_write(path, header + payload)


def atomic_write(path, data):
    """Writes `data` to a new file beside `path`, flushes it to disk and
    renames it over `path` (POSIX rename replaces atomically). A path that
    names something other than a regular file (a pipe, a device) is written
    in place, as rename would replace the special file itself."""
    path = os.fspath(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            with open(path, "wb") as f:
                f.write(data)
            return
    except FileNotFoundError:
        pass
    directory, name = os.path.split(os.path.abspath(path))
    temp = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    # 0o666 less the umask, as open() would make the file (mkstemp would make it 0o600)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    _fsync_directory(directory)


def _fsync_directory(directory):
    """Makes the rename itself durable (where the platform allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_container(path, supported_version):
    """The payload of a treadle file of the kind and at most the format version
    of `supported_version` (a version_field); DataLossError for anything malformed."""
    with open(path, "rb") as f:
        header = f.read(_HEADER.size)
        if len(header) < _HEADER.size:
            raise errors.DataLossError(None, None, f"{path}: file is truncated (no complete header)")
        magic, version, length, crc = _HEADER.unpack(header)
        if magic != MAGIC:
            raise errors.DataLossError(None, None, f"{path}: not a treadle file (bad magic {magic!r})")
        if version >> 8 != supported_version >> 8:
            raise errors.InvalidArgumentError(
                None, None, f"{path}: holds {kind_name(version >> 8)}, not {kind_name(supported_version >> 8)}")
        if version > supported_version:
            raise errors.FailedPreconditionError(
                None, None, f"{path}: written by a newer treadle (format {version}; this one reads up to "
                            f"{supported_version})")
        if length > MAX_PAYLOAD:
            raise errors.DataLossError(None, None, f"{path}: header claims an implausible size {length}")
        # Nothing is allocated beyond what the file holds: a header claiming
        # 2^34 bytes in a small file is refused before any read.
        remaining = _remaining_bytes(f)
        if remaining is not None and length > remaining:
            raise errors.DataLossError(None, None, f"{path}: file is truncated: the header claims {length} bytes of "
                                                   f"payload, only {remaining} follow")
        payload = f.read(length)
        if len(payload) != length:
            raise errors.DataLossError(None, None, f"{path}: file is truncated ({len(payload)} of {length} bytes)")
        if f.read(1):
            raise errors.DataLossError(None, None, f"{path}: unexpected data after the payload")
    if zlib.crc32(payload) & 0xFFFFFFFF != crc:
        raise errors.DataLossError(None, None, f"{path}: checksum mismatch: the file is corrupt")
    return payload


def _remaining_bytes(f):
    """The bytes after f's position, when f is a regular file (else None)."""
    st = os.fstat(f.fileno())
    return max(st.st_size - f.tell(), 0) if stat.S_ISREG(st.st_mode) else None


def file_kind(path):
    """The kind of a treadle file (the high bits of its version field: one of
    the KIND_ constants); DataLossError when it is not one."""
    with open(path, "rb") as f:
        head = f.read(8)
    if head[:4] != MAGIC[:len(head)] or len(head) < 4:
        raise errors.DataLossError(None, None, f"{path}: not a treadle file")
    if len(head) < 8:
        raise errors.DataLossError(None, None, f"{path}: file is truncated (no complete header)")
    return struct.unpack("<I", head[4:8])[0] >> 8
