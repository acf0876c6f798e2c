//! The registry of named memory objects (paper 002): address ranges the engine owns
//! — buffer frames and the page each holds, hash and aggregation tables by
//! operator, sort buffers — recorded as an ordered log while profiling is on, so a
//! profiler can say which object a data address belonged to *at that moment*.
//!
//! Cost when profiling is off: one relaxed atomic load per registration site.
//!
//! Frames are reused, so the registry is a log of events, not a table: each
//! [`Event::Map`] says "from now on, `[start, start+len)` is this object" (it
//! replaces whatever overlapped it), each [`Event::Unmap`] says the range is
//! nobody's any more. Every event is also *written into the traced process's
//! memory*: one store to a marker page ([`MARK_EVENT`]), made while the log's lock
//! is held, so the k-th event store seen in a memory-access trace is the k-th log
//! entry and a trace replayer knows exactly which registrations came before each
//! access. The same page carries the start and end of the profiled region and the
//! switches between access classes (which query or pipeline is running).
//!
//! Every event also carries its CLOCK_MONOTONIC time ([`TimedEvent`], read under
//! the same lock, so times never decrease along the log): hardware samples are
//! stamped with that clock, and [`TimedReplay`] maps a sample's data address to
//! the object that owned it at the sample's time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether registrations are recorded (profiling is on).
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns recording on or off (the log is kept; see [`take_log`]).
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Bytes of the marker page.
pub const MARKER_BYTES: usize = 4096;
/// Offset of the store that opens the profiled region.
pub const MARK_START: usize = 0;
/// Offset of the store that closes it.
pub const MARK_STOP: usize = 1;
/// Offset of the store that accompanies each registry event.
pub const MARK_EVENT: usize = 2;
/// Offset of class 0's store; class `c` stores at `MARK_CLASS_BASE + c`.
pub const MARK_CLASS_BASE: usize = 256;
/// Classes the marker page can name.
pub const MAX_CLASSES: usize = MARKER_BYTES - MARK_CLASS_BASE;

/// A page-aligned page of its own, so no other data shares its addresses.
#[repr(C, align(4096))]
struct MarkerPage([AtomicU8; MARKER_BYTES]);

static MARKER: MarkerPage = MarkerPage([const { AtomicU8::new(0) }; MARKER_BYTES]);

/// Address of the marker page in this process.
pub fn marker_base() -> u64 {
    MARKER.0.as_ptr() as u64
}

/// One store at `offset` of the marker page: a memory-access trace shows it as a
/// one-byte write there. Never inlined away: the store itself is the message.
#[inline(never)]
fn mark(offset: usize) {
    MARKER.0[offset].store(1, Ordering::Relaxed);
}

/// Opens the profiled region in the access stream.
pub fn region_start() {
    mark(MARK_START);
}

/// Closes the profiled region.
pub fn region_stop() {
    mark(MARK_STOP);
}

/// Says that the accesses from now on belong to class `class` (a query, a
/// pipeline, "index probe" vs "scan" — whatever the trace's user distinguishes).
/// Classes past [`MAX_CLASSES`] are folded onto the last one.
pub fn set_class(class: usize) {
    mark(MARK_CLASS_BASE + class.min(MAX_CLASSES - 1));
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ObjectKind {
    /// A buffer frame holding a page of a table column or an index.
    BufferFrame,
    /// A hash join's table (or its chain array, or its gathered build rows).
    HashTable,
    /// A hash aggregation's group table.
    AggregateTable,
    /// A sort's buffer.
    SortBuffer,
    /// A worker's pool of vectors.
    VectorPool,
    /// A buffer pages are read into before they are copied to their frames.
    ReadBuffer,
    /// A region of the process (heap, stack, the executable's data) that no
    /// registration names; filled in by the profiler from the process's maps.
    Process,
}

impl ObjectKind {
    pub fn label(self) -> &'static str {
        match self {
            ObjectKind::BufferFrame => "buffer page",
            ObjectKind::HashTable => "hash table",
            ObjectKind::AggregateTable => "aggregation table",
            ObjectKind::SortBuffer => "sort buffer",
            ObjectKind::VectorPool => "vector pool",
            ObjectKind::ReadBuffer => "read buffer",
            ObjectKind::Process => "process memory",
        }
    }
}

