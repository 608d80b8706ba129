"""Structure-aware mutation of protobuf messages, through their descriptors:
one mutation changes one field somewhere in the message tree (a scalar set to
a boundary value, a string to another name of the same message, a repeated
field's element deleted, duplicated, swapped or added, a sub-message mutated
in turn), and now and then the serialized bytes are damaged as well. Every
mutant is a message the parser accepts unless the bytes were damaged, so most
of them reach the validation that treadle's readers do after parsing."""

import struct

from google.protobuf import descriptor

FD = descriptor.FieldDescriptor

INTERESTING_INTS = [0, 1, -1, 2, 3, 7, 8, 16, 255, 256, 1023, 1024, 65535, 65536, 2 ** 20, 2 ** 20 + 1,
                    2 ** 28, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 40, 2 ** 62, 2 ** 63 - 1,
                    -2 ** 31, -2 ** 63]
INTERESTING_FLOATS = [0.0, -0.0, 1.0, -1.0, 1e-45, 3.4e38, 1e308, float("inf"), float("-inf"), float("nan")]
INT_RANGES = {
    FD.TYPE_INT32: (-2 ** 31, 2 ** 31 - 1), FD.TYPE_SINT32: (-2 ** 31, 2 ** 31 - 1),
    FD.TYPE_SFIXED32: (-2 ** 31, 2 ** 31 - 1), FD.TYPE_ENUM: (-2 ** 31, 2 ** 31 - 1),
    FD.TYPE_INT64: (-2 ** 63, 2 ** 63 - 1), FD.TYPE_SINT64: (-2 ** 63, 2 ** 63 - 1),
    FD.TYPE_SFIXED64: (-2 ** 63, 2 ** 63 - 1),
    FD.TYPE_UINT32: (0, 2 ** 32 - 1), FD.TYPE_FIXED32: (0, 2 ** 32 - 1),
    FD.TYPE_UINT64: (0, 2 ** 64 - 1), FD.TYPE_FIXED64: (0, 2 ** 64 - 1),
}


def _is_map(field):
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _is_repeated(field):
    return getattr(field, "is_repeated", None) if hasattr(field, "is_repeated") else field.label == FD.LABEL_REPEATED


def _strings_of(msg, out, depth=0):
    """Every string value in the message tree (names, to swap references)."""
    if depth > 12:
        return out
    for field, value in msg.ListFields():
        if _is_map(field):
            for k in value:
                if isinstance(k, str):
                    out.append(k)
                v = value[k]
                if hasattr(v, "ListFields"):
                    _strings_of(v, out, depth + 1)
        elif field.type == FD.TYPE_STRING:
            out.extend(value if _is_repeated(field) else [value])
        elif field.type == FD.TYPE_MESSAGE:
            for m in (value if _is_repeated(field) else [value]):
                _strings_of(m, out, depth + 1)
    return out


