//! kleinrock-quic: the same `kleinrock-cc` controllers inside a real QUIC stack over UDP on
//! loopback, a userspace bottleneck emulator driven by the real clock, and the multipath tunnel
//! over them.
pub mod adapter;
pub mod emulator;
pub mod endpoint;
pub mod kernel;
pub mod limits;
pub mod netns;
pub mod stamps;
pub mod subflows;
pub mod timers;
pub mod trace;
pub mod tun_check;
pub mod tunnel;

/// Locks a mutex, ignoring poisoning: the state behind the crate's mutexes stays consistent
/// between calls, so a panicking holder leaves nothing half-done.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
