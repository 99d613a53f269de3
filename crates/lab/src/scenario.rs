//! Scenario files: the TOML format, its validation, and the resolved [`Scenario`] a run is
//! built from. Every error names the file, the field and what is accepted; a scenario that
//! fails validation never reaches the simulator.

use crate::limits::{self, bytes_within, duration_within, rate_within, whole_within};
use crate::presets;
use crate::sweep::{expand, Replicates, SweepPoint};
use crate::tunnel::{resolve_tunnel, TunnelPlan, TunnelSpec};
use kleinrock_cc::controller::units::{parse_bytes, parse_duration, parse_rate};
use kleinrock_cc::registry::find;
use kleinrock_cc::{build, BuildError, ControllerConfig, ParamValue, Params, Rate};
use kleinrock_sim::delivery_trace::DeliveryTrace;
use kleinrock_sim::TunnelConfig;
use kleinrock_sim::{
    AppConfig, ArrivalConfig, BufferLimit, ControllerFactory, DccpConfig, FlowConfig, FlowKind,
    Interarrival, LinkConfig, LossConfig, LossPoint, LossRecovery, ParamChange, PolicerConfig,
    QdiscConfig, RouteChange, RtoForm, SimConfig, TcpRecovery, TransportConfig,
};
use serde::Deserialize;
use std::fmt;
use std::path::Path;
use std::time::Duration;

/// A scenario that could not be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or `<built-in>`).
    pub origin: String,
    /// The field, as a path like `flows[0].cc`; empty when the file itself is at fault.
    pub field: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}: {}: {}", self.origin, self.field, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: Option<String>,
    description: Option<String>,
    duration: String,
    #[serde(default = "default_seed")]
    seed: u64,
    warmup: Option<String>,
    trace_interval: Option<String>,
    links: Vec<LinkSpec>,
    flows: Vec<FlowSpec>,
    #[serde(default)]
    tunnels: Vec<TunnelSpec>,
}

fn default_seed() -> u64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkSpec {
    name: String,
    rate: Option<String>,
    rate_trace: Option<TraceSpec>,
    #[serde(default)]
    delay: Option<String>,
    jitter: Option<String>,
    buffer: String,
    qdisc: Option<String>,
    flow_limit: Option<u64>,
    quantum: Option<String>,
    initial_quantum: Option<String>,
    bdp_rtt: Option<String>,
    loss: Option<LossSpec>,
    loss_at: Option<String>,
    policer: Option<PolicerSpec>,
    #[serde(default)]
    rate_schedule: Vec<RateStepSpec>,
    #[serde(default)]
    delay_schedule: Vec<DelayStepSpec>,
}

