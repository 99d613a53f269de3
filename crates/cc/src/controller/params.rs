//! Controller parameters: the values a scenario gives, the specification each controller
//! publishes (name, kind, default, meaning), and a reader that checks one against the other.

use crate::controller::units::parse_duration;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// A parameter value as written in a scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// A number (integers are given as numbers too).
    Number(f64),
    /// A boolean switch.
    Bool(bool),
    /// Text: a duration like `"8ms"` or a name.
    Text(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Number(v) => write!(f, "{v}"),
            ParamValue::Bool(v) => write!(f, "{v}"),
            ParamValue::Text(v) => write!(f, "\"{v}\""),
        }
    }
}

/// Parameters given to a controller, by name.
pub type Params = BTreeMap<String, ParamValue>;

/// The kind of value a parameter takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A number.
    Number,
    /// `true` or `false`.
    Bool,
    /// A duration written with a unit, e.g. `"8ms"`.
    Duration,
    /// A name, e.g. a registered controller's.
    Name,
}

impl fmt::Display for ParamKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ParamKind::Number => "a number",
            ParamKind::Bool => "true or false",
            ParamKind::Duration => "a duration such as \"8ms\"",
            ParamKind::Name => "a name in quotes",
        })
    }
}

/// One parameter a controller accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSpec {
    /// Name as written in a scenario.
    pub name: &'static str,
    /// Kind of value.
    pub kind: ParamKind,
    /// Default, as text for `kleinrock list`.
    pub default: &'static str,
    /// One line: what it does and where it comes from.
    pub doc: &'static str,
}

/// A parameter that could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamError {
    /// The offending parameter's name.
    pub name: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "parameter `{}`: {}", self.name, self.message)
    }
}

impl std::error::Error for ParamError {}

/// Reads a controller's parameters against its specification: unknown names and values of the
/// wrong kind are errors; absent parameters take the given default.
pub struct ParamReader<'a> {
    params: &'a Params,
    specs: &'static [ParamSpec],
}

impl<'a> ParamReader<'a> {
    /// Checks that every given parameter is in `specs` and has the right kind.
    pub fn new(params: &'a Params, specs: &'static [ParamSpec]) -> Result<Self, ParamError> {
        for (name, value) in params {
            let spec = specs.iter().find(|s| s.name == name).ok_or_else(|| {
                let known: Vec<&str> = specs.iter().map(|s| s.name).collect();
                ParamError {
                    name: name.clone(),
                    message: if known.is_empty() {
                        "unknown parameter; this controller takes none".to_string()
                    } else {
                        format!("unknown parameter; accepted: {}", known.join(", "))
                    },
                }
            })?;
            check_kind(spec, value)?;
        }
        Ok(ParamReader { params, specs })
    }

