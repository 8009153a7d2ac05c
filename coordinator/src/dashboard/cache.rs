//! What the dashboard keeps of finished jobs. A finished job's runs, results and report never
//! change (a rerun is a job of its own, and nothing deletes a job), so its rendered page and
//! its results are computed once and served from memory after, up to [`KEPT`] of each, the
//! oldest forgotten first. A job still running is always read afresh.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

/// How many entries each cache keeps.
pub const KEPT: usize = 2_000;

/// The values by key, and the keys in the order they were first put.
type Entries<V> = (HashMap<String, Arc<V>>, VecDeque<String>);

/// Values of finished jobs by key, at most [`KEPT`].
#[derive(Debug)]
pub struct Finished<V> {
    inner: Mutex<Entries<V>>,
}

impl<V> Default for Finished<V> {
    fn default() -> Self {
        Finished {
            inner: Mutex::new((HashMap::new(), VecDeque::new())),
        }
    }
}

impl<V> Finished<V> {
    fn lock(&self) -> MutexGuard<'_, Entries<V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn get(&self, key: &str) -> Option<Arc<V>> {
        self.lock().0.get(key).cloned()
    }

    /// Keeps `value` under `key`, forgetting the oldest entry beyond [`KEPT`].
    pub fn put(&self, key: String, value: V) -> Arc<V> {
        let value = Arc::new(value);
        let mut g = self.lock();
        let (map, order) = &mut *g;
        if map.insert(key.clone(), value.clone()).is_none() {
            order.push_back(key);
        }
        while order.len() > KEPT {
            if let Some(old) = order.pop_front() {
                map.remove(&old);
            }
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_entries_go_beyond_the_limit() {
        let c: Finished<usize> = Finished::default();
        for i in 0..KEPT + 3 {
            c.put(format!("job-{i}"), i);
        }
        assert!(c.get("job-0").is_none() && c.get("job-2").is_none());
        assert_eq!(c.get("job-3").as_deref(), Some(&3));
        assert_eq!(
            c.get(&format!("job-{}", KEPT + 2)).as_deref(),
            Some(&(KEPT + 2))
        );
        // Putting a key again keeps one entry.
        c.put("job-3".into(), 33);
        assert_eq!(c.get("job-3").as_deref(), Some(&33));
        assert_eq!(c.lock().1.len(), KEPT);
    }
}
