//! The simulator's per-packet hot paths, measured alone: the event list's push and pop at the
//! sizes of the `kleinrock bench` workloads (a few events for one flow, tens of thousands of
//! timers for 10 000 flows), a histogram's record (an RTT, one-way delay and latency sample per
//! packet).
//!
//!     cargo bench -p kleinrock-sim --bench hot_paths

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use kleinrock_sim::events::{EventQueue, Target};
use kleinrock_sim::hist::Histogram;

/// A queue holding `pending` events spread over 100 ms, as timers and pipe heads are.
fn queue_of(pending: u32) -> EventQueue {
    let mut q = EventQueue::new();
    for i in 0..pending {
        q.push(
            u64::from(i) * 100_000_000 / u64::from(pending.max(1)),
            Target::Sender(i),
        );
    }
    q
}

fn event_queue(c: &mut Criterion) {
    for pending in [4u32, 64, 20_000] {
        c.bench_function(
            &format!("event queue: pop and push one, {pending} pending"),
            |b| {
                b.iter_batched_ref(
                    || (queue_of(pending), 0u64),
                    |(q, n)| {
                        for _ in 0..1000 {
                            let (t, target) = q.pop().unwrap();
                            *n += 1;
                            q.push(t + 1_000 + *n % 7_919, target);
                        }
                    },
                    BatchSize::SmallInput,
                )
            },
        );
    }
}

fn histogram(c: &mut Criterion) {
    c.bench_function("histogram: record 1000 RTTs of 20-40 ms", |b| {
        let mut h = Histogram::new();
        let mut v = 20_000_000u64;
        b.iter(|| {
            for _ in 0..1000 {
                v = 20_000_000 + (v.wrapping_mul(6_364_136_223_846_793_005) >> 40) % 20_000_000;
                h.record(black_box(v));
            }
        })
    });
}

criterion_group!(benches, event_queue, histogram);
criterion_main!(benches);