/// A link's delivery trace: a file, or its times written out (what a run's own scenario text
/// carries, so that it needs no file).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TraceSpec {
    File(String),
    Inline(InlineTrace),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InlineTrace {
    times_ms: Vec<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicerSpec {
    rate: String,
    burst: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum LossSpec {
    Bernoulli(f64),
    Model(LossModelSpec),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LossModelSpec {
    model: String,
    p: Option<f64>,
    p_good_bad: Option<f64>,
    p_bad_good: Option<f64>,
    loss_good: Option<f64>,
    loss_bad: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RateStepSpec {
    at: String,
    rate: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DelayStepSpec {
    at: String,
    delay: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventSpec {
    at: String,
    params: toml::Table,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArrivalsSpec {
    size: String,
    interarrival: toml::Value,
    count: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FlowSpec {
    name: Option<String>,
    cc: Option<String>,
    #[serde(default)]
    params: toml::Table,
    #[serde(default)]
    path: Vec<String>,
    #[serde(default)]
    reverse_path: Vec<String>,
    tunnel: Option<String>,
    start: Option<String>,
    stop: Option<String>,
    size: Option<String>,
    app: Option<String>,
    rate: Option<String>,
    transport: Option<String>,
    count: Option<u64>,
    stagger: Option<String>,
    packet_size: Option<u64>,
    header_size: Option<u64>,
    tx_qlen: Option<u64>,
    ack_ratio: Option<u64>,
    max_in_flight: Option<u64>,
    pacing: Option<bool>,
    host_rate: Option<String>,
    host_jitter: Option<f64>,
    delayed_ack: Option<bool>,
    max_ack_delay: Option<String>,
    ack_every: Option<u64>,
    ack_size: Option<u64>,
    quick_acks: Option<u64>,
    receive_timestamps: Option<bool>,
    preset: Option<String>,
    recovery: Option<String>,
    min_rto: Option<String>,
    rto: Option<String>,
    prr: Option<bool>,
    rack: Option<bool>,
    #[serde(default)]
    events: Vec<EventSpec>,
    arrivals: Option<ArrivalsSpec>,
}

/// How a flow's transport is set up.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowTransport {
    /// The reliable transport with a named controller.
    Reliable {
        /// Controller name.
        cc: String,
        /// Controller parameters.
        params: Params,
        /// Transport settings.
        transport: TransportConfig,
    },
    /// The DCCP-like transport with a named controller.
    Dccp {
        /// Controller name.
        cc: String,
        /// Controller parameters.
        params: Params,
        /// Transport settings.
        transport: DccpConfig,
    },
    /// Unresponsive datagrams.
    Datagram {
        /// Bytes per datagram on the wire.
        packet_size: u32,
        /// Header bytes of each datagram.
        header_size: u32,
    },
}

/// A flow of a resolved scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowPlan {
    /// Name.
    pub name: String,
    /// Transport and controller.
    pub transport: FlowTransport,
    /// Link indices of the forward path.
    pub forward: Vec<usize>,
    /// Link indices of the reverse path.
    pub reverse: Vec<usize>,
    /// Application (of each transfer, with `arrivals`).
    pub app: AppConfig,
    /// Start time (the first arrival, with `arrivals`).
    pub start: Duration,
    /// Stop time (no arrivals from then on, with `arrivals`).
    pub stop: Option<Duration>,
    /// Controller parameter changes during the run, one per parameter, in time order.
    pub events: Vec<ParamChange>,
    /// Short-flow arrivals: the flow is a process of transfers, each a new connection.
    pub arrivals: Option<ArrivalConfig>,
    /// The tunnel (an index into the scenario's) that carries it; its paths are then empty.
    pub tunnel: Option<usize>,
}

impl FlowPlan {
    /// The kernel algorithm of a kernel flow (`cc = "kernel:NAME"`).
    pub fn kernel_cc(&self) -> Option<&str> {
        match &self.transport {
            FlowTransport::Reliable { cc, .. } => cc.strip_prefix(KERNEL_PREFIX),
            _ => None,
        }
    }

    /// The controller name, or `"datagram"`.
    pub fn cc_name(&self) -> &str {
        match &self.transport {
            FlowTransport::Reliable { cc, .. } | FlowTransport::Dccp { cc, .. } => cc,
            FlowTransport::Datagram { .. } => "datagram",
        }
    }
}

/// A validated scenario: everything a run needs, with units resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Name (from the file, else the file stem).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// The sweep assignments that produced this point (empty without a sweep).
    pub point: SweepPoint,
    /// The `--set` overrides applied to the file, as `(path, value)`.
    pub overrides: SweepPoint,
    /// Simulated duration.
    pub duration: Duration,
    /// Seed.
    pub seed: u64,
    /// Start of the measurement window.
    pub warmup: Duration,
    /// Trace interval.
    pub trace_interval: Option<Duration>,
    /// Links.
    pub links: Vec<LinkConfig>,
    /// Link delay changes during the run.
    pub route_changes: Vec<RouteChange>,
    /// Flows.
    pub flows: Vec<FlowPlan>,
    /// Multipath tunnels.
    pub tunnels: Vec<TunnelPlan>,
}

impl Scenario {
    /// Refuses a scenario with kernel flows, which run through the TUN link and not in the
    /// simulator; the message names the first.
    pub fn check_simulated(&self) -> Result<(), String> {
        match self.flows.iter().position(|f| f.kernel_cc().is_some()) {
            Some(i) => Err(format!(
                "flows[{i}].cc: `{}` is Linux's own TCP, which runs through the TUN link \
                 (`kleinrock run` or `kleinrock crosscheck`, as root), not in the simulator",
                self.flows[i].cc_name()
            )),
            None => Ok(()),
        }
    }

    /// The simulator configuration, with controllers built fresh.
    pub fn sim_config(&self) -> SimConfig {
        let flows = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| FlowConfig {
                name: f.name.clone(),
                kind: flow_kind(f, self.seed, i),
                forward: f.forward.clone(),
                reverse: f.reverse.clone(),
                app: f.app,
                start: f.start,
                stop: f.stop,
                events: f.events.clone(),
            })
            .collect();
        SimConfig {
            duration: self.duration,
            seed: self.seed,
            warmup: self.warmup,
            trace_interval: self.trace_interval,
            links: self.links.clone(),
            route_changes: self.route_changes.clone(),
            flows,
            tunnels: self.sim_tunnels(),
        }
    }

    /// The paths of all its tunnels.
    pub fn tunnel_paths(&self) -> usize {
        self.tunnels.iter().map(|t| t.paths.len()).sum()
    }

    /// The simulator's tunnels, each with the flows it carries; the subflows' controllers are
    /// seeded as flows numbered after the scenario's own.
    fn sim_tunnels(&self) -> Vec<TunnelConfig> {
        let mut first = self.flows.len();
        self.tunnels
            .iter()
            .enumerate()
            .map(|(t, plan)| {
                let carried = (0..self.flows.len())
                    .filter(|&i| self.flows[i].tunnel == Some(t))
                    .collect();
                let config = plan.sim_config(carried, self.seed, first);
                first += 2 * plan.paths.len();
                config
            })
            .collect()
    }

    /// Round-trip propagation delay of flow `i` (forward plus reverse path delays), with the
    /// links' initial delays (before any route change).
    pub fn base_rtt(&self, i: usize) -> Duration {
        let f = &self.flows[i];
        f.forward
            .iter()
            .chain(&f.reverse)
            .map(|&l| self.links[l].delay)
            .sum()
    }
}

/// The simulator's flow kind of plan `f`, the `i`-th flow, with its controllers built fresh.
fn flow_kind(f: &FlowPlan, seed: u64, i: usize) -> FlowKind {
    let (cc, params, transport) = match &f.transport {
        FlowTransport::Reliable {
            cc,
            params,
            transport,
        } => (cc, params, transport),
        FlowTransport::Datagram {
            packet_size,
            header_size,
        } => {
            return FlowKind::Datagram {
                packet_size: *packet_size,
                header_size: *header_size,
            }
        }
        FlowTransport::Dccp {
            cc,
            params,
            transport,
        } => {
            let config = controller_config(transport.packet_size, seed, i);
            return FlowKind::Dccp {
                controller: build(cc, params, &config)
                    .expect("controllers are checked when the scenario is loaded"),
                transport: *transport,
            };
        }
    };
    let config = ControllerConfig {
        loss_window_packets: transport.loss_window_packets(),
        ..controller_config(transport.packet_size, seed, i)
    };
    match f.arrivals {
        None => FlowKind::Reliable {
            controller: build(cc, params, &config)
                .expect("controllers are checked when the scenario is loaded"),
            transport: *transport,
        },
        Some(arrivals) => FlowKind::Arrivals {
            controllers: controller_factory(cc, params, config),
            transport: *transport,
            arrivals,
        },
    }
}

/// Builds the controller of each transfer of an arrival process: transfer `k` gets a seed
/// derived from the process's seed and `k`.
fn controller_factory(cc: &str, params: &Params, config: ControllerConfig) -> ControllerFactory {
    let (cc, params) = (cc.to_string(), params.clone());
    Box::new(move |k| {
        let config = ControllerConfig {
            seed: config
                .seed
                .wrapping_add((k + 1).wrapping_mul(0xD1B5_4A32_D192_ED03)),
            ..config
        };
        build(&cc, &params, &config).expect("controllers are checked when the scenario is loaded")
    })
}

/// The controller settings of a flow: its transport's packet size, and a seed derived from the
/// scenario seed and the flow's index (so flows draw different, reproducible numbers).
pub(crate) fn controller_config(
    packet_size: u32,
    scenario_seed: u64,
    flow: usize,
) -> ControllerConfig {
    ControllerConfig {
        max_datagram_size: u64::from(packet_size),
        seed: scenario_seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(flow as u64 + 1),
        ..ControllerConfig::default()
    }
}

/// A scenario file: one scenario, or one per point of its sweep grid.
#[derive(Clone, Debug)]
pub struct ScenarioSet {
    /// Name of the scenario.
    pub name: String,
    /// Whether the file has a sweep grid.
    pub is_sweep: bool,
    /// The seeds each grid point runs with, when the `[sweep]` table gives `seeds` or
    /// `replicates`: `points` then holds every grid point once per seed, point by point and
    /// within a point in this order.
    pub seeds: Option<Vec<u64>>,
    /// The points (one without a sweep), all validated.
    pub points: Vec<Scenario>,
}

/// Loads and validates a scenario file, with `overrides` (`path = value` assignments, as in a
/// sweep grid) applied first.
pub fn load(path: &Path, overrides: &[String]) -> Result<ScenarioSet, ScenarioError> {
    let origin = path.display().to_string();
    let text = crate::source::read(path).map_err(|message| ScenarioError {
        origin: origin.clone(),
        field: String::new(),
        message,
    })?;
    let stem = path
        .file_stem()
        .map_or("scenario".to_string(), |s| s.to_string_lossy().into_owned());
    parse(&text, &origin, &stem, overrides)
}

/// Parses and validates scenario text. `origin` names it in errors; `default_name` is used
/// when the file has no `name`.
pub fn parse(
    text: &str,
    origin: &str,
    default_name: &str,
    overrides: &[String],
) -> Result<ScenarioSet, ScenarioError> {
    let err = |field: &str, message: String| ScenarioError {
        origin: origin.to_string(),
        field: field.to_string(),
        message,
    };
    let Trees {
        applied,
        replicates,
        is_sweep,
        points,
    } = trees(text, overrides).map_err(|(f, m)| err(&f, m))?;
    let mut scenarios = Vec::with_capacity(points.len());
    let mut tables = 0;
    for (point, value) in points {
        let context = context_suffix(&point, &applied);
        let spec: FileSpec = serde_path_to_error::deserialize(value).map_err(|e| {
            let field = e.path().to_string();
            let field = if field == "." { String::new() } else { field };
            err(
                &field,
                format!("{}{context}", in_user_words(&field, e.inner())),
            )
        })?;
        let base = Path::new(origin).parent().unwrap_or(Path::new(""));
        let mut scenario = resolve(spec, default_name, point.clone(), base)
            .map_err(|(f, m)| err(&f, format!("{m}{context}")))?;
        tables += scenario.links.len() + scenario.flows.len() + scenario.tunnel_paths();
        if tables > limits::MAX_SWEEP_TABLES {
            let message = format!(
                "the points up to this one have more than {} links and flows (after `count`) \
                 in all; accepted: at most {}",
                limits::MAX_SWEEP_TABLES,
                limits::MAX_SWEEP_TABLES
            );
            return Err(err("sweep", format!("{message}{context}")));
        }
        scenario.overrides = applied.clone();
        scenarios.push(scenario);
    }
    Ok(ScenarioSet {
        name: scenarios
            .first()
            .map_or(default_name.to_string(), |s| s.name.clone()),
        is_sweep,
        seeds: replicates.map(|r| r.seeds),
        points: scenarios,
    })
}

/// A scenario file's trees before validation: one per sweep point and seed.
struct Trees {
    /// The overrides, as applied.
    applied: SweepPoint,
    /// The `[sweep]` table's seeds.
    replicates: Option<Replicates>,
    /// Whether the file has a `[sweep]` table.
    is_sweep: bool,
    /// Each point's assignments and tree.
    points: Vec<(SweepPoint, toml::Value)>,
}

/// Parses `text`, applies `overrides` and expands the `[sweep]` grid.
fn trees(text: &str, overrides: &[String]) -> FieldResult<Trees> {
    let mut root = crate::source::parse_table(text).map_err(|m| (String::new(), m))?;
    let applied = crate::sweep::apply_overrides(&mut root, overrides)?;
    let replicates = crate::sweep::take_replicates(&mut root)?;
    let sweep = match root.get("sweep") {
        None => None,
        Some(toml::Value::Table(t)) => Some(t.clone()),
        Some(_) => {
            return Err((
                "sweep".into(),
                "must be a table of `path = [values]`".into(),
            ))
        }
    };
    check_overrides(&applied, sweep.as_ref(), replicates.as_ref())?;
    let points = expand(&root, sweep.as_ref(), replicates.as_ref(), text.len())?;
    Ok(Trees {
        applied,
        replicates,
        is_sweep: sweep.is_some(),
        points,
    })
}

/// One run of a scenario file as a scenario text of its own (the file with the overrides and
/// the point's assignments applied, its `name` written out, and its `seed` where the `[sweep]`
/// table gives seeds; no `[sweep]` table), with
/// what its summary records: what a sweep hands to another thread, process or machine, which
/// runs it with [`parse_point`] without the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointSpec {
    /// The point's scenario text (TOML).
    pub text: String,
    /// The file it came from, for errors.
    pub origin: String,
    /// The sweep assignments of the point.
    pub point: SweepPoint,
    /// The `--set` overrides applied to the file.
    pub overrides: SweepPoint,
}

/// Writes each link's delivery trace into `tree` as `{ times_ms = [...] }` (from `scenario`,
/// which read the files), so that the point's text needs no file wherever it runs and its
/// content is the trace's.
fn inline_traces(tree: &mut toml::Value, scenario: &Scenario) {
    let Some(toml::Value::Array(links)) = tree.get_mut("links") else {
        return;
    };
    for (link, config) in links.iter_mut().zip(&scenario.links) {
        let (Some(t), Some(trace)) = (link.as_table_mut(), &config.delivery_trace) else {
            continue;
        };
        let times = trace.times_ms().map(|ms| toml::Value::Integer(ms as i64));
        let mut inline = toml::Table::new();
        inline.insert("times_ms".into(), toml::Value::Array(times.collect()));
        t.insert("rate_trace".into(), toml::Value::Table(inline));
    }
}

/// Validates scenario text as [`parse`] does and returns each of its runs as a [`PointSpec`],
/// in the order of [`ScenarioSet::points`].
pub fn point_specs(
    text: &str,
    origin: &str,
    default_name: &str,
    overrides: &[String],
) -> Result<Vec<PointSpec>, ScenarioError> {
    let set = parse(text, origin, default_name, overrides)?;
    let trees = trees(text, overrides).map_err(|(field, message)| ScenarioError {
        origin: origin.to_string(),
        field,
        message,
    })?;
    trees
        .points
        .into_iter()
        .zip(&set.points)
        .map(|((point, mut tree), scenario)| {
            if let toml::Value::Table(t) = &mut tree {
                t.insert("name".into(), toml::Value::String(scenario.name.clone()));
            }
            inline_traces(&mut tree, scenario);
            let text = toml::to_string(&tree).map_err(|e| ScenarioError {
                origin: origin.to_string(),
                field: String::new(),
                message: format!("cannot write the point as TOML: {e}"),
            })?;
            Ok(PointSpec {
                text,
                origin: origin.to_string(),
                point,
                overrides: trees.applied.clone(),
            })
        })
        .collect()
}

/// The scenario of one run from its [`PointSpec`]: equal to the one [`parse`] gives for that
/// run of the file.
pub fn parse_point(spec: &PointSpec) -> Result<Scenario, ScenarioError> {
    let mut set = parse(&spec.text, &spec.origin, "point", &[])?;
    let mut scenario = set.points.pop().ok_or_else(|| ScenarioError {
        origin: spec.origin.clone(),
        field: String::new(),
        message: "the point's text holds no scenario".into(),
    })?;
    scenario.point = spec.point.clone();
    scenario.overrides = spec.overrides.clone();
    Ok(scenario)
}

/// An override may not set what the `[sweep]` table sets: a swept field (in any spelling, or
/// inside a swept table that sets it), or the seed where the table lists `seeds`.
fn check_overrides(
    applied: &SweepPoint,
    sweep: Option<&toml::Table>,
    replicates: Option<&Replicates>,
) -> FieldResult<()> {
    let listed_seeds = replicates.is_some_and(|r| r.key == "seeds");
    for (path, _) in applied {
        let swept = |s: &toml::Table| {
            s.iter()
                .any(|(axis, values)| crate::sweep::overlaps(path, axis, values))
        };
        if sweep.is_some_and(swept) {
            let message = format!(
                "this field is swept by the file's [sweep] grid; change the grid instead, \
                 e.g. --set 'sweep.\"{path}\"=[...]'"
            );
            return Err((format!("--set {path}"), message));
        }
        if listed_seeds && path == "seed" {
            let message = "the seeds are the [sweep] table's `seeds`; change those instead, \
                           e.g. --set 'sweep.seeds=[1, 2, 3]'";
            return Err(("--set seed".into(), message.into()));
        }
    }
    Ok(())
}

/// A type error as the user would say it: what the field accepts, instead of the parser's
/// words (which name internal types); other errors (unknown or missing fields) as they are.
fn in_user_words(field: &str, e: &toml::de::Error) -> String {
    let message = e.message();
    let wrong_type = ["invalid type", "invalid value", "did not match any variant"]
        .iter()
        .any(|m| message.contains(m));
    match limits::accepted(field) {
        Some(accepted) if wrong_type => format!("accepted: {accepted}"),
        _ => message.to_string(),
    }
}

/// Where an error arose: the sweep point and the `--set` overrides, when there are any.
fn context_suffix(point: &SweepPoint, overrides: &SweepPoint) -> String {
    let mut parts = Vec::new();
    if !point.is_empty() {
        parts.push(format!("at sweep point {}", crate::sweep::label(point)));
    }
    if !overrides.is_empty() {
        parts.push(format!("with --set {}", crate::sweep::label(overrides)));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// A value, or the field at fault and what is wrong with it.
pub(crate) type FieldResult<T> = Result<T, (String, String)>;

/// A time in a scenario (a duration, a start, an event's time): 0 to [`limits::MAX_TIME`].
fn time_value(text: &str) -> Result<Duration, String> {
    duration_within(parse_duration(text)?, Duration::ZERO, limits::MAX_TIME)
}

/// A link's delay or jitter: 0 to [`limits::MAX_DELAY`].
fn delay_value(text: &str) -> Result<Duration, String> {
    duration_within(parse_duration(text)?, Duration::ZERO, limits::MAX_DELAY)
}

/// A rate of a link, policer, host or application.
fn rate_value(text: &str) -> Result<Rate, String> {
    rate_within(parse_rate(text)?)
}

/// A size in bytes from 1 to `max`.
fn bytes_value(text: &str, max: u64) -> Result<u64, String> {
    bytes_within(parse_bytes(text)?, 1, max)
}

pub(crate) fn field<T>(name: impl Into<String>, r: Result<T, String>) -> FieldResult<T> {
    r.map_err(|m| (name.into(), m))
}

/// Validates one point's tree; `base` is the directory that relative file names (a link's
/// `rate_trace`) start from.
fn resolve(
    spec: FileSpec,
    default_name: &str,
    point: SweepPoint,
    base: &Path,
) -> FieldResult<Scenario> {
    let duration = field("duration", time_value(&spec.duration))?;
    if duration.is_zero() {
        return Err(("duration".into(), "must be positive".into()));
    }
    let warmup = match &spec.warmup {
        Some(w) => field("warmup", time_value(w))?,
        None => Duration::ZERO,
    };
    if warmup >= duration {
        return Err(("warmup".into(), "must be shorter than the duration".into()));
    }
    let trace_interval = match &spec.trace_interval {
        Some(t) => {
            let min = limits::MIN_TRACE_INTERVAL;
            let d = parse_duration(t).and_then(|d| duration_within(d, min, duration.max(min)));
            Some(field("trace_interval", d)?)
        }
        None => None,
    };
    if spec.links.is_empty() || spec.links.len() > limits::MAX_LINKS {
        let message = format!(
            "{} links; accepted: 1 to {}",
            spec.links.len(),
            limits::MAX_LINKS
        );
        return Err(("links".into(), message));
    }
    if spec.flows.is_empty() {
        return Err(("flows".into(), "at least one flow is needed".into()));
    }
    check_flow_count(&spec.flows)?;
    let names: Vec<&str> = spec.links.iter().map(|l| l.name.as_str()).collect();
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err((format!("links[{i}].name"), format!("`{n}` is used twice")));
        }
    }
    if spec.tunnels.len() > limits::MAX_TUNNELS {
        let message = format!(
            "{} tunnels; accepted: at most {}",
            spec.tunnels.len(),
            limits::MAX_TUNNELS
        );
        return Err(("tunnels".into(), message));
    }
    let mut tunnels: Vec<TunnelPlan> = Vec::new();
    for (i, t) in spec.tunnels.iter().enumerate() {
        let plan = resolve_tunnel(t, i, &names)?;
        if tunnels.iter().any(|u| u.name == plan.name) {
            let message = format!("a tunnel named `{}` already exists", plan.name);
            return Err((format!("tunnels[{i}].name"), message));
        }
        tunnels.push(plan);
    }
    let tunnel_names: Vec<&str> = tunnels.iter().map(|t| t.name.as_str()).collect();
    let mut flows: Vec<FlowPlan> = Vec::new();
    for (i, f) in spec.flows.iter().enumerate() {
        for plan in resolve_flow(f, i, &names, &tunnel_names)? {
            if flows.iter().any(|g| g.name == plan.name) {
                return Err((
                    format!("flows[{i}].name"),
                    format!(
                        "a flow named `{}` already exists; flow names must be unique",
                        plan.name
                    ),
                ));
            }
            flows.push(plan);
        }
    }
    check_file_names(&flows, &tunnels, &spec.links)?;
    if let Some(t) = trace_interval {
        let tunnel_series: usize = tunnels.iter().map(|t| 1 + t.paths.len()).sum();
        check_trace_rows(duration, t, flows.len() + spec.links.len() + tunnel_series)?;
    }
    let mut links = Vec::new();
    let mut route_changes = Vec::new();
    let routes: Vec<(&[usize], &[usize])> = flows
        .iter()
        .map(|f| (f.forward.as_slice(), f.reverse.as_slice()))
        .chain(
            tunnels
                .iter()
                .flat_map(|t| &t.paths)
                .map(|p| (p.forward.as_slice(), p.reverse.as_slice())),
        )
        .collect();
    for (i, l) in spec.links.iter().enumerate() {
        links.push(resolve_link(l, (i, base), &flows, &routes, &spec.links)?);
        route_changes.extend(resolve_delay_schedule(&l.delay_schedule, i)?);
    }
    Ok(Scenario {
        name: spec.name.unwrap_or_else(|| default_name.to_string()),
        description: spec.description.unwrap_or_default(),
        point,
        overrides: Vec::new(),
        duration,
        seed: spec.seed,
        warmup,
        trace_interval,
        links,
        route_changes,
        flows,
        tunnels,
    })
}

/// Names whose output files would be the same file (`a<b` and `a>b` are both `a_b.csv`) are
/// refused: flows and tunnels (with their paths) share `latency_cdf/`, links have `links/`.
fn check_file_names(
    flows: &[FlowPlan],
    tunnels: &[TunnelPlan],
    links: &[LinkSpec],
) -> FieldResult<()> {
    let flow_names = flows
        .iter()
        .enumerate()
        .map(|(i, f)| (format!("flows[{i}].name"), f.name.clone()));
    let tunnel_names = tunnels.iter().enumerate().flat_map(|(i, t)| {
        let paths = t.paths.iter().enumerate().map(move |(k, p)| {
            let field = format!("tunnels[{i}].paths[{k}].name");
            (field, format!("{}.{}", t.name, p.name))
        });
        std::iter::once((format!("tunnels[{i}].name"), t.name.clone())).chain(paths)
    });
    let link_names = links
        .iter()
        .enumerate()
        .map(|(i, l)| (format!("links[{i}].name"), l.name.clone()));
    distinct_files(flow_names.chain(tunnel_names))?;
    distinct_files(link_names)
}

/// The first of `names` (field, name) whose file name another already has, as an error.
fn distinct_files(names: impl Iterator<Item = (String, String)>) -> FieldResult<()> {
    let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for (field, name) in names {
        let file = crate::runner::file_name(&name);
        if let Some(other) = seen.get(&file) {
            let message = format!(
                "`{name}` and `{other}` would share the output file `{file}.csv`; choose names \
                 that differ in letters, digits, `-`, `_` or `.`"
            );
            return Err((field, message));
        }
        seen.insert(file, name);
    }
    Ok(())
}

/// The flows after `count` copies are at most [`limits::MAX_FLOWS`], checked before any is
/// built.
fn check_flow_count(flows: &[FlowSpec]) -> FieldResult<()> {
    let mut total = 0u64;
    for (i, f) in flows.iter().enumerate() {
        let count = f.count.unwrap_or(1);
        field(
            format!("flows[{i}].count"),
            whole_within(count, 1, limits::MAX_FLOWS as u64),
        )?;
        total += count;
        if total > limits::MAX_FLOWS as u64 {
            let message = format!(
                "the scenario has more than {} flows with this one's copies; accepted: at \
                 most {} flows in all",
                limits::MAX_FLOWS,
                limits::MAX_FLOWS
            );
            return Err((format!("flows[{i}]"), message));
        }
    }
    Ok(())
}

/// The trace of `series` flows and links, one row per `interval` over `duration`, fits
/// [`limits::MAX_TRACE_ROWS`].
fn check_trace_rows(duration: Duration, interval: Duration, series: usize) -> FieldResult<()> {
    let rows = (duration.as_nanos() / interval.as_nanos()) as u64 * series as u64;
    if rows > limits::MAX_TRACE_ROWS {
        let message = format!(
            "{rows} trace rows (duration / trace_interval x {series} flows and links); \
             accepted: at most {}; choose a longer interval",
            limits::MAX_TRACE_ROWS
        );
        return Err(("trace_interval".into(), message));
    }
    Ok(())
}

/// A link's delay schedule as route changes, checked to be in time order.
fn resolve_delay_schedule(steps: &[DelayStepSpec], i: usize) -> FieldResult<Vec<RouteChange>> {
    let mut out: Vec<RouteChange> = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        let at = |f: &str| format!("links[{i}].delay_schedule[{k}].{f}");
        let change = RouteChange {
            link: i,
            at: field(at("at"), time_value(&step.at))?,
            delay: field(at("delay"), delay_value(&step.delay))?,
        };
        if let Some(prev) = out.last().filter(|p| p.at >= change.at) {
            return Err((at("at"), not_after(change.at, prev.at)));
        }
        out.push(change);
    }
    Ok(out)
}

/// A link's rate: its `rate`, or the mean of its `rate_trace` and the trace, read from the
/// file (relative to `base`).
fn resolve_rate(
    l: &LinkSpec,
    base: &Path,
    at: &dyn Fn(&str) -> String,
) -> FieldResult<(Rate, Option<DeliveryTrace>)> {
    let spec = match (&l.rate, &l.rate_trace) {
        (Some(r), None) => return Ok((field(at("rate"), rate_value(r))?, None)),
        (None, Some(spec)) => spec,
        (Some(_), Some(_)) => {
            let message = "a link has a rate or a rate_trace, not both";
            return Err((at("rate_trace"), message.into()));
        }
        (None, None) => {
            let message = "missing; accepted: a rate such as \"10Mbps\", or rate_trace = \
                           \"FILE\" (a mahimahi trace: one delivery time in ms per line)";
            return Err((at("rate"), message.into()));
        }
    };
    if !l.rate_schedule.is_empty() {
        let message = "a link paced by rate_trace follows its trace; it has no rate steps";
        return Err((at("rate_schedule"), message.into()));
    }
    let trace = match spec {
        TraceSpec::File(file) => {
            let path = base.join(file);
            let trace = read_trace(&path);
            trace.map_err(|m| (at("rate_trace"), format!("{}: {m}", path.display())))?
        }
        TraceSpec::Inline(inline) => {
            let trace = DeliveryTrace::from_times(&inline.times_ms, |k| format!("times_ms[{k}]"));
            field(at("rate_trace"), trace)?
        }
    };
    let rate = field(at("rate_trace"), rate_within(trace.mean_rate()))?;
    Ok((rate, Some(trace)))
}

/// A delivery trace from `path`, no larger than a scenario file.
fn read_trace(path: &Path) -> Result<DeliveryTrace, String> {
    DeliveryTrace::parse(&crate::source::read(path)?)
}

/// Link `i` of the file (whose relative file names start from `base`); `routes` are the
/// forward and reverse paths of every flow and tunnel path, the first that crosses it giving
/// the RTT of a buffer sized in BDP.
fn resolve_link(
    l: &LinkSpec,
    (i, base): (usize, &Path),
    flows: &[FlowPlan],
    routes: &[(&[usize], &[usize])],
    all: &[LinkSpec],
) -> FieldResult<LinkConfig> {
    let at = |f: &str| format!("links[{i}].{f}");
    let (rate, delivery_trace) = resolve_rate(l, base, &at)?;
    let delay = match &l.delay {
        Some(d) => field(at("delay"), delay_value(d))?,
        None => Duration::ZERO,
    };
    let jitter = match &l.jitter {
        Some(j) => field(at("jitter"), delay_value(j))?,
        None => Duration::ZERO,
    };
    let bdp_rtt = match &l.bdp_rtt {
        Some(r) => {
            let d = parse_duration(r)
                .and_then(|d| duration_within(d, Duration::from_nanos(1), limits::MAX_BDP_RTT));
            Some(field(at("bdp_rtt"), d)?)
        }
        None => routes
            .iter()
            .find(|r| r.0.contains(&i))
            .map(|(forward, reverse)| {
                forward
                    .iter()
                    .chain(reverse.iter())
                    .map(|&k| {
                        parse_duration(all[k].delay.as_deref().unwrap_or("0s")).unwrap_or_default()
                    })
                    .sum()
            }),
    };
    let buffer = field(at("buffer"), parse_buffer(&l.buffer, rate, bdp_rtt))?;
    if let (BufferLimit::Bytes(b), Some(largest)) = (buffer, largest_packet(flows, i)) {
        if b < u64::from(largest) {
            let message = format!(
                "`{}` is {b} bytes, less than one {largest}-byte packet of the flows that \
                 cross this link, so it would drop every such packet; accepted: at least \
                 {largest} bytes (or \"1pkt\")",
                l.buffer
            );
            return Err((at("buffer"), message));
        }
    }
    let qdisc = match l.qdisc.as_deref().unwrap_or("fifo") {
        "fifo" => QdiscConfig::Fifo,
        "fq" => QdiscConfig::Fq {
            flow_limit: match l.flow_limit {
                Some(n) => field(
                    at("flow_limit"),
                    whole_within(n, 1, limits::MAX_BUFFER_PACKETS),
                )?,
                None => 100,
            },
            quantum: match &l.quantum {
                Some(q) => field(at("quantum"), bytes_value(q, limits::MAX_QUANTUM_BYTES))?,
                None => 3000,
            },
            initial_quantum: match &l.initial_quantum {
                Some(q) => field(
                    at("initial_quantum"),
                    bytes_value(q, limits::MAX_QUANTUM_BYTES),
                )?,
                None => 15_000,
            },
        },
        other => {
            return Err((
                at("qdisc"),
                format!("unknown queue discipline `{other}`; accepted: fifo, fq"),
            ))
        }
    };
    let fq_only = l.flow_limit.is_some() || l.quantum.is_some() || l.initial_quantum.is_some();
    if l.qdisc.as_deref() != Some("fq") && fq_only {
        return Err((at("flow_limit"), "only applies with qdisc = \"fq\"".into()));
    }
    let loss = match &l.loss {
        None => LossConfig::None,
        Some(spec) => field(at("loss"), resolve_loss(spec))?,
    };
    let loss_at = match (l.loss_at.as_deref(), &l.loss) {
        (None, _) => LossPoint::Arrival,
        (Some(_), None) => return Err((at("loss_at"), "only applies with a loss".into())),
        (Some("arrival"), _) => LossPoint::Arrival,
        (Some("delivery"), _) => LossPoint::Delivery,
        (Some(other), _) => {
            let message = format!(
                "unknown loss point `{other}`; accepted: arrival (before the queue, the \
                 default) or delivery (after the queue and the link, as ns-3's receive error \
                 model)"
            );
            return Err((at("loss_at"), message));
        }
    };
    let policer = match &l.policer {
        Some(p) => Some(PolicerConfig {
            rate: field(at("policer.rate"), rate_value(&p.rate))?,
            burst: field(
                at("policer.burst"),
                bytes_value(&p.burst, limits::MAX_BUFFER_BYTES),
            )?,
        }),
        None => None,
    };
    let schedule = resolve_rate_schedule(&l.rate_schedule, i)?;
    Ok(LinkConfig {
        name: l.name.clone(),
        rate,
        schedule,
        delivery_trace,
        delay,
        jitter,
        loss,
        loss_at,
        policer,
        qdisc,
        buffer,
    })
}

/// The largest packet that crosses link `i`: a data packet of a flow whose forward path
/// crosses it, else an ACK of one whose reverse path does.
fn largest_packet(flows: &[FlowPlan], i: usize) -> Option<u32> {
    let data = flows
        .iter()
        .filter(|f| f.forward.contains(&i))
        .map(|f| match &f.transport {
            FlowTransport::Reliable { transport, .. } => transport.packet_size,
            FlowTransport::Dccp { transport, .. } => transport.packet_size,
            FlowTransport::Datagram { packet_size, .. } => *packet_size,
        });
    let acks = flows
        .iter()
        .filter(|f| f.reverse.contains(&i))
        .map(|f| match &f.transport {
            FlowTransport::Reliable { transport, .. } => transport.ack_size,
            // An ACK's header; its Ack Vector adds a few bytes.
            FlowTransport::Dccp { transport, .. } => transport.ack_header_size,
            FlowTransport::Datagram { .. } => 0,
        });
    data.chain(acks).max()
}

/// A link's rate schedule, checked to be in time order.
fn resolve_rate_schedule(steps: &[RateStepSpec], i: usize) -> FieldResult<Vec<(Duration, Rate)>> {
    let mut out: Vec<(Duration, Rate)> = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        let at = |f: &str| format!("links[{i}].rate_schedule[{k}].{f}");
        let t = field(at("at"), time_value(&step.at))?;
        let r = field(at("rate"), rate_value(&step.rate))?;
        if let Some(&(prev, _)) = out.last().filter(|p| p.0 >= t) {
            return Err((at("at"), not_after(t, prev)));
        }
        out.push((t, r));
    }
    Ok(out)
}

/// The error of a schedule step at `t` listed after one at `prev`.
fn not_after(t: Duration, prev: Duration) -> String {
    format!(
        "{} is not after the previous step ({}); steps are listed in time order",
        limits::show_duration(t),
        limits::show_duration(prev)
    )
}

/// Parses a buffer size: `"100pkt"`, a byte size like `"64KB"`, or `"2bdp"` (times the rate
/// and `bdp_rtt`), within [`limits::MAX_BUFFER_PACKETS`] or [`limits::MAX_BUFFER_BYTES`].
fn parse_buffer(text: &str, rate: Rate, bdp_rtt: Option<Duration>) -> Result<BufferLimit, String> {
    let accepted = "packets (\"100pkt\"), bytes (\"64KB\") or BDP multiples (\"2bdp\")";
    let t = text.trim();
    let number = |n: &str| {
        n.trim()
            .parse::<f64>()
            .map_err(|_| format!("`{text}`: expected {accepted}"))
    };
    let max_bytes = limits::MAX_BUFFER_BYTES;
    if let Some(n) = t.strip_suffix("pkt") {
        let n = number(n)?;
        let max = limits::MAX_BUFFER_PACKETS;
        if !(1.0..=max as f64).contains(&n) || n.fract() != 0.0 {
            return Err(format!(
                "`{text}`: accepted: a whole number of packets from 1 to {max}"
            ));
        }
        return Ok(BufferLimit::Packets(n as u64));
    }
    if let Some(m) = t.strip_suffix("bdp") {
        let m = number(m)?;
        let max = limits::MAX_BDP_MULTIPLE;
        if !(m > 0.0 && m <= max) {
            return Err(format!(
                "`{text}`: accepted: a BDP multiple above 0 and at most {max}"
            ));
        }
        let rtt = bdp_rtt.ok_or_else(|| {
            "a BDP-sized buffer needs `bdp_rtt` on the link or a flow whose path crosses it"
                .to_string()
        })?;
        let bytes = (rate.bytes_in(rtt) * m).round();
        if bytes > max_bytes as f64 {
            return Err(format!(
                "`{text}` is {bytes:e} bytes at this rate and RTT; accepted: at most {max_bytes}"
            ));
        }
        return Ok(BufferLimit::Bytes(bytes as u64));
    }
    parse_bytes(t)
        .map_err(|_| format!("`{text}`: expected {accepted}"))
        .and_then(|b| bytes_within(b, 1, max_bytes))
        .map(BufferLimit::Bytes)
}

fn probability(name: &str, v: Option<f64>, default: Option<f64>) -> Result<f64, String> {
    let v = v
        .or(default)
        .ok_or_else(|| format!("`{name}` is required for this model"))?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("`{name}` = {v} is not a probability in [0, 1]"))
    }
}