/// A named object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Object {
    pub kind: ObjectKind,
    /// What it holds: `lineitem.l_extendedprice`, `chain array`, ... For buffer
    /// frames it is filled in when the log is taken ([`name_pages`]), since the
    /// frame only knows its page id.
    pub name: String,
    /// The operator that owns it: `hash join build on o_orderkey`.
    pub operator: Option<String>,
    /// Buffer frames: the page held and the frame number.
    pub page: Option<u64>,
    pub frame: Option<u32>,
    /// Buffer frames: the page's kind (`data`, `index`, ...).
    pub page_kind: Option<String>,
}

impl Object {
    pub fn new(kind: ObjectKind, name: impl Into<String>) -> Self {
        Object {
            kind,
            name: name.into(),
            operator: None,
            page: None,
            frame: None,
            page_kind: None,
        }
    }

    pub fn with_operator(mut self, operator: impl Into<String>) -> Self {
        self.operator = Some(operator.into());
        self
    }

    /// The page of `frame`, of kind `page_kind`, named later.
    pub fn frame(frame: u32, page: u64, page_kind: Option<String>) -> Self {
        Object {
            kind: ObjectKind::BufferFrame,
            name: String::new(),
            operator: None,
            page: Some(page),
            frame: Some(frame),
            page_kind,
        }
    }

