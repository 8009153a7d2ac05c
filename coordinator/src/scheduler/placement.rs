//! Where a job's runs go. A job is pinned to the least busy matching database host (fewest
//! unfinished jobs pinned to it, then the one used longest ago); client workers come from
//! one pool shared by every job, granted to runs first come, first served, so a run that
//! needs two workers is not starved by runs that need one. The waits themselves are in
//! `waiting.rs`.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tokio::sync::OwnedMutexGuard;

use crate::fleet::HostSession;
use blocklab_spec::HostRole;

/// The outcome of a wait.
pub(crate) enum Waited<T> {
    Got(T),
    /// The wait's limit passed; the last reason it waited for.
    TimedOut(String),
    Cancelled,
}

/// How busy each database host is, and the queue of runs asking for client workers.
#[derive(Default)]
pub(crate) struct Placement {
    hosts: Mutex<HashMap<String, HostUse>>,
    queue: Mutex<VecDeque<u64>>,
    next_ticket: AtomicU64,
    /// Woken when a run leaves the workers' queue or frees its hosts, so the next in line
    /// asks again at once instead of at its next poll.
    pub(crate) changed: tokio::sync::Notify,
}

/// Wakes the waits of other runs when dropped (after the hosts a run held were freed).
pub(crate) struct Freed(Arc<Placement>);

impl Drop for Freed {
    fn drop(&mut self) {
        self.0.changed.notify_waiters();
    }
}

#[derive(Default)]
struct HostUse {
    jobs: usize,
    last_pinned: Option<Instant>,
}

/// A job's hold on its database host: counted in the host's load until dropped.
pub(crate) struct Pinned {
    pub session: Arc<HostSession>,
    placement: Arc<Placement>,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(h) = self.placement.hosts().get_mut(&self.session.host_id) {
            h.jobs = h.jobs.saturating_sub(1);
        }
    }
}

/// A run's place in the workers' queue; leaves the queue when dropped.
pub(crate) struct Ticket {
    id: u64,
    placement: Arc<Placement>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.placement.queue().retain(|t| *t != self.id);
        self.placement.changed.notify_waiters();
    }
}

/// Client workers granted to one run; each stays busy until its guard drops.
pub(crate) type Granted = Vec<(Arc<HostSession>, OwnedMutexGuard<()>)>;

impl Placement {
    fn hosts(&self) -> MutexGuard<'_, HashMap<String, HostUse>> {
        self.hosts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn queue(&self) -> MutexGuard<'_, VecDeque<u64>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pins a job to the least busy of `candidates`: fewest unfinished jobs pinned to it,
    /// then the one pinned longest ago (never first).
    pub(crate) fn pin(self: &Arc<Self>, candidates: Vec<Arc<HostSession>>) -> Option<Pinned> {
        let mut hosts = self.hosts();
        let best = candidates.into_iter().min_by_key(|s| {
            let u = hosts.get(&s.host_id);
            (
                u.map_or(0, |u| u.jobs),
                u.and_then(|u| u.last_pinned),
                s.host_id.clone(),
            )
        })?;
        let u = hosts.entry(best.host_id.clone()).or_default();
        u.jobs += 1;
        u.last_pinned = Some(Instant::now());
        Some(Pinned {
            session: best,
            placement: self.clone(),
        })
    }

    /// A guard that wakes the other runs' waits when it drops: hold it longer than the
    /// hosts a run holds.
    pub(crate) fn freed_on_drop(self: &Arc<Self>) -> Freed {
        Freed(self.clone())
    }

    /// Unfinished jobs pinned to `host_id` (what placement weighs).
    pub(crate) fn jobs_on(&self, host_id: &str) -> usize {
        self.hosts().get(host_id).map_or(0, |u| u.jobs)
    }

    /// Enters the workers' queue.
    pub(crate) fn ticket(self: &Arc<Self>) -> Ticket {
        let id = self.next_ticket.fetch_add(1, Ordering::Relaxed);
        self.queue().push_back(id);
        Ticket {
            id,
            placement: self.clone(),
        }
    }

    /// `n` free workers of `up` for the run holding `ticket`, if it is first in the queue and
    /// that many are free; else why it still waits.
    pub(crate) fn grant(
        &self,
        ticket: &Ticket,
        up: &[Arc<HostSession>],
        n: usize,
    ) -> Result<Granted, String> {
        let workers: Vec<&Arc<HostSession>> =
            up.iter().filter(|s| s.role == HostRole::Worker).collect();
        let free = workers.iter().filter(|s| s.busy.try_lock().is_ok()).count();
        let ahead = self
            .queue()
            .iter()
            .position(|t| *t == ticket.id)
            .unwrap_or(0);
        let wanted = if n == 1 {
            "1 client worker".to_string()
        } else {
            format!("{n} client workers")
        };
        if ahead > 0 {
            return Err(format!(
                "waiting for {wanted}: {free} free, {ahead} run{} of other jobs first in line",
                if ahead == 1 { "" } else { "s" }
            ));
        }
        let mut got = Vec::new();
        for s in workers {
            if let Ok(g) = s.busy.clone().try_lock_owned() {
                got.push((s.clone(), g));
                if got.len() == n {
                    self.queue().retain(|t| *t != ticket.id);
                    self.changed.notify_waiters();
                    return Ok(got);
                }
            }
        }
        Err(format!("waiting for {wanted}: {} free", got.len()))
    }
}

/// Why a job waits for its database host, when none of the matching ones is up.
pub(crate) fn no_agent_reason(labels: &[String], pinned: Option<&str>) -> String {
    match pinned {
        Some(host) => format!("waiting for database host {host} to attach"),
        None if labels.is_empty() => "waiting for a database host to attach".to_string(),
        None => format!("waiting for a database host with labels {labels:?} to attach"),
    }
}

/// What "the same hardware" compares of two database hosts' facts: CPU model, logical CPUs,
/// memory (to the GiB), and the data directory's file system and whether its disk rotates.
pub(crate) fn hardware(facts_json: &str) -> String {
    let f: serde_json::Value = serde_json::from_str(facts_json).unwrap_or_default();
    let gib = f["memory_bytes"]
        .as_u64()
        .map(|b| (b as f64 / 1073741824.0).round() as u64);
    format!(
        "{} x{}, {} GiB, data on {} ({})",
        f["cpu_model"].as_str().unwrap_or("?"),
        f["logical_cpus"].as_u64().unwrap_or(0),
        gib.map_or("?".to_string(), |g| g.to_string()),
        f["data_dir"]["fs_type"].as_str().unwrap_or("?"),
        match f["data_dir"]["rotational"].as_bool() {
            Some(true) => "rotational",
            Some(false) => "non-rotational",
            None => "?",
        }
    )
}

#[cfg(test)]
mod tests {
    use super::hardware;

    #[test]
    fn hardware_is_cpu_memory_and_data_storage() {
        let a = r#"{"cpu_model":"EPYC 7B13","logical_cpus":2,"memory_bytes":25769803776,
            "hostname":"db1","data_dir":{"fs_type":"ext4","rotational":false}}"#;
        let b = a.replace("db1", "db2");
        assert_eq!(
            hardware(a),
            "EPYC 7B13 x2, 24 GiB, data on ext4 (non-rotational)"
        );
        assert_eq!(hardware(a), hardware(&b), "the hostname is not hardware");
        assert_ne!(hardware(a), hardware(&a.replace("ext4", "xfs")));
        assert_eq!(hardware("{}"), "? x0, ? GiB, data on ? (?)");
    }
}
