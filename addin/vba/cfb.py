"""A small Compound File Binary writer ([MS-CFB], version 3) and a reader into the same tree.

olefile reads compound files but cannot create one. `write` lays a tree of storages and streams
out as [MS-CFB] version 3 describes it:
- §2.2 header: signature, minor version 0x003E, major 0x0003, byte order 0xFFFE, 512-byte sectors
  (shift 9), 64-byte mini sectors (shift 6), mini stream cutoff 4096, the first 109 FAT sector
  locations in the header's DIFAT array (so at most 109 FAT sectors, about 7 MB: ample for a VBA
  project; larger input is refused);
- §2.3 FAT: one chain per stream, FAT sectors marked FATSECT, chains ended by ENDOFCHAIN, unused
  entries FREESECT;
- §2.4 mini FAT and §2.5 mini stream: streams under 4096 bytes live in 64-byte mini sectors of
  the mini stream, which is the root entry's stream;
- §2.6 directory: 128-byte entries, root first; each storage's children form a red-black tree
  ordered as §2.6.4 says (shorter names first, then by upper-cased UTF-16 code points). The tree
  is built balanced from the sorted names; nodes on a last, incomplete level are red, all others
  black, so every path holds the same number of black nodes and no red node has a red child.
  CLSIDs, state bits and storage times come from the source; streams carry no times (§2.6.3).
The output is a function of the tree alone (deterministic).
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass, field

import olefile

SIGNATURE = bytes.fromhex("D0CF11E0A1B11AE1")  # [MS-CFB] §2.2 Header Signature
SECTOR, MINI_SECTOR, MINI_CUTOFF = 512, 64, 4096  # §2.2: version 3 sectors, mini sectors, cutoff
DIFAT_IN_HEADER = 109  # §2.2: header DIFAT entries
FATSECT, ENDOFCHAIN, FREESECT = 0xFFFFFFFD, 0xFFFFFFFE, 0xFFFFFFFF  # §2.1 sector numbers
NOSTREAM = 0xFFFFFFFF  # §2.6.1 sibling/child ids
STORAGE, STREAM, ROOT = 1, 2, 5  # §2.6.1 Object Type
RED, BLACK = 0, 1  # §2.6.1 Color Flag
_PER_SECTOR = SECTOR // 4  # FAT or mini FAT entries per sector
_ENTRY = struct.Struct("<64sHBBIII16sIQQIQ")  # §2.6.1, 128 bytes (size written as 64 bits, high half 0)


@dataclass(eq=False)
class Node:
    """A storage (children set, data None) or a stream (data set) of a compound file."""

    name: str
    data: bytes | None = None
    children: list[Node] = field(default_factory=list)
    clsid: bytes = b"\0" * 16
    state: int = 0
    created: int = 0  # FILETIME (100 ns since 1601), storages only
    modified: int = 0

    @property
    def is_stream(self) -> bool:
        return self.data is not None

    def find(self, path: str) -> Node:
        """The node at `path` ('VBA/dir'), names compared case-insensitively as CFB does (§2.6.4)."""
        node = self
        for part in path.split("/"):
            node = next((c for c in node.children if c.name.upper() == part.upper()), None)
            if node is None:
                raise KeyError(path)
        return node


def read(data: bytes) -> Node:
    """The tree of a compound file (olefile parses it; OSError/ValueError when it cannot)."""
    with olefile.OleFileIO(io.BytesIO(data)) as ole:
        return _node(ole, ole.root, [])


def _node(ole: olefile.OleFileIO, entry, path: list[str]) -> Node:
    clsid = _le_clsid(bytes.fromhex(entry.clsid.replace("-", ""))) if entry.clsid else b"\0" * 16
    if entry.entry_type == olefile.STGTY_STREAM:
        return Node(entry.name, ole.openstream(path).read(), clsid=clsid, state=entry.dwUserFlags)
    node = Node(entry.name, clsid=clsid, state=entry.dwUserFlags, created=entry.createTime,
                modified=entry.modifyTime)
    node.children = [_node(ole, kid, [*path, kid.name]) for kid in entry.kids]
    return node


def _le_clsid(text_order: bytes) -> bytes:
    """olefile prints a CLSID as text; its bytes on disk store the first three fields little-endian."""
    a, b, c = struct.unpack(">IHH", text_order[:8])
    return struct.pack("<IHH", a, b, c) + text_order[8:]


def sort_key(name: str) -> tuple[int, str]:
    """§2.6.4: shorter names first, then by code points of the upper-cased names."""
    return len(name.encode("utf-16-le")) // 2, name.upper()


def write(root: Node) -> bytes:
    """The compound file holding `root`'s tree (root's name is written as 'Root Entry')."""
    entries = _flatten(root)
    small = [e for e in entries if e.is_stream and 0 < len(e.data) < MINI_CUTOFF]
    large = [e for e in entries if e.is_stream and len(e.data) >= MINI_CUTOFF]
    mini_start, mini_stream = {}, bytearray()
    for e in small:
        mini_start[id(e)] = len(mini_stream) // MINI_SECTOR
        mini_stream += _pad(e.data, MINI_SECTOR)
    mini_fat = _chains([_count(len(e.data), MINI_SECTOR) for e in small])
    dir_sectors = _count(len(entries) * 128, SECTOR)
    minifat_sectors = _count(len(mini_fat) * 4, SECTOR)
    payload = [dir_sectors, minifat_sectors, _count(len(mini_stream), SECTOR)]
    payload += [_count(len(e.data), SECTOR) for e in large]
    fat_sectors = 0
    while fat_sectors * _PER_SECTOR < fat_sectors + sum(payload):
        fat_sectors += 1
    if fat_sectors > DIFAT_IN_HEADER:
        raise ValueError(f"compound file too large for a header-only DIFAT ({fat_sectors} FAT sectors)")
    fat = [FATSECT] * fat_sectors + _chains(payload, first=fat_sectors)
    starts = _starts(payload, fat_sectors)
    large_start = dict(zip((id(e) for e in large), starts[3:], strict=True))
    root_start = starts[2] if mini_stream else ENDOFCHAIN
    links, child = _links(entries)
    directory = b"".join(_entry(e, i, links, child, mini_start.get(id(e), large_start.get(id(e), ENDOFCHAIN)),
                                root_start, len(mini_stream)) for i, e in enumerate(entries))
    fat += [FREESECT] * (fat_sectors * _PER_SECTOR - len(fat))
    header = _header(fat_sectors, starts[0], starts[1] if mini_fat else ENDOFCHAIN, minifat_sectors)
    body = [_pad(struct.pack(f"<{len(fat)}I", *fat), SECTOR),
            _pad(directory + _empty_entry() * (dir_sectors * 4 - len(entries)), SECTOR),
            _pad(struct.pack(f"<{len(mini_fat)}I", *mini_fat) + b"\xff\xff\xff\xff" * (
                minifat_sectors * _PER_SECTOR - len(mini_fat)), SECTOR),
            _pad(bytes(mini_stream), SECTOR)] + [_pad(e.data, SECTOR) for e in large]
    return header + b"".join(body)


def _flatten(root: Node) -> list[Node]:
    """Root first, then every storage's children (the order fixes the directory ids)."""
    out, queue = [root], [root]
    while queue:
        node = queue.pop(0)
        if not node.is_stream:
            kids = sorted(node.children, key=lambda n: sort_key(n.name))
            names = [sort_key(k.name) for k in kids]
            if len(set(names)) != len(names):
                raise ValueError(f"storage {node.name!r} holds two entries of the same name")
            for kid in kids:
                if len(kid.name) > 31 or not kid.name or any(ch in kid.name for ch in "/\\:!"):
                    raise ValueError(f"invalid compound file entry name {kid.name!r}")  # §2.6.1
            out += kids
            queue += [k for k in kids if not k.is_stream]
    return out