fn resolve_loss(spec: &LossSpec) -> Result<LossConfig, String> {
    match spec {
        LossSpec::Bernoulli(p) => Ok(LossConfig::Bernoulli {
            p: probability("loss", Some(*p), None)?,
        }),
        LossSpec::Model(m) => match m.model.as_str() {
            "bernoulli" => Ok(LossConfig::Bernoulli {
                p: probability("p", m.p, None)?,
            }),
            "gilbert-elliott" => Ok(LossConfig::GilbertElliott {
                p_good_bad: probability("p_good_bad", m.p_good_bad, None)?,
                p_bad_good: probability("p_bad_good", m.p_bad_good, None)?,
                loss_good: probability("loss_good", m.loss_good, Some(0.0))?,
                loss_bad: probability("loss_bad", m.loss_bad, Some(1.0))?,
            }),
            other => Err(format!(
                "unknown loss model `{other}`; accepted: bernoulli, gilbert-elliott"
            )),
        },
    }
}

pub(crate) fn resolve_path(list: &[String], names: &[&str], at: &str) -> FieldResult<Vec<usize>> {
    if list.is_empty() {
        return Err((at.into(), "must name at least one link".into()));
    }
    let mut path = Vec::with_capacity(list.len());
    for n in list {
        let link = names.iter().position(|k| k == n).ok_or_else(|| {
            (
                at.to_string(),
                format!("unknown link `{n}`; links: {}", names.join(", ")),
            )
        })?;
        if path.contains(&link) {
            let message = format!(
                "names `{n}` twice; a path crosses each link at most once (a link is one \
                 direction of a wire: give the second crossing a link of its own)"
            );
            return Err((at.to_string(), message));
        }
        path.push(link);
    }
    Ok(path)
}

