//! `Servers`: every JavaScript server of a pool, by method (one server is `server/`). It
//! keeps the method table (the open servers of each method, and every server not yet departed,
//! for stats), the tokens that name served jobs to their servers, and the methods the pool
//! expects servers for (a pool of JavaScript workers started from a file) with the jobs that
//! wait for one.
//!
//! Placing a job is a lookup under the table's read lock, a pick by the pool's strategy, and a
//! push under that server's own lock (`Server::push`): a server that closed between the two
//! refuses, and the job is placed again, so a job is never pushed on a closed server
//! (`README.md` §6). Adding, removing and forgetting a server take the write lock.

use super::job::ServedJob;
use super::lifecycle::Lifecycle;
use super::server::{lock, Announce, Push, Server};
use super::stats::ServerStats;
use super::strategy::Strategy;
use crate::rpc::RpcError;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The servers of one method and the round-robin counter they share.
#[derive(Default)]
struct MethodServers {
    list: Vec<Arc<Server>>,
    next: AtomicUsize,
}

/// The method table: the open servers by method, and all not yet departed (for stats).
#[derive(Default)]
struct Table {
    by_method: HashMap<String, MethodServers>,
    all: Vec<Arc<Server>>,
}

/// The next served job's token, for every pool of the process (see [`Servers::next_token`]).
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Every server of a pool.
pub(crate) struct Servers {
    table: RwLock<Table>,
    /// Methods that servers of this pool will serve although none may be up now (a pool of
    /// JavaScript workers started from a file), and the jobs that wait for one.
    expected: Mutex<Expected>,
    /// The latest departures that settled running calls with ServerGone: `(thread, calls)`,
    /// oldest first, at most [`REMEMBERED_DEPARTURES`].
    departures: Mutex<VecDeque<(u64, usize)>>,
    /// Servers in `table.all`, readable without the lock.
    open: AtomicUsize,
}

/// Departures remembered for [`Servers::abandoned_by`]: a serving thread's exit is heard of on
/// the pool's JavaScript thread soon after it departed, well before this many others depart.
const REMEMBERED_DEPARTURES: usize = 64;

/// What the pool expects servers for: see [`Servers::expect`].
#[derive(Default)]
enum Expect {
    #[default]
    Nothing,
    /// Any method that is not a native command (until the methods are known).
    Any,
    Only(HashSet<String>),
    /// None any more, for this reason (the task file could not be loaded): a call that finds no
    /// server fails with it, not with MethodNotFound, until a method is expected again.
    Failed(RpcError),
}

#[derive(Default)]
struct Expected {
    methods: Expect,
    /// QUEUED jobs of expected methods that found no server, oldest first (cancelled ones stay
    /// as tombstones until taken out).
    pending: VecDeque<ServedJob>,
}

impl Expected {
    fn covers(&self, method: &str) -> bool {
        match &self.methods {
            Expect::Nothing | Expect::Failed(_) => false,
            Expect::Any => true,
            Expect::Only(set) => set.contains(method),
        }
    }
}

/// What [`Servers::hold`] did with a job that found no server.
pub(crate) enum Hold {
    /// It waits for a server of its method.
    Held,
    /// A server of its method came meanwhile: place it again.
    Retry(ServedJob),
    /// Nobody serves its method, and nobody will.
    Unserved(ServedJob),
}

impl Default for Servers {
    fn default() -> Self {
        Servers {
            table: RwLock::new(Table::default()),
            expected: Mutex::new(Expected::default()),
            departures: Mutex::new(VecDeque::new()),
            open: AtomicUsize::new(0),
        }
    }
}

impl Servers {
    fn read(&self) -> RwLockReadGuard<'_, Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Table> {
        self.table.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Some open server serves `method`, or one is expected to.
    pub(crate) fn serves(&self, method: &str) -> bool {
        self.has_server(method) || lock(&self.expected).covers(method)
    }

    fn has_server(&self, method: &str) -> bool {
        self.read()
            .by_method
            .get(method)
            .is_some_and(|m| !m.list.is_empty())
    }

