//! The trace of a real run: a [`CcProbe`] sampled at a fixed interval into the simulator's flow
//! trace columns ([`kleinrock_sim::trace::Series`]), so real and simulated traces plot alike.
//!
//! This module owns [`ProbeRecorder`] (the sampling task) and the mapping of a [`ProbeSample`] to
//! columns: `cwnd_bytes`, `pacing_rate_bps`, `in_flight_bytes`, `srtt_ms`, `latest_rtt_ms`,
//! `min_rtt_ms`, `delivery_rate_bps`, `acked_bytes`, `sent_packets`, `lost_packets`,
//! `owd_samples` (ACKs that carried a one-way-delay sample), then the controller's own values
//! (its `ControllerState`, e.g. QUIC-DC's `owqd_ms`). Times are seconds on the factory's clock.

use crate::adapter::{CcProbe, ProbeSample};
use kleinrock_sim::trace::Series;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

fn ms(d: Option<Duration>) -> f64 {
    d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

/// Appends one sample to `series`.
pub fn record(series: &mut Series, sample: &ProbeSample) {
    series.begin(sample.time.as_nanos() as f64 * 1e-9);
    series.set("cwnd_bytes", sample.cwnd as f64);
    series.set(
        "pacing_rate_bps",
        sample.pacing_rate.map_or(f64::NAN, |r| r.bits_per_sec()),
    );
    series.set("in_flight_bytes", sample.in_flight as f64);
    series.set("srtt_ms", ms(sample.smoothed_rtt));
    series.set("latest_rtt_ms", ms(sample.latest_rtt));
    series.set("min_rtt_ms", ms(sample.min_rtt));
    series.set(
        "delivery_rate_bps",
        sample.delivery_rate.map_or(f64::NAN, |r| r.bits_per_sec()),
    );
    let c = &sample.counters;
    series.set("acked_bytes", c.bytes_acked as f64);
    series.set("sent_packets", c.packets_sent as f64);
    series.set("lost_packets", c.packets_lost as f64);
    series.set("owd_samples", c.owd_samples as f64);
    series.set_state(&sample.state);
}

/// A task sampling a probe every interval until [`ProbeRecorder::finish`].
#[derive(Debug)]
pub struct ProbeRecorder {
    stop: oneshot::Sender<()>,
    task: JoinHandle<Series>,
}

impl ProbeRecorder {
    /// Starts sampling `probe` every `interval` on the current tokio runtime, into a series
    /// called `name`; samples are taken once a controller exists.
    pub fn start(probe: CcProbe, interval: Duration, name: &str) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let mut series = Series::new(name);
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = &mut stopped => break,
                    _ = tick.tick() => {
                        if let Some(sample) = probe.sample() {
                            record(&mut series, &sample);
                        }
                    }
                }
            }
            if let Some(sample) = probe.sample() {
                record(&mut series, &sample);
            }
            series.end();
            series
        });
        ProbeRecorder { stop, task }
    }

    /// Takes a last sample and returns the series.
    pub async fn finish(self) -> Series {
        let _ = self.stop.send(());
        self.task.await.unwrap_or_default()
    }
}
