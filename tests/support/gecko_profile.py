"""A checker of the Firefox Profiler's Gecko profile format, version 24,
the version hookscope writes (profile.firefox.json). Python 3 standard
library only.

    import gecko_profile
    gecko_profile.check(doc)      # raises gecko_profile.Invalid(reason)

Written from the type definitions of firefox-devtools/profiler, read at
these commits:
- src/types/gecko-profile.ts (e8baa9df815ee0b6791b5fe310705b075699a0bc):
  GeckoProfile, GeckoThread, the tables in {schema, data} form
  (GeckoSamples, GeckoFrameTable, GeckoStackTable, GeckoMarkers),
  GeckoMetaMarkerSchema and its field data;
- src/profile-logic/gecko-profile-versioning.ts
  (1166f355aff72faca47ed1a0069bc2e25dfad666): what version 24 is made of
  on the way up (the upgraders to 25-31 that the profiler runs on it:
  27 drops the frame table's `optimizations` column, so version 24 has
  it; 26 walks meta.markerSchema and `processes`; field formats that came
  later: unique-string 28, sanitized-string 30, flow ids 31);
- src/profile-logic/import/linux-perf.ts
  (2ff1b407ed491cfe23902334cb3cde3e0a845c54): what its own importer
  writes for version 24 (the schemas of each table, meta's fields);
- src/types/profile.ts (3bbfffa16085c66f3cb16d033cd163a62b1d5cac): the
  category colours (at least one "grey", the default), subcategory 0;
- src/types/markers.ts (1812fea023eea9ed90af849035a461c8ebf4db0f): the
  display locations and field formats of marker schemas, the marker
  phases (0 instant, 1 interval, 2 start, 3 end);
- src/profile-logic/process-profile.ts
  (cf802db5eaef014a4aea4c16464ed672e85cdbcb): a sample's time is the
  base of its time deltas (so sorted), samples need responsiveness or
  eventDelay.

Besides the types, what the profiler relies on and no type states: a
stack's prefix comes before it (the stack table is a tree read in
order), a frame with a category has a subcategory, samples are sorted by
time, an interval marker does not end before it starts.
"""
import numbers

VERSION = 24

COLORS = {"transparent", "purple", "green", "orange", "yellow", "lightblue", "blue", "brown", "magenta", "red",
          "lightred", "darkgrey", "grey"}
DISPLAY = {"marker-chart", "marker-table", "timeline-overview", "timeline-memory", "timeline-ipc",
           "timeline-fileio", "stack-chart"}
# field formats a version 24 profile may use (those of later versions left out)
FORMATS = {"url", "file-path", "string", "duration", "time", "seconds", "milliseconds", "microseconds",
           "nanoseconds", "bytes", "percentage", "integer", "decimal"}
NUMERIC = FORMATS - {"url", "file-path", "string"}

FRAME_SCHEMA = {"location": 0, "relevantForJS": 1, "innerWindowID": 2, "implementation": 3, "optimizations": 4,
                "line": 5, "column": 6, "category": 7, "subcategory": 8}
STACK_SCHEMA = {"prefix": 0, "frame": 1}
MARKER_SCHEMA = {"name": 0, "startTime": 1, "endTime": 2, "phase": 3, "category": 4, "data": 5}
SAMPLE_SCHEMAS = ({"stack": 0, "time": 1, "responsiveness": 2}, {"stack": 0, "time": 1, "eventDelay": 2},
                  {"stack": 0, "time": 1, "eventDelay": 2, "threadCPUDelta": 3})


class Invalid(Exception):
    """The profile breaks the format; the message says where and how."""


def _fail(where, what):
    raise Invalid(f"{where}: {what}")


