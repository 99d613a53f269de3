//! Multipath tunnels in a scenario file (`[[tunnels]]`, the MP-DCCP framework): their paths,
//! each a DCCP subflow with its own CCID over its own links, the scheduler, the reordering
//! stage, and the flows they carry. `docs/mpdccp.md` describes the model; the README lists
//! every field.

use crate::limits::{self, duration_within, whole_within};
use crate::scenario::FieldResult;
use crate::scenario::{build_error, controller_config, field, resolve_params, resolve_path};
use kleinrock_cc::controller::units::parse_duration;
use kleinrock_cc::multipath::reorder::{ReorderConfig, ReorderKind};
use kleinrock_cc::multipath::scheduler::SchedulerKind;
use kleinrock_cc::registry::{controllers, find};
use kleinrock_cc::{build, Params};
use kleinrock_sim::{DccpConfig, TunnelConfig, TunnelPathConfig};
use serde::Deserialize;
use std::time::Duration;

/// Most paths a tunnel has.
pub const MAX_PATHS: usize = 16;
/// Most packets a tunnel's queue holds.
pub const MAX_QUEUE: u64 = 1_000_000;
/// Longest reordering timeout or expiry.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(10);
/// The bytes the tunnel adds to each packet it carries, by default: IPv4 (20), a DCCP-Data
/// header with 48-bit sequence numbers (16, RFC 4340 §5.1) and the multipath options the
/// paper-era framework sends on every data packet, MP_SEQ (9) and MP_DELAY (7)
/// (telekom/mp-dccp `options.c`; docs/mpdccp.md).
pub const DEFAULT_HEADER: u32 = 52;
/// The bytes a QUIC tunnel (`transport = "quic"`) adds to each packet it carries: IPv4 and UDP
/// (28), a QUIC short header with noq's 8-byte connection ID and a 2-byte packet number (11),
/// the AEAD tag (16), a DATAGRAM frame's type and length (3), and the tunnel's own header, the
/// overall sequence number and the entry time (12; `kleinrock_quic::tunnel`). docs/mpdccp.md
/// ("A QUIC tunnel") counts them against what a real run measures.
pub const QUIC_HEADER: u32 = 70;
/// The bytes of a QUIC path's ACK-only packet before its ranges: IPv4 and UDP (28), the short
/// header (11), an ACK frame's type, largest, delay and range count (6), the AEAD tag (16).
pub const QUIC_ACK_HEADER: u32 = 61;
/// Packets the tunnel's queue holds by default: the meta socket's write queue, Linux DCCP's
/// `tx_qlen` (telekom/mp-dccp `mpdccp_proto.c`, `proto.c`; docs/mpdccp.md).
pub const DEFAULT_QUEUE: u32 = 5;
/// A path's priority by default (telekom/mp-dccp `mpdccp_prio`'s default).
pub const DEFAULT_PRIORITY: u8 = 3;

/// The schedulers, by name.
pub const SCHEDULERS: &str = "cpf, rr, srtt, redundant, handover";
/// The reordering stages, by name.
pub const REORDERINGS: &str = "passive, active-fixed, active-adaptive";

/// A `[[tunnels]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelSpec {
    name: String,
    paths: Vec<PathSpec>,
    scheduler: Option<String>,
    num_segments: Option<u64>,
    reordering: Option<String>,
    fixed_timeout: Option<String>,
    adaptive_offset: Option<String>,
    adaptive_max: Option<String>,
    idle_expiry: Option<String>,
    drop_late: Option<bool>,
    queue: Option<u64>,
    transport: Option<String>,
    header_size: Option<u64>,
    packet_size: Option<u64>,
    tx_qlen: Option<u64>,
    ack_ratio: Option<u64>,
    pacing: Option<bool>,
}

/// A `[[tunnels.paths]]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathSpec {
    name: Option<String>,
    path: Vec<String>,
    reverse_path: Vec<String>,
    cc: String,
    #[serde(default)]
    params: toml::Table,
    priority: Option<u64>,
}

/// A path of a resolved tunnel.
#[derive(Clone, Debug, PartialEq)]
pub struct PathPlan {
    /// Name.
    pub name: String,
    /// Link indices towards the tunnel's far end.
    pub forward: Vec<usize>,
    /// Link indices back.
    pub reverse: Vec<usize>,
    /// The subflows' controller: a CCID, or on a QUIC tunnel any registry controller.
    pub cc: String,
    /// Its parameters.
    pub params: Params,
    /// Priority.
    pub priority: u8,
}

/// A resolved tunnel.
#[derive(Clone, Debug, PartialEq)]
pub struct TunnelPlan {
    /// Name.
    pub name: String,
    /// Paths.
    pub paths: Vec<PathPlan>,
    /// Scheduler.
    pub scheduler: SchedulerKind,
    /// Reordering stage.
    pub reorder: ReorderConfig,
    /// Packets its queue holds.
    pub queue: u32,
    /// The subflows' transport settings (`header_size` is the tunnel's overhead).
    pub transport: DccpConfig,
    /// The paths are QUIC connections carrying DATAGRAM frames (`transport = "quic"`), not
    /// DCCP subflows.
    pub quic: bool,
}

