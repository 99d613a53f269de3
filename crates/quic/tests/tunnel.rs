//! The tunnel's ends on the real datapath take datagrams only from their peers: garbage sent to
//! an entry or a far end is dropped and counted, the tunnel carries on and accounts for every
//! packet, and a finished run frees every port it used (the acceptance of "Multipath on the
//! real datapath": "Garbage datagrams at a tunnel end are dropped and counted; a killed tunnel
//! end frees its ports").

use kleinrock_cc::multipath::reorder::ReorderConfig;
use kleinrock_cc::multipath::scheduler::SchedulerKind;
use kleinrock_cc::{Params, Rate};
use kleinrock_quic::tunnel::{run_with, PathEnds, PathSpec, Source, TunnelSpec};
use kleinrock_sim::{BufferLimit, LinkConfig};
use std::net::{SocketAddr, UdpSocket};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Garbage datagrams sent to each end.
const GARBAGE: u64 = 300;

fn path(name: &str) -> PathSpec {
    let link = |n: &str| {
        LinkConfig::drop_tail(
            n,
            Rate::from_bits_per_sec(20e6),
            Duration::from_millis(5),
            BufferLimit::Packets(100),
        )
    };
    PathSpec {
        name: name.into(),
        forward: link(name),
        reverse: link(&format!("{name}_return")),
        cc: "cubic".into(),
        params: Params::new(),
        priority: 3,
    }
}

fn spec() -> TunnelSpec {
    TunnelSpec {
        paths: vec![path("one"), path("two")],
        scheduler: SchedulerKind::Srtt,
        reorder: ReorderConfig::default(),
        queue: 5,
        source: Source::Cbr {
            rate: Rate::from_bits_per_sec(8e6),
            payload: 1160,
        },
        packet_size: 1200,
        duration: Duration::from_secs(3),
        warmup: Duration::from_secs(1),
        trace_interval: Duration::from_millis(100),
        seed: 1,
    }
}

/// Sends `GARBAGE` datagrams of junk to `to`.
fn spray(to: SocketAddr) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    for i in 0..GARBAGE {
        let junk = [i as u8; 64];
        socket.send_to(&junk, to).expect("sent");
        std::thread::sleep(Duration::from_micros(500));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_at_either_end_is_dropped_and_counted_and_every_port_is_freed() {
    let ends: Arc<Mutex<Vec<PathEnds>>> = Arc::default();
    let seen = ends.clone();
    let report = run_with(&spec(), move |e| {
        *seen.lock().expect("not poisoned") = e.to_vec();
        let first = e[0];
        std::thread::spawn(move || {
            spray(first.entry);
            spray(first.far);
        });
    })
    .await
    .expect("the tunnel runs");
    assert_eq!(report.garbage.entry, GARBAGE, "dropped at the entry");
    assert_eq!(report.garbage.far_end, GARBAGE, "dropped at the far end");
    report.accounted().expect("every packet accounted for");
    assert!(report.far.forwarded > 2000, "{:?}", report.far);
    assert_eq!(report.far.malformed, 0);
    if let Some(why) = report.invalid() {
        panic!("the machine was too busy for this test: {why}");
    }
    for e in ends.lock().expect("not poisoned").iter() {
        for a in [e.entry, e.emulator, e.far] {
            UdpSocket::bind(a).unwrap_or_else(|err| panic!("{a} is still held: {err}"));
        }
    }
}