def _is_num(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _index(where, v, n, what, null=False):
    if v is None and null:
        return
    if not _is_int(v) or not 0 <= v < n:
        _fail(where, f"{what} {v!r} is not an index of the {n} there are")


def _keys(where, obj, required, optional=()):
    if not isinstance(obj, dict):
        _fail(where, "not an object")
    missing = [k for k in required if k not in obj]
    if missing:
        _fail(where, f"no {', '.join(missing)}")
    for k in obj:
        if k not in required and k not in optional:
            _fail(where, f"{k!r} is not a field of this object")


def _table(where, t, schema):
    _keys(where, t, ("schema", "data"))
    if t["schema"] != schema:
        _fail(where + ".schema", f"{t['schema']} is not {schema}")
    if not isinstance(t["data"], list):
        _fail(where + ".data", "not an array")
    width = max(schema.values()) + 1
    for i, row in enumerate(t["data"]):
        if not isinstance(row, list) or len(row) != width:
            _fail(f"{where}.data[{i}]", f"not an array of {width}")
    return t["data"]


def _meta(m):
    _keys("meta", m, ("version", "interval", "startTime", "shutdownTime", "processType", "stackwalk", "debug",
                      "gcpoison", "asyncstack", "categories", "markerSchema"),
          ("product", "presymbolicated", "platform", "oscpu", "misc", "abi", "toolkit", "appBuildID", "sourceURL",
           "physicalCPUs", "logicalCPUs", "CPUName", "profilingStartTime", "profilingEndTime", "updateChannel"))
    if m["version"] != VERSION:
        _fail("meta.version", f"{m['version']!r}, not the version pinned ({VERSION})")
    if not _is_num(m["interval"]) or m["interval"] <= 0:
        _fail("meta.interval", f"{m['interval']!r} is not a positive number of milliseconds")
    if not _is_num(m["startTime"]):
        _fail("meta.startTime", "not a number")
    if m["shutdownTime"] is not None and not _is_num(m["shutdownTime"]):
        _fail("meta.shutdownTime", "neither null nor a number")
    if not _is_int(m["processType"]):
        _fail("meta.processType", "not an integer")
    for k in ("stackwalk", "debug", "gcpoison", "asyncstack"):
        if m[k] not in (0, 1) or isinstance(m[k], bool):
            _fail("meta." + k, f"{m[k]!r} is not 0 or 1")
    for k in ("product", "platform", "oscpu", "misc", "abi", "toolkit", "CPUName"):
        if k in m and not isinstance(m[k], str):
            _fail("meta." + k, "not a string")
    if "presymbolicated" in m and not isinstance(m["presymbolicated"], bool):
        _fail("meta.presymbolicated", "not a boolean")
    cats = m["categories"]
    if not isinstance(cats, list) or not cats:
        _fail("meta.categories", "not a non-empty array")
    for i, c in enumerate(cats):
        w = f"meta.categories[{i}]"
        _keys(w, c, ("name", "color", "subcategories"))
        if not isinstance(c["name"], str):
            _fail(w + ".name", "not a string")
        if c["color"] not in COLORS:
            _fail(w + ".color", f"{c['color']!r} is not one of the profiler's colours")
        subs = c["subcategories"]
        if not isinstance(subs, list) or not subs or not all(isinstance(s, str) for s in subs):
            _fail(w + ".subcategories", "not a non-empty array of strings")
    if not any(c["color"] == "grey" for c in cats):
        _fail("meta.categories", "no category is grey (the default category)")
    schemas = m["markerSchema"]
    if not isinstance(schemas, list):
        _fail("meta.markerSchema", "not an array")
    by_name = {}
    for i, s in enumerate(schemas):
        w = f"meta.markerSchema[{i}]"
        _keys(w, s, ("name", "display", "data"), ("tooltipLabel", "tableLabel", "chartLabel", "graphs"))
        for k in ("name", "tooltipLabel", "tableLabel", "chartLabel"):
            if k in s and not isinstance(s[k], str):
                _fail(f"{w}.{k}", "not a string")
        if not isinstance(s["display"], list) or not set(s["display"]) <= DISPLAY:
            _fail(w + ".display", f"{s['display']!r} names a place the profiler does not have")
        fields = {}
        for j, f in enumerate(s["data"]):
            fw = f"{w}.data[{j}]"
            if "value" in f:   # a static field
                _keys(fw, f, ("label", "value"))
                continue
            _keys(fw, f, ("key", "format"), ("label", "searchable", "hidden"))
            if f["format"] not in FORMATS:
                _fail(fw + ".format", f"{f['format']!r} is not a format of version {VERSION}")
            fields[f["key"]] = f["format"]
        by_name[s["name"]] = fields
    return by_name


def _samples(where, samples, nstacks):
    if not isinstance(samples, dict) or samples.get("schema") not in SAMPLE_SCHEMAS:
        _fail(where + ".schema", "not a samples schema of version 24 ({stack, time, responsiveness} or "
                                 "{stack, time, eventDelay[, threadCPUDelta]})")
    rows = _table(where, samples, samples["schema"])
    last = None
    for i, (stack, time, *_) in enumerate(rows):
        _index(f"{where}.data[{i}]", stack, nstacks, "stack", null=True)
        if not _is_num(time):
            _fail(f"{where}.data[{i}]", f"time {time!r} is not a number")
        if last is not None and time < last:
            _fail(f"{where}.data[{i}]", f"time {time} before the previous sample's {last}: samples are not sorted "
                                         "by time")
        last = time


def _markers(where, markers, nstrings, ncats, schemas):
    for i, (name, start, end, phase, cat, data) in enumerate(_table(where, markers, MARKER_SCHEMA)):
        w = f"{where}.data[{i}]"
        _index(w, name, nstrings, "name")
        _index(w, cat, ncats, "category")
        if phase not in (0, 1, 2, 3) or isinstance(phase, bool):
            _fail(w, f"phase {phase!r} is not 0, 1, 2 or 3")
        need = {0: (True, False), 1: (True, True), 2: (True, False), 3: (False, True)}[phase]
        for t, needed, what in ((start, need[0], "startTime"), (end, need[1], "endTime")):
            if needed and not _is_num(t):
                _fail(w, f"{what} {t!r} is not a number (phase {phase})")
            if not needed and t is not None:
                _fail(w, f"{what} {t!r} is not null (phase {phase})")
        if phase == 1 and end < start:
            _fail(w, f"ends ({end}) before it starts ({start})")
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("type"), str):
            _fail(w, "data is neither null nor an object with a type")
        fields = schemas.get(data["type"])
        if fields is None:
            _fail(w, f"data's type {data['type']!r} has no marker schema")
        for k, v in data.items():
            if k == "type":
                continue
            if k not in fields:
                _fail(w, f"data's {k!r} is not a field of the {data['type']} schema")
            if fields[k] in NUMERIC and not _is_num(v):
                _fail(w, f"data's {k!r} ({fields[k]}) is not a number: {v!r}")
            if fields[k] not in NUMERIC and not isinstance(v, str):
                _fail(w, f"data's {k!r} ({fields[k]}) is not a string: {v!r}")


