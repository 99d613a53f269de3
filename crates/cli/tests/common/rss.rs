//! A process's resident memory (`/proc/PID/status`, VmRSS; Linux), and a sampler that kills a
//! process the moment it goes above a bound, so that a server without bounds fails a test
//! loudly instead of taking the machine's memory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// How often a [`Sampler`] reads the memory.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// Resident memory of process `pid`, bytes; `None` once it is gone.
pub fn try_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// Resident memory of the running process `pid`, bytes.
pub fn rss(pid: u32) -> u64 {
    try_rss(pid).unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"))
}

/// `bytes` in MiB.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// A thread that samples a process's resident memory every [`SAMPLE_EVERY`] and kills the
/// process (SIGKILL, through `kill`) the moment it exceeds `bound`.
pub struct Sampler {
    bound: u64,
    peak: Arc<AtomicU64>,
    over: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    pub fn start(pid: u32, bound: u64) -> Sampler {
        let peak = Arc::new(AtomicU64::new(0));
        let over = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, o, s) = (peak.clone(), over.clone(), stop.clone());
        let thread = thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                let Some(now) = try_rss(pid) else {
                    return;
                };
                p.fetch_max(now, Ordering::Relaxed);
                if now > bound {
                    o.store(now, Ordering::Relaxed);
                    let _ = std::process::Command::new("kill")
                        .args(["-KILL", &pid.to_string()])
                        .status();
                    return;
                }
                thread::sleep(SAMPLE_EVERY);
            }
        });
        Sampler {
            bound,
            peak,
            over,
            stop,
            thread: Some(thread),
        }
    }

    /// Panics if the process went over the bound; returns the peak so far.
    pub fn check(&self, when: &str) -> u64 {
        let over = self.over.load(Ordering::Relaxed);
        assert!(
            over == 0,
            "kleinrock serve reached {:.1} MiB resident {when}, above the bound of {:.0} MiB \
             (killed)",
            mib(over),
            mib(self.bound)
        );
        self.peak.load(Ordering::Relaxed)
    }

    /// Stops sampling; the peak.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
