//! What bounds a server's memory whatever its clients do: how many connections it keeps, how
//! many streams each may have open, and how many bytes all of them may buffer, shared out as
//! per-connection windows by a [`WindowBudget`].
//!
//! noq buffers, per connection, the stream data written but not yet acknowledged (at most the
//! connection's *send window*) and the data received but not yet read (at most its *receive
//! window*, the connection-level flow-control credit it grants). A server that gave every
//! connection a fixed window large enough for a long fat path would hold `connections x
//! window` bytes when many clients ask for large downloads (or upload out of order) at once.
//! Instead every connection starts with [`MIN_CONNECTION_WINDOW`] and is granted more from a
//! shared budget, up to a per-connection maximum: a lone client gets the whole maximum, a flood
//! of clients shares the budget, and the windows of all connections together never exceed
//! `budget + connections x MIN_CONNECTION_WINDOW` in each direction. A grant is never taken
//! back while its connection lives (noq cannot drop bytes it already holds); when a connection
//! ends, its grant is shared out among the connections below the maximum.

use crate::lock;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The window every connection has whatever the budget, bytes: enough to make progress (on
/// loopback, 64 KiB per round trip of ~100 us is several Gbit/s).
pub const MIN_CONNECTION_WINDOW: u64 = 64 << 10;

/// Applies a connection's window (send and receive) when it is granted or grows.
pub type ApplyWindow = Box<dyn Fn(u64) + Send + Sync>;

struct Member {
    window: u64,
    apply: ApplyWindow,
}

struct State {
    /// Budget not granted to any connection, bytes.
    free: u64,
    next_id: u64,
    members: BTreeMap<u64, Member>,
}

/// A byte budget shared out as per-connection windows between [`MIN_CONNECTION_WINDOW`] and a
/// maximum; see the module documentation.
pub struct WindowBudget {
    max_window: u64,
    state: Mutex<State>,
}

impl std::fmt::Debug for WindowBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("WindowBudget")
            .field("max_window", &self.max_window)
            .field("free", &state.free)
            .field("members", &state.members.len())
            .finish()
    }
}

impl WindowBudget {
    /// `budget` bytes to share out, at most `max_window` (at least [`MIN_CONNECTION_WINDOW`])
    /// to one connection.
    pub fn new(budget: u64, max_window: u64) -> Arc<Self> {
        Arc::new(WindowBudget {
            max_window: max_window.max(MIN_CONNECTION_WINDOW),
            state: Mutex::new(State {
                free: budget,
                next_id: 0,
                members: BTreeMap::new(),
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Grants a new connection its window (the minimum plus what the free budget allows, up to
    /// the maximum), applies it with `apply`, and returns the share, which gives the grant
    /// back when dropped.
    pub fn join(self: &Arc<Self>, apply: ApplyWindow) -> Share {
        let mut state = self.lock();
        let extra = (self.max_window - MIN_CONNECTION_WINDOW).min(state.free);
        state.free -= extra;
        let window = MIN_CONNECTION_WINDOW + extra;
        apply(window);
        let id = state.next_id;
        state.next_id += 1;
        state.members.insert(id, Member { window, apply });
        Share {
            budget: Arc::clone(self),
            id,
        }
    }

    /// The windows granted now, in the order the connections joined.
    pub fn windows(&self) -> Vec<u64> {
        self.lock().members.values().map(|m| m.window).collect()
    }

    /// Budget not granted to any connection, bytes.
    pub fn free(&self) -> u64 {
        self.lock().free
    }

    /// Gives `id`'s grant back and shares the free budget out among the connections below the
    /// maximum, in equal parts as far as each can take (water-filling, oldest first).
    fn leave(&self, id: u64) {
        let mut state = self.lock();
        let Some(member) = state.members.remove(&id) else {
            return;
        };
        state.free += member.window - MIN_CONNECTION_WINDOW;
        let max = self.max_window;
        let mut free = state.free;
        let mut grown = Vec::new();
        loop {
            let below = state.members.values().filter(|m| m.window < max).count() as u64;
            if below == 0 || free == 0 {
                break;
            }
            let part = free.div_ceil(below);
            for (id, m) in state.members.iter_mut().filter(|(_, m)| m.window < max) {
                let more = part.min(max - m.window).min(free);
                free -= more;
                m.window += more;
                grown.push(*id);
            }
        }
        state.free = free;
        grown.sort_unstable();
        grown.dedup();
        for id in grown {
            if let Some(m) = state.members.get(&id) {
                (m.apply)(m.window);
            }
        }
    }
}

/// A connection's part of a [`WindowBudget`]; dropping it gives the grant back.
#[derive(Debug)]
pub struct Share {
    budget: Arc<WindowBudget>,
    id: u64,
}

impl Drop for Share {
    fn drop(&mut self) {
        self.budget.leave(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    const MIN: u64 = MIN_CONNECTION_WINDOW;

    /// A share whose applied window is readable.
    fn join(budget: &Arc<WindowBudget>) -> (Share, Arc<AtomicU64>) {
        let applied = Arc::new(AtomicU64::new(0));
        let sink = Arc::clone(&applied);
        let share = budget.join(Box::new(move |w| sink.store(w, Ordering::Relaxed)));
        (share, applied)
    }

    #[test]
    fn a_lone_connection_gets_the_maximum_and_gives_it_back() {
        let budget = WindowBudget::new(100 * MIN, 16 * MIN);
        let (share, applied) = join(&budget);
        assert_eq!(applied.load(Ordering::Relaxed), 16 * MIN);
        assert_eq!(budget.free(), 85 * MIN);
        drop(share);
        assert_eq!(budget.free(), 100 * MIN);
        assert!(budget.windows().is_empty());
    }

    #[test]
    fn a_flood_shares_the_budget_and_never_exceeds_it() {
        let budget = WindowBudget::new(100 * MIN, 16 * MIN);
        let shares: Vec<_> = (0..300).map(|_| join(&budget)).collect();
        let windows = budget.windows();
        let total: u64 = windows.iter().sum();
        assert_eq!(total, 100 * MIN + 300 * MIN, "{windows:?}");
        assert!(windows.iter().all(|&w| (MIN..=16 * MIN).contains(&w)));
        // Six got the maximum, one the rest, the others the minimum.
        assert_eq!(windows.iter().filter(|&&w| w == 16 * MIN).count(), 6);
        assert_eq!(budget.free(), 0);
        // What each connection was told is what the budget granted it.
        for ((_, applied), w) in shares.iter().zip(&windows) {
            assert_eq!(applied.load(Ordering::Relaxed), *w);
        }
        drop(shares);
        assert_eq!(budget.free(), 100 * MIN);
    }

    #[test]
    fn a_freed_grant_goes_to_the_connections_that_have_least() {
        let budget = WindowBudget::new(25 * MIN, 16 * MIN);
        let (first, _) = join(&budget); // 1 + 15
        let (second, second_applied) = join(&budget); // 1 + the other 10
        let (third, third_applied) = join(&budget); // 1
        assert_eq!(budget.windows(), vec![16 * MIN, 11 * MIN, MIN]);
        drop(first);
        // 15 free: equal parts of 7.5, the second takes only the 5 it lacks, the third gets
        // 7.5 and then the other 2.5.
        assert_eq!(budget.windows(), vec![16 * MIN, 11 * MIN]);
        assert_eq!(second_applied.load(Ordering::Relaxed), 16 * MIN);
        assert_eq!(third_applied.load(Ordering::Relaxed), 11 * MIN);
        assert_eq!(budget.free(), 0);
        drop((second, third));
        assert_eq!(budget.free(), 25 * MIN);
    }
}
