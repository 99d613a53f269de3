//! The dumbbell scenario: one bottleneck link for the data, a return link of the same rate and
//! delay for the ACKs, and one reliable flow (or `count` identical ones) across them.
//!
//! [`Dumbbell::to_toml`] writes it as scenario text, so it goes through the same parsing and
//! checks as a file ([`crate::scenario::parse`]): names, units and ranges are validated there,
//! and callers may add lines or tables to the text. The links are named `bottleneck` and
//! `return`; the flow's `path` is `["bottleneck"]` and its `reverse_path` `["return"]`. Values
//! are written verbatim between TOML quotes.

/// A dumbbell scenario. [`Dumbbell::new`] sets the required parts; the other fields have
/// defaults and are written only when set (`seed` always is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dumbbell {
    /// Scenario name (default `dumbbell`).
    pub name: String,
    /// Scenario duration, e.g. `60s`.
    pub duration: String,
    /// Scenario seed (default 1, the scenario format's own default).
    pub seed: u64,
    /// Trace interval, e.g. `10ms` (default none: no trace).
    pub trace_interval: Option<String>,
    /// Rate of both links, e.g. `10Mbps`.
    pub rate: String,
    /// Delay of each link, e.g. `25ms`: the base RTT is twice this.
    pub one_way_delay: String,
    /// Buffer of the bottleneck, e.g. `1bdp` or `50pkt`.
    pub buffer: String,
    /// Buffer of the return link (default `10000pkt`, so ACKs are not dropped).
    pub return_buffer: String,
    /// Flow name (default none: the scenario names it after its transport and index).
    pub flow_name: Option<String>,
    /// The flow's controller, e.g. `cubic`.
    pub cc: String,
    /// Bytes to transfer, e.g. `1MB` (default none: a bulk flow for the whole run).
    pub size: Option<String>,
    /// The receiver delays ACKs (default false: the transport's default).
    pub delayed_ack: bool,
    /// Identical flows (default none: one).
    pub count: Option<u32>,
    /// Start of each flow after the previous one's, e.g. `10ms` (default none: together).
    pub stagger: Option<String>,
}

impl Dumbbell {
    /// One bulk `cc` flow over `rate` with `one_way_delay` on each link, `buffer` at the
    /// bottleneck, for `duration`; every other field at its default.
    pub fn new(cc: &str, rate: &str, one_way_delay: &str, buffer: &str, duration: &str) -> Self {
        Dumbbell {
            name: "dumbbell".into(),
            duration: duration.into(),
            seed: 1,
            trace_interval: None,
            rate: rate.into(),
            one_way_delay: one_way_delay.into(),
            buffer: buffer.into(),
            return_buffer: "10000pkt".into(),
            flow_name: None,
            cc: cc.into(),
            size: None,
            delayed_ack: false,
            count: None,
            stagger: None,
        }
    }

    /// The scenario as TOML text: the header, the `bottleneck` and `return` links, then the
    /// flow, each table's `name` line first.
    pub fn to_toml(&self) -> String {
        let Dumbbell {
            name,
            duration,
            seed,
            trace_interval,
            rate,
            one_way_delay,
            buffer,
            return_buffer,
            flow_name,
            cc,
            size,
            delayed_ack,
            count,
            stagger,
        } = self;
        let mut text = format!("\nname = \"{name}\"\nduration = \"{duration}\"\nseed = {seed}\n");
        if let Some(t) = trace_interval {
            text += &format!("trace_interval = \"{t}\"\n");
        }
        for (link, buffer) in [("bottleneck", buffer), ("return", return_buffer)] {
            text += &format!(
                "\n[[links]]\nname = \"{link}\"\nrate = \"{rate}\"\ndelay = \"{one_way_delay}\"\n\
                 buffer = \"{buffer}\"\n"
            );
        }
        text += "\n[[flows]]\n";
        if let Some(n) = flow_name {
            text += &format!("name = \"{n}\"\n");
        }
        text += &format!("cc = \"{cc}\"\npath = [\"bottleneck\"]\nreverse_path = [\"return\"]\n");
        if let Some(s) = size {
            text += &format!("size = \"{s}\"\n");
        }
        if *delayed_ack {
            text += "delayed_ack = true\n";
        }
        if let Some(c) = count {
            text += &format!("count = {c}\n");
        }
        if let Some(s) = stagger {
            text += &format!("stagger = \"{s}\"\n");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{parse, FlowTransport};
    use std::time::Duration;

    #[test]
    fn parses_with_the_defaults_and_the_optional_fields() {
        let text = Dumbbell::new("cubic", "10Mbps", "25ms", "1bdp", "20s").to_toml();
        let set = parse(&text, "<t>", "t", &[]).unwrap();
        let s = &set.points[0];
        assert_eq!((s.name.as_str(), s.seed), ("dumbbell", 1));
        assert_eq!(s.duration, Duration::from_secs(20));
        assert_eq!(s.trace_interval, None);
        assert_eq!(s.links.len(), 2);
        assert_eq!(s.links[0].delay, Duration::from_millis(25));
        assert_eq!((s.flows.len(), s.flows[0].cc_name()), (1, "cubic"));
        assert_eq!(
            (s.flows[0].forward.clone(), s.flows[0].reverse.clone()),
            (vec![0], vec![1])
        );

        let text = Dumbbell {
            name: "many".into(),
            seed: 7,
            trace_interval: Some("10ms".into()),
            flow_name: Some("bulk".into()),
            delayed_ack: true,
            count: Some(3),
            stagger: Some("10ms".into()),
            ..Dumbbell::new("newreno", "10Mbps", "25ms", "50pkt", "20s")
        }
        .to_toml();
        let set = parse(&text, "<t>", "t", &[]).unwrap();
        let s = &set.points[0];
        assert_eq!((s.name.as_str(), s.seed), ("many", 7));
        assert_eq!(s.trace_interval, Some(Duration::from_millis(10)));
        let names: Vec<&str> = s.flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["bulk-1", "bulk-2", "bulk-3"]);
        assert_eq!(s.flows[2].start, Duration::from_millis(20));
        let FlowTransport::Reliable { transport, .. } = &s.flows[0].transport else {
            panic!("not reliable")
        };
        assert!(transport.delayed_ack);
    }
}