pub(crate) fn resolve_params(table: &toml::Table, at: &str) -> FieldResult<Params> {
    let mut params = Params::new();
    for (k, v) in table {
        let value = match v {
            toml::Value::Integer(i) => ParamValue::Number(*i as f64),
            toml::Value::Float(f) => ParamValue::Number(*f),
            toml::Value::Boolean(b) => ParamValue::Bool(*b),
            toml::Value::String(s) => ParamValue::Text(s.clone()),
            _ => {
                return Err((
                    format!("{at}.{k}"),
                    "must be a number, a boolean or a string".into(),
                ))
            }
        };
        params.insert(k.clone(), value);
    }
    Ok(params)
}

/// A flow's packet, pacing and window settings over `defaults`.
fn resolve_transport(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    defaults: TransportConfig,
) -> FieldResult<TransportConfig> {
    let mut t = defaults;
    if let Some(size) = f.packet_size {
        let min = limits::MIN_PACKET_BYTES;
        t.packet_size = field(at("packet_size"), whole_within(size, min, 65_535))? as u32;
    }
    if let Some(h) = f.header_size {
        let max = u64::from(t.packet_size) - 1;
        let h = whole_within(h, 0, max).map_err(|e| format!("{e} (below packet_size)"));
        t.header_size = field(at("header_size"), h)? as u32;
    } else if t.header_size >= t.packet_size {
        let message = format!(
            "{} bytes leave no payload after the default {} header bytes; accepted: {} to \
             65535, or a smaller header_size",
            t.packet_size,
            t.header_size,
            t.header_size + 1
        );
        return Err((at("packet_size"), message));
    }
    if let Some(n) = f.max_in_flight {
        let n = whole_within(n, 1, limits::MAX_IN_FLIGHT);
        t.max_in_flight = field(at("max_in_flight"), n)? as u32;
    }
    t.pacing = f.pacing.unwrap_or(t.pacing);
    if let Some(rate) = &f.host_rate {
        if !t.pacing {
            return Err((
                at("host_rate"),
                "caps a paced sender's rate; accepted only with pacing = true".into(),
            ));
        }
        t.host_rate = Some(field(at("host_rate"), rate_value(rate))?);
    }
    if let Some(j) = f.host_jitter {
        if !(0.0..=1.0).contains(&j) {
            return Err((
                at("host_jitter"),
                format!("{j} is out of range; accepted: 0 (exactly periodic) to 1"),
            ));
        }
        t.host_jitter = j;
    }
    t.delayed_ack = f.delayed_ack.unwrap_or(t.delayed_ack);
    resolve_acks(f, at, &mut t)?;
    t.receive_timestamps = f.receive_timestamps.unwrap_or(t.receive_timestamps);
    Ok(t)
}

