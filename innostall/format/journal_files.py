"""The journal's files: the live one, journal.jsonl, and the segments it was rolled into.

A recording of hours at a busy server's rate (25-30 KB of journal a second, most of it the
latch tables repeated) would fill 800 MB in 8 hours as one plain file. So the recorder
rolls the live file at an interval's end once it passes SEGMENT_BYTES: it is renamed
journal.NNNNNN.jsonl and compressed, by a process of the recorder's own (this module run as
a program), to journal.NNNNNN.jsonl.xz
(xz: its 4-8 MB window reaches the previous latch tables, which gzip's 32 KB does not;
20-50x on real journals against gzip's 13-18x). The reader reads the segments in order,
then the live file.

Every moment of a roll leaves a readable journal: the rename is atomic; the .xz is written
as .xz.tmp and renamed whole, so an .xz that is there is complete; the plain segment is
removed only after that. A segment found both plain and compressed (cut between the two)
is read once, from the plain file. A recording's short journal is never rolled: it stays
journal.jsonl alone, as recordings always were.

Each file begun by a roll opens with a line naming the segment it will be,
{"type":"segment","number":N}, so the reader can name a segment that is missing (deleted,
lost in a copy) or one that is extra (the same segment twice), rather than read a gap as
one long interval (journal_lines.py). The first segment has no such line: it is the first.

An xz segment is read only as far as its own size can justify: MAX_XZ_RATIO times its
bytes, and a line for each of its bytes. The recorder's segments expand 20-50 times, a
line of theirs (an interval's ~4 KB, an event's few hundred bytes) takes tens of bytes
compressed; a 291 KB file expanding to 2 GB of short lines is not one of them, and read
whole kept the report busy for 445 s."""
from __future__ import annotations

import lzma
import os
import re
from typing import BinaryIO, Iterator

from innostall.format import files

LIVE = "journal.jsonl"
SEGMENT_BYTES = 16 * 2**20  # the live file's size that rolls it: a 10-minute segment at a busy server's rate
XZ_PRESET = 3  # 35-45 MB/s on this 2-core VM, within 15% of preset 6's size at 4x its speed
SEGMENT = re.compile(r"^journal\.(\d{6})\.jsonl(\.xz)?$")
# What one segment's decompressor may take: xz's presets 0-6 need at most 94 MB to decode
# (preset 3: 5 MB); a file asking more is not ours and not read
XZ_MEMLIMIT = 128 * 2**20
CHUNK = 2**20
MAX_XZ_RATIO = 1000  # 20 times the best ratio seen on real journals (latch tables repeated)
MIN_XZ_LINES = 10_000  # lines a small segment may hold whatever its size


def segment_name(number: int, compressed: bool = False) -> str:
    return f"journal.{number:06d}.jsonl" + (".xz" if compressed else "")


def segments(directory: str) -> list[tuple[int, str]]:
    """The rolled segments, (number, file name) in order: each number once, its plain file
    when both are there."""
    found: dict[int, str] = {}
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    for name in names:
        if match := SEGMENT.match(name):
            number = int(match[1])
            if not match[2] or number not in found:
                found[number] = name
    return sorted(found.items())


def parts(directory: str) -> list[str]:
    """The journal's files in reading order: the segments, then the live file if it is
    there. Empty when the recording has no journal."""
    paths = [os.path.join(directory, name) for _, name in segments(directory)]
    live = os.path.join(directory, LIVE)
    if files.state(live) != "missing":
        paths.append(live)
    return paths


def has_journal(directory: str) -> bool:
    """Whether the recording has a journal the reader can rebuild its tables from: one or
    more parts, each a regular file."""
    found = parts(directory)
    return bool(found) and all(files.state(path) is None for path in found)


def disk_bytes(directory: str) -> int:
    """What the journal takes on disk, segments and their temporary files included."""
    total = 0
    for name in os.listdir(directory):
        if name == LIVE or name.startswith("journal."):
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                pass
    return total


def next_segment_number(directory: str) -> int:
    done = segments(directory)
    return done[-1][0] + 1 if done else 1


