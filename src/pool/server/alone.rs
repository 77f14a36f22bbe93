//! Jobs that run alone (`ServedJob::alone`) on a server: the counts of those waiting and
//! running (per server and process-wide), what placement weighs, and which held-up jobs a
//! server gives up to another with room (see the module doc and src/pool/README.md §6).

use super::{lock, Inner, Server, QUEUED};
use crate::pool::job::ServedJob;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Alone entries queued on any server of the process (see `Server::alone_queued`): while there
/// are none, a resting server does not look for one to take (`Pool::rest`).
static ALONE_QUEUED: AtomicUsize = AtomicUsize::new(0);

/// Servers of the process running a job alone (see `Server::alone_running`): while there are
/// none, no job is held up behind one, and a resting server does not look for one to take.
static ALONE_RUNNING: AtomicUsize = AtomicUsize::new(0);

/// Whether some server may hold jobs a server with nothing to do should take: an alone job
/// waiting behind running jobs, or jobs queued behind a job that runs alone (SeqCst: see
/// `Scheduler::take_stuck`).
pub(crate) fn stuck_anywhere() -> bool {
    ALONE_QUEUED.load(Ordering::SeqCst) > 0 || ALONE_RUNNING.load(Ordering::SeqCst) > 0
}

impl Server {
    /// Whether queued entry `job` is an alone job that cannot start beside `others` jobs.
    pub(super) fn waits_alone(job: &ServedJob, others: usize) -> bool {
        job.alone && others > 0 && job.core.control.is_queued()
    }

    /// Gives up jobs held up here, for a server with `room` free handler slots (`serves`:
    /// whether it serves a method; `empty`: it runs and holds nothing, so it may take an alone
    /// job): while a job runs alone here, the queued jobs that do not run alone (up to `room`,
    /// in order), or if there are none and `empty`, the first one that does; otherwise, if
    /// `empty`, an alone job that waits behind running jobs. The serving thread is told to
    /// forget the views it was sent for them; they go unannounced.
    pub(crate) fn give_up_stuck(
        &self,
        serves: impl Fn(&str) -> bool,
        room: usize,
        empty: bool,
    ) -> Vec<ServedJob> {
        if room == 0 || !self.holds_up() {
            return Vec::new();
        }
        let mut inner = lock(&self.inner);
        let mut given = Vec::new();
        let movable = |job: &ServedJob| job.core.control.is_queued() && serves(&job.method);
        if self.runs_alone() {
            let mut at = 0;
            while at < inner.queue.len() && given.len() < room {
                if !inner.queue[at].alone && movable(&inner.queue[at]) {
                    given.extend(inner.queue.remove(at));
                } else {
                    at += 1;
                }
            }
            if given.is_empty() && empty {
                if let Some(at) = inner.queue.iter().position(|job| job.alone && movable(job)) {
                    given.extend(inner.queue.remove(at));
                }
            }
        } else if empty {
            let running = self.running();
            if let Some(at) = inner
                .queue
                .iter()
                .position(|job| Self::waits_alone(job, running) && movable(job))
            {
                given.extend(inner.queue.remove(at));
            }
        }
        if given.is_empty() {
            return given;
        }
        let alone = given.iter().filter(|job| job.alone).count();
        self.count_alone(&mut inner, 0, alone);
        self.sub_counts(QUEUED, given.len());
        self.forget_announced(&mut inner, given.iter());
        for job in &mut given {
            job.announced = false;
        }
        given
    }

    /// Alone entries in the queue, read under its lock (exact then).
    pub(super) fn alone_in(&self, _locked: &Inner) -> usize {
        self.alone_queued.load(Ordering::Relaxed)
    }

    /// Counts alone entries into (`add`) and out of (`sub`) the queue, under its lock.
    pub(super) fn count_alone(&self, _locked: &mut Inner, add: usize, sub: usize) {
        if add > 0 {
            self.alone_queued.fetch_add(add, Ordering::Relaxed);
            ALONE_QUEUED.fetch_add(add, Ordering::SeqCst);
        }
        if sub > 0 {
            self.alone_queued.fetch_sub(sub, Ordering::Relaxed);
            ALONE_QUEUED.fetch_sub(sub, Ordering::SeqCst);
        }
    }

    /// The load the strategy weighs for placing a job (`alone`: one that runs alone). To other
    /// jobs, a server running an alone job, or about to (one is queued and nothing runs),
    /// looks full (they would wait for it), and alone jobs waiting there do not count (they
    /// hold no slot: other jobs go past them); an alone job looks for a server with nothing to
    /// do.
    pub(crate) fn placement_load(&self, alone: bool) -> usize {
        let load = self.load();
        if alone {
            return if load > 0 {
                load.saturating_add(self.concurrency)
            } else {
                0
            };
        }
        let alone_queued = self.alone_queued.load(Ordering::Relaxed);
        let load = load.saturating_sub(alone_queued);
        let starting_alone = alone_queued > 0 && self.running() == 0;
        if starting_alone || self.alone_running.load(Ordering::Relaxed) {
            load.saturating_add(self.concurrency)
        } else {
            load
        }
    }

    /// Sets `alone_running`, counting the change in the process-wide `ALONE_RUNNING` (SeqCst:
    /// the running side of the handshake, `Scheduler::take_stuck`).
    pub(super) fn set_alone_running(&self, on: bool) {
        if self.alone_running.swap(on, Ordering::SeqCst) != on {
            if on {
                ALONE_RUNNING.fetch_add(1, Ordering::SeqCst);
            } else {
                ALONE_RUNNING.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Whether a job runs alone here now.
    pub(crate) fn runs_alone(&self) -> bool {
        self.alone_running.load(Ordering::Acquire)
    }

    /// Whether this server may hold jobs up (see [`Server::give_up_stuck`]): jobs queued behind
    /// a job running alone, or an alone job queued behind running jobs.
    /// SeqCst reads: the taking side of the handshake (`Scheduler::take_stuck`).
    pub(crate) fn holds_up(&self) -> bool {
        let (queued, running) = self.counts();
        queued > 0
            && (self.alone_running.load(Ordering::SeqCst)
                || (self.alone_queued.load(Ordering::Relaxed) > 0 && running > 0))
    }

    /// Live jobs queued here (no tombstones), and how many of them run alone (tests).
    #[cfg(test)]
    pub(crate) fn live_queued(&self) -> (usize, usize) {
        let inner = lock(&self.inner);
        let live = inner
            .queue
            .iter()
            .filter(|job| job.core.control.is_queued());
        let alone = live.clone().filter(|job| job.alone).count();
        (live.count(), alone)
    }
}