/// The receiver's ACKs: their size, and with delayed ACKs how many packets and how long they
/// wait for.
fn resolve_acks(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    t: &mut TransportConfig,
) -> FieldResult<()> {
    if let Some(size) = f.ack_size {
        let size = whole_within(size, limits::MIN_PACKET_BYTES, 65_535);
        t.ack_size = field(at("ack_size"), size)? as u32;
    }
    let delaying = [
        ("max_ack_delay", f.max_ack_delay.is_some()),
        ("ack_every", f.ack_every.is_some()),
        ("quick_acks", f.quick_acks.is_some()),
    ];
    if let Some((name, _)) = delaying.iter().find(|(_, set)| *set && !t.delayed_ack) {
        let message = "only applies with delayed_ack = true".to_string();
        return Err((at(name), message));
    }
    if let Some(d) = &f.max_ack_delay {
        t.max_ack_delay = field(at("max_ack_delay"), delay_value(d))?;
    }
    if let Some(n) = f.ack_every {
        let n = whole_within(n, 1, limits::MAX_ACK_RATIO);
        t.ack_every = field(at("ack_every"), n)? as u32;
    }
    if let Some(n) = f.quick_acks {
        let n = whole_within(n, 0, limits::MAX_ACK_RATIO);
        t.quick_acks = field(at("quick_acks"), n)? as u32;
    }
    Ok(())
}