    /// Says which methods this pool's servers will serve: `None` for any (not yet known),
    /// `Some(methods)` once known. Jobs waiting for a method no longer expected are handed back
    /// (to be settled with MethodNotFound).
    pub(crate) fn expect(&self, methods: Option<Vec<String>>) -> Vec<ServedJob> {
        let mut expected = lock(&self.expected);
        expected.methods = match methods {
            None => Expect::Any,
            Some(methods) => Expect::Only(methods.into_iter().collect()),
        };
        let mut unserved = Vec::new();
        for job in std::mem::take(&mut expected.pending) {
            if expected.covers(&job.method) {
                expected.pending.push_back(job);
            } else {
                unserved.push(job);
            }
        }
        unserved
    }

    /// Servers are expected: this is a pool of JavaScript workers (see [`Servers::expect`]).
    pub(crate) fn expects_servers(&self) -> bool {
        !matches!(lock(&self.expected).methods, Expect::Nothing)
    }

    /// Why no server is expected any more, if it was said (see [`Servers::expect_none`]).
    pub(crate) fn failure(&self) -> Option<RpcError> {
        match &lock(&self.expected).methods {
            Expect::Failed(error) => Some(error.clone()),
            _ => None,
        }
    }

    /// Expects no server any more, because of `error`: the jobs that waited for one are handed
    /// back, and a job that finds no server from now on fails with `error`.
    pub(crate) fn expect_none(&self, error: RpcError) -> Vec<ServedJob> {
        let mut expected = lock(&self.expected);
        expected.methods = Expect::Failed(error);
        expected.pending.drain(..).collect()
    }

    /// Keeps a job that found no server, if its method is expected. Under the same lock as
    /// [`Servers::add`] takes the pending jobs for a new server, and after looking at the
    /// table once more: a server that came meanwhile is found here or finds the job there.
    pub(crate) fn hold(&self, job: ServedJob) -> Hold {
        let mut expected = lock(&self.expected);
        if !expected.covers(&job.method) {
            return Hold::Unserved(job);
        }
        if self.has_server(&job.method) {
            return Hold::Retry(job);
        }
        expected.pending.push_back(job);
        Hold::Held
    }

    /// A new job's token: unique in the process, whatever pool makes it (a thread that serves
    /// two pools keys the views and params it is sent by token alone: lib/views.js).
    pub(crate) fn next_token(&self) -> u64 {
        NEXT_TOKEN.fetch_add(1, Ordering::Relaxed)
    }

    /// Enters an open server in the table under each of its methods, and hands back the
    /// pending jobs of those methods (to be placed now; see [`Servers::hold`]).
    pub(crate) fn add(&self, server: &Arc<Server>) -> Vec<ServedJob> {
        {
            let mut table = self.write();
            for m in server.methods() {
                table
                    .by_method
                    .entry(m.clone())
                    .or_default()
                    .list
                    .push(server.clone());
            }
            table.all.push(server.clone());
            self.open.store(table.all.len(), Ordering::Relaxed);
        }
        let mut expected = lock(&self.expected);
        if expected.pending.is_empty() {
            return Vec::new();
        }
        let mut now = Vec::new();
        for job in std::mem::take(&mut expected.pending) {
            if server.serves(&job.method) {
                now.push(job);
            } else {
                expected.pending.push_back(job);
            }
        }
        now
    }

    /// Takes a server out of its methods' lists (it gets no new jobs; stats still list it).
    pub(crate) fn remove(&self, server: &Server) {
        let mut table = self.write();
        for m in server.methods() {
            if let Some(entry) = table.by_method.get_mut(m.as_str()) {
                entry.list.retain(|s| s.id() != server.id());
                if entry.list.is_empty() {
                    table.by_method.remove(m.as_str());
                }
            }
        }
    }

    /// Forgets a departed server altogether.
    pub(crate) fn forget(&self, server: &Server) {
        let mut table = self.write();
        table.all.retain(|x| x.id() != server.id());
        self.open.store(table.all.len(), Ordering::Relaxed);
    }

