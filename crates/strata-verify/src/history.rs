//! The data model of a recorded history, and the [`Recorder`] that builds one.
//!
//! A history is what clients *observed*, not what the engine believes it did.
//! Every transaction carries the operations it issued with the values it saw,
//! how it ended, and two ticks of one global logical clock:
//!
//! ```text
//!   client 0:  |--T0 [append 1 to k3]--|          |--T2 [read k3 = [1]]--|
//!   client 1:        |--T1 [read k3 = []]--|
//!   clock:     0     1                 2  3       4                      5
//!              ^invoke(T0)             ^complete(T0)
//! ```
//!
//! `T0` completed (tick 2) before `T2` was invoked (tick 4), so a strictly
//! serializable engine must order `T0` before `T2`. `T0` and `T1` overlap, so
//! either order is allowed. The checker needs nothing else: elements appended
//! to lists and values written to registers are unique, which lets it trace
//! every observed value back to the one transaction that wrote it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// A key of the checked key space.
pub type Key = u64;
/// An element appended to a list, or a value written to a register.
///
/// Workloads make these unique across a whole history; that uniqueness is what
/// lets the checker recover the writer of every observed value.
pub type Elem = u64;

/// One operation of a transaction, with what it observed.
///
/// Reads carry `Option`s because a read may have been issued but never have
/// returned (the transaction failed first); such a read says nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Appends a unique `elem` to the list stored at `key`.
    Append { key: Key, elem: Elem },
    /// Deletes the row at `key`. In the list model a delete appends a
    /// unique *marker* `elem`, so the key keeps one growing list whose order
    /// still says who came after whom: a deleted key reads as its list
    /// ending in the marker, and a later append re-inserts the row.
    Delete { key: Key, elem: Elem },
    /// Reads the whole list at `key`. An absent key reads as `Some(vec![])`.
    ReadList { key: Key, value: Option<Vec<Elem>> },
    /// Overwrites the register at `key` with a unique `value`.
    Write { key: Key, value: Elem },
    /// Reads the register at `key`; `Some(None)` means the initial (absent) state.
    ReadReg {
        key: Key,
        value: Option<Option<Elem>>,
    },
    /// A predicate read: every key in `lo..hi` holding a non-empty list, with
    /// that list, in key order.
    ScanList {
        lo: Key,
        hi: Key,
        value: Option<Vec<(Key, Vec<Elem>)>>,
    },
}

impl Op {
    /// Whether this operation changes the database.
    pub fn is_write(&self) -> bool {
        matches!(
            self,
            Op::Append { .. } | Op::Delete { .. } | Op::Write { .. }
        )
    }

    /// The key and element a list write adds: an append's element or a
    /// delete's marker.
    pub fn list_write(&self) -> Option<(Key, Elem)> {
        match *self {
            Op::Append { key, elem } | Op::Delete { key, elem } => Some((key, elem)),
            _ => None,
        }
    }
}

/// A list as the reports print it: `[1,2,3]`; unless `full`, long lists
/// keep only their tail, `[..26 more..,27,28,29,30,31,32]`, because a list
/// holds up to `GeneratorConfig::max_writes_per_key` elements (or any
/// number, in a hand-made history) and a report must stay readable.
struct ListFmt<'a>(&'a [Elem], bool);

impl fmt::Display for ListFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const KEEP: usize = 6;
        let (list, skipped) = if self.1 || self.0.len() <= KEEP + 2 {
            (self.0, 0)
        } else {
            (&self.0[self.0.len() - KEEP..], self.0.len() - KEEP)
        };
        f.write_str("[")?;
        if skipped > 0 {
            write!(f, "..{skipped} more..,")?;
        }
        for (i, e) in list.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{e}")?;
        }
        f.write_str("]")
    }
}

/// Formats a list the way the reports print it: `[1,2,3]`.
pub(crate) fn fmt_list(list: &[Elem]) -> String {
    ListFmt(list, true).to_string()
}