/// The transport a flow's fields start from: its `preset`'s, or the default. A preset of a
/// kernel or tool that does not pace keeps pacing on for a controller that sets its own
/// pacing rate, as BBR paces in Linux and in ns-3.
fn resolve_preset(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    cc: &str,
    params: &Params,
) -> FieldResult<TransportConfig> {
    let Some(name) = &f.preset else {
        return Ok(TransportConfig::default());
    };
    let Some(mut t) = presets::transport(name) else {
        let message = format!(
            "unknown preset `{name}`; accepted: {}",
            presets::NAMES.join(", ")
        );
        return Err((at("preset"), message));
    };
    let config = controller_config(t.packet_size, 0, 0);
    t.pacing |= build(cc, params, &config).is_ok_and(|c| c.pacing_rate().is_some());
    Ok(t)
}

/// TCP's loss recovery, with `recovery = "tcp"` or a preset: the timeout's floor and form,
/// PRR and RACK-TLP.
fn resolve_recovery(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    t: &mut TransportConfig,
) -> FieldResult<()> {
    match f.recovery.as_deref() {
        None => {}
        Some("quic") => t.recovery = LossRecovery::Quic,
        Some("tcp") if matches!(t.recovery, LossRecovery::Tcp(_)) => {}
        Some("tcp") => t.recovery = LossRecovery::Tcp(TcpRecovery::default()),
        Some(other) => {
            let message = format!("unknown loss recovery `{other}`; accepted: quic, tcp");
            return Err((at("recovery"), message));
        }
    }
    let LossRecovery::Tcp(mut tcp) = t.recovery else {
        let set = [
            ("min_rto", f.min_rto.is_some()),
            ("rto", f.rto.is_some()),
            ("prr", f.prr.is_some()),
            ("rack", f.rack.is_some()),
        ];
        return match set.iter().find(|(_, s)| *s) {
            Some((name, _)) => Err((at(name), "only applies with recovery = \"tcp\"".into())),
            None => Ok(()),
        };
    };
    if let Some(d) = &f.min_rto {
        tcp.min_rto = field(at("min_rto"), delay_value(d))?;
    }
    tcp.rto = match f.rto.as_deref() {
        None => tcp.rto,
        Some("rfc6298") => RtoForm::Rfc6298,
        Some("linux") => RtoForm::Linux,
        Some(other) => {
            let message = format!("unknown timeout form `{other}`; accepted: rfc6298, linux");
            return Err((at("rto"), message));
        }
    };
    tcp.prr = f.prr.unwrap_or(tcp.prr);
    tcp.rack = f.rack.unwrap_or(tcp.rack);
    t.recovery = LossRecovery::Tcp(tcp);
    Ok(())
}

fn resolve_flow(
    f: &FlowSpec,
    i: usize,
    names: &[&str],
    tunnels: &[&str],
) -> FieldResult<Vec<FlowPlan>> {
    let at = |x: &str| format!("flows[{i}].{x}");
    let tunnel = resolve_carrier(f, tunnels, &at)?;
    let forward = match tunnel {
        Some(_) => Vec::new(),
        None => resolve_path(&f.path, names, &at("path"))?,
    };
    let start = match &f.start {
        Some(s) => field(at("start"), time_value(s))?,
        None => Duration::ZERO,
    };
    let stop = match &f.stop {
        Some(s) => Some(field(at("stop"), time_value(s))?),
        None => None,
    };
    if stop.is_some_and(|s| s <= start) {
        return Err((at("stop"), "must be after start".into()));
    }
    let mut app = resolve_app(f, &at)?;
    let arrivals = match &f.arrivals {
        Some(a) => {
            let (arrivals, size) = resolve_arrivals(a, f, &at)?;
            app = AppConfig::Bulk { bytes: Some(size) };
            Some(arrivals)
        }
        None => None,
    };
    let (transport, reverse) = match f.transport.as_deref().unwrap_or("reliable") {
        "reliable" if tunnel.is_some() => (resolve_reliable(f, &at)?, Vec::new()),
        "reliable" => (
            resolve_reliable(f, &at)?,
            resolve_path(&f.reverse_path, names, &at("reverse_path"))?,
        ),
        "dccp" if tunnel.is_some() => {
            let message = "a tunnel carries reliable and datagram flows; its paths are the \
                           DCCP subflows";
            return Err((at("transport"), message.into()));
        }
        "datagram" => (resolve_datagram(f, &app, &at)?, Vec::new()),
        "dccp" => (
            resolve_dccp(f, &at)?,
            resolve_path(&f.reverse_path, names, &at("reverse_path"))?,
        ),
        other => {
            return Err((
                at("transport"),
                format!("unknown transport `{other}`; accepted: reliable, datagram, dccp"),
            ))
        }
    };
    let events = resolve_events(f, &transport, &at)?;
    // At most `limits::MAX_FLOWS`, checked before any flow is resolved.
    let count = f.count.unwrap_or(1) as u32;
    let stagger = match &f.stagger {
        Some(s) => field(at("stagger"), time_value(s))?,
        None => Duration::ZERO,
    };
    let last = stop.unwrap_or(start) + stagger * (count - 1);
    if last > limits::MAX_TIME {
        let message = format!(
            "the last copy would start or stop at {}; accepted: times up to {}",
            limits::show_duration(last),
            limits::show_duration(limits::MAX_TIME)
        );
        return Err((at("stagger"), message));
    }
    let base = f
        .name
        .clone()
        .unwrap_or_else(|| format!("{}-{i}", transport_name(&transport)));
    Ok((0..count)
        .map(|k| FlowPlan {
            name: if count == 1 {
                base.clone()
            } else {
                format!("{base}-{}", k + 1)
            },
            transport: transport.clone(),
            forward: forward.clone(),
            reverse: reverse.clone(),
            app,
            start: start + stagger * k,
            stop: stop.map(|s| s + stagger * k),
            events: events.clone(),
            arrivals,
            tunnel,
        })
        .collect())
}

