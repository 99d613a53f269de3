//! The random streams of a scenario: every random element draws from its own ChaCha8 stream
//! of the scenario seed, so adding a link or a flow does not change another element's draws
//! (`docs/simulator.md`, "Time, events, randomness"). The real-time emulator uses the same
//! streams for its links.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Generator `stream` of the scenario seeded with `seed`.
pub fn seeded(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Generator stream of link `i`'s loss process.
pub fn loss_stream(i: usize) -> u64 {
    (1 << 32) | i as u64
}

/// Generator stream of link `i`'s jitter.
pub fn jitter_stream(i: usize) -> u64 {
    (2 << 32) | i as u64
}

/// Generator stream of flow `i`'s short-flow arrivals.
pub fn arrivals_stream(i: usize) -> u64 {
    (3 << 32) | i as u64
}

/// Generator stream of flow `i`'s sending host (gaps while held to the host rate).
fn host_stream(i: usize) -> u64 {
    (4 << 32) | i as u64
}

/// The seed of the sending host of the `k`-th connection (from 0) of configured flow `i`:
/// the `k`-th draw of the flow's host stream. A bulk flow has one connection; a short-flow
/// arrival process has one per transfer.
pub fn host_seed(seed: u64, i: usize, k: u64) -> u64 {
    let mut rng = seeded(seed, host_stream(i));
    rng.set_word_pos(2 * u128::from(k));
    rng.next_u64()
}
