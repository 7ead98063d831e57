#!/usr/bin/env python3
"""Reads a Perfetto trace with Perfetto's own published schema (the
`perfetto` package's perfetto_trace_pb2) and prints what it holds as JSON:
the processes and threads of its track descriptors, every PerfSample with
its thread and callstack resolved through the interned data (root first),
every track event (slices begun and ended, instants, counter values) on
its track with its interned names resolved, and the slices rebuilt as the
trace processor rebuilds them: per track in time order (file order among
equal times), an end closing the innermost open slice. A slice left open,
an end without a slice, or an event on an undescribed track is an error.

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
    timebase = None
    for p in packets(trace):
        seq = p.trusted_packet_sequence_id
        assert seq != 0, "a packet without a sequence id"
        if p.sequence_flags & CLEARED:
            state[seq] = {k: {} for k in ("fn", "frame", "stack", "map", "path", "src", "build",
                                          "cat", "name", "arg")}
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
            for x in d.event_categories:
                st["cat"][x.iid] = x.name
            for x in d.event_names:
                st["name"][x.iid] = x.name
            for x in d.debug_annotation_names:
                st["arg"][x.iid] = x.name
            for x in d.mappings:
                st["map"][x.iid] = "/" + "/".join(st["path"][i] for i in x.path_string_ids)
            for x in d.frames:
                assert x.iid >= 1 and x.mapping_id in st["map"], x
                st["frame"][x.iid] = (st["fn"][x.function_name_id], st["map"][x.mapping_id], x.rel_pc)
            for x in d.callstacks:
                assert x.iid >= 1 and x.frame_ids, x
                st["stack"][x.iid] = [st["frame"][i] for i in x.frame_ids]
        if p.HasField("trace_packet_defaults"):
            tb = p.trace_packet_defaults.perf_sample_defaults.timebase
            timebase = tb.name
        if p.HasField("track_descriptor"):
            t = p.track_descriptor
            d = {"uuid": t.uuid}
            if t.HasField("process"):
                d.update(kind="process", pid=t.process.pid, name=t.process.process_name)
            elif t.HasField("thread"):
                d.update(kind="thread", pid=t.thread.pid, tid=t.thread.tid, name=t.thread.thread_name)
            else:
                d.update(kind="track", name=t.name, parent=t.parent_uuid)
                if t.HasField("counter"):
                    d.update(unit=t.counter.unit, unit_name=t.counter.unit_name)
            tracks[t.uuid] = d
        if p.HasField("perf_sample"):
            s = p.perf_sample
            stack = st["stack"][s.callstack_iid] if s.HasField("callstack_iid") else []
            samples.append({
                "ts": p.timestamp, "pid": s.pid, "tid": s.tid, "count": s.timebase_count,
                "frames": [f[0] for f in stack], "modules": [f[1] for f in stack],
            })
        if p.HasField("track_event"):
            e = p.track_event
            assert e.track_uuid in tracks, f"an event on an undescribed track {e.track_uuid}"
            args = {}
            for a in e.debug_annotations:
                name = st["arg"][a.name_iid] if a.HasField("name_iid") else a.name
                for k in ("string_value", "int_value", "uint_value", "double_value"):
                    if a.HasField(k):
                        args[name] = getattr(a, k)
            name = st["name"][e.name_iid] if e.HasField("name_iid") else e.name
            cats = [st["cat"][i] for i in e.category_iids] + list(e.categories)
            ev = {"ts": p.timestamp, "type": e.type, "track": e.track_uuid,
                  "name": name, "categories": cats, "args": args}
            if e.HasField("double_counter_value"):
                ev["value"] = e.double_counter_value
            events.append(ev)
    # Slices per track, as the trace processor nests them.
    slices, instants = [], []
    per_track = {}
    for e in events:
        per_track.setdefault(e["track"], []).append(e)
    for track, evs in per_track.items():
        evs.sort(key=lambda e: e["ts"])  # stable: file order among equal times
        open_ = []
        for e in evs:
            if e["type"] == 1:
                open_.append(e)
            elif e["type"] == 2:
                assert open_, f"an end without a slice on track {track} at {e['ts']}"
                b = open_.pop()
                slices.append({"track": track, "name": b["name"], "categories": b["categories"],
                               "ts": b["ts"], "dur": e["ts"] - b["ts"], "args": b["args"],
                               "depth": len(open_)})
            elif e["type"] == 3:
                instants.append({"track": track, "name": e["name"], "categories": e["categories"],
                                 "ts": e["ts"], "args": e["args"]})
        assert not open_, f"{len(open_)} slices left open on track {track}"
    json.dump({"tracks": list(tracks.values()), "samples": samples, "events": events,
               "slices": slices, "instants": instants, "timebase": timebase}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