/// The tunnel that carries flow `f` (an index into `tunnels`), if it names one; such a flow
/// names no links.
fn resolve_carrier(
    f: &FlowSpec,
    tunnels: &[&str],
    at: &dyn Fn(&str) -> String,
) -> FieldResult<Option<usize>> {
    let Some(name) = &f.tunnel else {
        return Ok(None);
    };
    let t = tunnels.iter().position(|t| t == name).ok_or_else(|| {
        let known = if tunnels.is_empty() {
            "the file has no [[tunnels]]".to_string()
        } else {
            format!("tunnels: {}", tunnels.join(", "))
        };
        (at("tunnel"), format!("unknown tunnel `{name}`; {known}"))
    })?;
    for (field, list) in [("path", &f.path), ("reverse_path", &f.reverse_path)] {
        if !list.is_empty() {
            let message = "a flow carried by a tunnel crosses the tunnel's paths only; \
                           remove it or the `tunnel`";
            return Err((at(field), message.into()));
        }
    }
    Ok(Some(t))
}

/// A flow's short-flow arrivals and the size of each transfer.
fn resolve_arrivals(
    a: &ArrivalsSpec,
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
) -> FieldResult<(ArrivalConfig, u64)> {
    if f.size.is_some() {
        let message = "with arrivals, each transfer's size is given as arrivals.size";
        return Err((at("size"), message.into()));
    }
    if f.app.as_deref().is_some_and(|a| a != "bulk") {
        let message = "short-flow arrivals are bulk transfers; accepted: bulk";
        return Err((at("app"), message.into()));
    }
    if f.transport.as_deref().is_some_and(|t| t != "reliable") {
        let message = "short-flow arrivals are reliable connections; accepted: reliable";
        return Err((at("transport"), message.into()));
    }
    let size = field(
        at("arrivals.size"),
        bytes_value(&a.size, limits::MAX_SIZE_BYTES),
    )?;
    if let Some(n) = a.count {
        field(
            at("arrivals.count"),
            whole_within(n, 1, limits::MAX_TRANSFERS),
        )?;
    }
    let interarrival = field(
        at("arrivals.interarrival"),
        resolve_interarrival(&a.interarrival),
    )?;
    let count = a.count;
    Ok((
        ArrivalConfig {
            interarrival,
            count,
        },
        size,
    ))
}

const INTERARRIVALS: &str = "a duration (\"2.5s\"), { uniform = [\"2s\", \"3s\"] } or \
                             { exponential = \"2.5s\" } (its mean)";

/// An inter-arrival time: fixed, uniform in a range, or exponential with a mean.
fn resolve_interarrival(v: &toml::Value) -> Result<Interarrival, String> {
    let positive = |text: &str| {
        duration_within(
            parse_duration(text)?,
            limits::MIN_INTERARRIVAL,
            limits::MAX_TIME,
        )
    };
    let table = match v {
        toml::Value::String(s) => return Ok(Interarrival::Fixed(positive(s)?)),
        toml::Value::Table(t) if t.len() == 1 => t,
        _ => return Err(format!("expected {INTERARRIVALS}")),
    };
    match table.iter().next() {
        Some((k, toml::Value::String(s))) if k == "exponential" => {
            Ok(Interarrival::Exponential(positive(s)?))
        }
        Some((k, toml::Value::Array(range))) if k == "uniform" => resolve_uniform(range),
        _ => Err(format!("expected {INTERARRIVALS}")),
    }
}

/// `uniform = [low, high]`: two durations, low <= high, high > 0.
fn resolve_uniform(range: &[toml::Value]) -> Result<Interarrival, String> {
    let [toml::Value::String(low), toml::Value::String(high)] = range else {
        return Err(format!(
            "uniform takes two durations; expected {INTERARRIVALS}"
        ));
    };
    let (low, high) = (time_value(low)?, time_value(high)?);
    if low > high || high < limits::MIN_INTERARRIVAL {
        return Err(format!(
            "uniform = [{}, {}] needs low <= high and high >= {}",
            limits::show_duration(low),
            limits::show_duration(high),
            limits::show_duration(limits::MIN_INTERARRIVAL)
        ));
    }
    Ok(Interarrival::Uniform(low, high))
}

/// A flow's controller parameter changes, one per parameter, in time order (ties in the
/// order written). Each name must be one of the controller's runtime parameters, and the
/// parameters in force after each event (the flow's, with every change up to then) must
/// build.
fn resolve_events(
    f: &FlowSpec,
    transport: &FlowTransport,
    at: &dyn Fn(&str) -> String,
) -> FieldResult<Vec<ParamChange>> {
    if f.events.is_empty() {
        return Ok(Vec::new());
    }
    let FlowTransport::Reliable {
        cc,
        params,
        transport,
    } = transport
    else {
        let message = "parameter changes during a run apply to a reliable flow's controller";
        return Err((at("events"), message.into()));
    };
    if f.arrivals.is_some() {
        let message = "parameter changes apply to one connection, not to short-flow arrivals";
        return Err((at("events"), message.into()));
    }
    let runtime = find(cc).map_or(&[][..], |info| info.runtime_params);
    let mut current = params.clone();
    let mut out = Vec::new();
    for (k, when, changes) in parse_events(&f.events, at)? {
        let here = format!("{}[{k}].params", at("events"));
        for (name, value) in changes {
            field(format!("{here}.{name}"), check_runtime(cc, runtime, &name))?;
            current.insert(name.clone(), value.clone());
            out.push(ParamChange {
                at: when,
                name,
                value,
            });
        }
        let config = controller_config(transport.packet_size, 0, 0);
        build(cc, &current, &config).map_err(|e| build_error(e, &here, &at("cc")))?;
    }
    Ok(out)
}

/// Each event's index, time and parameters, sorted by time (stably).
fn parse_events(
    events: &[EventSpec],
    at: &dyn Fn(&str) -> String,
) -> FieldResult<Vec<(usize, Duration, Params)>> {
    let mut out = Vec::new();
    for (k, e) in events.iter().enumerate() {
        let here = format!("{}[{k}]", at("events"));
        let when = field(format!("{here}.at"), time_value(&e.at))?;
        let changes = resolve_params(&e.params, &format!("{here}.params"))?;
        if changes.is_empty() {
            let message = "must name at least one parameter, e.g. { num_rtt = 40 }";
            return Err((format!("{here}.params"), message.into()));
        }
        out.push((k, when, changes));
    }
    out.sort_by_key(|e| e.1);
    Ok(out)
}

/// Whether controller `cc`, whose runtime parameters are `runtime`, may change `name` during
/// a run.
fn check_runtime(cc: &str, runtime: &[&str], name: &str) -> Result<(), String> {
    if runtime.contains(&name) {
        return Ok(());
    }
    let accepted = if runtime.is_empty() {
        "it has no parameters that change during a run".to_string()
    } else {
        format!("accepted: {}", runtime.join(", "))
    };
    Err(format!(
        "`{cc}` cannot change `{name}` during a run; {accepted}"
    ))
}

/// A controller that did not build, as an error on the parameter at fault (under
/// `params_at`) or on the controller's name (`cc_at`).
pub(crate) fn build_error(e: BuildError, params_at: &str, cc_at: &str) -> (String, String) {
    match e {
        BuildError::Param(p) => (format!("{params_at}.{}", p.name), p.message),
        other => (cc_at.to_string(), other.to_string()),
    }
}

