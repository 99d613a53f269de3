//! The TUN link between network namespaces measured by itself (see
//! crates/quic/src/tun_check.rs). These tests need root and `/dev/net/tun`: as root a missing
//! capability fails them, elsewhere they skip and say why. They run one at a time.

use kleinrock_cc::Rate;
use kleinrock_quic::netns;
use kleinrock_quic::tun_check::{delay_check, rate_check, Measured};
use std::sync::Mutex;
use std::time::Duration;

/// One TUN test at a time: they measure real time on two cores.
static SERIAL: Mutex<()> = Mutex::new(());

/// Whether the test can run: true as root (where a missing capability panics), false with a
/// printed reason otherwise.
fn supported() -> bool {
    match netns::check_support() {
        None => true,
        // SAFETY: geteuid has no preconditions.
        Some(why) if unsafe { libc::geteuid() } == 0 => panic!("running as root, but {why}"),
        Some(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

fn report(what: &str, m: &Measured) {
    eprintln!(
        "{what}: sent {:.2} Mbps, received {:.2} Mbps, excess delay median {:?} p99 {:?}, {}",
        m.sent_bps / 1e6,
        m.received_bps / 1e6,
        m.excess_median(),
        m.excess_p99(),
        m.stats.why_invalid().unwrap_or_else(|| "valid".into())
    );
}

#[test]
fn the_tun_link_delivers_its_rate_within_1_percent_up_to_200_mbps() {
    if !supported() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for mbps in [10.0, 200.0] {
        let rate = Rate::from_bits_per_sec(mbps * 1e6);
        let m = rate_check(rate, Duration::from_millis(10), Duration::from_secs(3)).unwrap();
        report(&format!("{mbps} Mbps"), &m);
        assert!(m.stats.valid, "{:?}", m.stats.why_invalid());
        // Issue 24: delivered rate within 1 % of the configured rate.
        let err = (m.received_bps / (mbps * 1e6) - 1.0).abs();
        assert!(
            err <= 0.01,
            "{mbps} Mbps: received {:.3} Mbps",
            m.received_bps / 1e6
        );
    }
    assert!(
        netns::ours().is_empty(),
        "namespaces left: {:?}",
        netns::ours()
    );
}

#[test]
fn the_tun_link_adds_its_delay_within_half_a_millisecond_up_to_200_mbps() {
    if !supported() {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for mbps in [10.0, 200.0] {
        let rate = Rate::from_bits_per_sec(mbps * 1e6);
        let m = delay_check(rate, Duration::from_millis(10), Duration::from_secs(2)).unwrap();
        report(&format!("{mbps} Mbps"), &m);
        assert!(m.stats.valid, "{:?}", m.stats.why_invalid());
        // Issue 24: one-way delay within 0.5 ms of the configured delay.
        assert!(
            m.excess_p99() <= Duration::from_micros(500),
            "{:?}",
            m.excess_p99()
        );
    }
    assert!(
        netns::ours().is_empty(),
        "namespaces left: {:?}",
        netns::ours()
    );
}