    /// What a report prints: the name, and the page kind or operator if any.
    pub fn describe(&self) -> String {
        let name = if self.name.is_empty() {
            match self.page {
                Some(p) => format!("page {p}"),
                None => self.kind.label().to_string(),
            }
        } else {
            self.name.clone()
        };
        match (&self.operator, &self.page_kind) {
            (Some(op), _) => format!("{name} ({op})"),
            (None, Some(k)) => format!("{name} ({k} pages)"),
            (None, None) => name,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    Map {
        start: u64,
        len: u64,
        object: Object,
    },
    Unmap {
        start: u64,
        len: u64,
    },
}

/// An event and when it happened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimedEvent {
    /// CLOCK_MONOTONIC nanoseconds ([`monotonic_ns`]).
    pub time: u64,
    pub event: Event,
}

/// CLOCK_MONOTONIC in nanoseconds: the clock the profiler asks the kernel to
/// stamp samples with, so registry times and sample times compare.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

static LOG: Mutex<Vec<TimedEvent>> = Mutex::new(Vec::new());

fn push(event: Event) {
    // A poisoned log is still a consistent list of events.
    let mut log = LOG.lock().unwrap_or_else(|p| p.into_inner());
    // Read under the lock: log order is time order. Only reached while
    // profiling is on, so the clock costs nothing otherwise.
    let time = monotonic_ns();
    log.push(TimedEvent { time, event });
    // Under the lock: the trace sees the event stores in log order.
    mark(MARK_EVENT);
}

/// Names `[start, start+len)` as the object `object()` builds (only called while
/// profiling is on, so building names costs nothing otherwise).
#[inline]
pub fn register(start: usize, len: usize, object: impl FnOnce() -> Object) {
    if enabled() && len > 0 {
        push(Event::Map {
            start: start as u64,
            len: len as u64,
            object: object(),
        });
    }
}

/// [`register`] for the memory of a slice.
#[inline]
pub fn register_slice<T>(slice: &[T], object: impl FnOnce() -> Object) {
    register(
        slice.as_ptr() as usize,
        std::mem::size_of_val(slice),
        object,
    )
}

/// The range is nobody's any more (the object was freed).
#[inline]
pub fn unregister(start: usize, len: usize) {
    if enabled() && len > 0 {
        push(Event::Unmap {
            start: start as u64,
            len: len as u64,
        });
    }
}

/// [`unregister`] for the memory of a slice.
#[inline]
pub fn unregister_slice<T>(slice: &[T]) {
    unregister(slice.as_ptr() as usize, std::mem::size_of_val(slice))
}

/// Takes the events logged so far, without their times (the log restarts empty).
pub fn take_log() -> Vec<Event> {
    take_timed_log().into_iter().map(|t| t.event).collect()
}

/// Takes the events logged so far with their times (the log restarts empty).
pub fn take_timed_log() -> Vec<TimedEvent> {
    std::mem::take(&mut *LOG.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Fills in the names of buffer-frame objects from their page ids: `name_of`
/// gives the table column or index, and the kind of page if it knows it.
pub fn name_pages<'a>(
    events: impl IntoIterator<Item = &'a mut Event>,
    name_of: impl Fn(u64) -> Option<(String, Option<String>)>,
) {
    for e in events {
        if let Event::Map { object, .. } = e {
            if let (ObjectKind::BufferFrame, Some(page)) = (object.kind, object.page) {
                if let Some((name, kind)) = name_of(page) {
                    object.name = name;
                    object.page_kind = kind.or(object.page_kind.take());
                }
            }
        }
    }
}

/// The objects live at one point of a run: sorted, non-overlapping ranges, each to
/// an object number; applying the log's events in order moves the point forward.
/// Objects are interned (the frame that holds the same page again is the same
/// object), so per-object counts add up across reuse.
#[derive(Default)]
pub struct ObjectMap {
    /// start → (end, object number)
    ranges: BTreeMap<u64, (u64, u32)>,
    objects: Vec<Object>,
    ids: std::collections::HashMap<Object, u32>,
}

impl ObjectMap {
    pub fn new() -> Self {
        Self::default()
    }

    /// The object number of `object`, adding it if new.
    pub fn intern(&mut self, object: &Object) -> u32 {
        if let Some(&id) = self.ids.get(object) {
            return id;
        }
        let id = self.objects.len() as u32;
        self.objects.push(object.clone());
        self.ids.insert(object.clone(), id);
        id
    }

    pub fn object(&self, id: u32) -> &Object {
        &self.objects[id as usize]
    }

    pub fn objects(&self) -> &[Object] {
        &self.objects
    }

    /// Live ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Forgets every live range (objects stay interned, numbers stay valid).
    pub fn clear_ranges(&mut self) {
        self.ranges.clear();
    }

    /// Removes `[start, end)` from every live range (trimming those it overlaps).
    fn clear(&mut self, start: u64, end: u64) {
        // A range starting before `start` may reach into it.
        if let Some((&s, &(e, id))) = self.ranges.range(..start).next_back() {
            if e > start {
                self.ranges.insert(s, (start, id));
                if e > end {
                    self.ranges.insert(end, (e, id));
                }
            }
        }
        let inside: Vec<u64> = self.ranges.range(start..end).map(|(&s, _)| s).collect();
        for s in inside {
            if let Some((e, id)) = self.ranges.remove(&s) {
                if e > end {
                    self.ranges.insert(end, (e, id));
                }
            }
        }
    }

    /// Applies one event.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::Map { start, len, object } => {
                let id = self.intern(object);
                let end = start.saturating_add(*len);
                self.clear(*start, end);
                self.ranges.insert(*start, (end, id));
            }
            Event::Unmap { start, len } => self.clear(*start, start.saturating_add(*len)),
        }
    }

    /// The object `addr` belongs to now.
    pub fn lookup(&self, addr: u64) -> Option<u32> {
        let (_, &(end, id)) = self.ranges.range(..=addr).next_back()?;
        (addr < end).then_some(id)
    }
}

