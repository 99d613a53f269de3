//! The registry: every controller by name, with its parameters, and a builder that turns a
//! name plus a parameter table into a running controller or a clear error.

use crate::algorithms::{bbr, bbr2, cubic, fq_switch, newreno, quic_dc, siad, westwood};
use crate::algorithms::{ccid2, ccid5};
use crate::algorithms::{delay_fq, highspeed, htcp, scalable, vivace};
use crate::controller::{
    Controller, ControllerConfig, ControllerInfo, ParamError, ParamReader, Params,
};
use std::fmt;

/// Why a controller could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// No controller has this name.
    UnknownController {
        /// The name asked for.
        name: String,
        /// Every registered name.
        known: Vec<&'static str>,
    },
    /// A parameter was unknown, of the wrong kind or out of range.
    Param(ParamError),
    /// The controller needs subflows, which this transport does not have.
    NeedsSubflows {
        /// The controller's name.
        name: String,
    },
    /// The controller is a DCCP CCID, and this transport is not DCCP.
    NeedsDccp {
        /// The controller's name.
        name: String,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::UnknownController { name, known } => write!(
                f,
                "unknown controller `{name}`; accepted: {}",
                known.join(", ")
            ),
            BuildError::Param(e) => e.fmt(f),
            BuildError::NeedsSubflows { name } => write!(
                f,
                "`{name}` needs a transport with subflows (the simulator's); this one has none"
            ),
            BuildError::NeedsDccp { name } => write!(
                f,
                "`{name}` is a DCCP CCID and runs on the simulator's DCCP-like transport only; \
                 this one is QUIC"
            ),
        }
    }
}

impl std::error::Error for BuildError {}

/// Every registered controller, in the order `kleinrock list` shows them.
pub fn controllers() -> &'static [ControllerInfo] {
    const ALL: &[ControllerInfo] = &[
        newreno::INFO,
        cubic::INFO,
        bbr::INFO,
        bbr2::INFO,
        westwood::INFO,
        quic_dc::INFO,
        quic_dc::RTT_DC_INFO,
        highspeed::INFO,
        scalable::INFO,
        htcp::INFO,
        siad::INFO,
        delay_fq::INFO,
        vivace::INFO,
        vivace::PCC_INFO,
        ccid2::INFO,
        ccid5::INFO,
        fq_switch::info(build_fq_switch),
    ];
    ALL
}

/// `fq_switch` hands the connection over to controllers it finds by name: the registry gives it
/// its own list, so no algorithm depends on the registry.
fn build_fq_switch(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    fq_switch::build(controllers(), reader, config)
}

/// The registered controller called `name`.
pub fn find(name: &str) -> Option<&'static ControllerInfo> {
    controllers().iter().find(|c| c.name == name)
}

/// Builds the controller `name` with `params`, rejecting unknown names and parameters.
pub fn build(
    name: &str,
    params: &Params,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, BuildError> {
    let info = find(name).ok_or_else(|| BuildError::UnknownController {
        name: name.to_string(),
        known: controllers().iter().map(|c| c.name).collect(),
    })?;
    info.instantiate(params, config).map_err(BuildError::Param)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::ParamValue;

    #[test]
    fn unknown_name_lists_known_ones() {
        let e = build("renoo", &Params::new(), &ControllerConfig::default())
            .err()
            .unwrap();
        let text = e.to_string();
        assert!(text.contains("renoo") && text.contains("newreno") && text.contains("cubic"));
    }

    #[test]
    fn every_controller_builds_with_defaults_and_rejects_unknown_params() {
        let mut bad = Params::new();
        bad.insert("no_such_knob".into(), ParamValue::Number(1.0));
        for info in controllers() {
            let c = build(info.name, &Params::new(), &ControllerConfig::default()).unwrap();
            assert!(c.cwnd() > 0, "{}", info.name);
            assert!(build(info.name, &bad, &ControllerConfig::default()).is_err());
        }
    }

    #[test]
    fn fq_switch_hands_over_to_registered_single_path_controllers_only() {
        let with = |param: &str, name: &str| {
            let mut p = Params::new();
            p.insert(param.into(), ParamValue::Text(name.into()));
            build("fq_switch", &p, &ControllerConfig::default())
        };
        assert!(with("fq", "vivace").is_ok() && with("fifo", "cubic").is_ok());
        for bad in ["renoo", "fq_switch", "ccid2"] {
            let text = with("fq", bad).err().unwrap().to_string();
            assert!(
                text.contains(bad) && text.contains("accepted: newreno, cubic"),
                "{text}"
            );
            assert!(text.ends_with(", pcc"), "{text}");
        }
    }
}