/// Like [`fmt_list`], but long lists keep only their tail.
pub(crate) fn abbreviate(list: &[Elem]) -> String {
    ListFmt(list, false).to_string()
}

/// `{}` abbreviates long lists; `{:#}` prints them in full.
impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = f.alternate();
        match self {
            Op::Append { key, elem } => write!(f, "append(k{key}, {elem})"),
            Op::Delete { key, elem } => write!(f, "delete(k{key}, {elem})"),
            Op::ReadList { key, value: None } => write!(f, "read(k{key}) = ?"),
            Op::ReadList {
                key,
                value: Some(v),
            } => write!(f, "read(k{key}) = {}", ListFmt(v, full)),
            Op::Write { key, value } => write!(f, "write(k{key}, {value})"),
            Op::ReadReg { key, value: None } => write!(f, "read(k{key}) = ?"),
            Op::ReadReg {
                key,
                value: Some(None),
            } => write!(f, "read(k{key}) = nil"),
            Op::ReadReg {
                key,
                value: Some(Some(v)),
            } => write!(f, "read(k{key}) = {v}"),
            Op::ScanList {
                lo,
                hi,
                value: None,
                ..
            } => write!(f, "scan(k{lo}..k{hi}) = ?"),
            Op::ScanList {
                lo,
                hi,
                value: Some(rows),
            } => {
                write!(f, "scan(k{lo}..k{hi}) = {{")?;
                for (i, (k, l)) in rows.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "k{k}: {}", ListFmt(l, full))?;
                }
                f.write_str("}")
            }
        }
    }
}

/// How a transaction ended, as far as its client knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The commit was acknowledged.
    Committed,
    /// The transaction was rolled back; none of its writes may be visible.
    Aborted,
    /// The client never learned the outcome (e.g. a timeout during commit);
    /// the writes may or may not have taken effect.
    Unknown,
}

/// One recorded transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Txn {
    /// Unique within a history.
    pub id: usize,
    /// The client (thread) that ran it; a client runs one transaction at a time.
    pub client: usize,
    /// The operations in issue order, with what they observed.
    pub ops: Vec<Op>,
    /// How it ended.
    pub outcome: Outcome,
    /// Logical time at which the client began the transaction.
    pub invoke: u64,
    /// Logical time at which the client learned the outcome.
    pub complete: u64,
}

impl Txn {
    /// A transaction with the given ops and outcome; invoke/complete are set
    /// from `id` so that hand-written histories are sequential by default.
    pub fn new(id: usize, ops: Vec<Op>, outcome: Outcome) -> Self {
        let t = id as u64 * 2;
        Txn {
            id,
            client: 0,
            ops,
            outcome,
            invoke: t,
            complete: t + 1,
        }
    }
}

impl fmt::Display for Txn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "T{} (client {}, {:?}): ",
            self.id, self.client, self.outcome
        )?;
        for (i, op) in self.ops.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            if f.alternate() {
                write!(f, "{op:#}")?;
            } else {
                write!(f, "{op}")?;
            }
        }
        Ok(())
    }
}

/// A complete recorded history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    pub txns: Vec<Txn>,
    /// Registers whose version order the store reported after the run
    /// ([`crate::TxnExecutor::register_versions`]): the committed values
    /// of each key, oldest first, every one. A blind write (no read of the
    /// key before it) leaves no trace of the version it overwrote, so
    /// without this the checker cannot order blind writers; with it, it
    /// adds their ww edges and the rw edges of the readers of each
    /// version. Empty: nothing reported.
    pub version_orders: BTreeMap<Key, Vec<Elem>>,
}

