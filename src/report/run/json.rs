//! JSON: every [`Document`] as one JSON value, for scripts. Reports keep
//! the field names of [`crate::report::CellSummary`] in a `cells` array; a run
//! report is an object with `run`, `config`, `fingerprint`, `warnings`,
//! `cells`, `scaling`, `stop`, `verdict` and `failures`; a campaign report
//! has `campaign`, `runs`, `states` and `pending` in place of `run`.

//!
//! Every document is one object that names its model: `schema` (the
//! version, [`crate::report::render::SCHEMA`]) and `kind` (`report`, `compare`, `status`, ...),
//! described by `schemas/report.schema.json` in the repository (one
//! `$defs` entry per kind). A report has the same shape with or without a
//! plan's `[report]` layout: the layout's tables are its `tables` member
//! (`null` without one); several reports are a `reports` document.
//!
//! A report's samples are most of its bytes (10^6 of them are 16 MB of
//! JSON): [`ReportsJson`] serialises the reports straight from the model
//! to a writer, members in the order a [`Value`] would print them, so
//! that no value is built of the cells and no string of the document.

use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value, json};

use super::{Report, Subject};
use crate::report::CellSummary;
use crate::report::render::{Render, SCHEMA};

/// One report (`kind: report`) or several (`kind: reports`) as a value,
/// without a layout's tables.
pub fn reports(rs: &[Report]) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(ReportsJson::new(rs))?)
}

/// The JSON document of one report (`kind: report`) or several (`kind:
/// reports`) with members beside them (the layout's `tables`, ...):
/// serialised as [`reports`]' value prints, without building it.
pub struct ReportsJson<'a> {
    reports: &'a [Report],
    /// Members of the document besides its reports, by name.
    members: Map<String, Value>,
}

impl<'a> ReportsJson<'a> {
    /// `rs` with no layout's tables (`tables: null`).
    pub fn new(rs: &'a [Report]) -> Self {
        let mut members = Map::new();
        members.insert("tables".into(), Value::Null);
        ReportsJson {
            reports: rs,
            members,
        }
    }

    /// The document with a layout's tables as its `tables` member.
    pub fn tables(self, tables: Option<&impl Render>) -> anyhow::Result<Self> {
        Ok(match tables {
            Some(t) => self.with("tables", t.json()?),
            None => self,
        })
    }

    /// The document with one more member (`comparability`).
    pub fn with(mut self, name: &str, v: Value) -> Self {
        self.members.insert(name.into(), v);
        self
    }

    /// The document pretty-printed to `w`, ending with a newline: the
    /// bytes `format!("{:#}\n", value)` gives.
    pub fn write(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *w, self)?;
        w.write_all(b"\n")
    }
}

impl Serialize for ReportsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let [r] = self.reports {
            let mut members = self.members.clone();
            members.insert("schema".into(), json!(SCHEMA));
            members.insert("kind".into(), json!("report"));
            return ReportJson { r, members }.serialize(s);
        }
        let mut head = self.members.clone();
        head.insert("schema".into(), json!(SCHEMA));
        head.insert("kind".into(), json!("reports"));
        splice(s, &head, "reports", &Each(self.reports))
    }
}

/// Several reports, each a `kind: report` document.
struct Each<'a>(&'a [Report]);

impl Serialize for Each<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for r in self.0 {
            let members = Map::from_iter([
                ("schema".to_string(), json!(SCHEMA)),
                ("kind".to_string(), json!("report")),
            ]);
            seq.serialize_element(&ReportJson { r, members })?;
        }
        seq.end()
    }
}

/// One report with `members` added to its own.
pub(crate) struct ReportJson<'a> {
    pub r: &'a Report,
    pub members: Map<String, Value>,
}

impl Serialize for ReportJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut head = head(self.r).map_err(S::Error::custom)?;
        head.extend(self.members.clone());
        splice(s, &head, "cells", &Cells(self.r))
    }
}