impl TunnelPlan {
    /// The simulator's tunnel, carrying flows `flows`, its controllers built fresh; `seed` is
    /// the scenario's and `first` the index the subflows' controller seeds start from.
    pub fn sim_config(&self, flows: Vec<usize>, seed: u64, first: usize) -> TunnelConfig {
        let n = self.paths.len();
        let paths = self
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let cc = |k: usize| {
                    let config = controller_config(self.transport.packet_size, seed, first + k);
                    build(&p.cc, &p.params, &config)
                        .expect("controllers are checked when the scenario is loaded")
                };
                TunnelPathConfig {
                    name: p.name.clone(),
                    forward: p.forward.clone(),
                    reverse: p.reverse.clone(),
                    controllers: [cc(i), cc(n + i)],
                    transport: self.transport,
                    priority: p.priority,
                }
            })
            .collect();
        TunnelConfig {
            name: self.name.clone(),
            paths,
            scheduler: self.scheduler,
            reorder: self.reorder,
            queue: self.queue,
            flows,
        }
    }
}

/// Tunnel `i` of the file, its paths over links `names`.
pub fn resolve_tunnel(t: &TunnelSpec, i: usize, names: &[&str]) -> FieldResult<TunnelPlan> {
    let at = |x: &str| format!("tunnels[{i}].{x}");
    if t.paths.is_empty() || t.paths.len() > MAX_PATHS {
        let message = format!("{} paths; accepted: 1 to {MAX_PATHS}", t.paths.len());
        return Err((at("paths"), message));
    }
    let quic = match t.transport.as_deref().unwrap_or("dccp") {
        "dccp" => false,
        "quic" => true,
        other => {
            let message = format!("unknown tunnel transport `{other}`; accepted: dccp, quic");
            return Err((at("transport"), message));
        }
    };
    let transport = resolve_transport(t, &at, quic)?;
    let mut paths: Vec<PathPlan> = Vec::new();
    for (k, p) in t.paths.iter().enumerate() {
        let at_path = format!("tunnels[{i}].paths[{k}]");
        let plan = resolve_path_plan(p, &at_path, names, &transport, quic)?;
        if paths.iter().any(|q| q.name == plan.name) {
            let message = format!("a path named `{}` already exists in this tunnel", plan.name);
            return Err((format!("tunnels[{i}].paths[{k}].name"), message));
        }
        paths.push(plan);
    }
    let queue = match t.queue {
        Some(q) => field(at("queue"), whole_within(q, 1, MAX_QUEUE))? as u32,
        None => DEFAULT_QUEUE,
    };
    Ok(TunnelPlan {
        name: t.name.clone(),
        paths,
        scheduler: resolve_scheduler(t, &at)?,
        reorder: resolve_reorder(t, &at)?,
        queue,
        transport,
        quic,
    })
}

fn resolve_path_plan(
    p: &PathSpec,
    at: &str,
    names: &[&str],
    transport: &DccpConfig,
    quic: bool,
) -> FieldResult<PathPlan> {
    let at = |x: &str| format!("{at}.{x}");
    let forward = resolve_path(&p.path, names, &at("path"))?;
    let reverse = resolve_path(&p.reverse_path, names, &at("reverse_path"))?;
    check_path_controller(&p.cc, quic).map_err(|message| (at("cc"), message))?;
    let params = resolve_params(&p.params, &at("params"))?;
    build(
        &p.cc,
        &params,
        &controller_config(transport.packet_size, 0, 0),
    )
    .map_err(|e| build_error(e, &at("params"), &at("cc")))?;
    let priority = match p.priority {
        Some(v) => field(at("priority"), whole_within(v, 0, 255))? as u8,
        None => DEFAULT_PRIORITY,
    };
    Ok(PathPlan {
        name: p.name.clone().unwrap_or_else(|| p.path.join("+")),
        forward,
        reverse,
        cc: p.cc.clone(),
        params,
        priority,
    })
}

/// A DCCP tunnel's paths run a CCID; a QUIC tunnel's any controller that is neither a CCID nor
/// one that opens subflows of its own.
fn check_path_controller(cc: &str, quic: bool) -> Result<(), String> {
    let fits = |i: &kleinrock_cc::ControllerInfo| i.dccp_only != quic && !i.subflows;
    if find(cc).is_some_and(fits) {
        return Ok(());
    }
    let names: Vec<&str> = controllers()
        .iter()
        .filter(|i| fits(i))
        .map(|i| i.name)
        .collect();
    Err(if quic {
        format!(
            "`{cc}` cannot run a QUIC tunnel's path; accepted: {}",
            names.join(", ")
        )
    } else {
        format!(
            "`{cc}` is not a DCCP CCID; an MP-DCCP path runs one of: {} (or set the tunnel's \
             transport = \"quic\" for any other controller)",
            names.join(", ")
        )
    })
}

