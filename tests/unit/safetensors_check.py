#!/usr/bin/env python3
"""Checks libsession's safetensors files against an independent reader and writer.

Usage: safetensors_check.py PATH/TO/safetensors_sample

1. safetensors_sample writes its sample file; this script parses it with nothing but the json
   and struct modules and checks the header length and padding, every name, dtype, shape and
   data_offsets (against each other and the file's size) and every value.
2. This script writes a file the way other tools do (metadata first, entries in another order
   than their data, ", " and ": " separators) and checks what libsession reads from it.
3. Corrupt files written here must be refused with the right message.

Prints one PASS or FAIL line per check and exits non-zero if any failed.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

FAILURES = []

# dtype -> (struct format, bytes per element)
DTYPES = {
    "F32": ("f", 4), "F64": ("d", 8), "F16": ("e", 2), "BF16": (None, 2),
    "I8": ("b", 1), "I16": ("h", 2), "I32": ("i", 4), "I64": ("q", 8),
    "U8": ("B", 1), "U16": ("H", 2), "U32": ("I", 4), "U64": ("Q", 8), "BOOL": ("?", 1),
}

ODD_NAME = 'model.layers/0:w "q" na\u00efve'

# What safetensors_sample.c writes, in its order: name -> (dtype, shape, values).
SAMPLES = [
    ("f32", "F32", [2, 3], [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]),
    ("f64", "F64", [2], [3.141592653589793, -2.5e300]),
    ("f16", "F16", [2], [1.0, -2.0]),
    ("bf16", "BF16", [3], [1.0, -2.0, 3.140625]),
    ("i8", "I8", [4], [-128, -1, 0, 127]),
    ("i16", "I16", [2], [-32768, 32767]),
    ("i32", "I32", [2, 2], [-2147483648, 2147483647, 0, 7]),
    ("i64", "I64", [3], [-9223372036854775808, -1, 1234567890123]),
    ("u8", "U8", [3], [0, 128, 255]),
    ("u16", "U16", [1], [65535]),
    ("u32", "U32", [1], [4294967295]),
    ("u64", "U64", [2], [18446744073709551615, 1]),
    ("bool", "BOOL", [4], [True, False, False, True]),
    ("scalar", "F32", [], [3.25]),
    ("empty", "F32", [0, 4], []),
    (ODD_NAME, "U8", [1], [42]),
]
METADATA = {"step": "7", "format": "libsession-checkpoint-1",
            "note": 'tab\tnewline\n"quoted" \\'}


def check(name, ok, detail=""):
    if ok:
        print(f"PASS: {name}")
    else:
        FAILURES.append(name)
        print(f"FAIL: {name}" + (f": {detail}" if detail else ""))
    return ok


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def decode(dtype, raw, n):
    fmt, size = DTYPES[dtype]
    if dtype == "BF16":
        # bfloat16 is the high half of a float32.
        return [struct.unpack("<f", b"\0\0" + raw[i * 2:i * 2 + 2])[0] for i in range(n)]
    return list(struct.unpack("<" + fmt * n, raw))


def run(helper, *args):
    p = subprocess.run([helper, *args], capture_output=True, text=True, encoding="utf-8")
    return p.returncode, p.stdout


def check_written_file(helper, folder):
    path = os.path.join(folder, "sample.safetensors")
    rc, out = run(helper, "write", path)
    if not check("the C side writes the sample file", rc == 0, out.strip()):
        return
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    check("the header length is a multiple of 8", n % 8 == 0, str(n))
    check("the header fits in the file", 8 + n <= len(data), f"{n} vs {len(data)}")
    raw = data[8:8 + n]
    text = raw.decode("utf-8")
    body = text.rstrip(" ")
    check("the header starts with '{' and is padded with spaces only",
          text.startswith("{") and body.endswith("}") and len(text) - len(body) < 8,
          repr(text[-10:]))
    try:
        header = json.loads(text)
    except ValueError as e:
        check("Python's json parses the header", False, str(e))
        return
    check("Python's json parses the header", isinstance(header, dict))
    check("__metadata__ holds the step, the format and an escaped note",
          header.get("__metadata__") == METADATA, repr(header.get("__metadata__")))

    names = [k for k in header if k != "__metadata__"]
    check("the header names exactly the sample tensors",
          sorted(names) == sorted(s[0] for s in SAMPLES), repr(names))
    data_size = len(data) - 8 - n
    offsets = []
    for name, dtype, shape, values in SAMPLES:
        entry = header.get(name)
        if not check(f"{name!r} is in the header", isinstance(entry, dict)):
            continue
        check(f"{name!r} has dtype {dtype}", entry.get("dtype") == dtype, repr(entry))
        check(f"{name!r} has shape {shape}", entry.get("shape") == shape, repr(entry))
        begin, end = entry.get("data_offsets", [None, None])
        ok = all(isinstance(x, int) and not isinstance(x, bool) for x in (begin, end))
        ok = ok and 0 <= begin <= end <= data_size
        if not check(f"{name!r} data_offsets {begin},{end} are integers within the data", ok):
            continue
        offsets.append((begin, end, name))
        size = DTYPES[dtype][1] * count(shape)
        check(f"{name!r} data_offsets span dtype * shape ({size} bytes)", end - begin == size)
        base = 8 + n
        got = decode(dtype, data[base + begin:base + end], count(shape))
        check(f"{name!r} values decode with struct", got == values, f"{got} != {values}")

    # In write order, back to back from 0 to the end of the file.
    expected = 0
    contiguous = True
    for begin, end, name in offsets:
        contiguous = contiguous and begin == expected
        expected = end
    check("the data follows the write order without gaps or overlaps", contiguous,
          repr(offsets))
    check("the last tensor ends at the end of the file", expected == data_size,
          f"{expected} vs {data_size}")


def write_like_other_tools(path, tensors, metadata, order):
    """tensors: name -> (dtype, shape, raw bytes); data laid out in @order."""
    header = {"__metadata__": metadata}
    blobs = []
    offset = 0
    for name in order:
        dtype, shape, raw = tensors[name]
        blobs.append(raw)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    # Entries in name order, unlike their data.
    ordered = {"__metadata__": metadata}
    for name in sorted(tensors):
        ordered[name] = header[name]
    text = json.dumps(ordered).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def check_reading_foreign_files(helper, folder):
    path = os.path.join(folder, "foreign.safetensors")
    tensors = {
        "alpha": ("F64", [2], struct.pack("<2d", 1.5, -0.25)),
        "beta": ("I32", [1, 3], struct.pack("<3i", -7, 0, 9)),
        "gamma": ("BOOL", [], b"\x01"),
        "delta": ("U8", [0], b""),
    }
    write_like_other_tools(path, tensors, {"format": "pt"}, ["gamma", "beta", "delta", "alpha"])
    rc, out = run(helper, "read", path)
    if not check("the C side reads a file written by Python", rc == 0, out.strip()):
        return
    lines = out.splitlines()
    expected = [
        "tensor gamma BOOL  01",
        "tensor beta I32 1,3 " + tensors["beta"][2].hex(),
        "tensor delta U8 0 ",
        "tensor alpha F64 2 " + tensors["alpha"][2].hex(),
        "metadata format=pt",
    ]
    check("it reads every tensor, in data order, with its dtype, shape and bytes",
          lines == expected, "\n  got:      " + repr(lines) + "\n  expected: " + repr(expected))

    cases = [
        ("a gap between tensors", {"a": ("U8", [2], b"\1\2"), "b": ("U8", [2], b"\3\4")},
         lambda h: h["b"].update(data_offsets=[3, 5]), b"\0", "belong to no tensor"),
        ("overlapping tensors", {"a": ("U8", [2], b"\1\2"), "b": ("U8", [2], b"\3\4")},
         lambda h: h["b"].update(data_offsets=[1, 3]), None, "overlap"),
        ("a size that disagrees with the shape", {"a": ("F32", [2], b"\0" * 8)},
         lambda h: h["a"].update(shape=[3]), None, "needs 12"),
        ("an unknown dtype", {"a": ("F32", [2], b"\0" * 8)},
         lambda h: h["a"].update(dtype="F8_E5M2"), None, "unknown dtype"),
    ]
    for title, tens, damage, extra, phrase in cases:
        bad = os.path.join(folder, "bad.safetensors")
        header, blobs, offset = {}, [], 0
        for name, (dtype, shape, raw) in tens.items():
            header[name] = {"dtype": dtype, "shape": shape,
                            "data_offsets": [offset, offset + len(raw)]}
            blobs.append(raw)
            offset += len(raw)
        damage(header)
        text = json.dumps(header).encode()
        with open(bad, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs) + (extra or b""))
        rc, out = run(helper, "read", bad)
        check(f"{title} is refused naming the fault",
              rc == 1 and out.startswith("error SES_INVALID_ARGUMENT") and phrase in out,
              out.strip())

    with open(path, "rb") as f:
        whole = f.read()
    with open(os.path.join(folder, "cut.safetensors"), "wb") as f:
        f.write(whole[:-3])
    rc, out = run(helper, "read", os.path.join(folder, "cut.safetensors"))
    check("a file cut short is refused", rc == 1 and "exceed the file" in out, out.strip())


def main():
    if len(sys.argv) != 2:
        print("usage: safetensors_check.py PATH/TO/safetensors_sample", file=sys.stderr)
        return 2
    helper = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="ses-safetensors-") as folder:
        check_written_file(helper, folder)
        check_reading_foreign_files(helper, folder)
    print(f"{len(FAILURES)} failed" if FAILURES else "all checks passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
