//! DCCP Ack Vectors (RFC 4340 §11.4): what a receiver reports of the sequence numbers it got,
//! as run-length encoded bytes from its Acknowledgement Number (the greatest sequence number
//! received) downwards. Each byte is a 2-bit state and a 6-bit run length: the state holds for
//! the byte's sequence number and the `run length` ones below it.

use crate::rangeset::RangeSet;

/// The state of a run of sequence numbers (RFC 4340 §11.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Received (state 0).
    Received,
    /// Received ECN-marked (state 1).
    ReceivedMarked,
    /// Not yet received (state 3).
    NotReceived,
}

impl State {
    fn code(self) -> u8 {
        match self {
            State::Received => 0,
            State::ReceivedMarked => 1,
            State::NotReceived => 3,
        }
    }

    fn from_code(code: u8) -> State {
        match code {
            0 => State::Received,
            1 => State::ReceivedMarked,
            _ => State::NotReceived,
        }
    }
}

/// Sequence numbers a run byte covers at most: its 6-bit run length plus the byte's own.
pub const MAX_RUN: u64 = 64;

/// Bytes of Ack Vector an ACK carries at most: four options of 253 run bytes (an option's
/// length field counts its two header bytes and is at most 255; RFC 4340 §5.8). Older state
/// than fits is left out, as if pruned.
pub const MAX_RUN_BYTES: usize = 4 * 253;

/// An Ack Vector: the Acknowledgement Number and the run bytes below it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AckVector {
    /// The greatest sequence number received.
    pub ack_number: u64,
    /// Run bytes, the first for `ack_number` and the ones below it.
    pub runs: Vec<u8>,
}

impl AckVector {
    /// Encodes `received` (sequence numbers received; none is ECN-marked in this model) from
    /// its greatest down to `floor` (the lowest sequence number still to report), into `self`
    /// (its buffer reused). Returns `false`, leaving `self` empty, when nothing was received.
    pub fn encode(&mut self, received: &RangeSet, floor: u64) -> bool {
        self.runs.clear();
        let Some(top) = received.max() else {
            return false;
        };
        self.ack_number = top;
        // Walk the ranges from the top: each range a run of Received, each gap below it a
        // run of NotReceived, down to `floor`.
        let mut next = top + 1; // one above the lowest sequence number encoded so far
        for &(start, end) in received.ranges().iter().rev() {
            if end <= floor {
                break;
            }
            if end < next && !self.push(State::NotReceived, next - end) {
                return true;
            }
            let start = start.max(floor);
            if !self.push(State::Received, end - start) {
                return true;
            }
            next = start;
        }
        if next > floor {
            self.push(State::NotReceived, next - floor);
        }
        true
    }

    /// Appends `count` sequence numbers in `state`, as bytes of at most [`MAX_RUN`]; `false`
    /// once [`MAX_RUN_BYTES`] are used.
    fn push(&mut self, state: State, mut count: u64) -> bool {
        while count > 0 {
            if self.runs.len() == MAX_RUN_BYTES {
                return false;
            }
            let run = count.min(MAX_RUN);
            self.runs.push(state.code() << 6 | (run - 1) as u8);
            count -= run;
        }
        true
    }

    /// Calls `f(first, last, state)` for each run, from the top down: sequence numbers
    /// `first..=last` (`first <= last`) have `state`.
    pub fn for_each_run(&self, mut f: impl FnMut(u64, u64, State)) {
        let mut top = self.ack_number;
        for &byte in &self.runs {
            let len = u64::from(byte & 0x3f) + 1;
            let bottom = top + 1 - len;
            f(bottom, top, State::from_code(byte >> 6));
            if bottom == 0 {
                return;
            }
            top = bottom - 1;
        }
    }

    /// Bytes on the wire: each option's type and length bytes and its run bytes.
    pub fn wire_bytes(&self) -> u32 {
        (self.runs.len() + 2 * self.runs.len().div_ceil(253).max(1)) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The received set `v` reports between `floor` and its Acknowledgement Number.
    fn decoded(v: &AckVector) -> (RangeSet, RangeSet) {
        let (mut got, mut missing) = (RangeSet::new(), RangeSet::new());
        v.for_each_run(|a, b, s| {
            if s == State::NotReceived {
                missing.insert(a, b + 1);
            } else {
                got.insert(a, b + 1);
            }
        });
        (got, missing)
    }

    #[test]
    fn round_trips_random_receive_patterns_with_long_runs_and_pruning() {
        let mut rng = ChaCha8Rng::seed_from_u64(4340);
        for _ in 0..500 {
            let mut received = RangeSet::new();
            let mut seq = rng.gen_range(0..1_000);
            for _ in 0..rng.gen_range(1..20) {
                // Runs up to 300 long: several bytes each (RFC 4340 §11.4's 6-bit length).
                let got = rng.gen_range(1..300);
                received.insert(seq, seq + got);
                seq += got + rng.gen_range(1..200);
            }
            let floor = rng.gen_range(0..=received.max().unwrap());
            let mut v = AckVector::default();
            assert!(v.encode(&received, floor));
            assert_eq!(v.ack_number, received.max().unwrap());
            let (got, missing) = decoded(&v);
            let mut want = received.clone();
            want.remove_below(floor);
            assert_eq!(got, want, "floor {floor}");
            // Every number from the floor to the top is reported once, received or not.
            let top = v.ack_number + 1;
            assert_eq!(
                got.count_within(floor, top) + missing.count_within(floor, top),
                top - floor
            );
            assert!(v.runs.iter().all(|b| u64::from(b & 0x3f) < MAX_RUN));
        }
    }

    #[test]
    fn a_run_longer_than_64_takes_several_bytes() {
        let mut received = RangeSet::new();
        received.insert(0, 130);
        let mut v = AckVector::default();
        v.encode(&received, 0);
        // 130 = 64 + 64 + 2, all Received (state 0).
        assert_eq!(v.runs, [63, 63, 1]);
        assert_eq!(v.wire_bytes(), 5);
    }

    #[test]
    fn pruning_after_an_ack_of_ack_shortens_the_vector() {
        let mut received = RangeSet::new();
        for s in (0..1000).step_by(2) {
            received.insert(s, s + 1);
        }
        let mut v = AckVector::default();
        v.encode(&received, 0);
        let long = v.runs.len();
        // The sender has seen an ACK up to 900: the receiver reports from 901 on.
        received.remove_below(901);
        v.encode(&received, 901);
        assert!(v.runs.len() < long / 5, "{} of {long}", v.runs.len());
        let (got, _) = decoded(&v);
        assert_eq!(got.ranges().first(), Some(&(902, 903)));
    }

    #[test]
    fn the_vector_is_bounded() {
        let mut received = RangeSet::new();
        for s in (0..100_000).step_by(2) {
            received.insert(s, s + 1);
        }
        let mut v = AckVector::default();
        v.encode(&received, 0);
        assert_eq!(v.runs.len(), MAX_RUN_BYTES);
        assert_eq!(v.wire_bytes(), MAX_RUN_BYTES as u32 + 8);
    }
}
