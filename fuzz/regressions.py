"""Builds the regression inputs of issue 14's findings (each crashed, hung or
misbehaved before its fix) into fuzz/regressions/<kind>/. Inputs the fuzzer
found are copied there from fuzz/findings/ as they are.

    python -m fuzz.regressions [kind ...]
"""

import os
import struct

import numpy as np

from fuzz import targets
from fuzz.run import REGRESSIONS
from treadle import loom_pb2, saved_pb2, tensor_pb2


def _payload(data, proto_cls):
    version, payload = targets._uncontain(data)
    msg = proto_cls()
    msg.ParseFromString(payload)
    return version, msg


def _seed(kind, index):
    return targets.KINDS[kind].seeds()[index]


def saved_function_findings():
    out = {}
    # Finding 1: a LoomLayer at depth 0 read before the schedule's tables.
    version, saved = _payload(_seed("saved_function", 3), saved_pb2.SavedFile)
    for f in saved.graph.library.function:
        for n in f.node_def:
            if n.op in ("LoomLayer", "LoomLayerGrad"):
                n.attr["depth"].i = 0
                break
    out["finding1-loom-layer-depth-0"] = targets.container(version, saved.SerializeToString())
    # Finding 5: the declared outputs contradict the graph's.
    from treadle.io import structure
    import treadle as td
    edits = {
        "finding5-declared-int64": lambda o: (td.TensorSpec([7], td.int64), o[1]),
        "finding5-fewer-declared": lambda o: o[0],
        "finding5-more-declared": lambda o: (o[0], o[1], o[1]),
    }
    for name, edit in edits.items():
        version, saved = _payload(_seed("saved_function", 0), saved_pb2.SavedFile)
        outs = structure.decode(saved.functions[0].output_structure)
        saved.functions[0].output_structure.CopyFrom(structure.encode(edit(outs)))
        out[name] = targets.container(version, saved.SerializeToString())
    # Finding 4: a header claiming 2^34 bytes.
    out["finding4-header-claims-16-GiB"] = struct.pack("<4sIQI", b"TRDL", 0x101, 1 << 34, 0) + b"x" * 10
    # Finding 9: a corrupt payload (treadle show raised protobuf's DecodeError).
    out["finding9-corrupt-payload"] = targets.container(0x101, b"\xff\xff\xff\xff garbage")
    return out


def saved_loom_findings():
    version, saved = _payload(_seed("saved_loom", 1), loom_pb2.SavedLoom)
    saved.loom.metadata.max_depth = 1 << 20  # finding 3: 2^20 layer ops per run
    return {"finding3-max-depth-2-20": targets.container(version, saved.SerializeToString())}


def schedule_file_findings():
    records = targets.frame_records([b"12345678"])
    head = struct.pack("<Q", 1 << 31)
    crc = targets._core.crc32c(head)
    crc = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF
    return {"finding4-record-claims-2-GiB": head + struct.pack("<I", crc) + records[12:20],
            "empty-file": b""}


def tensor_proto_findings():
    out = {}
    for name, dims in {"finding9-empty-huge-dims": [0, 2 ** 62, 4], "empty-2-41": [0, 2 ** 41]}.items():
        p = tensor_pb2.TensorProto(dtype=1)
        for d in dims:
            p.shape.dim.add(size=d)
        out[name] = p.SerializeToString()
    return out


def saved_model_findings():
    """A saved model's structures damaged under a valid checksum: raw
    namedtuple errors, and an input signature accepted at load that failed
    at the first call."""
    out = {}
    edits = {
        "namedtuple-field-is-a-keyword": lambda fn: fn.output_structure.named_tuple_value.fields.__setitem__(0, "class"),
        "namedtuple-fewer-values": lambda fn: fn.output_structure.named_tuple_value.values.pop(),
        "input-signature-is-a-tensor-spec": lambda fn: fn.input_signature.CopyFrom(
            fn.input_signature.tuple_value.values[0].tuple_value.values[0]),
    }
    for name, edit in edits.items():
        version, saved = _payload(_seed("saved_model", 1), saved_pb2.SavedFile)
        edit(next(f for f in saved.functions if f.attribute == "__call__"))
        out[name] = targets.container(version, saved.SerializeToString())
    # A variable's value cut short: the error named neither the file nor the variable.
    version, saved = _payload(_seed("saved_model", 1), saved_pb2.SavedFile)
    saved.variables[0].value.tensor_content = saved.variables[0].value.tensor_content[:3]
    out["variable-value-cut-short"] = targets.container(version, saved.SerializeToString())
    return out


def weave_faults_findings():
    """Workers that return an unpicklable value (a bare TypeError naming
    nothing), hang (no bound), exit, are killed, or raise."""
    from fuzz.weave_faults import EXIT, HANG, KILL, OK, RAISE, UNPICKLABLE, encode
    return {"unpicklable-result": encode(1, 2, 1, True, True, [OK, OK, UNPICKLABLE, OK]),
            "hung-worker": encode(2, 1, 1, True, False, [OK, HANG, OK]),
            "hung-worker-unordered": encode(1, 2, 2, False, False, [OK, OK, HANG]),
            "worker-exits": encode(2, 2, 1, False, True, [OK, EXIT, OK, OK]),
            "worker-killed": encode(1, 1, 1, True, False, [OK, KILL]),
            "worker-raises": encode(2, 3, 2, True, True, [OK, OK, OK, RAISE, OK])}


BUILDERS = {"saved_function": saved_function_findings, "saved_loom": saved_loom_findings,
            "schedule_file": schedule_file_findings, "tensor_proto": tensor_proto_findings,
            "saved_model": saved_model_findings, "weave_faults": weave_faults_findings}


def main(kinds=None):
    builders = {k: v for k, v in BUILDERS.items() if kinds is None or k in kinds}
    for kind, build in builders.items():
        d = os.path.join(REGRESSIONS, kind)
        os.makedirs(d, exist_ok=True)
        for name, data in build().items():
            with open(os.path.join(d, name + ".bin"), "wb") as f:
                f.write(data)
            print(kind, name, len(data), "bytes")


if __name__ == "__main__":
    import sys
    np.seterr(all="ignore")
    main(sys.argv[1:] or None)