/// A timed log replayed against lookups in time order: a lookup at time `t`
/// sees every event at or before `t` and none after, so an address that two
/// objects held one after the other maps to the one that held it then.
pub struct TimedReplay<'a> {
    log: &'a [TimedEvent],
    /// Events applied so far (a prefix of the log).
    applied: usize,
    map: ObjectMap,
}

impl<'a> TimedReplay<'a> {
    /// `log` in the order it was taken (times never decrease along it).
    pub fn new(log: &'a [TimedEvent]) -> Self {
        TimedReplay {
            log,
            applied: 0,
            map: ObjectMap::new(),
        }
    }

    /// The object that held `addr` at `time`. Lookups should come in time
    /// order (each applies only the events since the last); an earlier time
    /// replays the log from its start.
    pub fn lookup(&mut self, time: u64, addr: u64) -> Option<u32> {
        if self.applied > 0 && self.log[self.applied - 1].time > time {
            self.map.clear_ranges();
            self.applied = 0;
        }
        while let Some(e) = self.log.get(self.applied).filter(|e| e.time <= time) {
            self.map.apply(&e.event);
            self.applied += 1;
        }
        self.map.lookup(addr)
    }

    /// The objects seen so far, by number.
    pub fn map(&self) -> &ObjectMap {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(name: &str) -> Object {
        Object::new(ObjectKind::HashTable, name).with_operator("hash join build on k")
    }

    #[test]
    fn later_maps_replace_what_they_overlap_and_unmaps_trim() {
        let mut m = ObjectMap::new();
        m.apply(&Event::Map {
            start: 100,
            len: 100,
            object: obj("a"),
        });
        assert_eq!(m.lookup(99), None);
        assert_eq!(m.lookup(100), Some(0));
        assert_eq!(m.lookup(199), Some(0));
        assert_eq!(m.lookup(200), None);
        // b covers the middle of a: a survives on both sides
        m.apply(&Event::Map {
            start: 140,
            len: 20,
            object: obj("b"),
        });
        assert_eq!(
            [m.lookup(139), m.lookup(140), m.lookup(159), m.lookup(160)],
            [Some(0), Some(1), Some(1), Some(0)]
        );
        assert_eq!(m.len(), 3);
        m.apply(&Event::Unmap {
            start: 150,
            len: 30,
        });
        assert_eq!(
            [m.lookup(149), m.lookup(150), m.lookup(179), m.lookup(180)],
            [Some(1), None, None, Some(0)]
        );
        // the same object again gets the same number
        m.apply(&Event::Map {
            start: 1000,
            len: 8,
            object: obj("a"),
        });
        assert_eq!(m.lookup(1004), Some(0));
        assert_eq!(m.objects().len(), 2);
    }

    #[test]
    fn frames_reused_for_another_page_map_to_the_new_page() {
        let mut m = ObjectMap::new();
        let frame = |page| Event::Map {
            start: 4096,
            len: 4096,
            object: Object::frame(1, page, Some("data".into())),
        };
        m.apply(&frame(7));
        let first = m.lookup(5000).unwrap();
        m.apply(&frame(9));
        let second = m.lookup(5000).unwrap();
        assert_ne!(first, second);
        assert_eq!(m.object(second).page, Some(9));
        m.apply(&frame(7));
        assert_eq!(m.lookup(5000), Some(first));
    }

    /// The log is process-wide: one test does all that touches it, so tests
    /// running in parallel cannot interleave.
    #[test]
    fn registration_is_logged_only_while_enabled_and_names_pages() {
        let data = vec![0u64; 16];
        enable(false);
        register_slice(&data, || panic!("no object is built while disabled"));
        assert!(take_log().iter().all(|e| !matches!(e,
            Event::Map { start, .. } if *start == data.as_ptr() as u64)));
        enable(true);
        let before = monotonic_ns();
        register_slice(&data, || obj("rows"));
        register(8192, 4096, || Object::frame(3, 42, None));
        unregister_slice(&data);
        let after = monotonic_ns();
        // The same events again, to take with their times.
        register_slice(&data, || obj("rows"));
        unregister_slice(&data);
        enable(false);
        let mine = |e: &Event| match e {
            Event::Map { start, .. } | Event::Unmap { start, .. } => {
                *start == data.as_ptr() as u64 || *start == 8192
            }
        };
        let mut log: Vec<Event> = take_log().into_iter().filter(|e| mine(e)).collect();
        assert_eq!(log.len(), 5);
        log.truncate(3);
        assert!(take_timed_log().is_empty(), "take_log emptied the log");
        enable(true);
        register_slice(&data, || obj("rows"));
        unregister_slice(&data);
        enable(false);
        let timed: Vec<TimedEvent> = take_timed_log()
            .into_iter()
            .filter(|t| mine(&t.event))
            .collect();
        assert_eq!(timed.len(), 2);
        assert!(after >= before && timed[0].time > after);
        assert!(timed[1].time >= timed[0].time, "log order is time order");
        assert!(matches!(&log[0], Event::Map { len: 128, object, .. } if object.name == "rows"));
        name_pages(&mut log, |p| {
            (p == 42).then(|| ("lineitem.l_tax".to_string(), Some("column".to_string())))
        });
        let Event::Map { object, .. } = &log[1] else {
            panic!("a map")
        };
        assert_eq!(object.describe(), "lineitem.l_tax (column pages)");
        assert!(matches!(log[2], Event::Unmap { len: 128, .. }));
        // the log round-trips through JSON, as the recorder writes it
        let json = serde_json::to_string(&log).unwrap();
        let back: Vec<Event> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, log);
    }