    fn spec(&self, name: &str) -> &'static ParamSpec {
        self.specs
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("controller reads parameter `{name}` it does not declare"))
    }

    /// A number parameter, or `default`.
    pub fn number(&self, name: &str, default: f64) -> f64 {
        self.spec(name);
        match self.params.get(name) {
            Some(ParamValue::Number(v)) => *v,
            _ => default,
        }
    }

    /// A number parameter that must lie in `[lo, hi]`, or `default`.
    pub fn number_in(&self, name: &str, default: f64, lo: f64, hi: f64) -> Result<f64, ParamError> {
        let v = self.number(name, default);
        if v.is_finite() && v >= lo && v <= hi {
            Ok(v)
        } else {
            Err(ParamError {
                name: name.to_string(),
                message: format!("{v} is out of range; accepted: {lo} to {hi}"),
            })
        }
    }

    /// A number parameter strictly between 0 and 1 (a multiplicative decrease factor), or
    /// `default`.
    pub fn factor(&self, name: &str, default: f64) -> Result<f64, ParamError> {
        let v = self.number(name, default);
        if v > 0.0 && v < 1.0 {
            Ok(v)
        } else {
            Err(ParamError {
                name: name.to_string(),
                message: format!("{v} is out of range; accepted: greater than 0 and less than 1"),
            })
        }
    }

    /// A number parameter that must be a whole number in `[lo, hi]` (packets, rounds, RTTs),
    /// or `default`.
    pub fn whole_number_in(
        &self,
        name: &str,
        default: u64,
        lo: u64,
        hi: u64,
    ) -> Result<u64, ParamError> {
        let v = self.number_in(name, default as f64, lo as f64, hi as f64)?;
        if v.fract() == 0.0 {
            Ok(v as u64)
        } else {
            Err(ParamError {
                name: name.to_string(),
                message: format!("{v} is not a whole number; accepted: {lo} to {hi}"),
            })
        }
    }

    /// A boolean parameter, or `default`.
    pub fn boolean(&self, name: &str, default: bool) -> bool {
        self.spec(name);
        match self.params.get(name) {
            Some(ParamValue::Bool(v)) => *v,
            _ => default,
        }
    }

    /// A duration parameter that must lie in `[lo, hi]`, or `default`.
    pub fn duration_in(
        &self,
        name: &str,
        default: Duration,
        lo: Duration,
        hi: Duration,
    ) -> Result<Duration, ParamError> {
        let v = self.duration(name, Some(default)).unwrap_or(default);
        if v >= lo && v <= hi {
            Ok(v)
        } else {
            Err(ParamError {
                name: name.to_string(),
                message: format!("{v:?} is out of range; accepted: {lo:?} to {hi:?}"),
            })
        }
    }

    /// A name parameter, or `default`.
    pub fn name(&self, name: &str, default: &str) -> String {
        self.spec(name);
        match self.params.get(name) {
            Some(ParamValue::Text(t)) => t.clone(),
            _ => default.to_string(),
        }
    }

    /// A duration parameter, or `default`; `None` when absent and `default` is `None`.
    pub fn duration(&self, name: &str, default: Option<Duration>) -> Option<Duration> {
        self.spec(name);
        match self.params.get(name) {
            Some(ParamValue::Text(t)) => parse_duration(t).ok(),
            _ => default,
        }
    }
}

fn check_kind(spec: &ParamSpec, value: &ParamValue) -> Result<(), ParamError> {
    let ok = match (spec.kind, value) {
        (ParamKind::Number, ParamValue::Number(v)) => v.is_finite(),
        (ParamKind::Bool, ParamValue::Bool(_)) => true,
        (ParamKind::Duration, ParamValue::Text(t)) => parse_duration(t).is_ok(),
        (ParamKind::Name, ParamValue::Text(t)) => !t.is_empty(),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(ParamError {
            name: spec.name.to_string(),
            message: format!("got {value}; accepted: {}", spec.kind),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamSpec] = &[ParamSpec {
        name: "beta",
        kind: ParamKind::Number,
        default: "0.7",
        doc: "decrease factor",
    }];

    #[test]
    fn rejects_unknown_and_wrong_kind() {
        let mut p = Params::new();
        p.insert("gamma".into(), ParamValue::Number(1.0));
        let e = ParamReader::new(&p, SPECS).err().unwrap();
        assert_eq!(e.name, "gamma");
        assert!(e.message.contains("accepted: beta"));

        let mut p = Params::new();
        p.insert("beta".into(), ParamValue::Bool(true));
        assert!(ParamReader::new(&p, SPECS).is_err());
    }

    #[test]
    fn reads_default_and_given() {
        let mut p = Params::new();
        let r = ParamReader::new(&p, SPECS).unwrap();
        assert_eq!(r.number("beta", 0.7), 0.7);
        p.insert("beta".into(), ParamValue::Number(0.5));
        let r = ParamReader::new(&p, SPECS).unwrap();
        assert_eq!(r.number_in("beta", 0.7, 0.0, 1.0).unwrap(), 0.5);
    }

    #[test]
    fn factors_and_whole_numbers() {
        let read = |v: f64| {
            let p = Params::from([("beta".to_string(), ParamValue::Number(v))]);
            let r = ParamReader::new(&p, SPECS).unwrap();
            (r.factor("beta", 0.7), r.whole_number_in("beta", 3, 1, 10))
        };
        assert_eq!(read(0.5).0, Ok(0.5));
        assert!(read(0.0).0.is_err() && read(1.0).0.is_err());
        assert_eq!(read(10.0).1, Ok(10));
        assert!(read(0.0).1.unwrap_err().message.contains("1 to 10"));
        assert!(read(2.5)
            .1
            .unwrap_err()
            .message
            .contains("not a whole number"));
        let none = Params::new();
        let r = ParamReader::new(&none, SPECS).unwrap();
        assert_eq!(
            (r.factor("beta", 0.7), r.whole_number_in("beta", 3, 1, 10)),
            (Ok(0.7), Ok(3))
        );
    }
}
