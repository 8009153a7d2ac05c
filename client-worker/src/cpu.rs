//! CPU time used by this process (all threads), from getrusage(RUSAGE_SELF).

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeValLike;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuTimes {
    pub user_s: f64,
    pub system_s: f64,
}

impl CpuTimes {
    pub fn now() -> CpuTimes {
        match getrusage(UsageWho::RUSAGE_SELF) {
            Ok(u) => CpuTimes {
                user_s: u.user_time().num_microseconds() as f64 / 1e6,
                system_s: u.system_time().num_microseconds() as f64 / 1e6,
            },
            Err(e) => {
                tracing::warn!(error = %e, "getrusage failed");
                CpuTimes::default()
            }
        }
    }

    pub fn since(self, earlier: CpuTimes) -> CpuTimes {
        CpuTimes {
            user_s: self.user_s - earlier.user_s,
            system_s: self.system_s - earlier.system_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_loop_shows_user_time() {
        // Spins until 20 ms of CPU time show (a loaded machine gives the thread only a
        // share of the wall time), for at most 10 s.
        let before = CpuTimes::now();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        let mut d = CpuTimes::now().since(before);
        while d.user_s + d.system_s <= 0.02 && t.elapsed().as_secs() < 10 {
            for _ in 0..100_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            d = CpuTimes::now().since(before);
        }
        assert!(d.user_s > 0.0 && d.user_s + d.system_s > 0.02, "{d:?}");
    }
}
