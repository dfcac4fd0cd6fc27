#!/usr/bin/env python3
"""hostile.py - byte surgery on an ALEX log, for hostile.sh.

  hostile.py records LOG                 prints "offset rec_len" per record
  hostile.py flip LOG OFFSET BIT         flips one bit
  hostile.py zero LOG OFFSET LEN         overwrites with zeros
  hostile.py cut LOG SIZE                truncates
  hostile.py version LOG V               sets both header slots' format
                                         version to V, with valid crcs
  hostile.py huge LOG OFFSET             makes the record at OFFSET claim
                                         huge lengths, with a valid hdr_crc

Offsets and fields follow man/alex-log.5 (core/format.h).
"""
import struct
import sys

BLOCK = 4096
SECTOR = 512  # records' unit from format 6 on (core/format.h)
DATA = 8192


def crc32c(data, crc=0):
    table = crc32c.table
    if table is None:
        table = []
        for i in range(256):
            c = i
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            table.append(c)
        crc32c.table = table
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


crc32c.table = None


def records(buf):
    off = DATA
    while off + 112 <= len(buf) and buf[off:off + 4] == b"ALXR":
        rec_len = struct.unpack_from("<I", buf, off + 8)[0]
        if rec_len < SECTOR or rec_len % SECTOR:
            break
        yield off, rec_len
        off += rec_len


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        buf = bytearray(f.read())
    if cmd == "records":
        for off, n in records(buf):
            print(off, n)
        return
    if cmd == "flip":
        off, bit = int(sys.argv[3]), int(sys.argv[4])
        buf[off] ^= 1 << bit
    elif cmd == "zero":
        off, n = int(sys.argv[3]), int(sys.argv[4])
        buf[off:off + n] = bytes(min(n, len(buf) - off))
    elif cmd == "cut":
        del buf[int(sys.argv[3]):]
        with open(path, "wb") as f:
            f.write(buf)
        return
    elif cmd == "version":
        for slot in (0, BLOCK):
            struct.pack_into("<I", buf, slot + 8, int(sys.argv[3]))
            struct.pack_into("<I", buf, slot + 60, crc32c(buf[slot:slot + 60]))
    elif cmd == "huge":
        off = int(sys.argv[3])
        # hdr_len, rec_len, nblocks: lengths no file could hold
        struct.pack_into("<III", buf, off + 4, 0xFFFFFF00, 0xFFFFF000, 0x3FFFFFFF)
        struct.pack_into("<I", buf, off + 108, crc32c(buf[off:off + 108]))
    else:
        sys.exit("hostile.py: unknown command " + cmd)
    with open(path, "r+b") as f:
        f.write(buf)


if __name__ == "__main__":
    main()