class XzLines:
    """Lines of an .xz file, each at most `limit` bytes (a longer one is returned cut, as
    readline(limit) does), decoded in chunks under XZ_MEMLIMIT. A file cut short or not xz
    ends the lines with `fault` set; what came before it is kept."""

    def __init__(self, f: BinaryIO):
        self.file, self.buffer, self.pos, self.fault = f, b"", 0, ""
        self.decoder = lzma.LZMADecompressor(format=lzma.FORMAT_XZ, memlimit=XZ_MEMLIMIT)
        self.packed_bytes = os.fstat(f.fileno()).st_size
        self.decoded_bytes, self.lines = 0, 0

    def _fill(self, limit: int) -> None:
        """Decode until the buffer holds a whole line past pos, or limit bytes, or the end."""
        while (self.buffer.find(b"\n", self.pos) < 0 and len(self.buffer) - self.pos < limit
               and not self.fault and not self.decoder.eof):
            data = b""  # the decoder may still hold output past its last max_length
            if self.decoder.needs_input and not (data := self.file.read(CHUNK)):
                self.fault = "the compressed segment ends early"
                return
            try:
                decoded = self.decoder.decompress(data, max_length=CHUNK)
            except lzma.LZMAError as e:
                self.fault = f"not a readable xz segment ({e})"
                return
            self.decoded_bytes += len(decoded)
            if self.decoded_bytes > MAX_XZ_RATIO * max(self.packed_bytes, CHUNK // MAX_XZ_RATIO):
                self.fault = self.too_much(f"{MAX_XZ_RATIO} times its {self.packed_bytes:,} bytes")
                return
            self.buffer, self.pos = self.buffer[self.pos:] + decoded, 0

    def too_much(self, what: str) -> str:
        return f"expands past {what}, as no segment the recorder wrote does: the rest of it not read"

    def readline(self, limit: int) -> bytes:
        self.lines += 1
        if self.lines > max(self.packed_bytes, MIN_XZ_LINES):
            self.fault = self.fault or self.too_much(f"a line for each of its {self.packed_bytes:,} bytes")
            return b""
        self._fill(limit)
        end = self.buffer.find(b"\n", self.pos, self.pos + limit)
        cut = end + 1 if end >= 0 else min(self.pos + limit, len(self.buffer))
        line, self.pos = self.buffer[self.pos:cut], cut  # a position, not a copy of the rest per line
        return line


def opened_lines(path: str) -> tuple[BinaryIO, object]:
    """A journal part opened as a regular file, and what reads its lines (readline(limit)):
    the file itself, or an XzLines over it."""
    try:
        f = files.open_regular(path)
    except FileNotFoundError:  # a plain segment compressed since the listing: read the .xz
        if not SEGMENT.match(os.path.basename(path)):
            raise
        path += ".xz"
        f = files.open_regular(path)
    return f, (XzLines(f) if path.endswith(".xz") else f)


def segment_line(number: int) -> str:
    """The first line of a journal file begun by a roll: the segment it will be."""
    return f'{{"type":"segment","number":{number}}}\n'


def every_line(directory: str) -> Iterator[bytes]:
    """Every line of every part, as bytes (for tools and tests; the report's reader is
    journal_lines.read_journal_lines, which checks what it reads)."""
    for path in parts(directory):
        f, lines = opened_lines(path)
        with f:
            while line := lines.readline(2**31):
                yield line


def private(path: str, flags: int) -> int:
    """open()'s opener for the journal's files: 0600, whatever the umask (a recording holds
    statements and stacks: docs/security.md)."""
    return os.open(path, flags, 0o600)


def compress_segment(directory: str, number: int) -> int:
    """A rolled segment compressed: written as .xz.tmp, synced, renamed whole, and only then
    the plain file removed (after a power loss, either whole file is there). Returns the
    compressed size."""
    plain = os.path.join(directory, segment_name(number))
    packed = os.path.join(directory, segment_name(number, compressed=True))
    encoder = lzma.LZMACompressor(format=lzma.FORMAT_XZ, preset=XZ_PRESET)
    with open(plain, "rb") as source, open(packed + ".tmp", "wb", opener=private) as target:
        while chunk := source.read(CHUNK):
            target.write(encoder.compress(chunk))
        target.write(encoder.flush())
        target.flush()
        os.fsync(target.fileno())
        size = target.tell()
    os.replace(packed + ".tmp", packed)
    os.remove(plain)
    return size


class JournalWriter:
    """journal.jsonl appended line by line and flushed (a recording cut short keeps every
    whole line), rolled into a segment at an interval's end once it passes SEGMENT_BYTES.
    What compresses a rolled segment is the caller's: compress_segment, at once or on a
    thread of its own. OSError from the disk is the caller's too."""

    def __init__(self, directory: str, segment_bytes: int | None = None):
        self.directory, self.segment_bytes = directory, segment_bytes or SEGMENT_BYTES
        self.number = next_segment_number(directory)
        self.live_path = os.path.join(directory, LIVE)
        self.live = open(self.live_path, "a", opener=private)
        self.live_bytes = self.live.tell()

    def write(self, line: str) -> None:
        self.live.write(line)
        self.live.flush()
        self.live_bytes += len(line)  # characters: the loader's lines are ASCII but for names

    def roll(self) -> int | None:
        """At an interval's end: the live file renamed to the next segment when it is due,
        and a new one begun. The segment's number, or None."""
        if self.live_bytes < self.segment_bytes:
            return None
        self.live.close()
        number, self.number = self.number, self.number + 1
        os.replace(self.live_path, os.path.join(self.directory, segment_name(number)))
        self.live = open(self.live_path, "a", opener=private)
        self.live_bytes = 0
        self.write(segment_line(self.number))
        return number

    def close(self) -> None:
        self.live.close()


if __name__ == "__main__":  # the recorder compresses each rolled segment in a process of its own
    import sys
    compress_segment(sys.argv[1], int(sys.argv[2]))