/// A QUIC tunnel's paths' settings by default: QUIC's sizes, and paced.
pub fn quic_transport() -> DccpConfig {
    DccpConfig {
        header_size: QUIC_HEADER,
        ack_header_size: QUIC_ACK_HEADER,
        pacing: true,
        ..DccpConfig::default()
    }
}

/// The subflows' transport settings. A QUIC tunnel's paths are modelled by the same unreliable
/// subflow with QUIC's sizes, its ACK every second packet and the host pacing that noq does
/// (docs/mpdccp.md, "A QUIC tunnel").
fn resolve_transport(
    t: &TunnelSpec,
    at: &dyn Fn(&str) -> String,
    quic: bool,
) -> FieldResult<DccpConfig> {
    let mut c = if quic {
        quic_transport()
    } else {
        DccpConfig {
            header_size: DEFAULT_HEADER,
            ..DccpConfig::default()
        }
    };
    if let Some(s) = t.packet_size {
        let s = whole_within(s, limits::MIN_PACKET_BYTES, 65_535);
        c.packet_size = field(at("packet_size"), s)? as u32;
    }
    if let Some(h) = t.header_size {
        c.header_size = field(at("header_size"), whole_within(h, 0, 1_000))? as u32;
    }
    if let Some(q) = t.tx_qlen {
        c.tx_qlen = field(at("tx_qlen"), whole_within(q, 1, limits::MAX_TX_QLEN))? as u32;
    }
    if let Some(r) = t.ack_ratio {
        c.ack_ratio = field(at("ack_ratio"), whole_within(r, 1, limits::MAX_ACK_RATIO))?;
    }
    c.pacing = t.pacing.unwrap_or(c.pacing);
    Ok(c)
}

fn resolve_scheduler(t: &TunnelSpec, at: &dyn Fn(&str) -> String) -> FieldResult<SchedulerKind> {
    let name = t.scheduler.as_deref().unwrap_or("cpf");
    if t.num_segments.is_some() && name != "rr" {
        let message = "the round-robin scheduler's quota; accepted only with scheduler = \"rr\"";
        return Err((at("num_segments"), message.into()));
    }
    Ok(match name {
        "cpf" => SchedulerKind::Cpf,
        "rr" => {
            let n = t.num_segments.unwrap_or(1);
            let n = field(at("num_segments"), whole_within(n, 1, 1_000_000))?;
            SchedulerKind::RoundRobin {
                num_segments: n as u32,
            }
        }
        "srtt" => SchedulerKind::Srtt,
        "redundant" => SchedulerKind::Redundant,
        "handover" => SchedulerKind::Handover,
        other => {
            let message = format!("unknown scheduler `{other}`; accepted: {SCHEDULERS}");
            return Err((at("scheduler"), message));
        }
    })
}

fn resolve_reorder(t: &TunnelSpec, at: &dyn Fn(&str) -> String) -> FieldResult<ReorderConfig> {
    let name = t.reordering.as_deref().unwrap_or("active-fixed");
    let timeout = |f: &str, v: &Option<String>, default: u64| -> FieldResult<u64> {
        match v {
            None => Ok(default),
            Some(text) => {
                let d = parse_duration(text)
                    .and_then(|d| duration_within(d, Duration::ZERO, MAX_TIMEOUT));
                Ok(field(at(f), d)?.as_nanos() as u64)
            }
        }
    };
    let only = |f: &str, set: bool, kind: &str| -> FieldResult<()> {
        if set && name != kind {
            let message = format!("applies to reordering = \"{kind}\" only");
            return Err((at(f), message));
        }
        Ok(())
    };
    only("fixed_timeout", t.fixed_timeout.is_some(), "active-fixed")?;
    only(
        "adaptive_offset",
        t.adaptive_offset.is_some(),
        "active-adaptive",
    )?;
    only("adaptive_max", t.adaptive_max.is_some(), "active-adaptive")?;
    use kleinrock_cc::multipath::reorder as r;
    let kind = match name {
        "passive" => ReorderKind::Passive,
        "active-fixed" => ReorderKind::ActiveFixed {
            timeout_ns: timeout("fixed_timeout", &t.fixed_timeout, r::FIXED_TIMEOUT_NS)?,
        },
        "active-adaptive" => ReorderKind::ActiveAdaptive {
            offset_ns: timeout("adaptive_offset", &t.adaptive_offset, r::ADAPTIVE_OFFSET_NS)?,
            max_ns: timeout("adaptive_max", &t.adaptive_max, r::ADAPTIVE_MAX_NS)?,
        },
        other => {
            let message = format!("unknown reordering `{other}`; accepted: {REORDERINGS}");
            return Err((at("reordering"), message));
        }
    };
    Ok(ReorderConfig {
        kind,
        drop_late: t.drop_late.unwrap_or(false),
        idle_expiry_ns: timeout("idle_expiry", &t.idle_expiry, r::IDLE_EXPIRY_NS)?,
    })
}