class Mutator:
    def __init__(self, rng):
        self.rng = rng

    # ------------------------------------------------------------ scalars
    def _int(self, field, old):
        lo, hi = INT_RANGES.get(field.type, (-2 ** 63, 2 ** 63 - 1))
        r = self.rng.random()
        if r < 0.5:
            v = self.rng.choice(INTERESTING_INTS)
        elif r < 0.8 and isinstance(old, int):
            v = old + self.rng.choice([-1, 1, -2, 2])
        else:
            v = self.rng.randint(-8, 64)
        return min(max(v, lo), hi)

    def _string(self, old, names):
        r = self.rng.random()
        if r < 0.4 and names:
            return self.rng.choice(names)
        if r < 0.55:
            return ""
        if r < 0.7:
            return old + self.rng.choice([":0", ":1", ":7", "^", "\0", "/x"])
        if r < 0.8:
            return old[: self.rng.randint(0, len(old))] if old else "x"
        return "".join(self.rng.choice("abc_:0123^/") for _ in range(self.rng.randint(1, 12)))

    def _bytes(self, old):
        b = bytearray(old)
        r = self.rng.random()
        if b and r < 0.4:
            i = self.rng.randrange(len(b))
            b[i] ^= 1 << self.rng.randrange(8)
        elif b and r < 0.6:
            del b[self.rng.randrange(len(b)):]
        elif r < 0.8:
            b += bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 16)))
        else:
            b = bytearray(b * self.rng.randint(2, 4))
        return bytes(b)

    def _scalar(self, field, old, names):
        t = field.type
        if t == FD.TYPE_BOOL:
            return not old
        if t in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
            return self.rng.choice(INTERESTING_FLOATS)
        if t == FD.TYPE_STRING:
            return self._string(old or "", names)
        if t == FD.TYPE_BYTES:
            return self._bytes(old or b"")
        if t == FD.TYPE_ENUM:
            values = [v.number for v in field.enum_type.values]
            return self.rng.choice(values) if self.rng.random() < 0.7 else self._int(field, old)
        return self._int(field, old)

    # ------------------------------------------------------------ messages
    def mutate(self, msg, names=None, depth=0):
        """Mutates `msg` in place (one change somewhere below it)."""
        if names is None:
            names = _strings_of(msg, [])
        fields = msg.DESCRIPTOR.fields
        if not fields:
            return
        set_fields = [f for f, _ in msg.ListFields()]
        # Mostly change what is there (the structure of valid seeds), sometimes set anything.
        pool = set_fields if set_fields and self.rng.random() < 0.85 else list(fields)
        field = self.rng.choice(pool)
        if _is_map(field):
            self._mutate_map(getattr(msg, field.name), field, names, depth)
        elif _is_repeated(field):
            self._mutate_repeated(msg, field, names, depth)
        elif field.type == FD.TYPE_MESSAGE:
            sub = getattr(msg, field.name)
            if depth < 16:
                self.mutate(sub, names, depth + 1)
            if self.rng.random() < 0.05:
                msg.ClearField(field.name)
        else:
            try:
                setattr(msg, field.name, self._scalar(field, getattr(msg, field.name), names))
            except (ValueError, TypeError):
                pass  # a value the field cannot hold (e.g. a string that is not UTF-8)

    def _mutate_repeated(self, msg, field, names, depth):
        seq = getattr(msg, field.name)
        n = len(seq)
        r = self.rng.random()
        is_msg = field.type == FD.TYPE_MESSAGE
        if n and r < 0.2:
            del seq[self.rng.randrange(n)]
        elif n and r < 0.35:
            i = self.rng.randrange(n)
            if is_msg:
                seq.add().CopyFrom(seq[i])
            else:
                seq.append(seq[i])
        elif n >= 2 and r < 0.45 and not is_msg:
            i, j = self.rng.randrange(n), self.rng.randrange(n)
            seq[i], seq[j] = seq[j], seq[i]
        elif r < 0.55 or not n:
            if is_msg:
                sub = seq.add()
                if n:
                    sub.CopyFrom(seq[self.rng.randrange(n)])
                self.mutate(sub, names, depth + 1)
            else:
                try:
                    seq.append(self._scalar(field, seq[0] if n else _zero(field), names))
                except (ValueError, TypeError):
                    pass
        else:
            i = self.rng.randrange(n)
            if is_msg:
                if depth < 16:
                    self.mutate(seq[i], names, depth + 1)
            else:
                try:
                    seq[i] = self._scalar(field, seq[i], names)
                except (ValueError, TypeError):
                    pass

    def _mutate_map(self, mapping, field, names, depth):
        keys = list(mapping)
        value_field = field.message_type.fields_by_name["value"]
        r = self.rng.random()
        if keys and r < 0.15:
            del mapping[self.rng.choice(keys)]
            return
        if keys and r < 0.85:
            key = self.rng.choice(keys)
        else:
            key = self._string("", names) if isinstance(keys[0] if keys else "", str) else self.rng.randint(0, 9)
        if value_field.type == FD.TYPE_MESSAGE:
            if depth < 16:
                self.mutate(mapping[key], names, depth + 1)
        else:
            try:
                mapping[key] = self._scalar(value_field, mapping.get(key, _zero(value_field)), names)
            except (ValueError, TypeError):
                pass

    # ------------------------------------------------------------ bytes
    def damage(self, data):
        """Byte-level damage of a serialized message (bit flips, cuts, splices)."""
        b = bytearray(data)
        for _ in range(self.rng.randint(1, 4)):
            r = self.rng.random()
            if b and r < 0.4:
                b[self.rng.randrange(len(b))] ^= 1 << self.rng.randrange(8)
            elif b and r < 0.6:
                del b[self.rng.randrange(len(b)):]
            elif b and r < 0.8:
                i = self.rng.randrange(len(b))
                b[i:i] = struct.pack("<Q", self.rng.choice(INTERESTING_INTS) & (2 ** 64 - 1))[: self.rng.randint(1, 8)]
            else:
                b += bytes(self.rng.randrange(256) for _ in range(self.rng.randint(1, 8)))
        return bytes(b)


def _zero(field):
    if field.type == FD.TYPE_STRING:
        return ""
    if field.type == FD.TYPE_BYTES:
        return b""
    if field.type == FD.TYPE_BOOL:
        return False
    if field.type in (FD.TYPE_FLOAT, FD.TYPE_DOUBLE):
        return 0.0
    return 0


def mutate_message_bytes(rng, proto_cls, data, rounds=None, damage=0.1):
    """A mutant of serialized `proto_cls` bytes: 1-4 structural mutations,
    then byte damage with probability `damage`."""
    m = proto_cls()
    try:
        m.ParseFromString(data)
    except Exception:  # a damaged seed: mutate its bytes only
        return Mutator(rng).damage(data)
    mut = Mutator(rng)
    for _ in range(rounds or rng.randint(1, 4)):
        mut.mutate(m)
    out = m.SerializeToString()
    if rng.random() < damage:
        out = mut.damage(out)
    return out