def _thread(where, th, cats, schemas):
    _keys(where, th, ("name", "registerTime", "processType", "unregisterTime", "tid", "pid", "markers", "samples",
                      "frameTable", "stackTable", "stringTable"), ("processName", "eTLD+1", "jsTracerEvents"))
    if not isinstance(th["name"], str) or not isinstance(th["processType"], str):
        _fail(where, "name and processType are not strings")
    if not _is_int(th["tid"]) or not (_is_int(th["pid"]) or isinstance(th["pid"], str)):
        _fail(where, "tid or pid is not a number")
    if not _is_num(th["registerTime"]) or not (th["unregisterTime"] is None or _is_num(th["unregisterTime"])):
        _fail(where, "registerTime or unregisterTime is not a time")
    strings = th["stringTable"]
    if not isinstance(strings, list) or not all(isinstance(s, str) for s in strings):
        _fail(where + ".stringTable", "not an array of strings")
    frames = _table(where + ".frameTable", th["frameTable"], FRAME_SCHEMA)
    for i, (loc, js, win, impl, _opt, line, col, cat, sub) in enumerate(frames):
        w = f"{where}.frameTable.data[{i}]"
        _index(w, loc, len(strings), "location")
        if not isinstance(js, bool):
            _fail(w, "relevantForJS is not a boolean")
        _index(w, impl, len(strings), "implementation", null=True)
        for v, what in ((win, "innerWindowID"), (line, "line"), (col, "column")):
            if v is not None and not _is_int(v):
                _fail(w, f"{what} {v!r} is neither null nor an integer")
        _index(w, cat, len(cats), "category", null=True)
        if cat is not None:
            if sub is None:
                _fail(w, "a category and no subcategory")
            _index(w, sub, len(cats[cat]["subcategories"]), "subcategory")
    stacks = _table(where + ".stackTable", th["stackTable"], STACK_SCHEMA)
    for i, (prefix, frame) in enumerate(stacks):
        w = f"{where}.stackTable.data[{i}]"
        _index(w, frame, len(frames), "frame")
        if prefix is not None:
            _index(w, prefix, len(stacks), "prefix")
            if prefix >= i:
                _fail(w, f"prefix {prefix} does not come before its stack")
    _samples(where + ".samples", th["samples"], len(stacks))
    _markers(where + ".markers", th["markers"], len(strings), len(cats), schemas)


def check(doc):
    """Raise Invalid unless doc (a parsed profile) is a Gecko profile of
    version 24 as the profiler's types define it."""
    _keys("profile", doc, ("meta", "libs", "threads", "pausedRanges", "processes"),
          ("counters", "profilerOverhead", "pages", "jsTracerDictionary", "profilingLog", "profileGatheringLog"))
    schemas = _meta(doc["meta"])
    for k in ("libs", "pausedRanges", "processes"):
        if not isinstance(doc[k], list):
            _fail(k, "not an array")
    for i, p in enumerate(doc["processes"]):
        _keys(f"processes[{i}]", p, ("meta", "libs", "threads", "pausedRanges", "processes"),
              ("counters", "profilerOverhead", "pages"))
    if not isinstance(doc["threads"], list) or not doc["threads"]:
        _fail("threads", "not a non-empty array")
    for i, th in enumerate(doc["threads"]):
        _thread(f"threads[{i}]", th, doc["meta"]["categories"], schemas)
