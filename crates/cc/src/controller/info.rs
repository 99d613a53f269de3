//! How an algorithm presents itself: its name, a one-line summary with its source, the
//! parameters it accepts, what it needs from the transport, and its constructor. Every algorithm
//! module publishes one [`ControllerInfo`]; the registry lists them.

use super::params::{ParamError, ParamReader, ParamSpec, Params};
use super::{Controller, ControllerConfig};

/// Builds a controller from its checked parameters.
pub type BuildFn = fn(&ParamReader, &ControllerConfig) -> Result<Box<dyn Controller>, ParamError>;

/// One controller as the registry lists it.
#[derive(Clone, Copy, Debug)]
pub struct ControllerInfo {
    /// Name used in scenarios and on the command line.
    pub name: &'static str,
    /// One line: what it is and its source.
    pub summary: &'static str,
    /// Parameters it accepts.
    pub params: &'static [ParamSpec],
    /// It uses receiver timestamps when the transport has them: one-way delay
    /// ([`crate::AckEvent::one_way_delay`]) or the receiver's ACK delay
    /// ([`crate::AckEvent::ack_delay`]), and falls back to the raw RTT without them.
    pub one_way_delay: bool,
    /// Parameters a scenario may change during a run (a flow's `events`, as a socket option
    /// would), given to [`crate::Controller::set_param`].
    pub runtime_params: &'static [&'static str],
    /// It needs a transport with subflows (it asks for extra ones through
    /// [`crate::Controller::extra_subflows`]); the real datapath has none.
    pub subflows: bool,
    /// It is rate-based: it sets a pacing rate and no window of its own (its cwnd is
    /// effectively unlimited), so it only means something to a transport that paces.
    pub rate_based: bool,
    /// It is a DCCP CCID: it counts packets ([`crate::Controller::cwnd_packets`]) and sets the
    /// receiver's Ack Ratio, so it runs on the DCCP-like transport only.
    pub dccp_only: bool,
    /// Constructor.
    pub build: BuildFn,
}

impl ControllerInfo {
    /// Checks `params` against [`ControllerInfo::params`] (unknown names and values of the wrong
    /// kind are errors) and builds the controller.
    pub fn instantiate(
        &self,
        params: &Params,
        config: &ControllerConfig,
    ) -> Result<Box<dyn Controller>, ParamError> {
        let reader = ParamReader::new(params, self.params)?;
        (self.build)(&reader, config)
    }
}
