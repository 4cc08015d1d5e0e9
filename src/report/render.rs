//! A document model rendered to a format: each document implements
//! [`Render`] beside its model (a folder with a file per format it has,
//! or one file for a small one), and [`super::render`] calls it for the
//! format asked; a format a document does not have falls back to one it
//! has (Markdown and HTML show the text in a code block, CSV and
//! will-it-scale CSV say it has none).

use serde::Serialize;
use serde_json::{Value, json};

use super::fmt::html_escape;
use crate::error::bad_input;

/// A document in every format.
pub trait Render: Serialize {
    /// Its name as JSON's `kind` (`history`).
    const KIND: &'static str;

    /// Plain text within 80 columns, ending with a newline.
    fn text(&self) -> String;

    /// GitHub Markdown; without one of its own, the text in a code block.
    fn markdown(&self) -> String {
        format!("```\n{}```\n", self.text())
    }

    /// The title of an HTML page and its body; without one of its own,
    /// the text in a `<pre>`.
    fn html(&self) -> (String, String) {
        (
            "kbench".to_string(),
            format!("<pre>{}</pre>", html_escape(&self.text())),
        )
    }

    /// CSV, or `None` when the document has no table to give.
    fn csv(&self) -> Option<String> {
        None
    }

    /// will-it-scale's runtest.py CSV of the document's scaling tables;
    /// only reports of runs and campaigns have them.
    fn wis_csv(&self) -> anyhow::Result<String> {
        Err(bad_input!(
            "--format wis-csv prints scaling tables of runs and campaigns (kbench report)"
        ))
    }

    /// The document as one JSON object: its serialised model with its
    /// schema and [`Self::KIND`] (see [`document`]).
    fn json(&self) -> anyhow::Result<Value> {
        Ok(document(Self::KIND, serde_json::to_value(self)?))
    }

    /// [`Self::json`] pretty-printed to `w`, ending with a newline; a
    /// document of many samples writes itself without building the value.
    fn write_json(&self, w: &mut dyn std::io::Write) -> anyhow::Result<()> {
        serde_json::to_writer_pretty(&mut *w, &self.json()?)?;
        w.write_all(b"\n")?;
        Ok(())
    }
}

/// A document as its JSON value (what `--format json` prints).
#[cfg(test)]
pub fn json_value(doc: &super::Document<'_>) -> anyhow::Result<Value> {
    match doc.rendered(super::Format::Json)? {
        super::Rendered::Json(v) => Ok(v),
        super::Rendered::Str(s) => Ok(Value::String(s)),
    }
}

/// The version of the JSON document model; a change that removes or
/// retypes a member takes the next number.
pub const SCHEMA: &str = "kbench/report/1";

/// `v` as a document of `kind`: an object gains `schema` and `kind`; a
/// list, or an object with a `kind` of its own (a benchmark's), becomes
/// `{schema, kind, <kind>: v}`.
pub fn document(kind: &str, v: Value) -> Value {
    match v {
        Value::Object(mut m) if !m.contains_key("kind") => {
            m.insert("schema".into(), json!(SCHEMA));
            m.insert("kind".into(), json!(kind));
            Value::Object(m)
        }
        other => json!({ "schema": SCHEMA, "kind": kind, kind: other }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Plain {
        line: &'static str,
    }

    impl Render for Plain {
        const KIND: &'static str = "plain";
        fn text(&self) -> String {
            format!("{}\n", self.line)
        }
    }

    #[test]
    fn a_format_a_document_lacks_falls_back_to_its_text() {
        let d = Plain { line: "a <b> & c" };
        assert_eq!(d.markdown(), "```\na <b> & c\n```\n");
        assert_eq!(d.html().1, "<pre>a &lt;b&gt; &amp; c\n</pre>");
        assert_eq!(d.csv(), None);
        assert!(d.wis_csv().is_err());
        let v = d.json().unwrap();
        assert_eq!(v["line"], "a <b> & c");
        assert_eq!(v["kind"], "plain");
    }
}
