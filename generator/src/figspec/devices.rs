//! The `device:` key of a figure block: one machine, several side by side, or all of them.
//!
//! Why its own type: a list is drawn as panels and `all` follows whatever results exist, and a
//! wrong value (an empty list, a number in the list) must be reported at the key's line with a
//! hint, which serde's untagged-enum message cannot do.

use serde::Deserialize;

/// The machines a figure draws, as its `device:` key names them.
#[derive(Debug, Clone, PartialEq)]
pub enum Devices {
    /// One machine (a case-insensitive part of its device name).
    One(String),
    /// Several machines, one panel (or table column) each, in this order.
    List(Vec<String>),
    /// Every machine whose results cover the family, the reader's own GPU included.
    All,
    /// Not a name or a list of names: kept so that [`parse`] can say what is wrong, and where.
    Invalid(String),
}

impl Devices {
    /// The one machine named, if exactly one is.
    pub fn single(&self) -> Option<&str> {
        match self {
            Devices::One(d) => Some(d),
            Devices::List(v) if v.len() == 1 => Some(&v[0]),
            _ => None,
        }
    }

    /// Whether the figure is drawn once per machine (a list of two or more, or `all`).
    pub fn several(&self) -> bool {
        matches!(self, Devices::All) || matches!(self, Devices::List(v) if v.len() > 1)
    }

    /// What is wrong with the key, if anything: (message, hint).
    pub(super) fn problem(&self) -> Option<(String, String)> {
        let list_hint = "write one name (`device: H200`), a list (`device: [H100, H200]`) or `device: all`";
        let one = |d: &str| -> Option<(String, String)> {
            if d.trim().is_empty() {
                Some((
                    "empty `device:`".into(),
                    "name a machine of kernels/results/, e.g. `device: H200`".into(),
                ))
            } else if d.contains(',') {
                Some((
                    format!("`device: {d}` is one name with a comma in it"),
                    list_hint.into(),
                ))
            } else {
                None
            }
        };
        match self {
            Devices::One(d) => one(d),
            Devices::All => None,
            Devices::Invalid(what) => Some((format!("`device:` is {what}"), list_hint.into())),
            Devices::List(v) if v.is_empty() => Some((
                "empty `device:` list".into(),
                "leave `device:` out to draw the default machine, or write `device: all`".into(),
            )),
            Devices::List(v) => {
                if v.iter().any(|d| d.trim().eq_ignore_ascii_case("all")) {
                    return Some((
                        "`all` inside a `device:` list".into(),
                        "write `device: all` on its own".into(),
                    ));
                }
                if let Some(p) = v.iter().find_map(|d| one(d)) {
                    return Some(p);
                }
                let mut seen: Vec<String> = Vec::new();
                for d in v {
                    let d = d.trim().to_lowercase();
                    if seen.contains(&d) {
                        return Some((
                            format!("`{d}` twice in the `device:` list"),
                            "name each machine once".into(),
                        ));
                    }
                    seen.push(d);
                }
                None
            }
        }
    }
}

impl<'de> Deserialize<'de> for Devices {
    /// Never fails: anything that is not a name or a list of names becomes [`Devices::Invalid`],
    /// so the error can name the key's line and give a hint instead of serde's generic message.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_yaml_ng::Value;
        let kind = |v: &Value| match v {
            Value::Null => "empty",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Sequence(_) => "a list",
            Value::Mapping(_) => "a mapping",
            Value::Tagged(_) => "a tagged value",
        };
        Ok(match Value::deserialize(d)? {
            Value::String(s) if s.trim().eq_ignore_ascii_case("all") => Devices::All,
            Value::String(s) => Devices::One(s),
            Value::Sequence(items) => {
                let mut names = Vec::new();
                for item in &items {
                    match item {
                        Value::String(s) => names.push(s.clone()),
                        other => {
                            return Ok(Devices::Invalid(format!(
                                "a list with {} in it; every item must be a device name",
                                kind(other)
                            )))
                        }
                    }
                }
                Devices::List(names)
            }
            Value::Null => Devices::One(String::new()),
            other => Devices::Invalid(format!("{}, not a device name", kind(&other))),
        })
    }
}