impl History {
    /// The longest list a read or scan observed: what one read of the
    /// history cost (bounded by `GeneratorConfig::max_writes_per_key`,
    /// whatever the run's length).
    pub fn longest_list_read(&self) -> usize {
        (self.txns.iter().flat_map(|t| &t.ops))
            .map(|op| match op {
                Op::ReadList { value: Some(l), .. } => l.len(),
                Op::ScanList {
                    value: Some(rows), ..
                } => rows.iter().map(|(_, l)| l.len()).max().unwrap_or(0),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    pub fn new(txns: Vec<Txn>) -> Self {
        History {
            txns,
            version_orders: BTreeMap::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.txns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.txns.is_empty()
    }
}

/// Proof that a client invoked a transaction; hand it back to
/// [`Recorder::complete`].
#[derive(Debug)]
#[must_use = "a ticket must be completed or the transaction is lost from the history"]
pub struct Ticket {
    id: usize,
    client: usize,
    invoke: u64,
}

impl Ticket {
    /// The id the transaction will carry in the history.
    pub fn id(&self) -> usize {
        self.id
    }
}

/// Thread-safe history recorder.
///
/// One counter hands out both invoke and complete ticks, so "T1 completed
/// before T2 was invoked" is exactly `t1.complete < t2.invoke` — the real-time
/// order that strict serializability must respect.
#[derive(Debug, Default)]
pub struct Recorder {
    clock: AtomicU64,
    next_id: AtomicUsize,
    txns: Mutex<Vec<Txn>>,
}

impl Recorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Call immediately before beginning a transaction.
    pub fn invoke(&self, client: usize) -> Ticket {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let invoke = self.clock.fetch_add(1, Ordering::SeqCst);
        Ticket { id, client, invoke }
    }

    /// Call immediately after learning the transaction's outcome.
    pub fn complete(&self, ticket: Ticket, ops: Vec<Op>, outcome: Outcome) {
        let complete = self.clock.fetch_add(1, Ordering::SeqCst);
        let txn = Txn {
            id: ticket.id,
            client: ticket.client,
            ops,
            outcome,
            invoke: ticket.invoke,
            complete,
        };
        self.txns.lock().push(txn);
    }

    /// The history so far, ordered by transaction id.
    pub fn history(&self) -> History {
        let mut txns = self.txns.lock().clone();
        txns.sort_by_key(|t| t.id);
        History::new(txns)
    }

    /// Takes the history recorded so far, ordered by id, and leaves the
    /// recorder empty; ids and the clock go on (the next segment of a run,
    /// [`crate::run_segmented`]).
    pub fn take_history(&self) -> History {
        let mut txns = std::mem::take(&mut *self.txns.lock());
        txns.sort_by_key(|t| t.id);
        History::new(txns)
    }

    /// Consumes the recorder and returns the history, ordered by id.
    pub fn into_history(self) -> History {
        let mut txns = self.txns.into_inner();
        txns.sort_by_key(|t| t.id);
        History::new(txns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorder_orders_by_real_time() {
        let r = Recorder::new();
        let a = r.invoke(0);
        let b = r.invoke(1);
        r.complete(b, vec![], Outcome::Committed);
        r.complete(a, vec![Op::Append { key: 1, elem: 1 }], Outcome::Aborted);
        let c = r.invoke(0);
        r.complete(c, vec![], Outcome::Unknown);
        let h = r.into_history();
        assert_eq!(h.len(), 3);
        assert_eq!(h.txns[0].id, 0);
        assert_eq!(h.txns[0].outcome, Outcome::Aborted);
        assert!(h.txns[1].complete < h.txns[0].complete);
        assert!(h.txns[0].complete < h.txns[2].invoke);
    }

    #[test]
    fn ops_display() {
        let t = Txn::new(
            3,
            vec![
                Op::Append { key: 5, elem: 3 },
                Op::ReadList {
                    key: 5,
                    value: Some(vec![1, 2, 3]),
                },
                Op::ReadReg {
                    key: 1,
                    value: Some(None),
                },
            ],
            Outcome::Committed,
        );
        assert_eq!(
            t.to_string(),
            "T3 (client 0, Committed): append(k5, 3); read(k5) = [1,2,3]; read(k1) = nil"
        );
    }
}
