//! Placeholder while the real module is written.
use crate::controller::{AckEvent, CongestionEvent, Controller, ControllerState};
use crate::registry::ControllerInfo;
use crate::units::Instant;
struct Fixed(u64);
impl Controller for Fixed {
    fn on_ack(&mut self, _: Instant, _: &AckEvent) {}
    fn on_congestion(&mut self, _: Instant, _: &CongestionEvent) {}
    fn cwnd(&self) -> u64 {
        self.0
    }
    fn state(&self) -> ControllerState {
        ControllerState::default()
    }
}
/// Registry entry.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "bbr",
    summary: "placeholder",
    params: &[],
    build: |_, c| Ok(Box::new(Fixed(c.initial_window() * 4))),
};