fn resolve_app(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> FieldResult<AppConfig> {
    let bytes = match &f.size {
        Some(s) => Some(field(at("size"), bytes_value(s, limits::MAX_SIZE_BYTES))?),
        None => None,
    };
    match f.app.as_deref().unwrap_or("bulk") {
        "bulk" => Ok(AppConfig::Bulk { bytes }),
        "cbr" => {
            let rate = f.rate.as_deref().ok_or_else(|| {
                (
                    at("rate"),
                    "app = \"cbr\" needs a rate, e.g. \"20Mbps\"".into(),
                )
            })?;
            Ok(AppConfig::ConstantRate {
                rate: field(at("rate"), rate_value(rate))?,
                bytes,
            })
        }
        other => Err((
            at("app"),
            format!("unknown application `{other}`; accepted: bulk, cbr"),
        )),
    }
}

fn resolve_reliable(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> FieldResult<FlowTransport> {
    if f.rate.is_some() && f.app.as_deref() != Some("cbr") {
        return Err((at("rate"), "only applies with app = \"cbr\"".into()));
    }
    let cc = f.cc.clone().ok_or_else(|| {
        (
            at("cc"),
            "a reliable flow needs a controller, e.g. cc = \"cubic\"".into(),
        )
    })?;
    if let Some(name) = cc.strip_prefix(KERNEL_PREFIX) {
        return resolve_kernel(f, at, name);
    }
    let params = resolve_params(&f.params, &at("params"))?;
    let mut transport = resolve_transport(f, at, resolve_preset(f, at, &cc, &params)?)?;
    resolve_recovery(f, at, &mut transport)?;
    if !transport.pacing && find(&cc).is_some_and(|info| info.rate_based) {
        let message = format!(
            "`{cc}` is rate-based: it sets a pacing rate and no window, so an unpaced sender \
             has nothing to hold it back; accepted: pacing = true (the default)"
        );
        return Err((at("pacing"), message));
    }
    if find(&cc).is_some_and(|info| info.dccp_only) {
        let message = format!(
            "`{cc}` is a DCCP CCID: it counts packets and sets the receiver's Ack Ratio; \
             accepted with transport = \"dccp\""
        );
        return Err((at("cc"), message));
    }
    build(
        &cc,
        &params,
        &controller_config(transport.packet_size, 0, 0),
    )
    .map_err(|e| build_error(e, &at("params"), &at("cc")))?;
    Ok(FlowTransport::Reliable {
        cc,
        params,
        transport,
    })
}

/// The prefix of a kernel flow's controller: `cc = "kernel:cubic"` is Linux's own Cubic, run
/// through the TUN link (`kleinrock run` as root), not in the simulator.
pub const KERNEL_PREFIX: &str = "kernel:";

/// A kernel flow: the algorithm's name (checked against what the kernel offers when it
/// runs), no parameters, and none of the simulated transport's options.
fn resolve_kernel(
    f: &FlowSpec,
    at: &dyn Fn(&str) -> String,
    name: &str,
) -> FieldResult<FlowTransport> {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    if name.is_empty() || !name.chars().all(plain) {
        let message = format!(
            "`{KERNEL_PREFIX}{name}`: a kernel algorithm is named as the kernel names it \
             (lowercase letters, digits and _), e.g. kernel:cubic, kernel:reno, kernel:bbr"
        );
        return Err((at("cc"), message));
    }
    let options = [
        ("params", !f.params.is_empty()),
        ("packet_size", f.packet_size.is_some()),
        ("header_size", f.header_size.is_some()),
        ("pacing", f.pacing.is_some()),
        ("max_in_flight", f.max_in_flight.is_some()),
        ("app", f.app.is_some()),
        ("arrivals", f.arrivals.is_some()),
        ("stop", f.stop.is_some()),
    ];
    let set = options.iter().find(|(_, set)| *set).map(|(n, _)| *n);
    if let Some(option) = set.or_else(|| reliable_option(f)) {
        let message = "a kernel flow runs Linux's own TCP as the kernel is configured; it takes \
                       cc, path, reverse_path, start and size";
        return Err((at(option), message.into()));
    }
    Ok(FlowTransport::Reliable {
        cc: format!("{KERNEL_PREFIX}{name}"),
        params: Params::new(),
        transport: TransportConfig::default(),
    })
}

/// The first option of the reliable transport that `f` sets, if any: the options a DCCP or
/// datagram flow does not have.
fn reliable_option(f: &FlowSpec) -> Option<&'static str> {
    let set = [
        ("delayed_ack", f.delayed_ack.is_some()),
        ("max_ack_delay", f.max_ack_delay.is_some()),
        ("ack_every", f.ack_every.is_some()),
        ("ack_size", f.ack_size.is_some()),
        ("quick_acks", f.quick_acks.is_some()),
        ("receive_timestamps", f.receive_timestamps.is_some()),
        ("host_rate", f.host_rate.is_some()),
        ("host_jitter", f.host_jitter.is_some()),
        ("preset", f.preset.is_some()),
        ("recovery", f.recovery.is_some()),
        ("min_rto", f.min_rto.is_some()),
        ("rto", f.rto.is_some()),
        ("prr", f.prr.is_some()),
        ("rack", f.rack.is_some()),
        ("events", !f.events.is_empty()),
    ];
    set.iter().find(|(_, s)| *s).map(|(name, _)| *name)
}

fn resolve_dccp(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> FieldResult<FlowTransport> {
    if let Some(name) = reliable_option(f) {
        let message = "an option of the reliable transport; a DCCP flow takes packet_size, \
                       header_size, tx_qlen, ack_ratio, pacing and max_in_flight";
        return Err((at(name), message.into()));
    }
    if f.rate.is_some() && f.app.as_deref() != Some("cbr") {
        return Err((at("rate"), "only applies with app = \"cbr\"".into()));
    }
    let cc = f.cc.clone().ok_or_else(|| {
        (
            at("cc"),
            "a DCCP flow needs a controller, e.g. cc = \"ccid2\"".into(),
        )
    })?;
    let params = resolve_params(&f.params, &at("params"))?;
    let transport = resolve_dccp_transport(f, at)?;
    if !transport.pacing && find(&cc).is_some_and(|info| info.rate_based) {
        let message = format!(
            "`{cc}` is rate-based: it sets a pacing rate and no window; accepted: pacing = true"
        );
        return Err((at("pacing"), message));
    }
    build(
        &cc,
        &params,
        &controller_config(transport.packet_size, 0, 0),
    )
    .map_err(|e| build_error(e, &at("params"), &at("cc")))?;
    Ok(FlowTransport::Dccp {
        cc,
        params,
        transport,
    })
}

/// A DCCP flow's transport settings: the reliable transport's packet size, header size and
/// window bound where given, DCCP's own defaults (44 header bytes, no pacing) otherwise.
fn resolve_dccp_transport(f: &FlowSpec, at: &dyn Fn(&str) -> String) -> FieldResult<DccpConfig> {
    let mut t = DccpConfig::default();
    let defaults = TransportConfig {
        header_size: t.header_size,
        pacing: false,
        ..TransportConfig::default()
    };
    let reliable = resolve_transport(f, at, defaults)?;
    t.packet_size = reliable.packet_size;
    t.header_size = reliable.header_size;
    t.pacing = reliable.pacing;
    t.max_in_flight = reliable.max_in_flight;
    if let Some(q) = f.tx_qlen {
        t.tx_qlen = field(at("tx_qlen"), whole_within(q, 1, limits::MAX_TX_QLEN))? as u32;
    }
    if let Some(r) = f.ack_ratio {
        t.ack_ratio = field(at("ack_ratio"), whole_within(r, 1, limits::MAX_ACK_RATIO))?;
    }
    Ok(t)
}

fn resolve_datagram(
    f: &FlowSpec,
    app: &AppConfig,
    at: &dyn Fn(&str) -> String,
) -> FieldResult<FlowTransport> {
    if !matches!(app, AppConfig::ConstantRate { .. }) {
        return Err((
            at("app"),
            "a datagram flow needs app = \"cbr\" and a rate".into(),
        ));
    }
    if f.cc.is_some() {
        return Err((at("cc"), "a datagram flow has no congestion control".into()));
    }
    if !f.reverse_path.is_empty() {
        return Err((at("reverse_path"), "a datagram flow sends no ACKs".into()));
    }
    if f.host_rate.is_some() {
        return Err((
            at("host_rate"),
            "a datagram flow sends at its application's rate; host_rate caps a paced sender".into(),
        ));
    }
    if let Some(name) = reliable_option(f) {
        let message = "an option of the reliable transport; a datagram flow takes \
                       packet_size and header_size";
        return Err((at(name), message.into()));
    }
    let t = resolve_transport(f, at, TransportConfig::default())?;
    Ok(FlowTransport::Datagram {
        packet_size: t.packet_size,
        header_size: t.header_size,
    })
}

fn transport_name(t: &FlowTransport) -> &str {
    match t {
        FlowTransport::Reliable { cc, .. } | FlowTransport::Dccp { cc, .. } => cc,
        FlowTransport::Datagram { .. } => "datagram",
    }
}