    fn at(time: u64, event: Event) -> TimedEvent {
        TimedEvent { time, event }
    }

    fn map(start: u64, len: u64, object: Object) -> Event {
        Event::Map { start, len, object }
    }

    /// One address held by a hash table, then by nobody, then by a buffer frame
    /// holding page 7, then by the same frame holding page 9: each lookup gets
    /// the owner at its time, whatever the lookups before it.
    #[test]
    fn timed_replay_maps_a_reused_address_by_time() {
        let log = vec![
            at(100, map(0x1000, 0x1000, obj("chain array"))),
            at(
                200,
                Event::Unmap {
                    start: 0x1000,
                    len: 0x1000,
                },
            ),
            at(300, map(0x1000, 0x1000, Object::frame(0, 7, None))),
            at(300, map(0x9000, 0x10, obj("other"))),
            at(400, map(0x1000, 0x1000, Object::frame(0, 9, None))),
        ];
        let mut r = TimedReplay::new(&log);
        let name = |r: &TimedReplay, id: Option<u32>| {
            id.map(|i| {
                let o = r.map().object(i);
                o.page
                    .map(|p| format!("page {p}"))
                    .unwrap_or(o.name.clone())
            })
        };
        let addr = 0x1800;
        let mut got = Vec::new();
        for t in [50, 100, 199, 200, 299, 300, 399, 400, 10_000] {
            let id = r.lookup(t, addr);
            got.push(name(&r, id));
        }
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            got,
            [
                None,
                s("chain array"),
                s("chain array"),
                None,
                None,
                s("page 7"),
                s("page 7"),
                s("page 9"),
                s("page 9")
            ]
        );
        // Going back in time replays from the start; numbers stay the same.
        let late = r.lookup(500, addr);
        let back = r.lookup(150, addr);
        assert_eq!(name(&r, back), s("chain array"));
        assert_eq!(r.lookup(450, addr), late);
        assert_eq!(
            r.lookup(450, 0x9008)
                .map(|i| r.map().object(i).name.clone()),
            s("other")
        );
        assert_eq!(r.lookup(450, 0x2000), None, "past the end of the frame");
    }

    #[test]
    fn the_marker_page_is_page_aligned_and_classes_fold() {
        assert_eq!(marker_base() % 4096, 0);
        set_class(usize::MAX); // must not index past the page
        region_start();
        region_stop();
    }
}