def _count(size: int, unit: int) -> int:
    return -(-size // unit)


def _pad(data: bytes, unit: int) -> bytes:
    return data + b"\0" * (-len(data) % unit)


def _chains(lengths: list[int], first: int = 0) -> list[int]:
    """FAT entries for consecutive chains of `lengths` sectors starting at sector `first`."""
    fat, at = [], first
    for n in lengths:
        fat += [at + i + 1 for i in range(n - 1)] + ([ENDOFCHAIN] if n else [])
        at += n
    return fat


def _starts(lengths: list[int], first: int) -> list[int]:
    out, at = [], first
    for n in lengths:
        out.append(at if n else ENDOFCHAIN)
        at += n
    return out


def _header(fat_sectors: int, dir_start: int, minifat_start: int, minifat_sectors: int) -> bytes:
    difat = list(range(fat_sectors)) + [FREESECT] * (DIFAT_IN_HEADER - fat_sectors)
    head = struct.pack("<8s16sHHHHH6sIIIIIIIII", SIGNATURE, b"\0" * 16, 0x003E, 0x0003, 0xFFFE, 9, 6,
                       b"\0" * 6, 0, fat_sectors, dir_start, 0, MINI_CUTOFF, minifat_start, minifat_sectors,
                       ENDOFCHAIN, 0)
    return head + struct.pack(f"<{DIFAT_IN_HEADER}I", *difat)


def _tree(ids: list[int]) -> tuple[dict[int, tuple[int, int, int]], int]:
    """Balanced red-black tree over `ids` (already in §2.6.4 order): {id: (left, right, color)}, root."""
    shape: dict[int, tuple[int, int, int]] = {}
    depth = {}

    def build(lo: int, hi: int, d: int) -> int:
        if lo >= hi:
            return NOSTREAM
        mid = (lo + hi) // 2
        depth[ids[mid]] = d
        shape[ids[mid]] = (build(lo, mid, d + 1), build(mid + 1, hi, d + 1), BLACK)
        return ids[mid]

    root = build(0, len(ids), 0)
    if ids:
        deepest = max(depth.values())
        if sum(1 for d in depth.values() if d == deepest) < 2 ** deepest:  # an incomplete last level
            shape = {i: (lt, rt, RED if depth[i] == deepest else BLACK) for i, (lt, rt, _) in shape.items()}
    return shape, root


def _links(entries: list[Node]) -> tuple[dict[int, tuple[int, int, int]], dict[int, int]]:
    """Every entry's (left, right, color) in its parent's tree, and each storage's child (tree root)."""
    ids = {id(e): i for i, e in enumerate(entries)}
    links, child = {0: (NOSTREAM, NOSTREAM, BLACK)}, {}  # the root entry is alone and black
    for i, node in enumerate(entries):
        if not node.is_stream and node.children:
            shape, child[i] = _tree([ids[id(k)] for k in sorted(node.children, key=lambda n: sort_key(n.name))])
            links |= shape
    return links, child


def _entry(node: Node, index: int, links: dict, child: dict, start: int, root_start: int, mini_size: int) -> bytes:
    name = "Root Entry" if index == 0 else node.name
    encoded = name.encode("utf-16-le") + b"\0\0"
    left, right, color = links[index]
    if index == 0:
        kind, start, size, created, modified = ROOT, root_start, mini_size, 0, node.modified  # §2.6.2
    elif node.is_stream:
        kind, size, created, modified = STREAM, len(node.data), 0, 0
    else:
        kind, start, size, created, modified = STORAGE, 0, 0, node.created, node.modified
    return _ENTRY.pack(encoded, len(encoded), kind, color, left, right, child.get(index, NOSTREAM), node.clsid,
                       node.state, created, modified, start, size)


def _empty_entry() -> bytes:
    """An unused directory entry (§2.6.1: ids NOSTREAM, everything else zero)."""
    return _ENTRY.pack(b"", 0, 0, 0, NOSTREAM, NOSTREAM, NOSTREAM, b"\0" * 16, 0, 0, 0, 0, 0)