/// A report's members but its cells: a few small values.
fn head(r: &Report) -> serde_json::Result<Map<String, Value>> {
    let mut v = Map::new();
    let mut put = |k: &str, x: Value| v.insert(k.into(), x);
    put("config", serde_json::to_value(r.config())?);
    put("fingerprint", serde_json::to_value(r.fingerprint())?);
    let warnings = r.fingerprint().map(|f| f.warnings()).unwrap_or_default();
    put("warnings", serde_json::to_value(warnings)?);
    put("overhead_ns", serde_json::to_value(r.overhead_ns)?);
    put("scaling", serde_json::to_value(&r.scaling)?);
    put("stop", serde_json::to_value(r.stop())?);
    put("verdict", serde_json::to_value(r.verdict)?);
    put("failures", serde_json::to_value(&r.failures)?);
    put("summary", serde_json::to_value(&r.summary)?);
    match &r.subject {
        Subject::Run(run) => {
            put("run", serde_json::to_value(run)?);
        }
        Subject::Campaign { campaign, runs } => {
            put("campaign", serde_json::to_value(campaign)?);
            put("runs", serde_json::to_value(runs)?);
            put("states", serde_json::to_value(&r.states)?);
            put("pending", serde_json::to_value(&r.pending)?);
        }
    }
    Ok(v)
}

/// A report's cells, every group's rows in order.
struct Cells<'a>(&'a Report);

impl Serialize for Cells<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.groups.iter().flat_map(|g| &g.rows).map(Cell))
    }
}

/// One cell: its statistics, and its sample values straight from the
/// model.
struct Cell<'a>(&'a CellSummary);

impl Serialize for Cell<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Value::Object(head) = serde_json::to_value(self.0).map_err(S::Error::custom)? else {
            return Err(S::Error::custom("a cell is not a JSON object"));
        };
        splice(s, &head, "values", &self.0.values)
    }
}

/// `head`'s members with `key: value` among them, in the order of a
/// [`Map`] (sorted by name, as a [`Value`] prints).
fn splice<S: Serializer, T: Serialize + ?Sized>(
    s: S,
    head: &Map<String, Value>,
    key: &str,
    value: &T,
) -> Result<S::Ok, S::Error> {
    debug_assert!(!head.contains_key(key), "{key} twice");
    let mut m = s.serialize_map(Some(head.len() + 1))?;
    let mut pending = true;
    for (k, v) in head {
        if pending && k.as_str() > key {
            m.serialize_entry(key, value)?;
            pending = false;
        }
        m.serialize_entry(k, v)?;
    }
    if pending {
        m.serialize_entry(key, value)?;
    }
    m.end()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The streamed document is, byte for byte, what its value prints.
    #[test]
    fn the_streamed_document_prints_as_its_value() {
        use crate::report::run::tests::{mitigation_campaign, mitigation_run};
        let run = Report::of_run(mitigation_run());
        let campaign = Report::of_campaign(mitigation_campaign());
        let two = [run.clone(), campaign.clone()];
        for rs in [
            std::slice::from_ref(&run),
            std::slice::from_ref(&campaign),
            &two[..],
        ] {
            let doc = ReportsJson::new(rs).with("comparability", json!({"same": true}));
            let mut streamed = Vec::new();
            doc.write(&mut streamed).unwrap();
            // The value built member by member, as the document was
            // before it streamed.
            let mut v = old_value(rs);
            v["comparability"] = json!({"same": true});
            let streamed = String::from_utf8(streamed).unwrap();
            assert_eq!(streamed, format!("{v:#}\n"));
            // And what the value path prints: a member out of order in the
            // stream would differ here, as the value sorts its members.
            let mut value = reports(rs).unwrap();
            value["comparability"] = json!({"same": true});
            assert_eq!(streamed, format!("{value:#}\n"));
            assert!(streamed.contains("\"values\": ["), "{streamed}");
        }
    }

    fn old_value(rs: &[Report]) -> Value {
        let one = |r: &Report| {
            let cells: Vec<Value> = r
                .groups
                .iter()
                .flat_map(|g| &g.rows)
                .map(|c| {
                    let mut v = serde_json::to_value(c).unwrap();
                    v["values"] = json!(c.values);
                    v
                })
                .collect();
            let mut v = Value::Object(head(r).unwrap());
            v["cells"] = json!(cells);
            crate::report::render::document("report", v)
        };
        let mut v: Vec<Value> = rs.iter().map(one).collect();
        if v.len() == 1 {
            let mut one = v.pop().unwrap();
            one["tables"] = Value::Null;
            one
        } else {
            crate::report::render::document("reports", json!({ "reports": v, "tables": null }))
        }
    }
}
