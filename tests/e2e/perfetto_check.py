#!/usr/bin/env python3
"""Reads a Perfetto trace with Perfetto's own published schema (the
`perfetto` package's perfetto_trace_pb2) and prints what it holds as JSON:
the processes and threads of its track descriptors, every PerfSample with
its thread and callstack resolved through the interned data (root first),
and every track event (slices begun and ended, instants) on its track.

Interned ids are resolved as Perfetto's trace processor resolves them: per
packet sequence, from packets at or before the one that uses them, and only
after a packet that cleared the incremental state. An id that does not
resolve is an error.

Usage: perfetto_check.py TRACE
"""
import json
import sys
import zlib

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

CLEARED, NEEDS = 1, 2


def packets(trace):
    """The trace's packets, those of `compressed_packets` (zlib, as the
    trace processor inflates them) in their place."""
    for p in trace.packet:
        if p.HasField("compressed_packets"):
            assert len(p.SerializeToString()) < 512 * 1024, "a compressed packet over 512 KiB"
            inner = pb.Trace()
            inner.ParseFromString(zlib.decompress(p.compressed_packets))
            yield from packets(inner)
        else:
            yield p


def main(path):
    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    state = {}  # sequence id -> interned tables, or None before a clear
    tracks = {}
    samples, events = [], []
    for p in packets(trace):
        seq = p.trusted_packet_sequence_id
        assert seq != 0, "a packet without a sequence id"
        if p.sequence_flags & CLEARED:
            state[seq] = {k: {} for k in ("fn", "frame", "stack", "map", "path", "src", "build")}
        if p.sequence_flags & NEEDS:
            assert state.get(seq) is not None, "a packet needing state before any was cleared"
        st = state.get(seq)
        if p.HasField("interned_data"):
            d = p.interned_data
            assert st is not None, "interned data before the state was cleared"
            for x in d.function_names:
                st["fn"][x.iid] = x.str.decode()
            for x in d.mapping_paths:
                st["path"][x.iid] = x.str.decode()
            for x in d.source_paths:
                st["src"][x.iid] = x.str.decode()
            for x in d.build_ids:
                st["build"][x.iid] = x.str.hex()
            for x in d.mappings:
                st["map"][x.iid] = "/" + "/".join(st["path"][i] for i in x.path_string_ids)
            for x in d.frames:
                assert x.iid >= 1 and x.mapping_id in st["map"], x
                st["frame"][x.iid] = (st["fn"][x.function_name_id], st["map"][x.mapping_id], x.rel_pc)
            for x in d.callstacks:
                assert x.iid >= 1 and x.frame_ids, x
                st["stack"][x.iid] = [st["frame"][i] for i in x.frame_ids]
        if p.HasField("track_descriptor"):
            t = p.track_descriptor
            d = {"uuid": t.uuid}
            if t.HasField("process"):
                d.update(kind="process", pid=t.process.pid, name=t.process.process_name)
            elif t.HasField("thread"):
                d.update(kind="thread", pid=t.thread.pid, tid=t.thread.tid, name=t.thread.thread_name)
            else:
                d.update(kind="track", name=t.name, parent=t.parent_uuid)
            tracks[t.uuid] = d
        if p.HasField("perf_sample"):
            s = p.perf_sample
            stack = st["stack"][s.callstack_iid] if s.HasField("callstack_iid") else []
            samples.append({
                "ts": p.timestamp, "pid": s.pid, "tid": s.tid,
                "frames": [f[0] for f in stack], "modules": [f[1] for f in stack],
            })
        if p.HasField("track_event"):
            e = p.track_event
            assert e.track_uuid in tracks, f"an event on an undescribed track {e.track_uuid}"
            args = {a.name: (a.string_value if a.HasField("string_value") else a.int_value)
                    for a in e.debug_annotations}
            ev = {"ts": p.timestamp, "type": e.type, "track": e.track_uuid,
                  "name": e.name, "categories": list(e.categories), "args": args}
            if e.HasField("double_counter_value"):
                ev["value"] = e.double_counter_value
            events.append(ev)
    json.dump({"tracks": list(tracks.values()), "samples": samples, "events": events}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