    /// How many servers the pool has (departed ones out), as of late.
    pub(crate) fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    /// Remembers that the departure of JavaScript thread `thread` settled `calls` running calls
    /// with ServerGone (a second departure of the same thread adds to it).
    pub(crate) fn record_departure(&self, thread: u64, calls: usize) {
        if calls == 0 {
            return;
        }
        let mut departures = lock(&self.departures);
        if let Some(entry) = departures.iter_mut().find(|(t, _)| *t == thread) {
            entry.1 = entry.1.saturating_add(calls);
            return;
        }
        if departures.len() == REMEMBERED_DEPARTURES {
            departures.pop_front();
        }
        departures.push_back((thread, calls));
    }

    /// How many running calls the departure of JavaScript thread `thread` settled with
    /// ServerGone: 0 if none (or if it is not among the latest departures that did).
    pub(crate) fn abandoned_by(&self, thread: u64) -> usize {
        lock(&self.departures)
            .iter()
            .find(|(t, _)| *t == thread)
            .map_or(0, |(_, calls)| *calls)
    }

    /// Jobs held up on other servers (see `Server::give_up_stuck`), for `taker`, which has
    /// `room` free handler slots (`empty`: it runs and holds nothing): up to `room` jobs that
    /// do not run alone, or one that does.
    pub(crate) fn stuck_for(&self, taker: &Server, room: usize, empty: bool) -> Vec<ServedJob> {
        let mut taken: Vec<ServedJob> = Vec::new();
        for other in self.read().all.iter() {
            if taken.len() >= room {
                break;
            }
            if other.id() == taker.id() {
                continue;
            }
            let given = other.give_up_stuck(
                |method| taker.serves(method),
                room - taken.len(),
                empty && taken.is_empty(),
            );
            if given.first().is_some_and(|job| job.alone) {
                return given; // an alone job goes by itself (only to an empty server)
            }
            taken.extend(given);
        }
        taken
    }

    /// Whether some server holds jobs up (`Server::holds_up`; atomics only, no server lock).
    pub(crate) fn any_holds_up(&self) -> bool {
        self.read().all.iter().any(|server| server.holds_up())
    }

    /// The servers not yet departed with a free handler slot for jobs that do not run alone
    /// (see `Server::placement_load`).
    pub(crate) fn with_room(&self) -> Vec<Arc<Server>> {
        self.read()
            .all
            .iter()
            .filter(|server| server.placement_load(false) < server.concurrency())
            .cloned()
            .collect()
    }

    /// Every server not yet departed.
    pub(crate) fn all(&self) -> Vec<Arc<Server>> {
        self.read().all.clone()
    }

    /// Places a QUEUED served job on a server of its method picked by `strategy`, announcing
    /// its views when `announce` is given. `Err` hands the job back when no server took it:
    /// none serves the method any more, or the pool is destroyed. (Handed back by value:
    /// boxing it would allocate on the submit path.)
    #[allow(clippy::result_large_err)]
    pub(crate) fn place(
        &self,
        mut job: ServedJob,
        mut announce: Option<Announce>,
        strategy: Strategy,
        lifecycle: &Lifecycle,
    ) -> Result<(), ServedJob> {
        job.announced = false;
        loop {
            let server = {
                let table = self.read();
                let Some(entry) = table
                    .by_method
                    .get(&*job.method)
                    .filter(|e| !e.list.is_empty())
                else {
                    return Err(job);
                };
                let n = entry.list.len();
                let alone = job.alone;
                let i = strategy.pick(n, &entry.next, |i| {
                    (entry.list[i].placement_load(alone), entry.list[i].asleep())
                });
                entry.list[i].clone()
            };
            match server.push(job, &mut announce, lifecycle) {
                Push::Queued => return Ok(()),
                Push::Closed(refused) => job = refused,
                Push::Destroyed(refused) => return Err(refused),
            }
        }
    }

    /// Counters of every server not yet departed.
    pub(crate) fn stats(&self) -> Vec<ServerStats> {
        self.read().all.iter().map(|sv| sv.stats()).collect()
    }
}
